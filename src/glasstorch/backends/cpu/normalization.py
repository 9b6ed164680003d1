"""CPU kernels for normalization (layer, batch, group norm) and embeddings (embedding, its
gradient and renorm, embedding_bag, one_hot): NumPy code in the op's compute dtype, also run
on CuPy arrays for CUDA tensors."""
from __future__ import annotations

from functools import lru_cache
from math import prod

import numpy as np

from . import native
from .. import arrays
from .linalg import ONE_THREAD_MNK, blas_matmul
from ..arrays import round_through
from ...core import dtype as dt
from ...core.device import CPU
from ...core.grad_state import state as _grad_state
from ...core.shape import contiguous_strides, is_channels_last, is_contiguous
from ...core.tensor import Tensor, new_cpu_tensor


LOW = (dt.float16, dt.bfloat16)


def _compute(d: dt.dtype) -> np.dtype:
    return np.dtype(np.float32) if d in LOW else d.np


def compute_array(t: Tensor, compute: np.dtype) -> np.ndarray:
    """t's elements as an array of the dtype a kernel computes in (no copy when it is)."""
    a = t._array()
    return a if a.dtype == compute else a.astype(compute)


def _normalize(x: np.ndarray, axes: tuple, eps: float):
    """(x - mean) / sqrt(var + eps) over `axes`, with the keepdims mean, 1/sqrt(var + eps)
    and biased variance."""
    n = prod(x.shape[a] for a in axes)
    with np.errstate(all="ignore"):
        mean = np.add.reduce(x, axis=axes, keepdims=True) / n
        centred = x - mean
        var = np.add.reduce(centred * centred, axis=axes, keepdims=True) / n
        rstd = 1 / np.sqrt(var + eps)
        return centred * rstd, mean, rstd, var


def _affine(y: np.ndarray, weight, bias, shape, compute) -> np.ndarray:
    if weight is not None:
        y *= compute_array(weight, compute).reshape(shape)
    if bias is not None:
        y += compute_array(bias, compute).reshape(shape)
    return y


def _store(out: Tensor, value: np.ndarray) -> None:
    dst = out._array()
    np.copyto(dst, value.reshape(dst.shape), casting="unsafe")


@lru_cache(maxsize=32)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    """A read-only vector of n ones: sums as matrix-vector products."""
    ones = np.ones(n, dtype)
    ones.flags.writeable = False
    return ones


# NumPy blocks up to this size are summed by BLAS products with a vector of ones, 1.5-3x
# faster than NumPy's reductions over short rows or along columns while the block sits in
# cache; larger ones (and CuPy arrays) by einsum or add.reduce, which read a product's
# operands without writing it.
_BLAS_SUMS_BYTES = 1 << 20


def _sums(a: np.ndarray, b, axis: int, out=None) -> np.ndarray:
    """The sums over `axis` (0: of each column, 1: of each row) of a 2-D a, or of a * b."""
    cpu = a.__class__ is np.ndarray
    if cpu and a.nbytes <= _BLAS_SUMS_BYTES:
        if b is not None:
            a = np.multiply(a, b)
        ones = _ones(a.shape[axis], a.dtype)
        return np.matmul(ones, a, out=out) if axis == 0 else np.matmul(a, ones, out=out)
    if cpu and b is None and axis == 0:
        return np.add.reduce(a, axis=0, out=out)
    subscripts = ("ij" if b is None else "ij,ij") + ("->j" if axis == 0 else "->i")
    operands = (a,) if b is None else (a, b)
    if cpu:
        return np.einsum(subscripts, *operands, out=out)
    sums = np.einsum(subscripts, *operands)         # CuPy's einsum takes no out=
    if out is None:
        return sums
    out[...] = sums
    return out


_VECDOT = getattr(np, "vecdot", None)          # NumPy >= 2


