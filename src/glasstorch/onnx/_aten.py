"""ATen operator -> ONNX nodes, one function per operator (by OpOverload name).

Each function receives a `Call`: the builder, the FX node, its arguments bound to the op's
schema (defaults filled in; tensors as ONNX value names) and the example metadata, and
returns the ONNX value name of the result (a tuple for ops with several results, None where
a result is never used by inference: batch norm's saved statistics, pooling indices).
"""
from __future__ import annotations

import math

import numpy as np

from ._builder import onnx_type

INT64_MAX = 2 ** 63 - 1
TRANSLATIONS: dict = {}


class OnnxExporterError(RuntimeError):
    """The model holds something the ONNX exporter cannot write."""


class Call:
    def __init__(self, builder, node, args: list, meta: list, dynamic: dict):
        self.b, self.node, self.args, self.meta = builder, node, args, meta
        self._dynamic = dynamic          # argument position -> {list index: fitted value}

    @property
    def opname(self) -> str:
        """The op's name without namespace and overload (`max` for aten.max.dim)."""
        return str(self.node.target).split(".")[1]

    @property
    def out(self):
        return self.node.meta.get("val")

    def dynamic(self, i: int):
        return self._dynamic.get(i)

    def ints(self, i: int, values=None) -> str:
        return self.b.ints(self.args[i] if values is None else values, self.dynamic(i))

    def scalar(self, i: int, value: int) -> str:
        """Int argument `i` (given as `value`) as a 1-element int64 tensor, computed from
        the inputs' sizes when it follows a dynamic dimension."""
        fitted = self._dynamic.get(i)
        return self.b.ints([value], {0: fitted[None]} if fitted and None in fitted else None)

    def rank(self, i: int = 0) -> int:
        return self.meta[i].dim()

    def dtype(self, i: int = 0):
        return self.meta[i].dtype

    def operand(self, i: int, like: int = 0) -> str:
        """Argument `i` as a value: a tensor's name, or a Python number as a constant of
        argument `like`'s dtype."""
        value = self.args[i]
        if isinstance(value, str):
            return value
        return self.b.scalar_like(value, self.dtype(like))


def translates(*names):
    def register(fn):
        for name in names:
            TRANSLATIONS[name] = fn
        return fn
    return register


