"""Linear layers, normalization (batch, layer, group, instance, RMS, local response),
embeddings and one_hot: the ops behind torch.nn.functional's functions of those families.

The normalizations share one kernel (backends/cpu/normalization.py, with the embedding
kernels): statistics over some axes in float32 for float16/bfloat16 inputs (float64 stays
float64), mean and 1/sqrt(biased var + eps) saved as outputs for the derivatives in
normalization_derivatives.py. Composites (linear, bilinear,
instance_norm, rms_norm, local_response_norm) are written in other ops, as PyTorch's are.
"""
from __future__ import annotations

from math import prod

from ...core.grad_state import grad_disabled
from ...core import dtype as dt
from ...core.shape import Size, channels_last_strides, contiguous_strides, is_contiguous
from ...core.device import META
from ...core.tensor import Tensor, contiguous_format, suggest_memory_format
from ..shape.joining import cat
from ..linalg.products import addmm, einsum, matmul, mm
from ..pointwise import elementwise
from ..registry import PLAIN_FLOATS, TensorSpec, composite, kernel_op, structured
from ..autocast import FP32, autocast_policy
from ..shape.views import _view_method as _view, unsafe_view_op
from ...backends.cpu.normalization import (LOW, batch_norm_cpu, channel_shape, check_indices,
    embedding_bag_checks, embedding_bag_cpu, embedding_cpu, embedding_grad_cpu,
    embedding_renorm_cpu, group_norm_cpu, layer_norm_backward_cpu, layer_norm_cpu,
    layer_norm_last_dim, one_hot_cpu)

# ---- linear layers ---------------------------------------------------------------------

_mm, _addmm = mm.function, addmm.function


def linear(input, weight, bias=None):
    """input @ weight.T + bias: one addmm where PyTorch uses one (a 2-D input, or a
    contiguous input flattened to 2-D with a 1-D bias), else matmul (folded to 2-D as
    PyTorch's does) then the bias. It runs in every layer, so it reads the input's shape
    tuple and calls the folding views directly (a contiguous input's reshape is its view):
    the calls a mode sees stay PyTorch's."""
    shape = input._shape
    dim = len(shape)
    if dim == 0 or weight.dim() == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{dim}D and {weight.dim()}D")
    if bias is not None:
        if dim == 2:
            return _addmm(bias, input, weight.t())
        if bias.dim() == 1 and input.is_contiguous():
            flat = _addmm(bias, _view(input, (prod(shape[:-1]), shape[-1])), weight.t())
            return _view(flat, shape[:-1] + flat._shape[1:])
    if dim >= 2 and weight.dim() == 2:
        # matmul's decomposition, spelled out as PyTorch's runs it (a mode sees t, then mm;
        # a batched input is folded to rows, copied if need be, and unfolded), so the
        # weight's gradient is one mm rather than a batched product summed over the batch
        weight_t = weight.t()
        if dim == 2:
            return _mm(input, weight_t)         # (with a bias: addmm, above)
        rows = (prod(shape[:-1]), shape[-1])
        flat = _mm(_view(input, rows) if input.is_contiguous() else input.reshape(rows),
                   weight_t)
        out = unsafe_view_op.functional(flat, shape[:-1] + flat._shape[1:])
    else:
        out = matmul(input, weight.t())
    return out if bias is None else out + bias


@composite()
def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} "
                           f"and {input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: "
                               f"got {input1.shape[d]} and {input2.shape[d]}")
    if weight.dim() != 3:
        raise RuntimeError("bilinear(): weight must be 3-D (out_features, in1_features, "
                           f"in2_features), got {weight.dim()}-D")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError("bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError("bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        got = bias.shape[0] if bias.dim() == 1 else list(bias.shape)
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but "
                           f"expected {weight.shape[0]}")
    if not (input1.dtype is input2.dtype is weight.dtype):
        names = (input1.dtype, input2.dtype, weight.dtype)
        raise RuntimeError("All tensors must have the same dtype, got input1: {}, input2: {}, "
                           "weight: {}".format(*(d.cname.lower() for d in names)))
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


# ---- shared helpers ----------------------------------------------------------------------

def _check_float(kernel_name: str, input: Tensor) -> None:
    if input.dtype.category != dt.FLOAT:
        raise NotImplementedError(f'"{kernel_name}" not implemented for '
                                  f"'{input.dtype.cname}'")


def _stats_dtype(input: Tensor, *params) -> dt.dtype:
    """The dtype of the saved statistics: the input's, or float32 when a float16/bfloat16
    input comes with float32 parameters (PyTorch's CPU mixed-dtype mode)."""
    d = input.dtype
    given = [p for p in params if p is not None]
    if all(p.dtype is d for p in given):
        return d
    if d not in LOW:
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    if all(p.dtype is dt.float32 for p in given):
        return dt.float32
    raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")


