"""Lowering: an ATen-level FX graph becomes values of the loop-level IR (`ir.py`).

The graph is first decomposed (`glasstorch._decomp`'s table, retraced with `make_fx` on
fake tensors), so composite ops (softmax, layer_norm, gelu, ...) arrive as core ATen ops.
Then each node, in order, becomes a value: `LOWERINGS` holds a function per OpOverload it
knows; any other op becomes an `Extern` step, the op called through the dispatcher by the
host code, as eager would (PyTorch's fallback). A node whose lowering rejects its
arguments falls back the same way: never a wrong result.

Dtypes follow eager: an op computes in the dtype eager computes in (the promoted dtype of
its operands; float32 for float16 and bfloat16, rounded back after every op, so a chain of
half-precision ops rounds where eager's does) and stores the dtype eager returns (the node's
`meta["val"]`).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ... import _prims
from ..._decomp import decomposition_table
from ..._ops import OpOverload, ops_namespace
from ...autograd.grad_mode import no_grad
from ...core import dtype as dt
from ...core.device import CPU
from ...core.shape import is_non_overlapping_and_dense, view_strides
from ...core.tensor import Tensor, preserve_format
from ...fx import Graph, GraphModule
from ...fx.experimental.proxy_tensor import make_fx
from ..._prims.scalar import BinOp, Call, Const, Select, Unary, a, b, c
from .ir import (ZERO, Buffer, ComputedBuffer, ConstantBuffer, ExternBuffer, Index, InputBuffer,
                 InputUpdate,
                 Pointwise, Reduction, StridedView, Value, View, contiguous_strides)

aten = ops_namespace("aten")
prims_ns = ops_namespace("prims")
P = _prims.prims

INLINE_COST_LIMIT = 60       # a pointwise chain longer than this is stored, not inlined
SHARED_COST_LIMIT = 12       # ... or this, when several ops read it


class Unsupported(Exception):
    """A node this lowering cannot compile: it runs through the dispatcher instead."""


class GraphNotCompilable(Exception):
    """The whole graph runs eagerly (it overwrites a view, calls something that is not an
    ATen op, ...)."""


class Extern:
    """A step of the host code that calls `op` through the dispatcher; `outputs` are the
    ExternBuffers of its tensor results (one, or one per element of a tuple)."""

    def __init__(self, name, op, args, kwargs, outputs, tuple_result: bool):
        self.name, self.op, self.args, self.kwargs = name, op, args, kwargs
        self.outputs, self.tuple_result = outputs, tuple_result

    def buffers_read(self) -> list:
        """The values among its arguments (buffers, or views of buffers)."""
        found = []
        _collect_values((self.args, self.kwargs), found)
        return found


def _collect_values(tree, found):
    if isinstance(tree, Value):
        found.append(tree)
    elif isinstance(tree, (list, tuple)):
        for x in tree:
            _collect_values(x, found)
    elif isinstance(tree, dict):
        for x in tree.values():
            _collect_values(x, found)


def lift_constants(gm):
    """(a copy of gm whose tensor attributes are placeholders after its inputs, those
    tensors): the graph's parameters and constants become inputs like the others, which
    tracing and the kernels handle alike."""
    nodes = list(gm.graph.nodes)
    if not any(node.op == "get_attr" for node in nodes):     # capture's graphs: nothing to lift
        return gm, []
    graph, env, constants = Graph(), {}, []
    for node in nodes:
        if node.op == "placeholder":
            env[node] = graph.node_copy(node, env.__getitem__)
    for node in nodes:
        if node.op == "get_attr":
            value = gm
            for part in node.target.split("."):
                value = getattr(value, part)
            if isinstance(value, Tensor):
                env[node] = graph.placeholder(f"_constant{len(constants)}")
                env[node].meta = dict(node.meta)
                constants.append(value)
    for node in nodes:
        if node not in env:
            env[node] = graph.node_copy(node, env.__getitem__)
    return (GraphModule(gm, graph) if constants else gm), constants


def decompose(gm, example_inputs):
    """The graph with the decomposition table applied, retraced on fake tensors. In-place
    ops whose functional op can be compiled become that op and a `copy_` into their
    argument (`x.addcmul_(a, b)`: `copy_(x, addcmul(x, a, b))`), so only `copy_` mutates.
    GELU decomposes as eager computes it (`_gelu`)."""
    table = dict(decomposition_table)
    table[aten.gelu.default] = _gelu
    table[aten.gelu_backward.default] = _gelu_backward
    for node in gm.graph.nodes:
        functional = _functional_op(node.target)
        if functional is not None and (functional in LOWERINGS or functional in table):
            table[node.target] = _functionalized(functional)
    return make_fx(gm, decomposition_table=table, tracing_mode="fake")(*example_inputs)


# ---- GELU as eager computes it -------------------------------------------------------------------

# Eager's float32 GELU (backends/cpu/activation.py, as PyTorch's vectorised kernel) takes erf
# from Abramowitz & Stegun 7.1.26, not libm: for x < -4 the two differ by far more than an ulp
# (0.5 (1 + erf) cancels). These decompositions make the same float32 ops in eager's order,
# so compiled GELU and its gradient are eager's up to the last bits of one `exp`.
_AS_Q = float(np.float32(1 / (0.3275911 * math.sqrt(0.5))))
_AS_HALF_COEFFS = tuple(float(np.float32(c / 2)) for c in (
    1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _as_float32(t) -> bool:
    return t.dtype in (dt.float32, dt.float16, dt.bfloat16)


def _normal_cdf(x):
    """(Phi(x), exp(-x^2 / 2)) of a float32 x, op by op as eager's `_normal_cdf_float32`."""
    t = aten.abs.default(x)
    t = aten.div.Tensor(aten.full_like.default(x, _AS_Q),
                        aten.add.Tensor(t, _AS_Q))                 # 1 / (1 + p |z|)
    e = aten.exp.default(aten.mul.Tensor(aten.mul.Tensor(x, x), -0.5))
    r = aten.mul.Tensor(t, _AS_HALF_COEFFS[0])
    for c in _AS_HALF_COEFFS[1:-1]:
        r = aten.mul.Tensor(aten.add.Tensor(r, c), t)
    r = aten.mul.Tensor(aten.mul.Tensor(aten.add.Tensor(r, _AS_HALF_COEFFS[-1]), t), e)
    r = aten.copysign.Tensor(aten.rsub.Scalar(r, 0.5), x)          # erf(z) / 2
    return aten.add.Tensor(r, 0.5), e


