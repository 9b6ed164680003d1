"""CPU kernels for gather/scatter and the index_* family (index_add, index_copy, index_fill,
put, masked_scatter, scatter_reduce): NumPy's ufunc.at for accumulation, with add_at's
widening where CuPy lacks a dtype."""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from ..arrays import module_of
from .copy import assign_array
from .indexing import _assert_no_overlap, add_at


def _size(t: Tensor, d: int) -> int:
    return t._shape[d] if t._shape else 1


def _as_nd(a: np.ndarray) -> np.ndarray:
    """A 0-dim array as a 1-element vector view (PyTorch treats scalars as size-1 dims)."""
    return a.reshape(1) if a.ndim == 0 else a


def _copy_self(out: Tensor, self: Tensor, *read) -> np.ndarray:
    """out's array holding self's values, after PyTorch's check that out shares no memory
    with the tensors the op still has to read."""
    for t in read:
        if isinstance(t, Tensor):
            _assert_no_overlap(out, t)
    arr = out._array()
    if out is not self:
        assign_array(arr, self._array())
    return _as_nd(arr)


def _check_bounds(idx: np.ndarray, d: int, size: int, *, negative=False, error=RuntimeError,
                  prefix="") -> None:
    """PyTorch's 'index i is out of bounds for dimension d with size n'."""
    if not idx.size:
        return
    low = -size if negative else 0
    if idx.__class__ is np.ndarray:
        wrong = idx.min() < low or idx.max() >= size
    else:                               # a GPU array: one synchronisation, not two
        wrong = bool(((idx < low) | (idx >= size)).any())
    if wrong:
        bad = int(idx[(idx < low) | (idx >= size)].ravel()[0])
        raise error(f"{prefix}index {bad} is out of bounds for dimension {d} with size {size}")


def _scatter_key(idx: np.ndarray, d: int) -> tuple:
    """The fancy index that sends element p of `idx` to position p with p[d] = idx[p]."""
    n, xp = idx.ndim, module_of(idx)
    return tuple(idx if k == d else xp.arange(s).reshape((s,) + (1,) * (n - 1 - k))
                 for k, s in enumerate(idx.shape))


_HALF = (dt.float16.np, dt.bfloat16.np)


def _ufunc_at(ufunc, arr, key, values) -> None:
    """ufunc.at(arr, key, values) for add, multiply, maximum or minimum, on NumPy or CuPy
    arrays (key: index arrays; slices too for add)."""
    if arr.__class__ is np.ndarray:
        ufunc.at(arr, key, values)
    elif ufunc is np.add:
        add_at(arr, key, values)
    else:
        combine_at(ufunc, arr, key, values)


def combine_at(ufunc, arr, key, values) -> None:
    """ufunc.at on a CuPy array: the values are sorted by the position they go to, combined
    per position by a segmented scan (log2(n) whole-array steps, each combining a value with
    the partial result `step` places before it when both go to the same position), and each
    position is then combined once with its values' result. NaN propagates as in ufunc.at."""
    xp = module_of(arr)
    idx = xp.broadcast_arrays(*key)
    flat = xp.zeros(idx[0].shape, np.int64)
    for i, size in zip(idx, arr.shape):
        flat = flat * size + i
    flat = flat.ravel()
    if not flat.size:
        return
    order = xp.argsort(flat, kind="stable")
    where = flat[order]
    v = xp.broadcast_to(xp.asarray(values, arr.dtype), idx[0].shape).ravel()[order]
    step, n = 1, where.size
    while step < n:
        same = where[step:] == where[:-step]
        v[step:] = xp.where(same, ufunc(v[step:], v[:-step]), v[step:])
        step *= 2
    last = xp.ones(n, bool)
    last[:-1] = where[1:] != where[:-1]
    pos = xp.unravel_index(where[last], arr.shape)
    arr[pos] = ufunc(arr[pos], v[last])


def _accumulate(ufunc, arr: np.ndarray, key, values) -> None:
    """ufunc.at(arr, key, values); float16/bfloat16 accumulate in float32 and round once, as
    PyTorch's scatter/index_add kernels do."""
    if arr.dtype in _HALF:
        work = arr.astype(np.float32)
        _ufunc_at(ufunc, work, key, values.astype(np.float32))
        assign_array(arr, work)
    else:
        _ufunc_at(ufunc, arr, key, values)