def _suggests_channels_last(shape, stride) -> bool:
    """batch_norm's layout rule: a 4-D/5-D tensor, not contiguous, whose strides order
    channels fastest (dense or not) gives channels_last results. Stricter than
    `suggest_memory_format` where a tensor is both (size-1 channels), as PyTorch's."""
    n = len(shape)
    if n not in (4, 5) or is_contiguous(shape, stride):
        return False
    order = (1, 3, 2, 0) if n == 4 else (1, 4, 3, 2, 0)
    seen = [d for d in order if shape[d] != 1]
    return all(stride[a] < stride[b] for a, b in zip(seen, seen[1:]))


def _layout_strides(input: Tensor) -> tuple:
    """batch_norm's output strides: channels-last where the input orders channels fastest
    and is not also contiguous (a (2, 1, 4, 5) channels-last input gives a contiguous
    output, as in PyTorch)."""
    shape = input._shape
    if _suggests_channels_last(shape, input._stride):
        return channels_last_strides(shape)
    return contiguous_strides(shape)


def _suggested_strides(input: Tensor) -> tuple:
    """group_norm's output strides: those of PyTorch's suggest_memory_format for the input
    (channels-last also where the input is contiguous too, as a (2, 1, 4, 5) one)."""
    shape = input._shape
    if suggest_memory_format(shape, input._stride) is contiguous_format:
        return contiguous_strides(shape)
    return channels_last_strides(shape)


# ---- layer norm --------------------------------------------------------------------------

def _layer_norm_checks(input, normalized_shape, weight, bias) -> None:
    shape = list(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and list(p._shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(p._shape)} and normalized_shape = "
                               f"{shape}")
    n = len(shape)
    if input.dim() < n or list(input._shape[input.dim() - n:]) != shape:
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input._shape)}")


def _layer_norm_meta(input, normalized_shape, weight, bias, eps):
    _layer_norm_checks(input, normalized_shape, weight, bias)
    _check_float("LayerNormKernelImpl", input)
    if input.device.type == "cuda" and input.dtype in (dt.float16, dt.bfloat16):
        stats = dt.float32              # PyTorch's CUDA kernel keeps its accumulation type
    else:
        stats = _stats_dtype(input, weight, bias)
    k = input.dim() - len(normalized_shape)
    stat_shape = Size(tuple(input._shape[:k]) + (1,) * len(normalized_shape))
    return (TensorSpec(input._shape, input.dtype, contiguous_strides(input._shape)),
            TensorSpec(stat_shape, stats, contiguous_strides(stat_shape)),
            TensorSpec(stat_shape, stats, contiguous_strides(stat_shape)))


native_layer_norm = structured(
    "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
    "float eps) -> (Tensor, Tensor, Tensor)", _layer_norm_meta, method=False, inplace=False,
    out=False)
native_layer_norm.impl("CPU")(layer_norm_cpu)


def _vector_of(t, n: int, d: dt.dtype) -> bool:
    """Whether `t` is None or an (n,) tensor of dtype `d`, its elements adjacent. Of any
    class: LayerNorm's weight and bias are Parameters, and what reaches a CPU kernel is read
    by its data alone."""
    return t is None or (isinstance(t, Tensor) and t.dtype is d and t._shape == (n,)
                         and (t._stride == (1,) or n == 1))


def _last_dim_layer_norm(general):
    """native_layer_norm's fast path (`OpDeclaration.fast_path`): a row-major float32 or
    float64 input of at least one row normalized over its last dim, weight and bias (or
    None) vectors of its dtype, as every transformer block calls it: the C kernel that
    `layer_norm_cpu` runs there, on outputs made by `layer_norm_last_dim`, without the meta
    function's checks and specs (nanoGPT's F.layer_norm of (8, 32, 64) needing grad:
    39.7 -> 34.4 us a call, then 17.4 -> 15.0 us)."""
    def kernel(input, normalized_shape, weight, bias, eps):
        if input.__class__ is Tensor and len(normalized_shape) == 1 and \
                input.dtype in PLAIN_FLOATS:
            shape, d = input._shape, input.dtype
            n = shape[-1] if shape else 0
            if n and normalized_shape[0] == n and 0 not in shape and \
                    input._stride == contiguous_strides(shape) and \
                    _vector_of(weight, n, d) and _vector_of(bias, n, d):
                outs = layer_norm_last_dim(input, weight, bias, eps)
                if outs is not None:
                    return outs
        return general(input, normalized_shape, weight, bias, eps)
    return kernel


native_layer_norm.fast_path(_last_dim_layer_norm)


