"""View ops: new metadata (shape, strides, offset) over the same storage.

Each meta function returns (shape, stride, offset) for the view; the registry turns it into
a kernel for every backend plus the ADInplaceOrView bookkeeping (`_base`, shared version).
"""
from __future__ import annotations

import operator

from ..core.shape import (Size, as_shape, check_in_bounds, contiguous_strides,
                          expand_strides, infer_size, view_strides, wrap_dim, wrap_dims)
from ..core.tensor import Tensor
from .registry import composite, export, view

# ---- view / reshape --------------------------------------------------------------------


def _view_meta(self, size):
    shape = infer_size(size, self.numel())
    stride = view_strides(self._shape, self._stride, shape)
    if stride is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return shape, stride, self._offset


view_op = view("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", _view_meta, function=False,
               doc="A view with a new shape; raises when the strides don't allow one.")
_view_method = Tensor.view


def view_dispatch(self, *shape, dtype=None):
    """view(*shape), or view(dtype) reinterpreting the bytes as another dtype."""
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, Size)):
        from .dtype_views import view_as_dtype
        return view_as_dtype(self, shape[0])
    return _view_method(self, *shape)


view_dispatch.__doc__ = _view_method.__doc__
export("view", view_dispatch, method=True, function=False)


@composite(method=True)
def reshape(input, *shape):
    """A view when the strides allow one, otherwise a contiguous copy."""
    shape = infer_size(as_shape(shape), input.numel())
    if view_strides(input._shape, input._stride, shape) is not None:
        return input.view(shape)
    return input.clone(memory_format=_contiguous()).view(shape)


def _contiguous():
    from ..core.tensor import contiguous_format
    return contiguous_format


@composite(method=True, function=False)
def view_as(self, other):
    return self.view(other.shape)


@composite(method=True, function=False)
def reshape_as(self, other):
    return self.reshape(other.shape)


# ---- as_strided ------------------------------------------------------------------------

def _as_strided_meta(self, size, stride, storage_offset=None):
    offset = self._offset if storage_offset is None else storage_offset
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    check_in_bounds(size, stride, offset, self.dtype.itemsize, self._storage.nbytes())
    return size, stride, offset


as_strided = view("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, "
                  "SymInt? storage_offset=None) -> Tensor(a)", _as_strided_meta,
                  doc="A view with explicit sizes, strides and offset, bounds-checked "
                      "against the storage.")


# ---- permutations ----------------------------------------------------------------------

def _transpose_meta(self, dim0, dim1):
    n = self.dim()
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    shape, stride = list(self._shape), list(self._stride)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    stride[d0], stride[d1] = stride[d1], stride[d0]
    return tuple(shape), tuple(stride), self._offset


transpose = view("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
                 _transpose_meta, doc="Swap two dimensions (a view).")


@composite(method=True)
def swapaxes(input, axis0, axis1):
    return input.transpose(axis0, axis1)


swapdims = composite("swapdims", method=True)(lambda input, dim0, dim1:
                                               input.transpose(dim0, dim1))


def _t_meta(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.dim()}D")
    if self.dim() < 2:
        return self._shape, self._stride, self._offset
    return _transpose_meta(self, 0, 1)


t = view("t(Tensor(a) self) -> Tensor(a)", _t_meta, doc="Transpose a matrix (a view).")


def _permute_meta(self, dims):
    n = self.dim()
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {n} is not equal to len(dims) = {len(dims)}")
    dims = wrap_dims(dims, n)
    return (tuple(self._shape[d] for d in dims), tuple(self._stride[d] for d in dims),
            self._offset)


permute = view("permute(Tensor(a) self, int[] dims) -> Tensor(a)", _permute_meta,
               doc="Reorder the dimensions (a view).")


# ---- expand ----------------------------------------------------------------------------

def _expand_meta(self, size, implicit=False):
    shape, stride = expand_strides(self._shape, self._stride, tuple(size))
    return shape, stride, self._offset


expand = view("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
              _expand_meta, function=False,
              doc="Broadcast size-1 dimensions to a larger size without copying (stride 0).")


@composite(method=True, function=False)
def expand_as(self, other):
    return self.expand(other.shape)


@composite()
def broadcast_to(input, size):
    return input.expand(size)


# ---- squeeze / unsqueeze ---------------------------------------------------------------

def _unsqueeze_meta(self, dim):
    d = wrap_dim(dim, self.dim() + 1)
    shape, stride = list(self._shape), list(self._stride)
    new_stride = 1 if d >= self.dim() else shape[d] * stride[d]
    shape.insert(d, 1)
    stride.insert(d, new_stride)
    return tuple(shape), tuple(stride), self._offset