def _leading(a: np.ndarray, shape) -> np.ndarray:
    """The corner of `a` with the index's shape (src may be larger in every dim)."""
    return a[tuple(slice(0, s) for s in shape)]


def _read_index(index: Tensor, d: int, size: int) -> np.ndarray:
    idx = _as_nd(index._array())
    _check_bounds(idx, d, size)
    return idx


def gather_cpu(out, self, dim, index, sparse_grad=False):
    if not out.numel():
        return
    d = wrap_dim(dim, self.dim())
    _assert_no_overlap(out, self)
    arr = _as_nd(self._array())
    idx = _read_index(index, d, arr.shape[d])
    sub = arr[tuple(slice(None) if k == d else slice(0, s) for k, s in enumerate(idx.shape))]
    assign_array(out._array(), np.take_along_axis(sub, idx, axis=d).reshape(out._shape))


SCATTER_REDUCE = {"add": np.add, "multiply": np.multiply}


def scatter_into(out, self, dim, index, values, reduce, src=None):
    """values: an array (src) or a scalar; reduce None, 'add' or 'multiply'."""
    d = wrap_dim(dim, self.dim())
    idx = _read_index(index, d, _size(self, d)) if index.numel() else None
    arr = _copy_self(out, self, index, src)
    if idx is None:
        return
    key = _scatter_key(idx, d)
    if src is not None:
        values = _leading(_as_nd(values), idx.shape)
    else:
        values = np.asarray(values).astype(arr.dtype)
    if reduce is None:
        arr[key] = values
    else:
        _accumulate(SCATTER_REDUCE[reduce], arr, key, values)


def scatter_add_cpu(out, self, dim, index, src):
    scatter_into(out, self, dim, index, src._array(), "add", src)


_REDUCE_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
                 "amin": np.minimum}


