"""CPU kernels for joining and rearranging: cat, stack, where, flip, roll, repeat and
repeat_interleave's counts, on NumPy arrays (CuPy arrays for CUDA tensors)."""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ...core.promotion import common_dtype
from ...core.shape import wrap_dim, wrap_dims
from ...core.tensor import Tensor
from ..arrays import module_of
from .copy import assign_array
from .pointwise import scalar as np_scalar


def cat_cpu(out, tensors, dim=0):
    pieces = [t for t in tensors if not _skipped(t)]
    if not pieces:
        return
    d = wrap_dim(dim, pieces[0].dim())
    arr = out._array()
    where = [slice(None)] * arr.ndim
    start = 0
    for t in pieces:
        n = t._shape[d]
        where[d] = slice(start, start + n)
        if t.dtype is out.dtype:
            np.copyto(arr[tuple(where)], t._array())
        else:
            assign_array(arr[tuple(where)], t._array())
        start += n


def stack_cpu(out, tensors, dim=0):
    d = wrap_dim(dim, tensors[0].dim() + 1)
    arr = out._array()
    lead = (slice(None),) * d
    for i, t in enumerate(tensors):
        assign_array(arr[lead + (i, Ellipsis)], t._array())


def _as_np(x, d: dt.dtype):
    if isinstance(x, Tensor):
        a = x._array()
        return a if a.dtype == d.np else a.astype(d.np)
    return np_scalar(x, d)


def where_cpu(out, condition, self, other):
    d = common_dtype(self, other)
    cond = condition._array()
    if cond.dtype != np.bool_:
        cond = cond.astype(bool)
    result = np.where(cond, _as_np(self, d), _as_np(other, d))
    if out.dtype is d:
        np.copyto(out._array(), result)
    else:
        assign_array(out._array(), result)


def flip_cpu(out, self, dims):
    arr = self._array()
    dims = wrap_dims(dims, self.dim())
    assign_array(out._array(), np.flip(arr, dims) if dims and arr.ndim else arr)


def roll_cpu(out, self, shifts, dims=()):
    arr = self._array()
    if not dims:
        rolled = np.roll(arr.reshape(-1), shifts[0]).reshape(arr.shape)
    else:
        rolled = np.roll(arr, shifts, tuple(wrap_dim(d, arr.ndim) for d in dims))
    assign_array(out._array(), rolled)


def repeat_cpu(out, self, sizes):
    padded = (1,) * (len(sizes) - self.dim()) + tuple(self._shape)
    assign_array(out._array(), np.tile(self._array().reshape(padded), sizes))


def repeat_counts_cpu(repeats, output_size=None):
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype is not dt.int64 and repeats.dtype is not dt.int32:
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                  f"'{repeats.dtype.cname}'")
    r = repeats._array()
    if r.size and r.min() < 0:
        raise RuntimeError("repeats can not be negative")
    if r.__class__ is np.ndarray:
        values = np.repeat(np.arange(r.size, dtype=r.dtype), r)
    else:       # CuPy's repeat takes host counts: position k belongs to the i whose run holds k
        xp = module_of(r)
        ends = xp.cumsum(r)
        total = int(ends[-1]) if r.size else 0
        values = xp.searchsorted(ends, xp.arange(total), side="right").astype(r.dtype)
    if output_size is not None and output_size != values.size:
        raise RuntimeError("allocated size does not match required size")
    out = Tensor._empty(values.shape, repeats.dtype, repeats.device)
    assign_array(out._array(), values)
    return out


def _skipped(t: Tensor) -> bool:
    """Legacy behaviour: 1-D empty tensors are ignored by cat whatever the other shapes."""
    return t._shape == (0,)


def tri_kernel(lower: bool):
    def kernel(out, self, diagonal=0):
        m, n = self._shape[-2:]
        arr = out._array()
        tri = np.tri if arr.__class__ is np.ndarray else module_of(arr).tri
        if lower:
            drop = ~tri(m, n, diagonal, dtype=bool)
        else:
            drop = tri(m, n, diagonal - 1, dtype=bool)
        if out is not self:
            assign_array(arr, self._array())
        np.copyto(arr, np.zeros((), arr.dtype), where=drop)
    kernel.__name__ = kernel.__qualname__ = "cpu_tril" if lower else "cpu_triu"
    return kernel
