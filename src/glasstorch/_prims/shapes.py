"""Shape primitives. Views (as_strided, broadcast_in_dim, squeeze, transpose, slice,
collapse_view, split_dim, view_of) compute new (shape, stride, storage offset) over the same
storage; reshape, collapse, rev and cat copy, into a row-major result.

Every view ATen offers (view, expand, permute, narrow, unsqueeze, flatten, unflatten, ...)
is one or two of these: the small set a compiler has to understand.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.shape import check_in_bounds
from ..ops.registry import spec
from .declaration import prim


def _dim(d: int, ndim: int, name: str) -> int:
    if not -max(ndim, 1) <= d < max(ndim, 1):
        raise IndexError(f"prims::{name}: dimension {d} is out of range for a tensor of "
                         f"{ndim} dimensions")
    return d % max(ndim, 1)


# ---- views -------------------------------------------------------------------------------------

def _as_strided_meta(a, size, stride, storage_offset):
    if len(size) != len(stride):
        raise RuntimeError(f"prims::as_strided: size {list(size)} and stride {list(stride)} "
                           "have different lengths")
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or storage_offset < 0:
        raise RuntimeError("prims::as_strided: sizes, strides and the storage offset must "
                           "not be negative")
    check_in_bounds(tuple(size), tuple(stride), storage_offset, a.dtype.itemsize,
                    a._storage.nbytes())
    return size, stride, storage_offset


def _broadcast_in_dim_meta(a, shape, broadcast_dimensions):
    dims = list(broadcast_dimensions)
    if len(dims) != a.dim() or sorted(set(dims)) != dims or any(
            not 0 <= d < len(shape) for d in dims):
        raise RuntimeError(f"prims::broadcast_in_dim: broadcast_dimensions {dims} must name "
                           f"{a.dim()} increasing dimensions of the result shape "
                           f"{list(shape)}")
    stride = [0] * len(shape)
    for j, d in enumerate(dims):
        if a.shape[j] == shape[d]:
            stride[d] = a.stride(j)
        elif a.shape[j] != 1:
            raise RuntimeError(f"prims::broadcast_in_dim: input dimension {j} of size "
                               f"{a.shape[j]} cannot broadcast to size {shape[d]}")
    return shape, stride, a.storage_offset()


def _squeeze_meta(a, dimensions):
    dims = {_dim(d, a.dim(), "squeeze") for d in dimensions}
    for d in dims:
        if a.shape[d] != 1:
            raise RuntimeError(f"prims::squeeze: dimension {d} has size {a.shape[d]}, not 1")
    keep = [i for i in range(a.dim()) if i not in dims]
    return [a.shape[i] for i in keep], [a.stride(i) for i in keep], a.storage_offset()


def _transpose_meta(a, permutation):
    if sorted(permutation) != list(range(a.dim())):
        raise RuntimeError(f"prims::transpose: {list(permutation)} is not a permutation of "
                           f"the {a.dim()} dimensions")
    return ([a.shape[p] for p in permutation], [a.stride(p) for p in permutation],
            a.storage_offset())


def _slice_meta(a, start_indices, limit_indices, strides=None):
    steps = strides if strides is not None else [1] * a.dim()
    if not len(start_indices) == len(limit_indices) == len(steps) == a.dim():
        raise RuntimeError("prims::slice: start_indices, limit_indices and strides need one "
                           f"entry per dimension ({a.dim()})")
    shape, stride, offset = [], [], a.storage_offset()
    for d, (lo, hi, step) in enumerate(zip(start_indices, limit_indices, steps)):
        if not 0 <= lo <= hi <= a.shape[d] or step < 1:
            raise RuntimeError(f"prims::slice: [{lo}:{hi}:{step}] is not a slice of dimension "
                               f"{d} of size {a.shape[d]}")
        shape.append(math.ceil((hi - lo) / step))
        stride.append(a.stride(d) * step)
        offset += lo * a.stride(d)
    return shape, stride, offset


def _slice_in_dim_meta(a, start_index, limit_index, stride=1, axis=0):
    axis = _dim(axis, a.dim(), "slice_in_dim")
    starts, limits, steps = [0] * a.dim(), list(a.shape), [1] * a.dim()
    starts[axis], limits[axis], steps[axis] = start_index, limit_index, stride
    return _slice_meta(a, starts, limits, steps)


def _collapsed(a, start, end, name):
    start, end = _dim(start, a.dim(), name), _dim(end, a.dim(), name)
    if start > end:
        raise RuntimeError(f"prims::{name}: start {start} is after end {end}")
    return start, end, math.prod(a.shape[start:end + 1])


def _collapse_view_meta(a, start, end):
    start, end, length = _collapsed(a, start, end, "collapse_view")
    sized = [(s, st) for s, st in zip(a.shape[start:end + 1], a.stride()[start:end + 1])
             if s != 1]
    if length and any(outer[1] != inner[1] * inner[0] for outer, inner in zip(sized, sized[1:])):
        raise RuntimeError(f"prims::collapse_view: dimensions {start}..{end} of strides "
                           f"{list(a.stride())} cannot be collapsed without a copy (use "
                           "prims::collapse)")
    inner = sized[-1][1] if sized else a.stride(end)
    return (list(a.shape[:start]) + [length] + list(a.shape[end + 1:]),
            list(a.stride()[:start]) + [inner] + list(a.stride()[end + 1:]), a.storage_offset())


def _split_dim_meta(a, dim, outer_length):
    dim = _dim(dim, a.dim(), "split_dim")
    size = a.shape[dim]
    if outer_length <= 0 or size % outer_length:
        raise RuntimeError(f"prims::split_dim: dimension {dim} of size {size} cannot be split "
                           f"into {outer_length} equal parts")
    inner = size // outer_length
    shape = list(a.shape[:dim]) + [outer_length, inner] + list(a.shape[dim + 1:])
    stride = list(a.stride()[:dim]) + [a.stride(dim) * inner, a.stride(dim)] + \
        list(a.stride()[dim + 1:])
    return shape, stride, a.storage_offset()


def _view_of_meta(a):
    return a.shape, a.stride(), a.storage_offset()


prim("as_strided(Tensor(a!) a, SymInt[] size, SymInt[] stride, SymInt storage_offset) -> "
     "Tensor(a!)", kind="view", meta=_as_strided_meta)
prim("broadcast_in_dim(Tensor(a) a, SymInt[] shape, int[] broadcast_dimensions) -> Tensor(a)",
     kind="view", meta=_broadcast_in_dim_meta,
     doc="input dimension j becomes result dimension broadcast_dimensions[j]; the others "
         "(and size-1 inputs) are broadcast with stride 0")
prim("squeeze(Tensor(a) a, int[] dimensions) -> Tensor(a)", kind="view", meta=_squeeze_meta)
prim("transpose(Tensor(a) a, int[] permutation) -> Tensor(a)", kind="view",
     meta=_transpose_meta)
prim("slice(Tensor(a) a, SymInt[] start_indices, SymInt[] limit_indices, SymInt[]? "
     "strides=None) -> Tensor(a)", kind="view", meta=_slice_meta)
prim("slice_in_dim(Tensor(a) a, SymInt start_index, SymInt limit_index, int stride=1, "
     "int axis=0) -> Tensor(a)", kind="view", meta=_slice_in_dim_meta)
prim("collapse_view(Tensor(a) a, int start, int end) -> Tensor(a)", kind="view",
     meta=_collapse_view_meta, doc="merges dimensions start..end (inclusive) into one")
prim("split_dim(Tensor(a) a, int dim, SymInt outer_length) -> Tensor(a)", kind="view",
     meta=_split_dim_meta, doc="dimension dim becomes (outer_length, size // outer_length)")
prim("view_of(Tensor(a) a) -> Tensor(a)", kind="view", meta=_view_of_meta)


# ---- copies ------------------------------------------------------------------------------------

def _reshape_meta(a, shape):
    if math.prod(shape) != a.numel() or any(s < 0 for s in shape):
        raise RuntimeError(f"prims::reshape: shape {list(shape)} is invalid for input of size "
                           f"{a.numel()}")
    return spec(shape, a.dtype)


def _collapse_meta(a, start, end):
    start, end, length = _collapsed(a, start, end, "collapse")
    return spec(list(a.shape[:start]) + [length] + list(a.shape[end + 1:]), a.dtype)


def _rev_meta(a, dims):
    for d in dims:
        _dim(d, a.dim(), "rev")
    return spec(a.shape, a.dtype)


def _cat_meta(tensors, dim):
    if not tensors:
        raise RuntimeError("prims::cat: expected a non-empty list of tensors")
    first = tensors[0]
    dim = _dim(dim, first.dim(), "cat")
    for t in tensors[1:]:
        if t.dtype is not first.dtype or t.dim() != first.dim() or any(
                t.shape[i] != first.shape[i] for i in range(first.dim()) if i != dim):
            raise RuntimeError(f"prims::cat: tensors of shape {list(t.shape)} ({t.dtype}) and "
                               f"{list(first.shape)} ({first.dtype}) cannot be joined along "
                               f"dimension {dim}")
    shape = list(first.shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return spec(shape, first.dtype)


def _collapse(x, start, end):
    start, end = start % max(x.ndim, 1), end % max(x.ndim, 1)
    return x.reshape(x.shape[:start] + (-1,) + x.shape[end + 1:])


def _reshape(x, shape):
    return x.reshape(shape)


def _rev(x, dims):
    return np.flip(x, tuple(dims))


def _cat(arrays, dim):
    return np.concatenate(arrays, axis=dim % max(arrays[0].ndim, 1))


prim("reshape(Tensor a, SymInt[] shape) -> Tensor", kind="shape", meta=_reshape_meta,
     impl=_reshape)
prim("collapse(Tensor a, int start, int end) -> Tensor", kind="shape", meta=_collapse_meta,
     impl=_collapse)
prim("rev(Tensor a, int[] dims) -> Tensor", kind="shape", meta=_rev_meta, impl=_rev)
prim("cat(Tensor[] tensors, int dim) -> Tensor", kind="shape", meta=_cat_meta, impl=_cat)