def _identity(reduce: str, np_dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if np_dtype.kind == "b":
        return reduce == "amin"
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


def scatter_reduce_cpu(out, self, dim, index, src, reduce, include_self=True):
    d = wrap_dim(dim, self.dim())
    if reduce in ("amax", "amin") and self.dtype.is_complex and index.numel():
        raise NotImplementedError(f'"scatter_gather_tensor_cpu_reduce_{reduce}" not implemented '
                                  f"for '{self.dtype.cname}'")
    idx = _read_index(index, d, _size(self, d)) if index.numel() else None
    arr = _copy_self(out, self, index, src)
    if idx is None:
        return
    key = _scatter_key(idx, d)
    values = _leading(_as_nd(src._array()), idx.shape)
    work = arr.astype(np.float32) if arr.dtype in _HALF else arr    # round once at the end
    if not include_self:
        work[key] = _identity(reduce, work.dtype)
    _ufunc_at(_REDUCE_UFUNC[reduce], work, key, values)
    if reduce == "mean":
        if work is not arr:             # PyTorch rounds the sum before dividing it
            assign_array(arr, work)
            work = arr.astype(np.float32)
        count = module_of(work).full(work.shape, 1 if include_self else 0, np.int64)
        _ufunc_at(np.add, count, key, 1)
        hit = count > 0
        if work.dtype.kind in "iu":
            work[hit] = np.floor_divide(work[hit], count[hit])
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                work[hit] = work[hit] / count[hit]
    if work is not arr:
        assign_array(arr, work)


def _slice_key(d: int, idx: np.ndarray) -> tuple:
    return (slice(None),) * d + (idx,)


def _check_index_add_bounds(self: Tensor, d: int, index: Tensor, alpha) -> bool:
    """PyTorch's index_add_ checks its indices in one of three ways (whether there is anything
    to write: False when not). Over 2+ dims nothing is checked when there is nothing to add;
    along the first or last dim with alpha 1 and int64 indices it runs scatter_add_, whose
    message names the index; else its loop raises IndexError 'index out of range in self'."""
    idx = index._array().reshape(-1)
    if self.dim() > 1:
        if not idx.size or not self.numel():
            return False
        if d in (0, self.dim() - 1) and alpha == 1 and index.dtype is dt.int64:
            _check_bounds(idx, d, _size(self, d))
            return True
    if idx.size and (idx.min() < 0 or idx.max() >= _size(self, d)):
        raise IndexError("index out of range in self")
    return True


def index_add_cpu(out, self, dim, index, source, alpha=1):
    d = wrap_dim(dim, self.dim())
    arr = _copy_self(out, self, index, source)
    if not _check_index_add_bounds(self, d, index, alpha):
        return
    idx = index._array().reshape(-1)
    values = _as_nd(source._array())
    if alpha != 1:
        values = values * np.asarray(alpha).astype(arr.dtype)[()]
    _accumulate(np.add, arr, _slice_key(d, idx), values)


def index_copy_cpu(out, self, dim, index, source):
    d = wrap_dim(dim, self.dim())
    idx = index._array().reshape(-1)
    _check_bounds(idx, d, _size(self, d), error=IndexError, prefix="index_copy_(): ")
    arr = _copy_self(out, self, index, source)
    arr[_slice_key(d, idx)] = _as_nd(source._array()).reshape(
        arr.shape[:d] + (idx.size,) + arr.shape[d + 1:])


def _index_fill_empty_error(self, d: int, index: int) -> None:
    """PyTorch fills along `dim` through a view of self with that dim's size 1 and stride 0:
    made over a storage too small for it, that view fails; else each element checks its index
    (none when another dim is empty)."""
    shape = list(self._shape)
    stride = list(self._stride)
    shape[d], stride[d] = 1, 0
    if 0 in shape:
        return
    itemsize = self.dtype.itemsize
    need = (self._offset + sum((n - 1) * st for n, st in zip(shape, stride)) + 1) * itemsize
    have = self.untyped_storage().nbytes()
    if need > have:
        raise RuntimeError(f"setStorage: sizes {shape}, strides {stride}, storage offset "
                           f"{self._offset}, and itemsize {itemsize} requiring a storage size "
                           f"of {need} are out of bounds for storage of size {have}")
    raise IndexError(f"index {index} is out of bounds for dimension {d} with size 0")


def index_fill_cpu(out, self, dim, index, value):
    d = wrap_dim(dim, self.dim())
    size = _size(self, d)
    idx = index._array().reshape(-1)
    if self.numel() == 0 and idx.size:        # PyTorch checks nothing, then fails or not
        if size == 0:
            _index_fill_empty_error(self, d, int(idx[0]))
        return
    _check_bounds(idx, d, size, negative=True, error=IndexError)
    arr = _copy_self(out, self, index, value)
    fill = value.item() if isinstance(value, Tensor) else value
    arr[_slice_key(d, idx)] = np.asarray(fill).astype(arr.dtype)


def put_cpu(out, self, index, source, accumulate=False):
    idx = index._array().reshape(-1)
    n = self.numel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx[(idx < -n) | (idx >= n)].ravel()[0])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    arr = _copy_self(out, self, index, source).reshape(out._shape)
    flat = arr.reshape(-1)                  # a copy unless arr is row-major contiguous
    values = source._array().reshape(-1)
    if accumulate:
        add_at(flat, idx, values)
    else:
        flat[idx] = values
    if not arr.flags.c_contiguous:          # flat is a copy
        arr[...] = flat.reshape(arr.shape)


def masked_scatter_cpu(out, self, mask, source):
    arr = out._array()
    where = np.broadcast_to(mask._array(), arr.shape)
    count = int(np.count_nonzero(where))
    values = source._array().reshape(-1)
    if count > values.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    arr = _copy_self(out, self, mask, source).reshape(out._shape)
    arr[where] = values[:count]


def scatter_src_kernel(out, self, dim, index, src, reduce=None):
    scatter_into(out, self, dim, index, src._array(), reduce, src)


def scatter_value_kernel(out, self, dim, index, value, reduce=None):
    scatter_into(out, self, dim, index, value.item() if isinstance(value, Tensor) else value,
                  reduce)