def _to(t, dtype):
    return t if t.dtype is dtype else aten._to_copy.default(t, dtype=dtype)


def _gelu(self, *, approximate="none"):
    if approximate != "none" or not _as_float32(self):
        return decomposition_table[aten.gelu.default](self, approximate=approximate)
    x = _to(self, dt.float32)
    return _to(aten.mul.Tensor(_normal_cdf(x)[0], x), self.dtype)


def _gelu_backward(grad_output, self, *, approximate="none"):
    if approximate != "none" or not _as_float32(self):
        return decomposition_table[aten.gelu_backward.default](grad_output, self,
                                                                approximate=approximate)
    x = _to(self, dt.float32)
    cdf, e = _normal_cdf(x)
    slope = aten.add.Tensor(cdf, aten.mul.Tensor(aten.mul.Tensor(e, _INV_SQRT_2PI), x))
    return _to(aten.mul.Tensor(slope, _to(grad_output, dt.float32)), grad_output.dtype)


def _functional_op(op):
    """`aten.add.Tensor` for `aten.add_.Tensor`; None for anything else."""
    if not isinstance(op, OpOverload) or not op._schema.is_mutable or op.namespace != "aten":
        return None
    packet = op.name().split("::")[1].split(".")[0]
    if not packet.endswith("_") or packet.startswith("_") or packet == "copy_":
        return None
    return getattr(getattr(aten, packet[:-1], None), op._overloadname, None)


def _functionalized(functional):
    def in_place(self, *args, **kwargs):
        return aten.copy_.default(self, functional(self, *args, **kwargs))
    return in_place