def _axis(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


# ---- linear algebra ---------------------------------------------------------------------
@translates("aten.t.default")
def _t(c):
    return c.args[0] if c.rank() < 2 else c.b.transpose(c.args[0], [1, 0])


@translates("aten.addmm.default")
def _addmm(c):
    return c.b.op("Gemm", [c.args[1], c.args[2], c.args[0]], alpha=float(c.args[4]),
                  beta=float(c.args[3]))


@translates("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _matmul(c):
    return c.b.op("MatMul", [c.args[0], c.args[1]])


@translates("aten.convolution.default")
def _convolution(c):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = c.args
    inputs = [x, w] + ([bias] if bias is not None else [])
    attributes = dict(strides=list(stride), pads=list(padding) * 2,
                      dilations=list(dilation), group=int(groups))
    if transposed:
        return c.b.op("ConvTranspose", inputs, output_padding=list(output_padding),
                      **attributes)
    return c.b.op("Conv", inputs, **attributes)


# ---- normalization ----------------------------------------------------------------------
def _ones_or(c, value, size: int, fill: float) -> str:
    if value is not None:
        return value
    return c.b.const(np.full(size, fill), c.dtype().np)


@translates("aten.native_batch_norm.default", "aten._native_batch_norm_legit_no_training.default")
def _batch_norm(c):
    if c.opname == "native_batch_norm" and c.args[5]:
        raise OnnxExporterError("BatchNorm in training mode cannot be exported to ONNX; call "
                                "model.eval() first")
    x, weight, bias, mean, var = c.args[:5]
    eps = c.args[-1]
    channels = c.meta[0].shape[1]
    y = c.b.op("BatchNormalization", [x, _ones_or(c, weight, channels, 1.0),
                                      _ones_or(c, bias, channels, 0.0), mean, var],
               epsilon=float(eps))
    return (y, None, None)


@translates("aten.native_layer_norm.default")
def _layer_norm(c):
    x, normalized_shape, weight, bias, eps = c.args
    size = int(np.prod(normalized_shape))
    scale = _ones_or(c, weight, size, 1.0)
    if weight is None and len(normalized_shape) > 1:
        scale = c.b.op("Reshape", [scale, c.b.const(list(normalized_shape))])
    y = c.b.op("LayerNormalization", [x, scale] + ([bias] if bias is not None else []),
               axis=-len(normalized_shape), epsilon=float(eps))
    return (y, None, None)


@translates("aten.native_group_norm.default")
def _group_norm(c):
    x, weight, bias, _, channels, _, groups, eps = c.args
    b = c.b
    grouped = b.op("Reshape", [x, b.const([0, groups, -1])])
    mean = _reduce(b, "ReduceMean", grouped, [2], True)
    centered = b.op("Sub", [grouped, mean])
    var = _reduce(b, "ReduceMean", b.op("Mul", [centered, centered]), [2], True)
    std = b.op("Sqrt", [b.op("Add", [var, b.scalar_like(eps, c.dtype())])])
    normalized = b.op("Reshape", [b.op("Div", [centered, std]), b.op("Shape", [x])])
    per_channel = [channels] + [1] * (c.rank() - 2)
    if weight is not None:
        normalized = b.op("Mul", [normalized, b.op("Reshape", [weight, b.const(per_channel)])])
    if bias is not None:
        normalized = b.op("Add", [normalized, b.op("Reshape", [bias, b.const(per_channel)])])
    return (normalized, None, None)


# ---- activations ------------------------------------------------------------------------
def _unary(onnx_op, **attributes):
    def translate(c):
        return c.b.op(onnx_op, [c.args[0]], **attributes)
    return translate


for _name, _op in {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp",
                   "log": "Log", "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs", "erf": "Erf",
                   "hardswish": "HardSwish", "sin": "Sin", "cos": "Cos",
                   "reciprocal": "Reciprocal", "floor": "Floor", "ceil": "Ceil",
                   "sign": "Sign", "logical_not": "Not"}.items():
    TRANSLATIONS[f"aten.{_name}.default"] = _unary(_op)
for _name in ("clone", "contiguous", "alias", "detach", "lift_fresh_copy", "dropout"):
    TRANSLATIONS[f"aten.{_name}.default"] = lambda c: c.b.op("Identity", [c.args[0]])


@translates("aten.rsqrt.default")
def _rsqrt(c):
    return c.b.op("Reciprocal", [c.b.op("Sqrt", [c.args[0]])])


@translates("aten.silu.default")
def _silu(c):
    return c.b.op("Mul", [c.args[0], c.b.op("Sigmoid", [c.args[0]])])


@translates("aten.gelu.default")
def _gelu(c):
    x, approximate = c.args
    if c.b.opset >= 20:
        return c.b.op("Gelu", [x], approximate=approximate)
    b, dtype = c.b, c.dtype()
    half = b.op("Mul", [x, b.scalar_like(0.5, dtype)])
    if approximate == "tanh":
        cube = b.op("Mul", [b.op("Mul", [x, x]), x])
        inner = b.op("Add", [x, b.op("Mul", [cube, b.scalar_like(0.044715, dtype)])])
        t = b.op("Tanh", [b.op("Mul", [inner, b.scalar_like(math.sqrt(2 / math.pi), dtype)])])
    else:
        t = b.op("Erf", [b.op("Div", [x, b.scalar_like(math.sqrt(2.0), dtype)])])
    return b.op("Mul", [half, b.op("Add", [t, b.scalar_like(1.0, dtype)])])


@translates("aten.elu.default")
def _elu(c):
    x, alpha, scale, input_scale = c.args
    if scale != 1 or input_scale != 1:
        return c.b.op("Selu", [x], alpha=float(alpha), gamma=float(scale)) \
            if input_scale == 1 else _unsupported(c, "elu with input_scale")
    return c.b.op("Elu", [x], alpha=float(alpha))


@translates("aten.leaky_relu.default")
def _leaky_relu(c):
    return c.b.op("LeakyRelu", [c.args[0]], alpha=float(c.args[1]))


@translates("aten.softplus.default")
def _softplus(c):
    x, beta, threshold = c.args
    b, dtype = c.b, c.dtype()
    scaled = b.op("Mul", [x, b.scalar_like(beta, dtype)])
    soft = b.op("Div", [b.op("Softplus", [scaled]), b.scalar_like(beta, dtype)])
    return b.op("Where", [b.op("Greater", [scaled, b.scalar_like(threshold, dtype)]), x, soft])


@translates("aten.hardsigmoid.default")
def _hardsigmoid(c):
    return c.b.op("HardSigmoid", [c.args[0]], alpha=1 / 6, beta=0.5)


@translates("aten.hardtanh.default", "aten.clamp.default")
def _clip(c):
    x, low, high = c.args
    dtype = c.dtype()
    return c.b.op("Clip", [x, None if low is None else c.b.scalar_like(low, dtype),
                           None if high is None else c.b.scalar_like(high, dtype)])


@translates("aten.clamp_min.default")
def _clamp_min(c):
    return c.b.op("Max", [c.args[0], c.b.scalar_like(c.args[1], c.dtype())])


@translates("aten.mish.default")
def _mish(c):
    if c.b.opset >= 18:
        return c.b.op("Mish", [c.args[0]])
    return c.b.op("Mul", [c.args[0], c.b.op("Tanh", [c.b.op("Softplus", [c.args[0]])])])


@translates("aten._prelu_kernel.default", "aten.prelu.default")
def _prelu(c):
    x, weight = c.args
    if c.rank() >= 2 and c.meta[1].numel() > 1:
        weight = c.b.op("Reshape", [weight, c.b.const([-1] + [1] * (c.rank() - 2))])
    return c.b.op("PRelu", [x, weight])


@translates("aten._softmax.default", "aten.softmax.int")
def _softmax(c):
    return c.b.op("Softmax", [c.args[0]], axis=int(c.args[1]))


@translates("aten._scaled_dot_product_flash_attention_for_cpu.default")
def _flash_attention(c):
    """softmax(q k^T * scale, causal positions -inf) v; the logsumexp (kept for the
    backward) is not written. The causal bias follows the scores' (possibly dynamic) size:
    Trilu keeps the -inf above the diagonal of a (L, S) block of -inf."""
    q, k, v, _, is_causal, _, scale = c.args
    scale = 1 / math.sqrt(c.meta[0].shape[-1]) if scale is None else scale
    scores = c.b.op("Mul", [c.b.op("MatMul", [q, c.b.transpose(k, [0, 1, 3, 2])]),
                            c.b.scalar_like(scale, c.dtype())])
    if is_causal:
        fill = c.b.onnx.numpy_helper.from_array(np.asarray([-np.inf], dtype=c.dtype().np))
        blocked = c.b.op("ConstantOfShape", [c.b.op("Shape", [scores], start=2)], value=fill)
        scores = c.b.op("Add", [scores, c.b.op("Trilu", [blocked, c.b.const(1)], upper=1)])
    return c.b.op("MatMul", [c.b.op("Softmax", [scores], axis=-1), v]), None


@translates("aten._log_softmax.default", "aten.log_softmax.int")
def _log_softmax(c):
    return c.b.op("LogSoftmax", [c.args[0]], axis=int(c.args[1]))


# ---- pointwise binary -------------------------------------------------------------------
def _binary(onnx_op, scaled: bool = False):
    def translate(c):
        other = c.operand(1)
        if scaled and len(c.args) > 2 and c.args[2] != 1:
            other = c.b.op("Mul", [other, c.b.scalar_like(c.args[2], c.dtype())])
        return c.b.op(onnx_op, [c.operand(0, like=1 if not isinstance(c.args[0], str) else 0),
                                other])
    return translate


for _name, _op in {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}.items():
    for _overload in ("Tensor", "Scalar"):
        TRANSLATIONS[f"aten.{_name}.{_overload}"] = _binary(_op, scaled=_name in ("add", "sub"))
for _name, _op in {"eq": "Equal", "gt": "Greater", "lt": "Less", "ge": "GreaterOrEqual",
                   "le": "LessOrEqual", "pow": "Pow", "maximum": "Max", "minimum": "Min",
                   "logical_and": "And", "logical_or": "Or"}.items():
    for _overload in ("Tensor", "Scalar", "Tensor_Scalar", "Tensor_Tensor", "default"):
        TRANSLATIONS[f"aten.{_name}.{_overload}"] = _binary(_op)


@translates("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(c):
    return c.b.op("Sub", [c.operand(1), c.b.op("Mul", [c.args[0], c.operand(2)])
                          if c.args[2] != 1 else c.args[0]])


@translates("aten.where.self")
def _where(c):
    return c.b.op("Where", [c.args[0], c.operand(1, like=2 if isinstance(c.args[2], str) else 1),
                            c.operand(2, like=1 if isinstance(c.args[1], str) else 2)])


@translates("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(c):
    return c.b.op("Where", [c.args[1], c.operand(2), c.args[0]])


@translates("aten._to_copy.default")
def _to_copy(c):
    return c.b.op("Cast", [c.args[0]], to=onnx_type(c.out.dtype))


# ---- shapes -----------------------------------------------------------------------------
@translates("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def _reshape(c):
    return c.b.op("Reshape", [c.args[0], c.ints(1)])


@translates("aten.transpose.int")
def _transpose(c):
    rank = c.rank()
    perm = list(range(rank))
    a, b_ = _axis(c.args[1], rank), _axis(c.args[2], rank)
    perm[a], perm[b_] = perm[b_], perm[a]
    return c.b.transpose(c.args[0], perm)


@translates("aten.permute.default")
def _permute(c):
    return c.b.transpose(c.args[0], [_axis(d, c.rank()) for d in c.args[1]])


@translates("aten.expand.default")
def _expand(c):
    sizes = [1 if s == -1 else s for s in c.args[1]]
    return c.b.op("Expand", [c.args[0], c.ints(1, sizes)])


@translates("aten.cat.default")
def _cat(c):
    tensors = [t for t, m in zip(c.args[0], c.meta[0]) if m.numel() or m.dim() > 1]
    return c.b.op("Concat", tensors, axis=_axis(c.args[1], c.out.dim()))


@translates("aten.stack.default")
def _stack(c):
    axis = _axis(c.args[1], c.out.dim())
    axes = c.b.const([axis])
    return c.b.op("Concat", [c.b.op("Unsqueeze", [t, axes]) for t in c.args[0]], axis=axis)


@translates("aten.split.Tensor", "aten.split_with_sizes.default")
def _split(c):
    x, size, dim = c.args
    axis = _axis(dim, c.rank())
    total = c.meta[0].shape[axis]
    sizes = list(size) if isinstance(size, (list, tuple)) else \
        [min(size, total - i) for i in range(0, total, size)]
    outs = c.b.op("Split", [x, c.b.const(sizes)], outputs=len(sizes), axis=axis)
    return tuple(outs) if len(sizes) > 1 else (outs,)


@translates("aten.slice.Tensor")
def _slice(c):
    x, dim, start, end, step = c.args
    return c.b.op("Slice", [x, c.scalar(2, 0 if start is None else start),
                            c.scalar(3, INT64_MAX if end is None else end),
                            c.b.const([_axis(dim, c.rank())]), c.b.const([step])])


@translates("aten.select.int")
def _select(c):
    return c.b.op("Gather", [c.args[0], c.b.const(c.args[2])], axis=_axis(c.args[1], c.rank()))


@translates("aten.index_select.default")
def _index_select(c):
    return c.b.op("Gather", [c.args[0], c.args[2]], axis=_axis(c.args[1], c.rank()))


@translates("aten.gather.default")
def _gather(c):
    return c.b.op("GatherElements", [c.args[0], c.args[2]], axis=_axis(c.args[1], c.rank()))


@translates("aten.embedding.default")
def _embedding(c):
    return c.b.op("Gather", [c.args[0], c.args[1]], axis=0)


@translates("aten.unsqueeze.default")
def _unsqueeze(c):
    return c.b.op("Unsqueeze", [c.args[0], c.b.const([_axis(c.args[1], c.rank() + 1)])])


@translates("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default")
def _squeeze(c):
    shape = c.meta[0].shape
    dims = range(len(shape)) if len(c.args) < 2 else (
        c.args[1] if isinstance(c.args[1], (list, tuple)) else [c.args[1]])
    axes = [_axis(d, len(shape)) for d in dims if shape[_axis(d, len(shape))] == 1]
    if not axes:
        return c.b.op("Identity", [c.args[0]])
    return c.b.op("Squeeze", [c.args[0], c.b.const(axes)])


@translates("aten.zeros.default", "aten.ones.default", "aten.full.default")
def _full(c):
    name = c.opname
    value = {"zeros": 0, "ones": 1}.get(name, c.args[1] if name == "full" else 0)
    out = c.out
    fill = c.b.onnx.numpy_helper.from_array(np.asarray([value], dtype=out.dtype.np))
    return c.b.op("ConstantOfShape", [c.ints(0)], value=fill)


# ---- reductions -------------------------------------------------------------------------
def _reduce(b, onnx_op: str, x: str, axes, keepdims: bool) -> str:
    if axes is None or len(axes) == 0:
        return b.op(onnx_op, [x], keepdims=int(keepdims))
    if b.opset >= 18 or onnx_op == "ReduceSum":
        return b.op(onnx_op, [x, b.const(list(axes))], keepdims=int(keepdims))
    return b.op(onnx_op, [x], axes=list(axes), keepdims=int(keepdims))


def _reduction(onnx_op):
    def translate(c):
        dims = c.args[1] if len(c.args) > 1 and isinstance(c.args[1], (list, tuple)) else None
        keep = bool(c.args[2]) if len(c.args) > 2 and isinstance(c.args[2], bool) else False
        return _reduce(c.b, onnx_op, c.args[0], dims, keep)
    return translate


for _name, _op in {"sum": "ReduceSum", "mean": "ReduceMean", "amax": "ReduceMax",
                   "amin": "ReduceMin"}.items():
    for _overload in ("default", "dim_IntList", "dim"):
        TRANSLATIONS[f"aten.{_name}.{_overload}"] = _reduction(_op)


@translates("aten.prod.dim_int")
def _prod(c):
    return _reduce(c.b, "ReduceProd", c.args[0], [c.args[1]], c.args[2])


@translates("aten.max.dim", "aten.min.dim")
def _max_dim(c):
    onnx_ops = ("ReduceMax", "ArgMax") if c.opname == "max" else \
        ("ReduceMin", "ArgMin")
    x, dim, keepdim = c.args
    axis = _axis(dim, c.rank())
    return (_reduce(c.b, onnx_ops[0], x, [axis], keepdim),
            c.b.op(onnx_ops[1], [x], axis=axis, keepdims=int(keepdim)))


@translates("aten.argmax.default", "aten.argmin.default")
def _argmax(c):
    x, dim, keepdim = c.args
    onnx_op = "ArgMax" if c.opname == "argmax" else "ArgMin"
    if dim is None:
        return c.b.op(onnx_op, [c.b.op("Reshape", [x, c.b.const([-1])])], axis=0, keepdims=0)
    return c.b.op(onnx_op, [x], axis=_axis(dim, c.rank()), keepdims=int(keepdim))


@translates("aten.var.correction")
def _var(c):
    x, dims, correction, keepdim = c.args
    shape = c.meta[0].shape
    dims = list(range(len(shape))) if dims is None else [_axis(d, len(shape)) for d in dims]
    count = int(np.prod([shape[d] for d in dims]))
    b, dtype = c.b, c.dtype()
    centered = b.op("Sub", [x, _reduce(b, "ReduceMean", x, dims, True)])
    total = _reduce(b, "ReduceSum", b.op("Mul", [centered, centered]), dims, keepdim)
    divisor = max(count - (1 if correction is None else correction), 0)
    return b.op("Div", [total, b.scalar_like(divisor, dtype)])


@translates("aten.norm.ScalarOpt_dim", "aten.norm.ScalarOpt_dim_dtype", "aten.linalg_vector_norm.default")
def _norm(c):
    x, p, dims, keepdim = c.args[:4]
    if p not in (2, 2.0, None, 1, 1.0):
        return _unsupported(c, f"a norm of order {p}")
    return _reduce(c.b, "ReduceL1" if p in (1, 1.0) else "ReduceL2", x, dims, keepdim)


# ---- pooling ----------------------------------------------------------------------------
def _pool_attributes(kernel, stride, padding, dims: int) -> dict:
    kernel = list(kernel) * (dims if len(kernel) == 1 else 1)
    stride = list(stride) if stride else kernel
    stride = stride * (dims if len(stride) == 1 else 1)
    padding = list(padding) * (dims if len(padding) == 1 else 1)
    return dict(kernel_shape=kernel, strides=stride, pads=padding * 2)


@translates("aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default",
            "aten.max_pool1d_with_indices.default")
def _max_pool(c):
    x, kernel, stride, padding, dilation, ceil_mode = c.args
    dims = c.rank() - 2
    dilation = list(dilation) * (dims if len(dilation) == 1 else 1)
    y = c.b.op("MaxPool", [x], dilations=dilation, ceil_mode=int(ceil_mode),
               **_pool_attributes(kernel, stride, padding, dims))
    return (y, None)


@translates("aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default")
def _avg_pool(c):
    x, kernel, stride, padding, ceil_mode, count_include_pad = c.args[:6]
    if len(c.args) > 6 and c.args[6] is not None:
        return _unsupported(c, "avg_pool with divisor_override")
    return c.b.op("AveragePool", [x], ceil_mode=int(ceil_mode),
                  count_include_pad=int(count_include_pad),
                  **_pool_attributes(kernel, stride, padding, c.rank() - 2))


def _adaptive(c, onnx_op: str, global_op: str):
    x, output_size = c.args[:2]
    spatial = list(c.meta[0].shape[2:])
    output_size = [s if o is None else o for s, o in zip(spatial, output_size)]
    if all(o == 1 for o in output_size):
        return c.b.op(global_op, [x])
    if any(s % o for s, o in zip(spatial, output_size)):
        return _unsupported(c, f"adaptive pooling from {spatial} to {output_size} (sizes "
                               "that do not divide)")
    kernel = [s // o for s, o in zip(spatial, output_size)]
    return c.b.op(onnx_op, [x], kernel_shape=kernel, strides=kernel)


@translates("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default",
            "aten._adaptive_avg_pool3d.default", "aten.adaptive_avg_pool1d.default")
def _adaptive_avg(c):
    return _adaptive(c, "AveragePool", "GlobalAveragePool")


@translates("aten.adaptive_max_pool2d.default", "aten.adaptive_max_pool1d.default",
            "aten.adaptive_max_pool3d.default")
def _adaptive_max(c):
    return (_adaptive(c, "MaxPool", "GlobalMaxPool"), None)


def _unsupported(c, what: str):
    raise OnnxExporterError(f"Unsupported: {what} ({c.node.target}, node {c.node.name!r}) "
                            "cannot be exported to ONNX by glasstorch")


@translates("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(c):
    positions = {"default": (None, 0, None), "start": (0, 1, None),
                 "start_step": (0, 1, 2)}[str(c.node.target).split(".")[2]]
    np_dtype = c.out.dtype.np

    def scalar(position, default):
        if position is None:
            return c.b.const(default, np_dtype)
        value = c.scalar(position, c.args[position]) if isinstance(c.args[position], int) \
            else c.b.const([c.args[position]])
        value = c.b.op("Cast", [value], to=onnx_type(c.out.dtype))
        return c.b.op("Squeeze", [value, c.b.const([0])])

    start, end, step = (scalar(p, d) for p, d in zip(positions, (0, None, 1)))
    return c.b.op("Range", [start, end, step])


# ---- recurrent layers -------------------------------------------------------------------
# mkldnn_rnn_layer's modes (ideep's numbering), the ONNX op of each, and the order ONNX
# wants PyTorch's gate blocks in: LSTM gates i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h.
_RNN_MODES = {0: ("RNN", 1, [0]), 1: ("RNN", 1, [0]), 2: ("LSTM", 4, [0, 3, 1, 2]),
              3: ("GRU", 3, [1, 0, 2])}


def _gate_blocks(c, position: int, gates: int, order: list) -> str:
    """Weight or bias argument `position` with its gate blocks in ONNX's order, with ONNX's
    leading direction axis."""
    weight = c.args[position]
    if gates > 1:
        blocks = c.b.chunks(weight, gates, 0, c.meta[position].shape[0])
        weight = c.b.op("Concat", [blocks[i] for i in order], axis=0)
    return c.b.op("Unsqueeze", [weight, c.b.const([0])])


@translates("aten.mkldnn_rnn_layer.default")
def _rnn_layer(c):
    x, hx, cx, reverse, batch_sizes, mode, hidden = c.args[:1] + c.args[5:11]
    batch_first = c.args[14]
    if batch_sizes:
        return _unsupported(c, "a recurrent layer over a packed sequence")
    if batch_first:
        x = c.b.op("Transpose", [x], perm=[1, 0, 2])
    onnx_op, gates, order = _RNN_MODES[mode]
    bias = c.b.op("Concat", [_gate_blocks(c, 3, gates, order),
                             _gate_blocks(c, 4, gates, order)], axis=1)
    axis0 = c.b.const([0])
    inputs = [x, _gate_blocks(c, 1, gates, order), _gate_blocks(c, 2, gates, order),
              bias, None, c.b.op("Unsqueeze", [hx, axis0])]
    attributes = dict(hidden_size=int(hidden),
                      direction="reverse" if reverse else "forward")
    if onnx_op == "LSTM":
        inputs.append(c.b.op("Unsqueeze", [cx, axis0]))
    elif onnx_op == "GRU":
        attributes["linear_before_reset"] = 1
    else:
        attributes["activations"] = ["Relu" if mode == 0 else "Tanh"]
    outs = c.b.op(onnx_op, inputs, outputs=3 if onnx_op == "LSTM" else 2, **attributes)
    y = c.b.op("Squeeze", [outs[0], c.b.const([1])])        # (T, 1, N, H) -> (T, N, H)
    if batch_first:
        y = c.b.op("Transpose", [y], perm=[1, 0, 2])
    h = c.b.op("Squeeze", [outs[1], axis0])
    cell = c.b.op("Squeeze", [outs[2], axis0]) if onnx_op == "LSTM" else hx
    return (y, h, cell, None)


def _gates(c, position: int, bias_position: int, chunks: int) -> list:
    gates = c.args[position]
    if c.args[bias_position] is not None:
        gates = c.b.op("Add", [gates, c.args[bias_position]])
    return c.b.chunks(gates, chunks, 1, c.meta[position].shape[1])


@translates("aten._thnn_fused_lstm_cell.default")
def _lstm_cell(c):
    b = c.b
    gates = b.op("Add", [c.args[0], c.args[1]])
    for bias in c.args[3:5]:
        if bias is not None:
            gates = b.op("Add", [gates, bias])
    i, f, g, o = b.chunks(gates, 4, 1, c.meta[0].shape[1])
    cy = b.op("Add", [b.op("Mul", [b.op("Sigmoid", [f]), c.args[2]]),
                      b.op("Mul", [b.op("Sigmoid", [i]), b.op("Tanh", [g])])])
    hy = b.op("Mul", [b.op("Sigmoid", [o]), b.op("Tanh", [cy])])
    return (hy, cy, None)


@translates("aten._fused_rnn_cell.default")
def _rnn_cell(c):
    b = c.b
    x, h, w_ih, w_hh = c.args[:4]
    pre = b.op("Add", [b.op("MatMul", [x, b.transpose(w_ih, [1, 0])]),
                       b.op("MatMul", [h, b.transpose(w_hh, [1, 0])])])
    for bias in c.args[4:6]:
        if bias is not None:
            pre = b.op("Add", [pre, bias])
    relu = len(c.args) > 6 and c.args[6]
    return b.op("Relu" if relu else "Tanh", [pre])


@translates("aten._thnn_fused_gru_cell.default")
def _gru_cell(c):
    b = c.b
    ir, iz, i_n = _gates(c, 0, 3, 3)
    hr, hz, h_n = _gates(c, 1, 4, 3)
    r = b.op("Sigmoid", [b.op("Add", [ir, hr])])
    z = b.op("Sigmoid", [b.op("Add", [iz, hz])])
    n = b.op("Tanh", [b.op("Add", [i_n, b.op("Mul", [r, h_n])])])
    hy = b.op("Add", [n, b.op("Mul", [z, b.op("Sub", [c.args[2], n])])])
    return (hy, None)