def _row_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The dot product of each row of a 2-D a with the same row of b: one vecdot call on
    NumPy 2 (30-50% faster than einsum's at the GPTs' sizes), else (and on CuPy) einsum."""
    if _VECDOT is not None and a.__class__ is np.ndarray:
        return _VECDOT(a, b)
    return np.einsum("ij,ij->i", a, b)


def _optional(t):
    return None if t is None else t._array()


def _pointer(a):
    return None if a is None else native.pointer(a)


def _native_rows_apply(arrays, rows: int, n: int) -> bool:
    """Whether a native/normalization.c kernel takes these arrays (None where absent): all
    dense float32/float64 of one dtype, rows x n elements of work. (Its outputs are the
    op's fresh ones: none overlaps an input.)"""
    return rows * n > 0 and native.dense(*(a for a in arrays if a is not None))


def layer_norm_native(input, weight, bias, eps, outs, rows: int, n: int) -> bool:
    """native_layer_norm by the C kernel, where it applies; says whether it ran."""
    x, w, b = input._array(), _optional(weight), _optional(bias)
    out, mean, rstd = (t._array() for t in outs)
    if not _native_rows_apply((x, w, b, out, mean, rstd), rows, n):
        return False
    fn = native.function("normalization", "layer_norm_" + native.suffix(x), "nnpppdpppi")
    if fn is None:
        return False
    fn(rows, n, native.pointer(x), _pointer(w), _pointer(b), eps, native.pointer(out),
       native.pointer(mean), native.pointer(rstd), native.threads(rows * n))
    return True


_LAYER_NORM_C = {dt.float32: "layer_norm_f32", dt.float64: "layer_norm_f64"}   # by dtype


def array_of(t: Tensor) -> np.ndarray:
    """`t._array()`, its cache read first (the fast paths' inputs and fresh outputs)."""
    a = t._np
    return a if a is not None else t._array()


def fresh(shape: tuple, d) -> Tensor:
    """A row-major CPU Tensor of `shape` (a tuple) and dtype `d`, as `Tensor._empty(shape,
    d)` makes it, for fast paths that know its layout."""
    if _grad_state.inference:                      # inference tensors: `_empty` makes them
        return Tensor._empty(shape, d)
    return new_cpu_tensor(shape, d, contiguous_strides(shape), prod(shape) * d.itemsize, True)


def layer_norm_last_dim(input: Tensor, weight, bias, eps):
    """native_layer_norm's (output, mean, rstd) over the last dim by the C kernel, made here,
    for the calls its fast path (ops/nn/normalization.py) has checked: `input` a row-major
    float32/float64 Tensor of at least one row, `weight` and `bias` None or dense vectors
    of its dtype and row length. None where the kernel is off or did not build: the
    general kernel runs. It makes the outputs as `Tensor._empty` does
    and reads the tensors' cached arrays, without `layer_norm_native`'s checks of them
    (nanoGPT's F.layer_norm of (8, 32, 64) with grad: 17.4 -> 15.0 us a call)."""
    d = input.dtype
    fn = native.function("normalization", _LAYER_NORM_C[d], "nnpppdpppi")
    if fn is None:
        return None
    shape = input._shape
    x = array_of(input)
    if x.__class__ is not np.ndarray:
        return None
    n = shape[-1]
    rows = x.size // n
    stat_shape = shape[:-1] + (1,)
    if _grad_state.inference:                      # inference tensors: `_empty` makes them
        out, mean, rstd = (Tensor._empty(shape, d), Tensor._empty(stat_shape, d),
                           Tensor._empty(stat_shape, d))
    else:
        size = d.itemsize
        out = new_cpu_tensor(shape, d, input._stride, rows * n * size, True)
        mean = new_cpu_tensor(stat_shape, d, contiguous_strides(stat_shape), rows * size, True)
        rstd = new_cpu_tensor(stat_shape, d, mean._stride, rows * size, True)
    pointer = native.pointer
    fn(rows, n, pointer(x), None if weight is None else pointer(array_of(weight)),
       None if bias is None else pointer(array_of(bias)), eps, pointer(array_of(out)),
       pointer(array_of(mean)), pointer(array_of(rstd)), native.threads(rows * n))
    return out, mean, rstd


def layer_norm_cpu(outs, input, normalized_shape, weight, bias, eps):
    """Rows of the normalized size, normalized in place in the (contiguous) output when it
    has the compute dtype: no temporaries of the input's size, the rows' sums by `_sums`
    and the centred rows' sum of squares by `_row_dots`, which needs none either. The C
    kernel (native/normalization.c) runs instead where it applies."""
    compute = _compute(input.dtype)
    n = prod(normalized_shape)
    rows = prod(input._shape[:input.dim() - len(normalized_shape)])
    if layer_norm_native(input, weight, bias, eps, outs, rows, n):
        return
    x = compute_array(input, compute).reshape(rows, n)
    out = outs[0]._array().reshape(rows, n)
    y = out if out.dtype == compute else arrays.module_of(out).empty(out.shape, compute)
    with np.errstate(all="ignore"):
        mean = _sums(x, None, 1)[:, None]
        mean /= max(n, 1)                  # PyTorch's mean of no elements is 0 (rstd nan)
        np.subtract(x, mean, out=y)
        var = _row_dots(y, y)[:, None]
        var /= n
        var += eps
        rstd = np.sqrt(var, out=var)
        np.divide(1, rstd, out=rstd)
        y *= rstd
    _affine(y, weight, bias, (n,), compute)
    if y is not out:
        np.copyto(out, y, casting="unsafe")
    _store(outs[1], mean)
    _store(outs[2], rstd)


def channel_shape(input) -> tuple:
    """Where a per-channel (C,) vector broadcasts against an (N, C, *) input."""
    return (input._shape[1],) + (1,) * (input.dim() - 2)


def batch_norm_cpu(outs, input, weight, bias, running_mean, running_var, training, momentum,
                    eps):
    if input.dtype is dt.bfloat16 and input._array().__class__ is np.ndarray:
        _batch_norm_bfloat16(outs, input, weight, bias, running_mean, running_var, training,
                             momentum, eps)
        return
    compute = _compute(outs[1].dtype if training else input.dtype)
    compute = np.promote_types(compute, _compute(input.dtype))
    x = compute_array(input, compute)
    cshape = channel_shape(input)
    if training:
        axes = (0,) + tuple(range(2, x.ndim))
        y, mean, rstd, var = _normalize(x, axes, eps)
        _store(outs[1], mean)
        _store(outs[2], rstd)
        n = x.size // x.shape[1]
        if running_mean is not None:
            rm = running_mean._array()
            np.copyto(rm, (1 - momentum) * rm + momentum * mean.reshape(rm.shape),
                      casting="unsafe")
        if running_var is not None:
            rv = running_var._array()
            with np.errstate(all="ignore"):
                unbiased = var.reshape(rv.shape) * (n / np.float64(n - 1))   # n=1: nan
            np.copyto(rv, (1 - momentum) * rv + momentum * unbiased, casting="unsafe")
    else:
        mean = compute_array(running_mean, compute).reshape(cshape)
        with np.errstate(all="ignore"):
            y = (x - mean) / np.sqrt(compute_array(running_var, compute).reshape(cshape) + eps)
    _store(outs[0], _affine(y, weight, bias, cshape, compute))


def _batch_norm_bfloat16(outs, input, weight, bias, running_mean, running_var, training,
                         momentum, eps):
    """native_batch_norm of a bfloat16 input as PyTorch's CPU kernels compute it
    (aten/src/ATen/native/Normalization.cpp, native/cpu/batch_norm_kernel.cpp): float
    arithmetic whose statistics, with parameters of the input's dtype, are rounded to it
    where PyTorch stores them, and two paths:

    - a (channels-last) contiguous input: the mean in float is rounded to the saved mean,
      the squares about the unrounded mean summed in float and rounded, divided by n in the
      dtype, 1/sqrt(var + eps) rounded to the saved invstd; the output is the float
      x * alpha + beta of alpha = invstd * weight, beta = bias - mean * alpha, rounded once;
    - any other input: the saved mean rounded first, the squares about it summed in float,
      and the output ((x - mean) * invstd) * weight + bias with every step rounded.

    With float32 parameters (the mixed-dtype mode) nothing but the output is rounded. The
    rounding is where the output differs, by far more than an ulp, where x is near the mean.
    (PyTorch's float16 kernel has the same code, but its variance sums come out otherwise
    than float32 sums of these terms: float16 keeps the float32 computation here.)"""
    d = input.dtype
    stats = outs[1].dtype
    mixed = stats is not d
    cshape = channel_shape(input)
    x = compute_array(input, np.dtype(np.float32))
    f32 = np.float32

    def r(a):                                   # a step of PyTorch's arithmetic in d
        return round_through(np.asarray(a, f32), d)

    def p(a):                                   # a value stored in the parameters' dtype
        return np.asarray(a, f32) if mixed else r(a)

    def param(t, fill):
        return np.full(input._shape[1], fill, f32) if t is None else compute_array(t, f32)
    dense = is_contiguous(input._shape, input._stride) or \
        is_channels_last(input._shape, input._stride)
    axes = (0,) + tuple(range(2, x.ndim))
    n = x.size // x.shape[1]
    with np.errstate(all="ignore"):
        if training:
            if dense:
                mean_f = np.add.reduce(x, axis=axes, dtype=f32) / f32(n)
                centred = x - mean_f.reshape(cshape)
                var_sum = p(np.add.reduce(centred * centred, axis=axes, dtype=f32))
                mean = p(mean_f)
                var = var_sum / f32(n) if mixed else r(var_sum / r(n))
            else:
                mean = p(np.add.reduce(x, axis=axes, dtype=np.float64) / n)
                centred = x - mean.reshape(cshape)
                var_sum = np.add.reduce(centred * centred, axis=axes, dtype=f32)
                var = var_sum / f32(n)
            # InvStd: 1 / sqrt(var + eps) in double, 0 where both are 0
            invstd = np.where((var == 0) & (eps == 0), f32(0),
                              (1 / np.sqrt(var.astype(np.float64) + eps)).astype(f32))
            invstd = p(invstd)
            _store(outs[1], mean)
            _store(outs[2], invstd)
            _batch_norm_running_stats(running_mean, running_var, mean, var_sum, momentum, n,
                                      dense, p)
        else:
            mean = compute_array(running_mean, f32)
            rv = compute_array(running_var, f32)
            if dense:
                invstd = f32(1) / np.sqrt(rv + f32(eps))
            else:                               # 1 / at::sqrt(running_var + eps)
                invstd = p(f32(1) / p(np.sqrt(p(rv + f32(eps)))))
        w, b = param(weight, 1), param(bias, 0)
        if dense:
            alpha = invstd * w
            beta = b - mean * alpha
            y = x * alpha.reshape(cshape) + beta.reshape(cshape)
        else:
            step = (lambda a: a) if mixed else r
            y = step(x - mean.reshape(cshape))
            y = step(step(y * invstd.reshape(cshape)) * w.reshape(cshape))
            y = y + b.reshape(cshape)
    _store(outs[0], y)


def _batch_norm_running_stats(running_mean, running_var, mean, var_sum, momentum, n, dense,
                              r) -> None:
    """The running statistics' update of _batch_norm_bfloat16 as PyTorch writes it: on the dense
    path `momentum * mean + (1 - momentum) * running` in the parameters' dtype (`r` rounds
    to it: each product and sum, and the unbiased variance's division); elsewhere in
    double, rounded once."""
    with np.errstate(all="ignore"):
        if dense:
            m = r(momentum)
            keep = r(1 - m)
            unbiased = r(var_sum / r(n - 1)) if running_var is not None else None
            new_mean = r(r(m * mean) + r(keep * compute_array(running_mean, np.float32))) \
                if running_mean is not None else None
            new_var = r(m * unbiased + r(keep * compute_array(running_var, np.float32))) \
                if running_var is not None else None
        else:
            unbiased = (var_sum / np.float32(n - 1)).astype(np.float64)
            new_mean = None if running_mean is None else (
                momentum * mean.astype(np.float64)
                + (1 - momentum) * compute_array(running_mean, np.float64))
            new_var = None if running_var is None else (
                momentum * unbiased + (1 - momentum) * compute_array(running_var, np.float64))
    for t, v in ((running_mean, new_mean), (running_var, new_var)):
        if t is not None:
            np.copyto(t._array(), v.astype(np.float32).reshape(t._array().shape),
                      casting="unsafe")


def group_norm_cpu(outs, input, weight, bias, N, C, HxW, group, eps):
    compute = np.promote_types(_compute(outs[1].dtype), _compute(input.dtype))
    x = compute_array(input, compute).reshape(N, group, C // group * HxW)
    y, mean, rstd, _ = _normalize(x, (2,), eps)
    y = y.reshape(input._shape)
    _store(outs[0], _affine(y, weight, bias, channel_shape(input), compute))
    _store(outs[1], mean)
    _store(outs[2], rstd)


def check_indices(op: str, name: str, position: int, t: Tensor) -> None:
    if t.dtype is not dt.int64 and t.dtype is not dt.int32:
        raise RuntimeError(f"Expected tensor for argument #{position} '{name}' to have one of "
                           f"the following scalar types: Long, Int; but got {t.type()} instead "
                           f"(while checking arguments for {op})")


def _rows(indices: Tensor, count: int) -> np.ndarray:
    """The indices as int64, checked against `count` rows."""
    idx = indices._array().astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= count):
        raise IndexError("index out of range in self")
    return idx


def _int64_indices(indices: Tensor):
    """The indices as a contiguous int64 NumPy array (the C kernels' form), or None."""
    idx = indices._array()
    if idx.dtype != np.int64 or idx.__class__ is not np.ndarray:
        return None
    return idx if idx.flags.c_contiguous else np.ascontiguousarray(idx)


def _embedding_native(out, weight, indices) -> bool:
    """embedding by the C kernel (native/embedding.c: each named row copied, every index
    checked first) where it applies: int64 indices, a row-major weight; says whether it
    ran (one pass where the NumPy path takes a min, a max, np.take and a copy: nanoGPT's
    (8, 32) tokens of 64 floats: 37.8 -> 28.8 us a call with grad)."""
    w, o, idx = weight._array(), out._array(), _int64_indices(indices)
    if idx is None or w.__class__ is not np.ndarray or not w.flags.c_contiguous or \
            not o.flags.c_contiguous or not o.size:
        return False
    fn = native.function("embedding", "embedding_forward", "nnnpppp")
    if fn is None:
        return False
    bad = np.empty(1, np.int64)
    fn(idx.size, w.shape[1] * w.itemsize, w.shape[0], native.pointer(idx), native.pointer(w),
       native.pointer(o), native.pointer(bad))
    if bad[0] >= 0:
        raise IndexError("index out of range in self")
    return True


def embedding_cpu(out, weight, indices, padding_idx=-1, scale_grad_by_freq=False,
                   sparse=False):
    if _embedding_native(out, weight, indices):
        return
    idx = _rows(indices, weight._shape[0])
    _store(out, np.take(weight._array(), idx.reshape(-1), axis=0))


def embedding_grad_scale(idx: np.ndarray, num_weights: int, padding_idx: int,
                         scale_grad_by_freq: bool, dtype) -> np.ndarray:
    """Per-index factor of an embedding gradient: 0 at padding_idx, else 1 or
    1/occurrences when scaling by frequency."""
    scale = np.ones_like(idx, dtype=dtype)
    if scale_grad_by_freq:
        counts = np.bincount(idx.reshape(-1), minlength=num_weights)
        scale /= counts[idx]
    scale[idx == padding_idx] = 0
    return scale


def _embedding_grad_native(out, grad_output, idx: np.ndarray, num_weights: int,
                           padding_idx: int) -> bool:
    """embedding_dense_backward by the C kernel (native/embedding.c), where it applies:
    dense float32/float64 gradients, indices within [0, num_weights) (the kernel checks
    them first; others go to the NumPy path, which reports them); says whether it ran."""
    g, o = grad_output._array(), out._array()
    if not idx.size or not o.size or g.size != idx.size * o.shape[1] or not native.dense(g, o):
        return False
    fn = native.function("embedding", "embedding_backward_" + native.suffix(g), "nnnppnppi")
    if fn is None:
        return False
    idx, bad = np.ascontiguousarray(idx), np.empty(1, np.int64)
    fn(idx.size, o.shape[1], num_weights, native.pointer(idx), native.pointer(g),
       padding_idx, native.pointer(o), native.pointer(bad), native.threads(g.size))
    return bad[0] < 0


def embedding_grad_cpu(out, grad_output, indices, num_weights, padding_idx,
                        scale_grad_by_freq):
    compute = _compute(grad_output.dtype)
    idx = indices._array().astype(np.int64, copy=False).reshape(-1)
    if not scale_grad_by_freq and _embedding_grad_native(out, grad_output, idx, num_weights,
                                                         padding_idx):
        return
    rows = compute_array(grad_output, compute).reshape(idx.size, grad_output._shape[-1])
    if scale_grad_by_freq:
        rows = rows * embedding_grad_scale(idx, num_weights, padding_idx, True, compute)[:, None]
    else:
        keep = idx != padding_idx
        if not keep.all():
            idx, rows = idx[keep], rows[keep]
    _store(out, _sum_rows(idx, rows, num_weights))


# Gradients whose one-hot product (weight rows x indices x width multiply-adds) is below
# this sum their rows by it (BLAS, one thread): nanoGPT's 256 indices into 65 rows of 64,
# 71 -> 53 us, 25% faster than sorting and np.add.reduceat (which runs a strided scalar loop
# along axis 0). Larger products measured no faster (the tiny GPT's 1024 x 65 x 128: 190 ->
# 234 us on one thread) and wake BLAS's threads.
_ONE_HOT_MNK = ONE_THREAD_MNK


def _sum_rows(idx: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """A (count, width) array whose row k is the sum of the rows i with idx[i] == k. Sorting
    groups equal indices so that np.add.reduceat sums each group: far cheaper than np.add.at,
    which handles one element at a time (the sums may round differently, as PyTorch's
    parallel kernel's do). Small sums take a one-hot product instead; a non-finite
    result (inf or nan in `rows` meets the product's zeros) is redone by sorting."""
    xp = arrays.module_of(rows)
    acc = xp.zeros((count, rows.shape[1]), rows.dtype)
    if not idx.size:
        return acc
    valid = idx.min() >= 0
    if valid and xp.bincount(idx, minlength=count).max() == 1:
        acc[idx] = rows        # distinct indices (positions): no sums, 5-7x faster
        return acc
    if valid and count * rows.size < _ONE_HOT_MNK and xp is np and rows.dtype.kind == "f":
        one_hot = np.zeros((count, idx.size), rows.dtype)
        one_hot[idx, np.arange(idx.size)] = 1
        blas_matmul(one_hot, rows, acc)
        if np.isfinite(acc).all():
            return acc
        acc[...] = 0
    order = np.argsort(idx, kind="stable")
    ordered = idx[order]
    starts = np.flatnonzero(np.concatenate((xp.ones(1, bool), ordered[1:] != ordered[:-1])))
    acc[ordered[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return acc


def embedding_renorm_cpu(self, indices, max_norm, norm_type):
    check_indices("embedding_renorm_", "indices", 2, indices)
    w = self._array()
    rows = np.unique(_rows(indices, self._shape[0]))
    compute = _compute(self.dtype)
    picked = w[rows].astype(compute)
    if norm_type == float("inf"):        # (CuPy's max has no `initial` for empty rows)
        norms = np.abs(picked).max(axis=1) if picked.shape[1] else np.zeros_like(
            picked, shape=picked.shape[:1])
    elif norm_type == 0:
        norms = (picked != 0).sum(axis=1).astype(compute)
    else:
        norms = (np.abs(picked) ** norm_type).sum(axis=1) ** (1 / norm_type)
    big = norms > max_norm
    scale = max_norm / (norms[big] + 1e-7)
    w[rows[big]] = (picked[big] * scale[:, None]).astype(w.dtype)
    return self


def _bag_layout(idx: np.ndarray, off: np.ndarray, include_last_offset: bool):
    """(number of bags, bag of each index or -1 outside every bag)."""
    n = idx.size
    bags = off.size - 1 if include_last_offset else off.size
    bags = max(bags, 0)
    if off.size and off[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {off[0]}")
    if off.size and off[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {off[-1]}")
    if np.any(np.diff(off) < 0):
        raise RuntimeError("embedding_bag: offsets must be non-decreasing, but got "
                           f"{off.tolist()}")
    ends = off[1:bags + 1] if include_last_offset else np.append(off[1:], n)
    sizes = ends - off[:bags]
    bag_of = np.full(n, -1, np.int64)
    covered = int(sizes.sum())
    bag_of[:covered] = np.repeat(np.arange(bags), sizes)
    return bags, bag_of


def embedding_bag_checks(weight, indices, offsets, mode, sparse, per_sample_weights):
    check_indices("embedding_bag", "indices", 1, indices)
    check_indices("embedding_bag", "offsets", 1, offsets)
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if indices.dim() != 1 or offsets.dim() != 1:
        raise RuntimeError("embedding_bag: expected 1-D indices and offsets, but got "
                           f"indices of size {list(indices._shape)} and offsets of size "
                           f"{list(offsets._shape)}")
    if sparse:
        raise NotImplementedError("embedding_bag(): sparse=True (sparse gradients) is not "
                                  "supported by glasstorch; use sparse=False")
    if mode not in (0, 1, 2):
        raise RuntimeError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got "
                           f"{mode}")
    if per_sample_weights is not None:
        if mode != 0:
            raise NotImplementedError("embedding_bag: per_sample_weights is only supported "
                                      "for mode='sum'")
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError("Expected tensor for argument #1 'weight' to have the same type "
                               "as tensor for argument #1 'per_sample_weights'; but type "
                               f"{weight.type()} does not equal {per_sample_weights.type()} "
                               "(while checking arguments for embedding_bag)")
        if per_sample_weights._shape != indices._shape:
            raise RuntimeError("embedding_bag: per_sample_weights must have the shape of "
                               f"indices {list(indices._shape)}, but got "
                               f"{list(per_sample_weights._shape)}")


def embedding_bag_cpu(weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                       sparse=False, per_sample_weights=None, include_last_offset=False,
                       padding_idx=-1):
    embedding_bag_checks(weight, indices, offsets, mode, sparse, per_sample_weights)
    num, dim = weight._shape
    idx = indices._array().astype(np.int64, copy=False)
    bad = np.nonzero((idx < 0) | (idx >= num))[0]
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {idx[bad[0]]} which is not in "
                           f"the valid range [0, {num})")
    bags, bag_of = _bag_layout(idx, offsets._array().astype(np.int64, copy=False),
                               include_last_offset)
    compute = _compute(weight.dtype)
    use = (bag_of >= 0) & (idx != padding_idx)
    where, into = np.nonzero(use)[0], bag_of[use]
    rows = compute_array(weight, compute)[idx[where]]
    bag_size = np.bincount(into, minlength=bags).astype(np.int64)
    max_indices = bag_size
    if mode == 2:
        acc = np.full((bags, dim), -np.inf, compute)
        np.maximum.at(acc, into, rows)
        k, d = np.nonzero(rows == acc[into])
        first = np.full((bags, dim), idx.size, np.int64)
        np.minimum.at(first, (into[k], d), where[k])
        max_indices = np.where(first < idx.size, idx[np.minimum(first, idx.size - 1)], 0) \
            if idx.size else np.zeros((bags, dim), np.int64)
        acc[bag_size == 0] = 0
    else:
        if per_sample_weights is not None:
            rows = rows * compute_array(per_sample_weights, compute)[where][:, None]
        acc = _sum_rows(into, rows, bags)
        if mode == 1:
            acc /= np.maximum(bag_size, 1)[:, None]
    out = Tensor._empty((bags, dim), weight.dtype, weight.device)
    _store(out, acc)
    return (out, _long(bag_of), _long(bag_size), _long(max_indices.copy()))


def _long(a: np.ndarray) -> Tensor:
    t = Tensor._empty(a.shape, dt.int64)
    _store(t, a)
    return t


def one_hot_cpu(self, num_classes=-1):
    if self.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = self._array()
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    if a.size:
        if a.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if a.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes < 0:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = Tensor._empty(tuple(self._shape) + (num_classes,), dt.int64, self.device)
    _store(out, (a[..., None] == arrays.module_of(a).arange(num_classes)).astype(np.int64))
    return out


# Rows per chunk of the C kernel's weight and bias gradients (column sums kept apart per
# chunk, then added in order): fixed, so that the sums do not depend on the thread count.
_LAYER_NORM_GRAD_CHUNK = 128


_LAYER_NORM_GRAD_C = {np.dtype(np.float32): "layer_norm_backward_f32",
                      np.dtype(np.float64): "layer_norm_backward_f64"}


def _layer_norm_backward_native(g, input, n, mean, rstd, weight, bias, mask):
    """native_layer_norm_backward's gradients by the C kernel, where it applies (else
    None). The arrays are the tensors' cached ones and the gradients are made as
    `Tensor._empty` makes them (`fresh`): the backward of nanoGPT's layer norms, (8, 32,
    64), 15.5 -> 13.4 us a node."""
    rows = prod(input._shape) // n if n else 0
    x, go, m, r = array_of(input), array_of(g), array_of(mean), array_of(rstd)
    w = None if weight is None else array_of(weight)
    if (not rows or go.shape != x.shape or m.size != rows or r.size != rows
            or (bias is not None and bias.dtype is not input.dtype)
            or not (native.dense(x, go, m, r) if w is None else native.dense(x, go, m, r, w))):
        return None
    fn = native.function("normalization", _LAYER_NORM_GRAD_C[x.dtype], "nnpppppppppni")
    if fn is None:
        return None
    pointer = native.pointer
    d = input.dtype
    dx = fresh(input._shape, d) if mask[0] else None
    dw = fresh(weight._shape, d) if mask[1] and w is not None else None
    db = fresh(bias._shape, d) if mask[2] and bias is not None else None
    chunks = -(-rows // _LAYER_NORM_GRAD_CHUNK)
    # the later chunks' column sums (none to keep for one chunk)
    parts = np.empty((2, chunks - 1, n), x.dtype) if chunks > 1 else None
    fn(rows, n, pointer(go), pointer(x), pointer(m), pointer(r),
       None if w is None else pointer(w), None if dx is None else pointer(array_of(dx)),
       None if dw is None else pointer(array_of(dw)),
       None if db is None else pointer(array_of(db)),
       None if parts is None else pointer(parts), _LAYER_NORM_GRAD_CHUNK,
       native.threads(rows * n))
    return dx, dw, db


def layer_norm_backward_cpu(g, input, normalized_shape, mean, rstd, weight, bias, mask):
    """native_layer_norm_backward: the gradients of input, weight and bias (those `mask`
    asks for) by the closed form dx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat *
    xhat)) over rows of the normalized size, each term one pass into a preallocated output,
    the row and column sums by `_sums`, the rows' dot products by `_row_dots` (no
    product array). float16/bfloat16 compute in float32 and are rounded once, to the input's
    dtype. The C kernel (native/normalization.c) runs instead where it applies."""
    ct = _compute(input.dtype)
    d = dt.float32 if ct == np.float32 and input.dtype is not dt.float32 else input.dtype
    n = prod(normalized_shape)
    native_grads = _layer_norm_backward_native(g, input, n, mean, rstd, weight, bias, mask)
    if native_grads is not None:
        return native_grads
    x, go = compute_array(input, ct).reshape(-1, n), compute_array(g, ct).reshape(-1, n)
    xhat = x - compute_array(mean, ct).reshape(-1, 1)
    r = compute_array(rstd, ct).reshape(-1, 1)
    xhat *= r
    dx = dw = db = None
    if mask[1] and weight is not None:
        dw = Tensor._empty(weight._shape, d, CPU)
        _sums(go, xhat, 0, out=dw._array().reshape(n))
    if mask[2] and bias is not None:
        db = Tensor._empty(tuple(normalized_shape), d, CPU)
        _sums(go, None, 0, out=db._array().reshape(n))
    if mask[0]:
        dx = Tensor._empty(input._shape, d, CPU)
        out = dx._array().reshape(-1, n)              # gxhat, then dx in place
        if weight is not None:
            np.multiply(go, compute_array(weight, ct).reshape(1, n), out=out)
        else:
            np.copyto(out, go)
        a = _sums(out, None, 1)[:, None]
        a /= n
        xhat *= _row_dots(out, xhat)[:, None] / n
        out -= xhat
        out -= a
        out *= r
    return tuple(t if t is None or t.dtype is want.dtype else t.to(want.dtype)
                 for t, want in ((dx, input), (dw, weight), (db, bias)))