class GraphLowering:
    """Walks the graph once; `steps` is the program in order: ComputedBuffers (kernels to
    generate) and Externs (dispatcher calls)."""

    def __init__(self, gm, example_inputs):
        self.gm = gm
        self.env = {}
        self.steps: list = []
        self.inputs: list = []
        self.outputs: list = []
        self.fallbacks: list = []        # (op, reason): what ran through the dispatcher
        self.input_of: dict = {}         # fx node -> the input it is (or is the new value of)
        self.updates: dict = {}          # InputBuffer -> its value after the graph's ops
        self.output_nodes: set = set()   # the nodes the graph returns
        self.constants: list = []        # ConstantBuffers: tensors made at compile time
        self._count = 0
        self.example_inputs = example_inputs
        self.device = graph_device(example_inputs)

    def new_name(self, prefix="buf") -> str:
        name = f"{prefix}{self._count}"
        self._count += 1
        return name

    # ---- the walk ------------------------------------------------------------------------------

    def run(self):
        inputs = iter(self.example_inputs)
        out = next(n for n in reversed(self.gm.graph.nodes) if n.op == "output")
        self.output_nodes = set(_flatten(out.args[0]))
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                ex = next(inputs)
                buf = InputBuffer(node.name, ex.shape, ex.dtype, ex.stride())
                self.inputs.append(buf)
                self.env[node] = self.input_of[node] = buf
            elif node.op == "call_function":
                self.env[node] = self._lower(node)
            elif node.op == "output":
                self.outputs = [self.input_of.get(n, None) or self._output(self._arg(n))
                                for n in _flatten(node.args[0])]
            else:
                raise GraphNotCompilable(f"{node.op} nodes are not supported")
        for target, value in self.updates.items():
            # computed in full before any input is overwritten: later kernels may still
            # read the old values
            self.steps.append(InputUpdate(target, self.realize(value)))
        self.example_inputs = ()      # not kept alive (large tensors) by the graph cache
        return self

    def _arg(self, a):
        if isinstance(a, (list, tuple)):
            return type(a)(self._arg(x) for x in a)
        if hasattr(a, "op") and hasattr(a, "users"):       # an fx Node
            return self.env[a]
        return a

    def _lower(self, node):
        args, kwargs = self._arg(tuple(node.args)), {k: self._arg(v) for k, v in
                                                       node.kwargs.items()}
        if node.target is operator.getitem:
            return args[0][args[1]]
        if not isinstance(node.target, OpOverload):
            raise GraphNotCompilable(f"call of {node.target} is not an ATen op")
        if node.target._schema.is_mutable:
            return self._lower_in_place(node, args, kwargs)
        lowering = LOWERINGS.get(node.target)
        if lowering is not None and _all_nonempty(node.meta.get("val"), self.device) and \
                _reads_only(node, self.device):
            try:
                value = lowering(self, node, *args, **kwargs)
            except Unsupported as e:
                self.fallbacks.append((str(node.target), str(e)))
            else:
                return self._maybe_store(node, value)
        else:
            reason = "no lowering" if lowering is None else \
                f"an empty tensor or one not on {self.device}"
            self.fallbacks.append((str(node.target), reason))
        return self._extern(node, args, kwargs)

    def _lower_in_place(self, node, args, kwargs):
        """An in-place op (after `decompose`, mostly `copy_`). Later ops read the new value
        through this node, as `make_fx` records them, so `copy_` is its source's value; on
        a graph input that value is also written back into the input at the end of the
        graph. Another in-place op on a value only it reads (dropout's `bernoulli_`) runs
        through the dispatcher. Overwriting a view, or a value with views, runs the graph
        eagerly."""
        schema = node.target._schema
        mutated = [a for arg, a in zip(schema.arguments, node.args) if arg.is_mutated]
        target = mutated[0] if len(mutated) == 1 else None
        root = self.input_of.get(target) if target is not None else None
        if root is None:
            if target is None or not hasattr(target, "users") or _aliased(target, node):
                raise GraphNotCompilable(f"{node.target} overwrites a view, or a value a "
                                         "view reads")
            if node.target.name() == "aten::copy_":       # later ops read this node
                return self._functional(node, args, kwargs)
            if len(target.users) > 1:
                raise GraphNotCompilable(f"{node.target} overwrites a value other ops read")
            return self._extern(node, args, kwargs)
        value = self._functional(node, args, kwargs)
        self.updates[root] = value
        self.input_of[node] = root
        return value

    def _functional(self, node, args, kwargs):
        """The value `copy_(x, src)` gives x (`decompose` turned the graph's other in-place
        ops on inputs into their functional op and a `copy_`): src, broadcast to x's shape
        and converted to its dtype."""
        meta = _meta(node)
        if node.target.name() != "aten::copy_" or not _all_nonempty(meta, self.device) or \
                not _reads_only(node, self.device):
            raise GraphNotCompilable(f"{node.target} changes an input")
        return pointwise(self, node, [args[1]], _compute(meta.dtype), lambda kb, v: v)

    def _maybe_store(self, node, value):
        """Store a pointwise chain that is long, or read by several ops and not cheap, or
        that the graph returns: it is stored anyway, so the ops after it read it (in the
        same kernel, from a register) instead of computing it again for the output (a
        forward graph returns the pre-activation and the activation its backward saves).
        A returned value is stored with eager's strides at once: views the graph builds on
        it later address that layout (`_restride_outputs` leaves viewed buffers alone)."""
        cost = getattr(value, "cost", 0)
        if not isinstance(value, (Pointwise, View)):
            return value
        if node in self.output_nodes and layout_of(value) is None:
            meta = _meta(node)
            dense = tuple(meta.shape) == value.shape and is_non_overlapping_and_dense(
                value.shape, tuple(meta.stride()))
            return self.realize(value, tuple(meta.stride()) if dense else None)
        if cost > INLINE_COST_LIMIT or (len(node.users) > 1 and cost > SHARED_COST_LIMIT):
            return self.realize(value)
        return value

    def _extern(self, node, args, kwargs):
        args = _map_values(args, self.realize_for_host)
        kwargs = _map_values(kwargs, self.realize_for_host)
        name = self.new_name()
        val = node.meta.get("val")
        metas = list(val) if isinstance(val, (list, tuple)) else [val]
        if not all(isinstance(m, Tensor) for m in metas):
            raise GraphNotCompilable(f"{node.target} returns {type(val).__name__}, not tensors")
        outputs = [ExternBuffer(f"{name}_{i}" if len(metas) > 1 or isinstance(val, (
            list, tuple)) else name, m.shape, m.dtype, m.stride(), node)
                   for i, m in enumerate(metas)]
        self.steps.append(Extern(name, node.target, args, kwargs, outputs,
                                 isinstance(val, (list, tuple))))
        return tuple(outputs) if isinstance(val, (list, tuple)) else outputs[0]

    def extern_call(self, op, args, shape, dtype, kwargs=None, stride=None) -> ExternBuffer:
        """A dispatcher call made by a lowering (the BLAS call under an epilogue); its
        result is row-major unless `stride` says otherwise."""
        name = self.new_name()
        args = _map_values(args, self.realize_for_host)
        out = ExternBuffer(name, shape, dtype, stride or contiguous_strides(shape), None)
        self.steps.append(Extern(name, op, args, kwargs or {}, [out], False))
        return out

    def _output(self, value):
        if isinstance(value, Value) and not isinstance(value, Buffer) and \
                layout_of(value) is None:
            return self.realize(value)
        return value

    # ---- storing values ------------------------------------------------------------------------

    def realize(self, value, stride=None) -> Buffer:
        """A buffer holding `value` (written by a kernel), or the buffer it already is."""
        if isinstance(value, Buffer):
            return value
        buf = ComputedBuffer(self.new_name(), value, stride or contiguous_strides(value.shape))
        self.steps.append(buf)
        return buf

    def realize_for_host(self, value):
        """What the host code can hand to an op: a buffer, or a view of one."""
        if isinstance(value, Buffer) or layout_of(value) is not None:
            return value
        return self.realize(value)


def _aliased(target, mutation) -> bool:
    """Whether overwriting `target` would change another tensor: it is a view, or another
    op made a view of it."""
    def is_view(n):
        return isinstance(getattr(n, "target", None), OpOverload) and n.target._schema.is_view
    return is_view(target) or any(is_view(u) for u in target.users if u is not mutation)


def graph_device(inputs):
    """The one device of a graph's tensor inputs (the CPU when it has none): its kernels are
    C for the CPU or CUDA C for a GPU, never both."""
    devices = {x.device for x in inputs if isinstance(x, Tensor)}
    if len(devices) > 1:
        raise GraphNotCompilable("its inputs are on several devices: "
                                 + ", ".join(sorted(map(str, devices))))
    return devices.pop() if devices else CPU


