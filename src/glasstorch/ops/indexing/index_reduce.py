"""index_reduce: reduce rows of `source` into `self` at given indices (prod, mean, amax,
amin), and unravel_index (flat indices to coordinates).
"""
from __future__ import annotations

import numpy as np

from ...backends.cpu.special_functions import INDEX_REDUCTIONS, index_reduce_kernel
from ...core import dtype as dt
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from ..registry import composite, require_tensor, spec, structured


@composite()
def unravel_index(indices, shape):
    """The coordinates (one tensor per dim of `shape`) of flat indices into a row-major
    tensor of that shape (indices outside wrap, as torch)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a Tensor, but got {type(indices).__name__}")
    if indices.dtype.category != dt.INT:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(s, int) for s in shape):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape:
        raise RuntimeError("ZeroDivisionError")
    if not shape:
        return ()
    from ..creation.factories import tensor
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]
    coords = indices.unsqueeze(-1).div(tensor(strides.tolist(), device=indices.device),
                                       rounding_mode="floor")
    return coords.remainder(tensor(list(shape), device=indices.device)).unbind(-1)


def _index_reduce_meta(self, dim, index, source, reduce, include_self=True):
    require_tensor("index_reduce", "index", 3, index)
    require_tensor("index_reduce", "source", 4, source)
    if reduce not in INDEX_REDUCTIONS:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {index.dtype.cname} and size: "
                         f"{list(index.shape)}")
    if index.dtype not in (dt.int32, dt.int64):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype.cname}")
    if self.dtype.is_complex and reduce in ("amax", "amin"):
        raise NotImplementedError(f'"{"maximum" if reduce == "amax" else "minimum"}_cpu" not '
                                  f"implemented for '{self.dtype.cname}'")
    if self.dtype is not source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({self.dtype.cname}) and source "
                           f"({source.dtype.cname}) must have the same scalar type")
    src_len = source.shape[d] if source.dim() else 1
    if index.numel() != src_len:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim): ({src_len}), for dim: {d}")
    self_rest = [s for i, s in enumerate(self.shape) if i != d]
    src_rest = [s for i, s in enumerate(source.shape) if i != d]
    if self_rest != src_rest:
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self.shape)} "
                           f"source.shape = {list(source.shape)}")
    if index.numel():
        idx = index._array()
        size = self.shape[d] if self.dim() else 1
        if idx.min() < 0 or idx.max() >= size:
            raise IndexError("index out of range in self")
    return spec(self._shape, self.dtype)


index_reduce = structured("index_reduce(Tensor self, int dim, Tensor index, Tensor source, "
                          "str reduce, *, bool include_self=True) -> Tensor",
                          _index_reduce_meta, promotes=False,
                          doc="self with source's slices reduced (prod, mean, amax, amin) "
                              "into the slices index names along dim.")
index_reduce.impl("CPU")(index_reduce_kernel)