def _layer_norm_backward_meta(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                              output_mask):
    def like(t):
        return Tensor._empty(t._shape, t.dtype, META)
    return (like(input) if output_mask[0] else None,
            like(weight) if output_mask[1] and weight is not None else None,
            like(bias) if output_mask[2] and bias is not None else None)


native_layer_norm_backward = kernel_op(
    "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, "
    "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> "
    "(Tensor, Tensor, Tensor)", method=False, function=False)
native_layer_norm_backward.impl("CPU")(layer_norm_backward_cpu)
native_layer_norm_backward.impl("Meta")(_layer_norm_backward_meta)


@composite()
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """Normalize over the trailing `normalized_shape` dims, then scale and shift."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return native_layer_norm(input, tuple(normalized_shape), weight, bias, eps)[0]


# ---- batch norm --------------------------------------------------------------------------

def _batch_norm_checks(input, weight, bias, running_mean, running_var) -> None:
    if input.dim() < 2:
        raise RuntimeError("batch_norm(): expected input of shape (N, C, *) with at least 2 "
                           f"dimensions, but got input of size {list(input._shape)}")
    c = input._shape[1]
    for name, p in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if p is not None and p.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {p.numel()}")


def _batch_norm_meta(input, weight, bias, running_mean, running_var, training, momentum, eps):
    _batch_norm_checks(input, weight, bias, running_mean, running_var)
    _check_float("batch_norm", input)
    stats = _stats_dtype(input, weight, bias, running_mean, running_var)
    if input.numel() == 0:
        raise RuntimeError("input tensor must have at least one element, but got input_sizes "
                           f"= {list(input._shape)}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    n = input._shape[1] if training else 0
    return (TensorSpec(input._shape, input.dtype, _layout_strides(input)),
            TensorSpec(Size((n,)), stats, (1,)), TensorSpec(Size((n,)), stats, (1,)))


native_batch_norm = structured(
    "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, "
    "Tensor)", _batch_norm_meta, method=False, inplace=False, out=False)
native_batch_norm.impl("CPU")(batch_norm_cpu)


@composite()
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """Normalize each channel over the batch and spatial dims (training) or with the
    running statistics (eval); training updates the running statistics in place."""
    if input.numel() == 0:          # nothing to normalize: keep the graph to the parameters
        _batch_norm_checks(input, weight, bias, running_mean, running_var)
        out = input.clone()
        if weight is not None:
            out = out * weight.reshape(channel_shape(input))
        if bias is not None:
            out = out + bias.reshape(channel_shape(input))
        return out
    return native_batch_norm(input, weight, bias, running_mean, running_var, training,
                             momentum, eps)[0]


@composite()
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """Batch norm of the (1, N*C, *) view: each (sample, channel) plane normalized alone;
    running statistics are the mean over the batch of the per-sample updates."""
    if input.dim() < 2:
        raise RuntimeError("instance_norm(): expected input of shape (N, C, *) with at least 2 "
                           f"dimensions, but got input of size {list(input._shape)}")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    n, c = input._shape[0], input._shape[1]
    folded = input.contiguous().view((1, n * c) + tuple(input._shape[2:]))
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    out = batch_norm(folded, w, b, rm, rv, use_input_stats, momentum, eps, cudnn_enabled)
    if use_input_stats:
        with grad_disabled():
            if running_mean is not None:
                running_mean.copy_(rm.view(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.view(n, c).mean(0))
    return out.view(input._shape)


# ---- group norm --------------------------------------------------------------------------

def _group_norm_meta(input, weight, bias, N, C, HxW, group, eps):
    _check_float("GroupNormKernelImpl", input)
    stats = _stats_dtype(input, weight, bias)
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements (N={N}, C={C}, "
                           f"HxW={HxW}), but got input of size {list(input._shape)}")
    if group <= 0 or C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input._shape)} and "
                           f"num_groups={group}")
    return (TensorSpec(input._shape, input.dtype, _suggested_strides(input)),
            TensorSpec(Size((N, group)), stats, contiguous_strides((N, group))),
            TensorSpec(Size((N, group)), stats, contiguous_strides((N, group))))


native_group_norm = structured(
    "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, "
    "SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)", _group_norm_meta,
    method=False, inplace=False, out=False)
native_group_norm.impl("CPU")(group_norm_cpu)


@composite()
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """Normalize each group of num_groups' channels over its channels and spatial dims."""
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input._shape[0], input._shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input._shape)} and "
                           f"num_groups={num_groups}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (p.dim() != 1 or p.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(p._shape)} "
                               f"and input of shape {list(input._shape)}")
    hxw = prod(input._shape[2:])
    return native_group_norm(input, weight, bias, n, c, hxw, num_groups, eps)[0]


# ---- RMS norm and local response norm ----------------------------------------------------

_add_scalar_ = elementwise.add.overload("Scalar").inplace   # as PyTorch's rms_norm calls it