def _all_nonempty(val, device) -> bool:
    vals = val if isinstance(val, (list, tuple)) else [val]
    return all(isinstance(v, Tensor) and v.numel() > 0 and v.device == device for v in vals)


def _reads_only(node, device) -> bool:
    """Whether every tensor `node` reads is on `device` (an extern's result may not be: a
    kernel must not read a CPU tensor through a GPU pointer)."""
    for arg in _flatten(list(node.args) + list(node.kwargs.values())):
        val = getattr(arg, "meta", {}).get("val") if hasattr(arg, "users") else None
        if isinstance(val, Tensor) and val.device != device:
            return False
    return True


def _map_values(tree, fn):
    if isinstance(tree, Value):
        return fn(tree)
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map_values(x, fn) for x in tree)
    if isinstance(tree, dict):
        return {k: _map_values(v, fn) for k, v in tree.items()}
    return tree


def _flatten(tree):
    if isinstance(tree, (list, tuple)):
        return [x for t in tree for x in _flatten(t)]
    return [tree]


# ---- layouts of views ----------------------------------------------------------------------------

def layout_of(value):
    """(root buffer, shape, stride, offset) when `value` is a buffer or an affine view of
    one, else None."""
    if isinstance(value, Buffer):
        return value.root, value.shape, value.stride, value.offset
    if isinstance(value, View):
        src = layout_of(value.source)
        if src is None:
            return None
        root, shape, stride, offset = src
        names = [f"d{i}" for i in range(len(value.shape))]
        idx = [ZERO if s == 1 else Index.var(n) for s, n in zip(value.shape, names)]
        address = StridedView(root, shape, stride, offset).address(value.remap(idx))
        return (root, value.shape,
                tuple(address.terms.get(n, 0) for n in names), address.const)
    return None


# ---- helpers for lowerings -----------------------------------------------------------------------

def _meta(node):
    return node.meta["val"]


def _broadcast(value, shape):
    """idx (of `shape`) -> the index of `value`, which broadcasts to `shape`."""
    lead = len(shape) - len(value.shape)
    return lambda idx: [ZERO if s == 1 and shape[lead + d] != 1 else idx[lead + d]
                        for d, s in enumerate(value.shape)]


def _compute(dtype):
    """The dtype an op of this dtype computes in (float for float16/bfloat16)."""
    return dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype


def pointwise(ctx, node, inputs, compute_dtype, body, out_dtype=None):
    """A Pointwise value for `node`: each input (a Value or a Python number) loaded at the
    broadcast index and converted to `compute_dtype` (one dtype, or one per input), then
    `body(kb, *vals)`, converted to the node's dtype."""
    meta = _meta(node)
    shape, out_dtype = tuple(meta.shape), out_dtype or meta.dtype
    loaders, cost = [], 1
    for x in inputs:
        if isinstance(x, Value):
            if x.numel() < math.prod(shape) and getattr(x, "cost", 0) > 1:
                x = ctx.realize(x)                     # not recomputed per broadcast element
            cost += getattr(x, "cost", 0)
            loaders.append((x, _broadcast(x, shape)))
        elif isinstance(x, (bool, int, float)):
            loaders.append((x, None))
        else:
            raise Unsupported(f"operand of type {type(x).__name__}")

    computes = compute_dtype if isinstance(compute_dtype, tuple) else \
        (compute_dtype,) * len(loaders)

    def fn(kb, idx):
        vals = [kb.cast(x.load(kb, remap(idx)), d) if remap else kb.const(x, d)
                for (x, remap), d in zip(loaders, computes)]
        return kb.cast(body(kb, *vals), out_dtype)
    return Pointwise(shape, out_dtype, fn, cost)


def _promoted(*xs):
    """The dtype eager computes a binary op in (PyTorch's promotion, numbers weak)."""
    tensors = [x for x in xs if isinstance(x, Value)]
    result = tensors[0].dtype
    for t in tensors[1:]:
        result = dt.promote_types(result, t.dtype)
    for x in xs:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            continue
        if isinstance(x, float) and result.category < 2:
            result = dt.get_default_dtype()
        elif isinstance(x, int) and result is dt.bool:
            result = dt.int64
    return result


def _op(expr):
    """body(kb, *vals) applying a scalar expression over a, b, c."""
    return lambda kb, *vals: kb.op(expr, vals)


def _unsupported_dtypes(node, *xs, allowed=(0, 1, 2)):
    for x in xs:
        if isinstance(x, Value) and x.dtype.category not in allowed:
            raise Unsupported(f"{x.dtype} operands")
    if _meta(node).dtype.category not in allowed:
        raise Unsupported(f"{_meta(node).dtype} result")


# ---- the lowerings -------------------------------------------------------------------------------

LOWERINGS: dict = {}


def register(*ops):
    """Register a lowering for the named overloads ("add.Tensor"); overloads glasstorch
    does not define are skipped."""
    def deco(fn):
        for name in ops:
            packet, overload = name.rsplit(".", 1)
            namespace = prims_ns if packet.startswith("prims.") else aten
            try:
                op = getattr(getattr(namespace, packet.removeprefix("prims.")), overload)
            except AttributeError:
                continue
            LOWERINGS[op] = fn
        return fn
    return deco


def _float_unary(expr):
    def lower(ctx, node, x):
        _unsupported_dtypes(node, x)
        out = _meta(node).dtype
        return pointwise(ctx, node, [x], _compute(out), _op(expr))
    return lower