unsqueeze = view("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", _unsqueeze_meta,
                 doc="Insert a size-1 dimension at `dim` (a view).")


def _squeeze_meta(self, dim=None):
    n = self.dim()
    if dim is None:
        dims = set(range(n))
    else:
        dims = set(wrap_dims(dim if isinstance(dim, (tuple, list)) else (dim,), n)) if n else set()
    keep = [i for i in range(n) if not (i in dims and self._shape[i] == 1)]
    return (tuple(self._shape[i] for i in keep), tuple(self._stride[i] for i in keep),
            self._offset)


squeeze = view("squeeze.dims(Tensor(a) self, int[]? dim=None) -> Tensor(a)", _squeeze_meta,
               doc="Remove size-1 dimensions (all of them, or those in `dim`).")


# ---- select / slice / narrow -----------------------------------------------------------

def _select_meta(self, dim, index):
    n = self.dim()
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    size = self._shape[d]
    index = operator.index(index)
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    if index < 0:
        index += size
    return (self._shape[:d] + self._shape[d + 1:], self._stride[:d] + self._stride[d + 1:],
            self._offset + index * self._stride[d])


select = view("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", _select_meta,
              doc="The slice at `index` along `dim`, with that dimension removed (a view).")


def _slice_meta(self, dim=0, start=None, end=None, step=1):
    d = wrap_dim(dim, self.dim())
    size = self._shape[d]
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = 0 if start is None else operator.index(start)
    end = size if end is None else operator.index(end)
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    length = (end - start + step - 1) // step
    shape = self._shape[:d] + (length,) + self._shape[d + 1:]
    stride = self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1:]
    return shape, stride, self._offset + (start * self._stride[d] if length else 0)


slice_op = view("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None,"
                " SymInt step=1) -> Tensor(a)", _slice_meta, method=False, function=False,
                doc="self[start:end:step] along dim (a view).")


def _narrow_meta(self, dim, start, length):
    d = wrap_dim(dim, self.dim())
    size = self._shape[d]
    start = operator.index(start)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return _slice_meta(self, d, start, start + length, 1)


narrow = view("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)",
              _narrow_meta, doc="`length` elements of `dim` from `start` (a view).")


# ---- detach / alias --------------------------------------------------------------------

def detach(input):
    """Shares storage and version counter but not the graph; not a view (`_base` is None)."""
    out = Tensor._make(input._storage, input._offset, input._shape, input._stride,
                       input.dtype, input._vc)
    out._inference = input._inference
    return out


def detach_(self):
    """Detach in place: self stops requiring grad and forgets its graph."""
    if self._base is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are "
                           "using DistributedDataParallel (DDP) for training, and "
                           "gradient_as_bucket_view is set as True, gradients are views of "
                           "DDP buckets, and hence detach_() cannot be called on these "
                           "gradients. To fix this error, please refer to the Optimizer.zero_"
                           "grad() function in torch/optim/optimizer.py as the solution.")
    self.grad_fn = None
    self._requires_grad = False
    return self


def _data_get(self):
    """A tensor sharing storage but not the version counter (so in-place goes unseen)."""
    out = Tensor._make(self._storage, self._offset, self._shape, self._stride, self.dtype)
    return out


def _data_set(self, value):
    self._set_metadata(value._storage, value._offset, value._shape, value._stride)
    self.dtype = value.dtype


export("detach", detach, method=True)
export("detach_", detach_, method=True, function=False)
Tensor.data = property(_data_get, _data_set)


# ---- resize_ / set_ --------------------------------------------------------------------

def resize_(self, *size, memory_format=None):
    """Give self a new contiguous shape, growing the storage if it is too small."""
    shape = as_shape(size)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    stride = contiguous_strides(shape)
    numel = 1
    for s in shape:
        numel *= s
    needed = (self._offset + numel) * self.dtype.itemsize
    if needed > self._storage.nbytes():
        self._storage.resize_(needed)
    self._set_metadata(self._storage, self._offset, shape, stride)
    return self


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Point self at another tensor's or storage's memory (bounds-checked)."""
    if source is None:
        from ..core.storage import UntypedStorage
        self._set_metadata(UntypedStorage._new(0, self.device), 0, (0,), (1,))
    elif isinstance(source, Tensor):
        self._set_metadata(source._storage, source._offset, source._shape, source._stride)
    else:
        shape = (source.nbytes() // self.dtype.itemsize,) if size is None else tuple(size)
        stride = contiguous_strides(shape) if stride is None else tuple(stride)
        self._set_metadata(source, storage_offset, shape, stride)
    self._bump_version()
    return self


export("resize_", resize_, method=True, function=False)
export("set_", set_, method=True, function=False)