@composite()
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input^2) + eps) over the trailing dims, times weight; float16 and
    bfloat16 compute in float32. eps defaults to the machine epsilon of that dtype."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    _layer_norm_checks(input, normalized_shape, weight, None)
    _check_float("rms_norm", input)
    low = input.dtype in LOW
    x = input.float() if low else input
    if eps is None:
        eps = dt.finfo(x.dtype).eps
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    out = x * _add_scalar_(x.pow(2).mean(dims, keepdim=True), eps).rsqrt()
    if weight is not None:
        out = out * (weight.float() if low else weight)
    return out.to(input.dtype) if low else out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input^2 over `size` neighbouring channels)^beta, the
    window zero-padded (size // 2 before, (size - 1) // 2 after)."""
    if input.dim() < 3:
        raise ValueError("Expected 3D or higher dimensionality input (got "
                         f"{input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    c = input._shape[1]
    sq = input * input
    before, after = size // 2, (size - 1) // 2
    pads = []
    if before:
        pads.append(sq.new_zeros((input._shape[0], before) + tuple(input._shape[2:])))
    pads.append(sq)
    if after:
        pads.append(sq.new_zeros((input._shape[0], after) + tuple(input._shape[2:])))
    padded = cat(pads, 1) if len(pads) > 1 else sq
    window = padded.narrow(1, 0, c)
    for i in range(1, size):
        window = window + padded.narrow(1, i, c)
    div = (window * (alpha / size) + k).pow(beta)
    return input / div


# ---- embeddings --------------------------------------------------------------------------

def _embedding_meta(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if sparse:
        raise NotImplementedError("embedding(): sparse=True (sparse gradients) is not "
                                  "supported by glasstorch; use sparse=False")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    check_indices("embedding", "indices", 1, indices)
    shape = Size(tuple(indices._shape) + (weight._shape[1],))
    return TensorSpec(shape, weight.dtype, contiguous_strides(shape))


embedding = structured(
    "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq="
    "False, bool sparse=False) -> Tensor", _embedding_meta, method=False, inplace=False,
    out=False)
embedding.impl("CPU")(embedding_cpu)


def _embedding_grad_meta(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    shape = Size((num_weights, grad_output._shape[-1]))
    return TensorSpec(shape, grad_output.dtype, contiguous_strides(shape))


embedding_dense_backward = structured(
    "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
    "SymInt padding_idx, bool scale_grad_by_freq) -> Tensor", _embedding_grad_meta,
    method=False, function=False, inplace=False, out=False)
embedding_dense_backward.impl("CPU")(embedding_grad_cpu)


embedding_renorm_ = kernel_op(
    "embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> "
    "Tensor(a!)", method=False, mutates=(0,))
embedding_renorm_.impl("CPU")(embedding_renorm_cpu)
embedding_renorm_.on_cuda = "shared"


def _embedding_renorm_meta(self, indices, max_norm, norm_type):
    check_indices("embedding_renorm_", "indices", 2, indices)
    return self


embedding_renorm_.impl("Meta")(_embedding_renorm_meta)


# ---- embedding bags ----------------------------------------------------------------------

_embedding_bag = kernel_op(
    "_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq="
    "False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool "
    "include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)",
    method=False)
_embedding_bag.impl("CPU")(embedding_bag_cpu)


_embedding_bag.on_cuda = "host"   # bag layout and max_indices built from host-side index scans


def _embedding_bag_meta(weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                        sparse=False, per_sample_weights=None, include_last_offset=False,
                        padding_idx=-1):
    embedding_bag_checks(weight, indices, offsets, mode, sparse, per_sample_weights)
    bags = max(offsets.numel() - (1 if include_last_offset else 0), 0)
    dim, device = weight._shape[1], weight.device
    return (Tensor._empty((bags, dim), weight.dtype, device),
            Tensor._empty(tuple(indices._shape), dt.int64, device),
            Tensor._empty((bags,), dt.int64, device),
            Tensor._empty((bags, dim) if mode == 2 else (bags,), dt.int64, device))


_embedding_bag.impl("Meta")(_embedding_bag_meta)


@composite()
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows: (output, offset2bag, bag_size,
    max_indices)."""
    if padding_idx is None:
        padding_idx = -1
    return _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                          per_sample_weights, include_last_offset, padding_idx)


# ---- one_hot -----------------------------------------------------------------------------

one_hot = kernel_op("one_hot(Tensor self, int num_classes=-1) -> Tensor", method=False,
                    function=False, tags=("dynamic_output_shape",))
one_hot.impl("CPU")(one_hot_cpu)


one_hot.on_cuda = "shared"


# autocast runs these in another precision (ops/autocast.py)
autocast_policy(native_layer_norm, cuda=FP32)