for _name in ("log", "sin", "cos", "tan", "tanh", "sqrt", "rsqrt", "erf", "erfc",
              "log1p", "expm1", "exp2", "log2", "log10", "asin", "acos", "atan", "sinh",
              "cosh", "asinh", "acosh", "atanh", "reciprocal", "lgamma"):
    register(f"{_name}.default")(_float_unary(P[_name].expr))

@register("copysign.Tensor")
def _copysign(ctx, node, x, y):
    _unsupported_dtypes(node, x, y, allowed=(2,))
    return pointwise(ctx, node, [x, y], _compute(_meta(node).dtype),
                     _op(Call("copysign", a, b)))


@register("exp.default")
def _exp(ctx, node, x):
    """exp. A softmax over masked scores, exp(masked_fill(s, mask, -inf) - m), is computed
    as where(mask, exp(-inf - m), exp(s - m)), the first term (0; NaN where the row's max m
    is -inf or NaN) without calling exp: for -inf lanes (half of a causal mask's) libmvec's
    vector expf takes its scalar path, 8 times slower. The values are the same."""
    operands = _masked_exp_operands(ctx, node)
    if operands is None:
        return _float_unary(P["exp"].expr)(ctx, node, x)
    compute = _meta(node).dtype

    def body(kb, mask, m, s, ninf, nan, zero):
        closed = kb.op(Select(a, b, c), [kb.op(BinOp(">", a, b), [m, ninf]), zero, nan])
        opened = kb.op(P["exp"].expr, [kb.op(BinOp("-", a, b), [s, m])])
        return kb.op(Select(a, b, c), [mask, closed, opened])
    return pointwise(ctx, node, [*operands, -math.inf, math.nan, 0.0],
                     (dt.bool,) + (compute,) * 5, body)


def _masked_exp_operands(ctx, node):
    """(mask, m, s) when `node` is exp(masked_fill(s, mask, -inf) - m) in float32 or
    float64 (half precision rounds between the ops), else None."""
    def op_of(n):
        return getattr(n, "target", None)
    sub = node.args[0]
    if op_of(sub) is not aten.sub.Tensor or sub.kwargs.get("alpha", 1) != 1 or \
            len(sub.args) != 2:
        return None
    fill, m = sub.args
    if op_of(fill) is not aten.masked_fill.Scalar or fill.args[2] != -math.inf:
        return None
    dtype = _meta(node).dtype
    s, mask = fill.args[:2]
    if dtype not in (dt.float32, dt.float64) or any(
            not hasattr(n, "meta") or _meta(n).dtype is not dtype for n in (fill, m, s)):
        return None
    return ctx.env[mask], ctx.env[m], ctx.env[s]


SIGMOID = BinOp("/", Const(1.0), BinOp("+", Const(1.0), Call("exp", Unary("-", a))))
register("sigmoid.default")(_float_unary(SIGMOID))


def _rounding(expr):
    def lower(ctx, node, x):
        _unsupported_dtypes(node, x)
        if x.dtype.category < 2:                  # integers are already whole
            return pointwise(ctx, node, [x], x.dtype, lambda kb, v: v)
        return pointwise(ctx, node, [x], _compute(x.dtype), _op(expr))
    return lower


for _name, _fn in (("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc"),
                   ("round", "nearbyint")):
    register(f"{_name}.default")(_rounding(Call(_fn, a)))

ABS_INT = Select(BinOp("<", a, Const(0)), Unary("-", a), a)


@register("abs.default")
def _abs(ctx, node, x):
    _unsupported_dtypes(node, x)
    if x.dtype is dt.bool:
        raise Unsupported("abs of bool")
    expr = P["abs"].expr if x.dtype.category == 2 else ABS_INT
    return pointwise(ctx, node, [x], _compute(x.dtype), _op(expr))


@register("neg.default")
def _neg(ctx, node, x):
    _unsupported_dtypes(node, x, allowed=(1, 2))
    return pointwise(ctx, node, [x], _compute(x.dtype), _op(Unary("-", a)))


@register("sign.default")
def _sign(ctx, node, x):
    _unsupported_dtypes(node, x, allowed=(1, 2))
    return pointwise(ctx, node, [x], _compute(x.dtype), _op(P["sign"].expr))


RELU = Select(BinOp("<", a, Const(0)), Const(0), a)    # keeps nan (nan < 0 is false)


@register("relu.default")
def _relu(ctx, node, x):
    _unsupported_dtypes(node, x, allowed=(1, 2))
    return pointwise(ctx, node, [x], _compute(x.dtype), _op(RELU))


@register("logical_not.default")
def _logical_not(ctx, node, x):
    _unsupported_dtypes(node, x)
    return pointwise(ctx, node, [x], dt.bool, _op(Unary("!", a)))


@register("bitwise_not.default")
def _bitwise_not(ctx, node, x):
    _unsupported_dtypes(node, x, allowed=(0, 1))
    expr = Unary("!", a) if x.dtype is dt.bool else Unary("~", a)
    return pointwise(ctx, node, [x], x.dtype, _op(expr))


@register("isnan.default")
def _isnan(ctx, node, x):
    _unsupported_dtypes(node, x)
    return pointwise(ctx, node, [x], _compute(x.dtype), _op(BinOp("!=", a, a)))


def _arith(expr, allowed=(0, 1, 2)):
    """add/mul/...: computed in the result dtype (the operands promoted to it)."""
    def lower(ctx, node, x, y, *, alpha=1):
        _unsupported_dtypes(node, x, y, allowed=allowed)
        compute = _compute(_meta(node).dtype)
        if alpha != 1:
            scaled = (lambda kb, u, v, k: kb.op(expr, [u, kb.op(BinOp("*", a, b), [v, k])]))
            return pointwise(ctx, node, [x, y, alpha], compute, scaled)
        return pointwise(ctx, node, [x, y], compute, _op(expr))
    return lower


