"""Tensor.view(dtype): the same bytes read as another dtype.

When the element sizes match only the dtype changes. A smaller element multiplies the last
dimension (and the other strides and the offset) by the size ratio; a larger one divides
them, which needs the last dimension to be contiguous and everything to divide evenly.
Like PyTorch 2.13 the result shares storage and version counter but is not an autograd
view: `_base` is None and `_is_view()` is False.
"""
from __future__ import annotations

from ...core.tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.keys import CONJ_BIT, NEG_BIT

view_dtype_op = define("view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)")


def _dtype_view_metadata(self, dtype):
    """(shape, stride, offset) of self's bytes seen as `dtype`, with PyTorch's checks."""
    if self._keyset & CONJ_BIT:
        raise RuntimeError("torch.Tensor.view is not supported for conjugate view tensors when "
                           "converting to a different dtype.")
    if self._keyset & NEG_BIT:
        raise RuntimeError("torch.Tensor.view is not supported for tensors with negative bit "
                           "set when converting to a different dtype.")
    old, new = self.dtype.itemsize, dtype.itemsize
    shape, stride, offset = self._shape, self._stride, self._offset
    if old == new:
        return shape, stride, offset
    what = f"to view {self.dtype.cname} as {dtype.cname} (different element sizes)"
    if not shape:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if old > new:
        ratio = old // new
        if stride[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {stride[-1]}")
        return (shape[:-1] + (shape[-1] * ratio,), tuple(s * ratio for s in stride[:-1]) + (1,),
                offset * ratio)
    ratio = new // old
    if shape[-1] % ratio:
        raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                           f"{shape[-1]}")
    if offset % ratio:
        raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got"
                           f" {offset}")
    if stride[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {stride[-1]}")
    for i, s in enumerate(stride[:-1]):
        if s % ratio:
            raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, but got "
                               f"{s}")
    return (shape[:-1] + (shape[-1] // ratio,), tuple(s // ratio for s in stride[:-1]) + (1,),
            offset // ratio)


def _view_dtype_kernel(self, dtype):
    shape, stride, offset = _dtype_view_metadata(self, dtype)
    out = Tensor._make(self._storage, offset, shape, stride, dtype, self._vc)
    out._inference = self._inference
    return out


view_dtype_op.register("CompositeExplicitAutograd", _view_dtype_kernel)


def view_as_dtype(self, dtype):
    """self's memory reinterpreted as `dtype` (Tensor.view(dtype))."""
    return view_dtype_op(self, dtype)
