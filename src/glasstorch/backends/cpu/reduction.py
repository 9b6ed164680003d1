"""CPU kernels for reductions and scans, over NumPy ufunc reductions.

Each kernel fills a preallocated output. The meta functions in `ops/reduction.py` have
already checked dims and dtypes, so kernels only normalise dims into NumPy axes. Reductions
run with `keepdims=True` and are reshaped into the output, which covers keepdim, 0-dim
inputs and `out=` tensors alike. The op's dtype is the output's: an `out=` tensor of
another dtype makes the reduction run in that dtype, as in PyTorch. float16 and bfloat16
accumulate in float32. Ufunc methods are called directly (not np.sum/np.max) so that
NumPy's floating-point warnings are attributed to this module and silenced like every
kernel's.

A float32/float64 sum or mean over a tensor's trailing dims, and a max or min (with or
without its index) over its last dim, run in C where that pays (native/reduction.c, `_rows`):
one call for all the rows, into the output's own array, where NumPy's reduce sets its loop
up again for each row and the result is copied into the output after. The results are
NumPy's (but for the sign of a zero max, `_row_extremes`).

The kernels also run on CuPy arrays (CUDA tensors). CuPy's ufuncs reduce and accumulate
only with add and multiply, so other reductions of a device array go through the array's
own methods (`_device_reduce`), and its scans through `_device_scan`; device arrays never
go through the thread pool.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...core import dtype as dt
from . import native, parallel

_FLOAT32 = np.dtype(np.float32)
_INT64 = np.dtype(np.int64)


def axes(ndim: int, dim, all_if_empty: bool = True):
    """NumPy axes for an already validated `int[]?` dim (None means all dims)."""
    if dim is None or (all_if_empty and not dim):
        return None
    if ndim == 0:
        return ()
    return tuple(d % ndim for d in dim)


def acc_dtype(d: dt.dtype) -> np.dtype:
    """The dtype to accumulate in: float32 for float16/bfloat16, else the dtype itself."""
    return _FLOAT32 if d is dt.float16 or d is dt.bfloat16 else d.np


def operand(t, target: dt.dtype) -> np.ndarray:
    """The tensor's elements as the op's dtype; widening casts are left to the ufunc.
    bfloat16 becomes an integer through float32, as c10 converts it (NumPy's own cast
    turns NaN and inf into 0)."""
    return _converted(t._array(), t.dtype, target)


def _converted(a: np.ndarray, source: dt.dtype, target: dt.dtype) -> np.ndarray:
    if a.dtype != target.np and not np.can_cast(a.dtype, target.np):
        if source is dt.bfloat16 and target.category == dt.INT:
            a = a.astype(_FLOAT32)
        a = a.astype(target.np)
    return a


def store(out, result) -> None:
    """Write a keepdims (or flat) result into `out`, casting to its dtype."""
    dst = out._array()
    if result.shape != dst.shape:
        result = result.reshape(dst.shape)
    np.copyto(dst, result, casting="unsafe")


def _as_1d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


def _reduced_count(shape, ax) -> int:
    return prod(shape) if ax is None else prod(shape[d] for d in ax)


def _check_out_dtype(out, dtype) -> None:
    if dtype is not None and out.dtype is not dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {dtype}, but got {out.dtype} "
                           "instead")


_DEVICE_METHODS = {np.maximum: "max", np.minimum: "min", np.logical_and: "all",
                   np.logical_or: "any"}


def _device_reduce(ufunc, a, ax, dtype=None):
    """ufunc.reduce(a, axis=ax, dtype=dtype, keepdims=True) on a CuPy array."""
    method = _DEVICE_METHODS.get(ufunc)
    if method is None:
        return ufunc.reduce(a, axis=ax, dtype=dtype, keepdims=True)
    return getattr(a, method)(axis=ax, keepdims=True)


_ROW = 512


def _float32_total(flat: np.ndarray) -> float:
    """The sum of a contiguous float32 vector as a Python float: rows of _ROW elements
    summed by einsum (SIMD), the row sums added in float64. NumPy's pairwise float32 sum
    runs at ~4.5 elements a ns on one core, einsum's at ~13 in cache (10M elements, memory
    bound: 1.8 -> 1.5 ms). A row's einsum sum errs 1.2-1.9x as much as pairwise on it,
    but the float64 levels above the rows make totals as accurate or better (10M uniform,
    normal, lognormal: 3.5e-8, 4.7e-8, 8.7e-9 relative after rounding, against 3.5e-8,
    8.3e-8, 8.7e-9). The C total (_native_total) replaces it where it builds."""
    n = flat.size - flat.size % _ROW
    rows = np.einsum("ij->i", flat[:n].reshape(-1, _ROW))
    return float(np.add.reduce(rows, dtype=np.float64)) + float(
        np.add.reduce(flat[n:], dtype=np.float64))


# Elements from which a float total runs in C; below, NumPy's pairwise sum (as without C,
# up to parallel.GRAIN).
_NATIVE_TOTAL_MIN = 1 << 19


def _native_total(a: np.ndarray):
    """The sum of a dense float32/float64 array's elements by the C kernel
    (native/reduction.c: 8 elements a vector lane in the array's dtype, float64 above),
    shaped (1,) * ndim, the same bits on any thread count; None where it does not apply.
    On float32 sums that cancel it errs less than _float32_total and NumPy's pairwise sum
    (tests/backends/test_native_reduction.py). Its chunks go to glasstorch's own threads
    (native/pool.c), which join as they come, where OpenMP's sleeping team came too late."""
    if not native.dense(a):
        return None
    fn = native.function("reduction", "total_" + native.suffix(a), "nppip")
    if fn is None:
        return None
    out = np.empty((1,) * a.ndim, a.dtype)
    fn(a.size, native.pointer(a), native.pointer(out), native.threads(a.size), native.runner())
    return out


# Elements from which the C kernel sums over leading axes: below, NumPy's reduce is as fast.
_NATIVE_SUM_MIN = 1 << 10


def _native_sum(a: np.ndarray, ax, out=None):
    """The sum of a dense float32/float64 array over its leading axes `ax` (distinct, in
    any order; a bias's gradient) by the C kernel (native/reduction.c), into `out` if given
    (C-contiguous, a's dtype, one element a column, not overlapping a), else into a new
    keepdims array: NumPy's result bit for bit, 2.6-3.6x as fast as NumPy's reduce at
    (704, 192) to (704, 48). None where it does not apply, among others where one column
    is left (NumPy sums that one pairwise)."""
    lead = len(ax) if ax else 0
    if a.size < _NATIVE_SUM_MIN or not lead or lead >= a.ndim or max(ax) != lead - 1:
        return None
    cols = prod(a.shape[lead:])
    if out is None:
        out = np.empty((1,) * lead + a.shape[lead:], a.dtype)
    if cols <= 1 or out.size != cols or not native.dense(a, out):
        return None
    fn = native.function("reduction", "sum_rows_" + native.suffix(a), "nnppi")
    if fn is None:
        return None
    fn(a.size // cols, cols, native.pointer(a), native.pointer(out), native.threads(a.size))
    return out


# Where the C row kernels pay, measured on whole op calls (2 cores, float32): a C call costs
# ~2 us (ctypes, the checks), NumPy's reduce ~1 us plus ~20 ns (a sum) to ~60 ns (a max) of
# loop set-up a row, and store's copy. So a sum or mean runs in C from rows of 2 elements
# (NumPy copies rows of one, 3x as fast); a max or min with its indices from one row (it
# replaces two NumPy calls); a max or min alone from _ROW_EXTREMES_MIN rows (256 rows of
# 64: 23 -> 10 us); an argmax or argmin alone from _ROW_ARGS_MIN rows (np.argmax spends
# little on a row until its rows outgrow the cache: 256 rows of 64 take 9 us in NumPy and
# 10 in C, 16K rows of 64 710 and 230).
_ROW_EXTREMES_MIN = 16
_ROW_ARGS_MIN = 4096


def _rows(a: np.ndarray, ax, whole_below: int):
    """(rows, n, step): `a` reduced over its axes `ax` (None: all of them) as rows of n > 0
    contiguous elements, `step` elements apart, for the C row kernels (native/reduction.c);
    None where they do not apply: not a float32/float64 NumPy array, not its trailing axes,
    rows not contiguous or leading axes that do not collapse into one stride, or every axis
    from `whole_below` elements on (where `reduce` splits the work across threads or sums it
    by _native_total)."""
    if a.__class__ is not np.ndarray or a.dtype not in native.FLOAT_SUFFIX:
        return None
    if ax is None or len(ax) == a.ndim:
        if a.size >= whole_below or not a.size or not a.flags.c_contiguous:
            return None
        return 1, a.size, a.size
    lead = a.ndim - len(ax)
    if not ax or min(ax) != lead:
        return None
    n = a.shape[lead] if len(ax) == 1 else prod(a.shape[lead:])
    if not n:
        return None
    step = n if a.flags.c_contiguous else _row_step(a, lead)
    return None if step is None else (a.size // n, n, step)


def _row_step(a: np.ndarray, lead: int):
    """The elements between the rows of `a`'s axes from `lead` on, where each row is
    contiguous and the leading axes step through memory by one stride (a slice such as
    `logits[:, -1]`); else None."""
    shape, strides = a.shape, a.strides
    span = a.itemsize
    for d in range(a.ndim - 1, lead - 1, -1):          # a row's axes, innermost first
        if shape[d] != 1 and strides[d] != span:
            return None
        span *= shape[d]
    step = None
    for d in range(lead - 1, -1, -1):                  # the leading axes
        if shape[d] == 1:
            continue
        if step is None:
            step = span = strides[d]
        elif strides[d] != span:
            return None
        span *= shape[d]
    if step is None:                                   # a single row
        return span // a.itemsize
    return step // a.itemsize if step % a.itemsize == 0 else None


def _target(out, dtype: np.dtype, a: np.ndarray):
    """(array, whether it is out's own) for a C kernel's results: out's array where the
    kernel may write into it (C-contiguous, of `dtype`, not overlapping `a`), else a new one
    that `store` copies into out."""
    dst = out._array()
    if dst.dtype == dtype and dst.flags.c_contiguous and not np.may_share_memory(a, dst):
        return dst, True
    return np.empty(dst.size, dtype), False


def _row_sums(out, a: np.ndarray, ax, mean: bool) -> bool:
    """Whether the C kernel summed `a` over its trailing axes `ax` (None: all) into out, each
    row's sum NumPy's pairwise one, divided by the row's length for a mean as mean_kernel
    divides (in a's dtype)."""
    rows = _rows(a, ax, min(_NATIVE_TOTAL_MIN, parallel.GRAIN))
    if rows is None or rows[1] < 2:
        return False
    fn = native.function("reduction", "sum_trailing_" + native.suffix(a), "nnnppii")
    if fn is None:
        return False
    dst, own = _target(out, a.dtype, a)
    fn(*rows, native.pointer(a), native.pointer(dst), mean, native.threads(a.size))
    if not own:
        store(out, dst)
    return True


def _row_extremes(values, indices, a: np.ndarray, dim: int, take_min: bool) -> bool:
    """Whether the C kernel wrote the max (min) of `a` over its last dim into the tensor
    `values` and the index of its first occurrence into `indices` (either may be None),
    as np.maximum.reduce and np.argmax give them: NaN propagates and is the index, ties give
    the first index, and a zero max held as both -0.0 and 0.0 is the row's last zero, as
    NumPy's loop keeps the later of two equal elements. `dim` is the dim reduced (a NumPy
    axis)."""
    if dim != a.ndim - 1:
        return False
    rows = _rows(a, (dim,), parallel.GRAIN)
    if rows is None or rows[1] >= 1 << 31:             # the kernel's lane indices: int32
        return False
    if values is None:
        if rows[0] < _ROW_ARGS_MIN:
            return False
    elif indices is None and (rows[0] < _ROW_EXTREMES_MIN or rows[1] < 2):
        return False
    fn = native.function("reduction", "extreme_trailing_" + native.suffix(a), "nnnpppii")
    if fn is None:
        return False
    v = i = None
    if values is not None:
        v, own_v = _target(values, a.dtype, a)
    if indices is not None:
        i, own_i = _target(indices, _INT64, a)
    fn(*rows, native.pointer(a), None if v is None else native.pointer(v),
       None if i is None else native.pointer(i), take_min, native.threads(a.size))
    if v is not None and not own_v:
        store(values, v)
    if i is not None and not own_i:
        store(indices, i)
    return True


def reduce(ufunc, a: np.ndarray, ax, dtype=None) -> np.ndarray:
    """ufunc.reduce(a, axis=ax, dtype=dtype, keepdims=True), split across threads when `a`
    is large: along a kept axis (each output element computed as NumPy alone would), or,
    when every axis is reduced, into per-chunk partial results combined by `ufunc` (a
    pairwise step, as NumPy's own summation; a float32 total by _float32_total, on one
    thread too). A float sum runs in C (_native_total, _native_sum) where it can. A CuPy
    array is reduced by one kernel."""
    if a.__class__ is not np.ndarray:
        return _device_reduce(ufunc, a, ax, dtype)
    if ufunc is np.add and dtype == a.dtype:
        if ax is None or len(ax) == a.ndim:
            total = _native_total(a) if a.size >= _NATIVE_TOTAL_MIN else None
        else:
            total = _native_sum(a, ax)
        if total is not None:
            return total
    if a.size < parallel.GRAIN:
        return ufunc.reduce(a, axis=ax, dtype=dtype, keepdims=True)
    if (ax is None and ufunc is np.add and a.dtype == _FLOAT32 and dtype == _FLOAT32
            and a.flags.c_contiguous):
        flat = a.reshape(-1)
        parts = parallel.parallel_for(flat.size, lambda start, stop: _float32_total(
            flat[start:stop]), factor=parallel.REDUCTION_FACTOR)
        return np.array(sum(parts), dtype=_FLOAT32).reshape((1,) * a.ndim)
    if parallel.threads_for(a.size, parallel.REDUCTION_FACTOR) == 1:
        return ufunc.reduce(a, axis=ax, dtype=dtype, keepdims=True)
    reduced = range(a.ndim) if ax is None else ax
    split = parallel.split_axis(a.shape, exclude=reduced)
    if split is not None:
        lead = (slice(None),) * split
        parts = parallel.parallel_for(a.shape[split], lambda start, stop: ufunc.reduce(
            a[lead + (slice(start, stop),)], axis=ax, dtype=dtype, keepdims=True),
            a.size // a.shape[split])
        return np.concatenate(parts, axis=split)
    flat = a.reshape(-1) if a.flags.c_contiguous else None
    if flat is not None:
        parts = parallel.parallel_for(flat.size, lambda start, stop: ufunc.reduce(
            flat[start:stop], dtype=dtype))
    else:
        split = parallel.split_axis(a.shape)
        lead = (slice(None),) * split
        parts = parallel.parallel_for(a.shape[split], lambda start, stop: ufunc.reduce(
            a[lead + (slice(start, stop),)], axis=None, dtype=dtype), a.size // a.shape[split])
    parts = np.array(parts)
    return ufunc.reduce(parts, dtype=parts.dtype).reshape((1,) * a.ndim)


# ---- sums and products -----------------------------------------------------------------

def _ufunc_reduce(ufunc, out, self, dim, keepdim, dtype):
    _check_out_dtype(out, dtype)
    a = operand(self, out.dtype)
    ax, acc = axes(a.ndim, dim), acc_dtype(out.dtype)
    dst = out._array()
    if ax is None and dst.ndim == 0 and acc == dst.dtype and a.size < min(
            parallel.GRAIN, _NATIVE_TOTAL_MIN):
        ufunc.reduce(a, axis=None, dtype=acc, out=dst)     # a small total: straight into out
        return
    store(out, reduce(ufunc, a, ax, acc))


def sum_kernel(out, self, dim=None, keepdim=False, dtype=None):
    if dim and (dtype is None or dtype is out.dtype) and out.dtype is self.dtype:
        # a float sum over trailing dims, or over leading dims (a bias's gradient) straight
        # into out, in C
        a = self._array()
        if a.__class__ is np.ndarray:
            ax = axes(a.ndim, dim)
            if _row_sums(out, a, ax, False):
                return
            dst = out._array()
            if not np.may_share_memory(a, dst) and _native_sum(a, ax, dst) is not None:
                return
    _ufunc_reduce(np.add, out, self, dim, keepdim, dtype)


def prod_kernel(out, self, dim=None, keepdim=False, dtype=None):
    _ufunc_reduce(np.multiply, out, self, None if dim is None else (dim,), keepdim, dtype)


def _without_nan(a: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(a), 0, a) if a.dtype.kind == "f" or a.dtype == dt.bfloat16.np \
        else a


def nansum_kernel(out, self, dim=None, keepdim=False, dtype=None):
    _check_out_dtype(out, dtype)
    if out.dtype.is_complex and self.dtype.is_floating_point and self.numel():
        # a float input summed into complex (PyTorch sums integer and bool ones with sum)
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for '{out.dtype.cname}'")
    # NaN counts as 0 before the cast to the sum's dtype (an integer one would make it junk)
    a = _converted(_without_nan(self._array()), self.dtype, out.dtype)
    store(out, np.add.reduce(a, axis=axes(a.ndim, dim), dtype=acc_dtype(out.dtype),
                             keepdims=True))


def mean_kernel(out, self, dim=None, keepdim=False, dtype=None):
    """Computed in `dtype` (else the input's), then cast to out= (PyTorch's order)."""
    _check_out_dtype(out, dtype)
    d = self.dtype if dtype is None else dtype
    a = operand(self, d)
    ax = axes(a.ndim, dim)
    if d is self.dtype and _row_sums(out, a, ax, True):
        return
    total = reduce(np.add, a, ax, acc_dtype(d))
    store(out, total / _reduced_count(a.shape, ax))


def nanmean_kernel(out, self, dim=None, keepdim=False, dtype=None):
    _check_out_dtype(out, dtype)
    a = operand(self, out.dtype)
    ax = axes(a.ndim, dim)
    total = np.add.reduce(_without_nan(a), axis=ax, dtype=acc_dtype(out.dtype), keepdims=True)
    count = np.add.reduce(~np.isnan(a), axis=ax, dtype=np.int64, keepdims=True)
    store(out, total / count)


# ---- extrema ---------------------------------------------------------------------------

def _ordered(t) -> np.ndarray:
    """Elements in a dtype NumPy orders natively (bfloat16 widens exactly to float32)."""
    a = t._array()
    return a.astype(np.float32) if t.dtype is dt.bfloat16 else a


def max_all_kernel(out, self):
    store(out, reduce(np.maximum, _ordered(self), None))


def min_all_kernel(out, self):
    store(out, reduce(np.minimum, _ordered(self), None))


def _values_indices(ufunc, arg, outs, self, dim):
    a = _as_1d(self._array())
    d = dim % a.ndim
    if _row_extremes(outs[0], outs[1], a, d, ufunc is np.minimum):
        return
    a = _as_1d(_ordered(self))
    store(outs[0], ufunc.reduce(a, axis=d, keepdims=True) if a.__class__ is np.ndarray
          else _device_reduce(ufunc, a, d))                   # NaN propagates...
    store(outs[1], arg(a, axis=d, keepdims=True))             # ...and is the first arg


def max_dim_kernel(outs, self, dim, keepdim=False):
    _values_indices(np.maximum, np.argmax, outs, self, dim)


def min_dim_kernel(outs, self, dim, keepdim=False):
    _values_indices(np.minimum, np.argmin, outs, self, dim)


def amax_kernel(out, self, dim=(), keepdim=False):
    a = self._array()
    ax = axes(a.ndim, dim)
    if ax is None or len(ax) != 1 or not _row_extremes(out, None, a, ax[0], False):
        store(out, reduce(np.maximum, _ordered(self), ax))


def amin_kernel(out, self, dim=(), keepdim=False):
    a = self._array()
    ax = axes(a.ndim, dim)
    if ax is None or len(ax) != 1 or not _row_extremes(out, None, a, ax[0], True):
        store(out, reduce(np.minimum, _ordered(self), ax))


def aminmax_kernel(outs, self, dim=None, keepdim=False):
    a = _ordered(self)
    ax = axes(a.ndim, None if dim is None else (dim,))
    if a.__class__ is np.ndarray:
        store(outs[0], np.minimum.reduce(a, axis=ax, keepdims=True))
        store(outs[1], np.maximum.reduce(a, axis=ax, keepdims=True))
    else:
        store(outs[0], a.min(axis=ax, keepdims=True))
        store(outs[1], a.max(axis=ax, keepdims=True))


def _arg_kernel(arg, out, self, dim, keepdim):
    if dim is not None:
        a = _as_1d(self._array())
        if _row_extremes(None, out, a, dim % a.ndim, arg is np.argmin):
            return
    a = _ordered(self)
    if dim is None:
        store(out, arg(a))                      # over the flattened (row-major) elements
    else:
        a = _as_1d(a)
        store(out, arg(a, axis=dim % a.ndim, keepdims=True))


def argmax_kernel(out, self, dim=None, keepdim=False):
    _arg_kernel(np.argmax, out, self, dim, keepdim)


def argmin_kernel(out, self, dim=None, keepdim=False):
    _arg_kernel(np.argmin, out, self, dim, keepdim)


# ---- statistics ------------------------------------------------------------------------

def _var_mean(self, dim, correction):
    """(variance, mean) with keepdims, in the accumulation dtype (two-pass, stable)."""
    a = self._array()
    ax = axes(a.ndim, dim)
    n = _reduced_count(a.shape, ax)
    mean = np.add.reduce(a, axis=ax, dtype=acc_dtype(self.dtype), keepdims=True) / n
    dev = a - mean
    sq = dev.real * dev.real + dev.imag * dev.imag if dev.dtype.kind == "c" else dev * dev
    m2 = np.add.reduce(sq, axis=ax, keepdims=True)
    c = 1 if correction is None else correction
    return m2 / max(n - c, 0), mean


def var_kernel(out, self, dim=None, correction=None, keepdim=False):
    store(out, _var_mean(self, dim, correction)[0])


def std_kernel(out, self, dim=None, correction=None, keepdim=False):
    store(out, np.sqrt(_var_mean(self, dim, correction)[0]))


def var_mean_kernel(outs, self, dim=None, correction=None, keepdim=False):
    var, mean = _var_mean(self, dim, correction)
    store(outs[0], var)
    store(outs[1], mean)


def std_mean_kernel(outs, self, dim=None, correction=None, keepdim=False):
    var, mean = _var_mean(self, dim, correction)
    store(outs[0], np.sqrt(var))
    store(outs[1], mean)


def _finite_shift(m: np.ndarray) -> np.ndarray:
    """The max used to shift exponentials; an infinite (or missing) max shifts nothing."""
    return np.where(np.isinf(m), 0, m)


def logsumexp_kernel(out, self, dim, keepdim=False):
    """log(sum(exp(x - max))) + max. PyTorch composes it of tensor ops, so a float16 or
    bfloat16 result is rounded after each of them (the shifted input, its exponential, the
    sum, the log): done here too, or a sum near 1 loses its last bits differently."""
    a = operand(self, out.dtype).astype(acc_dtype(out.dtype), copy=False)
    ax = axes(a.ndim, dim)
    real = a.real if a.dtype.kind == "c" else a
    if a.__class__ is np.ndarray:
        m = _finite_shift(np.maximum.reduce(real, axis=ax, keepdims=True, initial=-np.inf))
    else:           # CuPy's max has no `initial`: an empty input needs no shift
        m = _finite_shift(real.max(axis=ax, keepdims=True)) if real.size else 0
    if out.dtype is dt.float16 or out.dtype is dt.bfloat16:
        def rounded(x):
            return x.astype(out.dtype.np).astype(a.dtype)
    else:
        def rounded(x):
            return x
    total = rounded(np.add.reduce(rounded(np.exp(rounded(a - m))), axis=ax, keepdims=True))
    store(out, rounded(np.log(total)) + m)


def norm2_native(out, a: np.ndarray) -> bool:
    """The 2-norm of all of a contiguous float32/float64 array, into out's one element of
    its dtype, by native/norm.c: norm_kernel's bits without its |x| and x * x arrays
    (minGPT's 41 gradients in `_foreach_norm`: 463 -> 277 us; x.norm() of 16K floats
    9.7 -> ~5 us). False where it does not apply."""
    dst = out._array()
    if not (native.dense(a) and dst.__class__ is np.ndarray and dst.dtype == a.dtype
            and dst.size == 1):
        return False
    fn = native.function("norm", "norm2_" + native.suffix(a), "npp")
    if fn is None:
        return False
    fn(a.size, native.pointer(a), native.pointer(dst))
    return True


def norm_kernel(out, self, p, dim=None, keepdim=False, dtype=None):
    a = self._array()
    if (p is None or p == 2) and dim is None and dtype is None and norm2_native(out, a):
        return
    compute = acc_dtype(self.dtype if dtype is None else dtype)
    if a.dtype != compute:
        a = a.astype(compute)
    x = np.abs(a)
    ax = axes(x.ndim, dim)
    p = 2 if p is None else p
    if p == 2:
        r = np.sqrt(np.add.reduce(x * x, axis=ax, keepdims=True))
    elif p == 1:
        r = np.add.reduce(x, axis=ax, keepdims=True)
    elif p == np.inf:
        r = reduce(np.maximum, x, ax)
    elif p == -np.inf:
        r = reduce(np.minimum, x, ax)
    elif p == 0:
        r = np.add.reduce(x != 0, axis=ax, dtype=x.dtype, keepdims=True)
    else:
        r = np.add.reduce(x ** p, axis=ax, keepdims=True) ** (1.0 / p)
    store(out, r)


# ---- logical reductions ----------------------------------------------------------------

def _truth(t) -> np.ndarray:
    a = t._array()
    return a if a.dtype == np.bool_ else a != 0


def _check_logical_out(name, out):
    if out.dtype is not dt.bool and out.dtype is not dt.uint8:
        raise RuntimeError(f"{name} only supports bool tensor for result, got: "
                           f"{out.dtype.cname}")


def all_kernel(out, self, dim=None, keepdim=False):
    _check_logical_out("all", out)
    b = _truth(self)
    ax = axes(b.ndim, dim, all_if_empty=False)
    store(out, np.logical_and.reduce(b, axis=ax, keepdims=True) if b.__class__ is np.ndarray
          else b.all(axis=ax, keepdims=True))


def any_kernel(out, self, dim=None, keepdim=False):
    _check_logical_out("any", out)
    b = _truth(self)
    ax = axes(b.ndim, dim, all_if_empty=False)
    store(out, np.logical_or.reduce(b, axis=ax, keepdims=True) if b.__class__ is np.ndarray
          else b.any(axis=ax, keepdims=True))


def count_nonzero_kernel(out, self, dim=None):
    b = _truth(self)
    store(out, np.add.reduce(b, axis=axes(b.ndim, dim), dtype=np.int64, keepdims=True))


# ---- scans -----------------------------------------------------------------------------

# PyTorch's CPU scans carry their running value in at::acc_type, which is double for float
# (and complex<double> for complex<float>): a float32 cumsum after cancellation, or a cumprod
# through a float32 overflow, keeps the digits a float32 running value loses. CUDA's carry
# float, as acc_dtype says.
_CPU_SCAN_ACC = {dt.float32: np.dtype(np.float64), dt.complex64: np.dtype(np.complex128)}


def _scan(ufunc, out, self, dim, dtype):
    _check_out_dtype(out, dtype)
    a = _as_1d(operand(self, out.dtype))
    acc = _CPU_SCAN_ACC.get(out.dtype) if a.__class__ is np.ndarray else None
    store(out, ufunc.accumulate(a, axis=dim % a.ndim, dtype=acc or acc_dtype(out.dtype)))


def cumsum_kernel(out, self, dim, dtype=None):
    _scan(np.add, out, self, dim, dtype)


def cumprod_kernel(out, self, dim, dtype=None):
    _scan(np.multiply, out, self, dim, dtype)


def _complex_logaddexp(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log(exp(x) + exp(y)) shifted by the operand with the larger real part."""
    big = np.where(x.real >= y.real, x, y)
    small = np.where(x.real >= y.real, y, x)
    return big + np.log1p(np.exp(small - big))


def logcumsumexp_kernel(out, self, dim):
    a = _as_1d(self._array().astype(acc_dtype(out.dtype), copy=False))
    d = dim % a.ndim
    if a.__class__ is not np.ndarray:
        store(out, _device_scan(np.logaddexp if a.dtype.kind != "c" else _complex_logaddexp,
                                a, d))
        return
    if a.dtype.kind != "c":
        store(out, np.logaddexp.accumulate(a, axis=d))
        return
    r = np.array(a)                       # complex: NumPy has no complex logaddexp
    head = [slice(None)] * a.ndim
    prev = [slice(None)] * a.ndim
    for i in range(1, a.shape[d]):
        head[d], prev[d] = i, i - 1
        r[tuple(head)] = _complex_logaddexp(r[tuple(prev)], a[tuple(head)])
    store(out, r)


def _device_scan(combine, a, d: int):
    """The inclusive scan of `a` along `d` with an associative elementwise `combine`, on a
    CuPy array: log2(n) whole-array steps (Hillis-Steele), each combining every element
    with the partial result `step` places before it."""
    r = a.copy()
    n, step = a.shape[d], 1
    lead = (slice(None),) * d
    while step < n:
        r[lead + (slice(step, None),)] = combine(r[lead + (slice(step, None),)],
                                                 r[lead + (slice(None, n - step),)])
        step *= 2
    return r