register("add.Tensor", "add.Scalar")(_arith(BinOp("+", a, b)))
register("sub.Tensor", "sub.Scalar")(_arith(BinOp("-", a, b), allowed=(1, 2)))
register("mul.Tensor", "mul.Scalar")(_arith(BinOp("*", a, b)))


@register("rsub.Tensor", "rsub.Scalar")
def _rsub(ctx, node, x, y, *, alpha=1):
    return _arith(BinOp("-", a, b), allowed=(1, 2))(ctx, node, y, x, alpha=alpha)


@register("div.Tensor", "div.Scalar", "div.Tensor_mode", "div.Scalar_mode")
def _div(ctx, node, x, y, *, rounding_mode=None):
    if rounding_mode is not None:
        raise Unsupported(f"rounding_mode={rounding_mode!r}")
    _unsupported_dtypes(node, x, y)
    return pointwise(ctx, node, [x, y], _compute(_meta(node).dtype), _op(BinOp("/", a, b)))


@register("pow.Tensor_Scalar", "pow.Tensor_Tensor")
def _pow(ctx, node, x, y):
    _unsupported_dtypes(node, x, y, allowed=(2,))
    if isinstance(y, (int, float)) and y == 2:           # eager squares exactly
        return pointwise(ctx, node, [x], _compute(_meta(node).dtype),
                         lambda kb, v: kb.op(BinOp("*", a, a), [v]))
    return pointwise(ctx, node, [x, y], _compute(_meta(node).dtype), _op(P["pow"].expr))


def _minmax(name):
    def lower(ctx, node, x, y):
        _unsupported_dtypes(node, x, y, allowed=(1, 2))
        return pointwise(ctx, node, [x, y], _compute(_meta(node).dtype), _op(P[name].expr))
    return lower


register("maximum.default")(_minmax("maximum"))
register("minimum.default")(_minmax("minimum"))


def _comparison(expr):
    def lower(ctx, node, x, y):
        _unsupported_dtypes(node, x, y)
        return pointwise(ctx, node, [x, y], _compute(_promoted(x, y)), _op(expr))
    return lower


for _name, _sym in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"),
                    ("ge", ">=")):
    register(f"{_name}.Tensor", f"{_name}.Scalar")(
        _comparison(BinOp(_sym, a, b)))


def _logical(expr):
    def lower(ctx, node, x, y):
        _unsupported_dtypes(node, x, y)
        return pointwise(ctx, node, [x, y], dt.bool, _op(expr))
    return lower


register("logical_and.default")(_logical(BinOp("&&", a, b)))
register("logical_or.default")(_logical(BinOp("||", a, b)))
register("logical_xor.default")(_logical(BinOp("!=", a, b)))


def _bitwise(expr):
    def lower(ctx, node, x, y):
        _unsupported_dtypes(node, x, y, allowed=(0, 1))
        return pointwise(ctx, node, [x, y], _meta(node).dtype, _op(expr))
    return lower


for _name, _sym in (("bitwise_and", "&"), ("bitwise_or", "|"), ("bitwise_xor", "^")):
    register(f"{_name}.Tensor", f"{_name}.Scalar")(
        _bitwise(BinOp(_sym, a, b)))


@register("where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar")
def _where(ctx, node, cond, x, y):
    _unsupported_dtypes(node, cond, x, y)
    compute = _compute(_meta(node).dtype)
    return pointwise(ctx, node, [cond, x, y], (dt.bool, compute, compute),
                     _op(Select(a, b, c)))


@register("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(ctx, node, x, mask, value):
    _unsupported_dtypes(node, x, mask, value)
    if isinstance(value, Value) and value.shape != ():
        raise Unsupported("a fill value that is not 0-dimensional")
    compute = _compute(_meta(node).dtype)
    return pointwise(ctx, node, [mask, value, x], (dt.bool, compute, compute),
                     _op(Select(a, b, c)))


@register("clamp.default", "clamp.Tensor", "clamp_min.default", "clamp_min.Tensor",
          "clamp_max.default", "clamp_max.Tensor")
def _clamp(ctx, node, x, *bounds, **kw):
    if str(node.target).startswith("aten.clamp_min"):
        lo, hi = (bounds[0] if bounds else kw.get("min")), None
    elif str(node.target).startswith("aten.clamp_max"):
        lo, hi = None, (bounds[0] if bounds else kw.get("max"))
    else:
        lo = bounds[0] if len(bounds) > 0 else kw.get("min")
        hi = bounds[1] if len(bounds) > 1 else kw.get("max")
    _unsupported_dtypes(node, x, lo, hi, allowed=(1, 2))
    operands = [x] + [v for v in (lo, hi) if v is not None]
    has_lo, has_hi = lo is not None, hi is not None

    def body(kb, v, *lims):
        lims = list(lims)
        if has_lo:
            v = kb.op(P["maximum"].expr, [v, lims.pop(0)])
        if has_hi:
            v = kb.op(P["minimum"].expr, [v, lims.pop(0)])
        return v
    return pointwise(ctx, node, operands, _compute(_meta(node).dtype), body)


# ---- conversions, copies, factories --------------------------------------------------------------

@register("arange.default", "arange.start", "arange.start_step")
def _arange(ctx, node, *args, **kwargs):
    """A constant, made now (PyTorch's Inductor folds constants too): an attention's causal
    mask compares two aranges, which then cost no dispatch per call. Not when the graph
    returns it or an op may write it (each call must see a fresh tensor)."""
    if not _only_read(node, ctx.output_nodes):
        raise Unsupported("the graph returns or writes it")
    with no_grad():
        tensor = node.target(*args, **kwargs)
    if tensor.device != ctx.device:
        raise Unsupported(f"not on the graph's device, {ctx.device}")
    buf = ConstantBuffer(ctx.new_name(), tensor)
    ctx.constants.append(buf)
    return buf


def _only_read(node, outputs) -> bool:
    """Whether the graph neither returns `node` nor lets an op write it or a view of it."""
    if node in outputs:
        return False
    for user in node.users:
        schema = getattr(user.target, "_schema", None)
        if schema is None or schema.is_mutable:
            return False
        if schema.is_view and not _only_read(user, outputs):
            return False
    return True


@register("_to_copy.default")
def _to_copy(ctx, node, x, *, dtype=None, layout=None, device=None, pin_memory=None,
             non_blocking=False, memory_format=None):
    if memory_format not in (None, preserve_format):
        raise Unsupported("a copy to another memory format")
    _unsupported_dtypes(node, x)
    return pointwise(ctx, node, [x], x.dtype, lambda kb, v: v)


@register("clone.default", "lift_fresh_copy.default")
def _clone(ctx, node, x, *, memory_format=None):
    _unsupported_dtypes(node, x)
    return pointwise(ctx, node, [x], x.dtype, lambda kb, v: v)


@register("full.default", "zeros.default", "ones.default", "scalar_tensor.default",
          "full_like.default", "zeros_like.default", "ones_like.default",
          "prims.full.default")
def _full(ctx, node, *args, **kwargs):
    meta = _meta(node)
    name = str(node.target)
    if "zeros" in name:
        value = 0
    elif "ones" in name:
        value = 1
    elif "scalar_tensor" in name:
        value = args[0]
    else:
        value = args[1]
    if not isinstance(value, (bool, int, float)):
        raise Unsupported("a fill value that is not a number")
    _unsupported_dtypes(node)
    return pointwise(ctx, node, [value], _compute(meta.dtype), lambda kb, v: v)


@register("empty_like.default", "empty.memory_format", "new_empty.default")
def _empty(ctx, node, *args, **kwargs):
    """An allocation, laid out as eager's: no need to compute the tensor it copies the
    shape of."""
    meta = _meta(node)
    return ctx.extern_call(aten.empty_strided.default, (list(meta.shape), list(meta.stride())),
                           tuple(meta.shape), meta.dtype, {"dtype": meta.dtype},
                           tuple(meta.stride()))


# ---- views ---------------------------------------------------------------------------------------

def _view(ctx, node, x, remap, meta=None):
    """A view of `x`: on a buffer, another layout of the same memory; else index arithmetic.
    `meta`: the view's metadata (default: the node's; one of its results for split)."""
    meta = _meta(node) if meta is None else meta
    v = View(x, meta.shape, remap)
    layout = layout_of(v)
    if layout is not None:
        root, shape, stride, offset = layout
        return StridedView(root, shape, _size1_strides(node, stride, meta), offset)
    return v


def _size1_strides(node, stride, meta=None) -> tuple:
    """`stride` with eager's strides for dims of size 1 (which address nothing, so only
    the view op's rule decides them; the node's metadata has eager's)."""
    meta = _meta(node) if meta is None else meta
    return tuple(m if n == 1 else s for s, m, n in zip(stride, meta.stride(), meta.shape))


def _dim(d, n):
    return d % max(n, 1)


@register("permute.default")
def _permute(ctx, node, x, dims):
    dims = [_dim(d, len(x.shape)) for d in dims]

    def remap(idx):
        out = [None] * len(dims)
        for i, d in enumerate(dims):
            out[d] = idx[i]
        return out
    return _view(ctx, node, x, remap)


@register("t.default", "transpose.int")
def _transpose(ctx, node, x, d0=0, d1=1):
    n = len(x.shape)
    if n < 2:
        return _view(ctx, node, x, lambda idx: idx)
    d0, d1 = _dim(d0, n), _dim(d1, n)

    def remap(idx):
        out = list(idx)
        out[d0], out[d1] = idx[d1], idx[d0]
        return out
    return _view(ctx, node, x, remap)


@register("expand.default")
def _expand(ctx, node, x, size, *, implicit=False):
    return _view(ctx, node, x, _broadcast(x, tuple(_meta(node).shape)))


@register("unsqueeze.default")
def _unsqueeze(ctx, node, x, dim):
    d = dim % (len(x.shape) + 1)
    return _view(ctx, node, x, lambda idx: idx[:d] + idx[d + 1:])


@register("squeeze.dim", "squeeze.dims", "squeeze.default")
def _squeeze(ctx, node, x, dims=None):
    n = len(x.shape)
    if dims is None:
        dims = range(n)
    elif isinstance(dims, int):
        dims = [dims]
    gone = {_dim(d, n) for d in dims if x.shape[_dim(d, n)] == 1}

    def remap(idx):
        it = iter(idx)
        return [ZERO if d in gone else next(it) for d in range(n)]
    return _view(ctx, node, x, remap)


@register("slice.Tensor")
def _slice(ctx, node, x, dim=0, start=None, end=None, step=1):
    d = _dim(dim, len(x.shape))
    size = x.shape[d]
    start = 0 if start is None else (start + size if start < 0 else start)
    start = min(max(start, 0), size)

    def remap(idx):
        out = list(idx)
        out[d] = idx[d] * step + start
        return out
    return _view(ctx, node, x, remap)


@register("split.Tensor", "split_with_sizes.default")
def _split(ctx, node, x, split_size, dim=0):
    """Slices along `dim`, one per result: views, so an op reading them (attention's q, k
    and v out of one projection) gets the buffer's memory with no split call."""
    d = _dim(dim, len(x.shape))
    outs, start = [], 0
    for meta in _meta(node):
        def remap(idx, start=start):
            out = list(idx)
            out[d] = idx[d] + start
            return out
        outs.append(_view(ctx, node, x, remap, meta))
        start += meta.shape[d]
    return outs


@register("select.int")
def _select(ctx, node, x, dim, index):
    d = _dim(dim, len(x.shape))
    index = index + x.shape[d] if index < 0 else index
    return _view(ctx, node, x, lambda idx: idx[:d] + [Index(const=index)] + idx[d:])


@register("alias.default", "detach.default")
def _alias(ctx, node, x):
    return _view(ctx, node, x, lambda idx: idx)


@register("view.default", "_unsafe_view.default", "reshape.default")
def _reshape(ctx, node, x, size):
    new_shape = tuple(_meta(node).shape)
    layout = layout_of(x)
    if layout is not None:
        root, shape, stride, offset = layout
        strides = view_strides(shape, stride, new_shape)
        if strides is not None:
            return StridedView(root, new_shape, _size1_strides(node, strides), offset)
    remap = _split_remap(x.shape, new_shape)
    if remap is not None:
        return View(x, new_shape, remap)
    buf = ctx.realize(x)
    return StridedView(buf, new_shape, _size1_strides(node, contiguous_strides(new_shape)), 0)


def _split_remap(old, new):
    """The remap of a reshape that only splits dims (and adds or drops 1s), else None: a
    merge would need division, which our affine indices do not have."""
    old_dims = [(d, s) for d, s in enumerate(old) if s != 1]
    new_dims = [(d, s) for d, s in enumerate(new) if s != 1]
    plan, j = [], 0                      # per old dim: the new dims it splits into
    for d, s in old_dims:
        group, size = [], 1
        while size < s and j < len(new_dims):
            group.append(new_dims[j][0])
            size *= new_dims[j][1]
            j += 1
        if size != s:
            return None
        plan.append((d, group))

    def remap(idx):
        out = [ZERO] * len(old)
        for d, group in plan:
            index, step = ZERO, 1
            for nd in reversed(group):
                index = index + idx[nd] * step
                step *= new[nd]
            out[d] = index
        return out
    return remap


# ---- reductions ----------------------------------------------------------------------------------

def _reduction(ctx, node, x, dims, kind, correction=0, acc_dtype=None):
    meta = _meta(node)
    if not isinstance(x, Value):
        raise Unsupported("a reduction of a number")
    _unsupported_dtypes(node, x)
    n = len(x.shape)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        dims = range(n)
    elif isinstance(dims, int):
        dims = [dims]
    dims = sorted({_dim(d, n) for d in dims})
    if any(x.shape[d] == 0 for d in dims):
        raise Unsupported("a reduction over an empty dim")
    acc = acc_dtype or (_compute(meta.dtype) if kind in ("sum", "prod", "mean", "var")
                        else _compute(x.dtype))

    def fn(kb, idx):
        return kb.cast(x.load(kb, idx), acc)
    red = Reduction(meta.shape, meta.dtype, acc, x.shape, dims, fn, kind, correction, x.dtype)
    buf = ComputedBuffer(ctx.new_name(), red, contiguous_strides(meta.shape))
    ctx.steps.append(buf)
    return buf


@register("sum.dim_IntList", "sum.default")
def _sum(ctx, node, x, dim=None, keepdim=False, *, dtype=None):
    return _reduction(ctx, node, x, dim, "sum")


@register("prod.default", "prod.dim_int")
def _prod(ctx, node, x, dim=None, keepdim=False, *, dtype=None):
    return _reduction(ctx, node, x, dim, "prod")


@register("mean.dim", "mean.default")
def _mean(ctx, node, x, dim=None, keepdim=False, *, dtype=None):
    if _meta(node).dtype.category != 2:
        raise Unsupported("mean of integers")
    return _reduction(ctx, node, x, dim, "mean")


@register("amax.default", "max.default")
def _amax(ctx, node, x, dim=None, keepdim=False):
    return _reduction(ctx, node, x, dim, "amax")


@register("amin.default", "min.default")
def _amin(ctx, node, x, dim=None, keepdim=False):
    return _reduction(ctx, node, x, dim, "amin")


@register("var.correction")
def _var(ctx, node, x, dim=None, *, correction=None, keepdim=False):
    if _meta(node).dtype.category != 2:
        raise Unsupported("var of integers")
    return _reduction(ctx, node, x, dim, "var", 1 if correction is None else correction)


# ---- matrix products ----------------------------------------------------------------------------

@register("addmm.default")
def _addmm(ctx, node, bias, m1, m2, *, beta=1, alpha=1):
    """The BLAS call (mm) through the dispatcher, then bias and scaling as a pointwise
    epilogue, which fuses with the ops after it (an activation)."""
    meta = _meta(node)
    if meta.dtype not in (dt.float32, dt.float64) or not isinstance(bias, Value):
        raise Unsupported(f"{meta.dtype} addmm")
    product = ctx.extern_call(aten.mm.default, (m1, m2), tuple(meta.shape), meta.dtype)
    def body(kb, b_val, p_val):
        if beta != 1:
            b_val = kb.op(BinOp("*", a, b), [b_val, kb.const(beta, meta.dtype)])
        if alpha != 1:
            p_val = kb.op(BinOp("*", a, b), [p_val, kb.const(alpha, meta.dtype)])
        return kb.op(BinOp("+", a, b), [b_val, p_val])
    return pointwise(ctx, node, [bias, product], meta.dtype, body)
