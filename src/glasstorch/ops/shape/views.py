"""View ops: new metadata (shape, strides, offset) over the same storage.

Each meta function returns (shape, stride, offset) for the view, or a list of them for ops
that return several views (split, unbind); the registry turns it into a kernel for every
backend plus the ADInplaceOrView bookkeeping (`_base` is the root base, the version counter
is shared). Ops that PyTorch writes in terms of other views (movedim, flatten, chunk,
tensor_split, real) are composites here too, so their results are views of the same root.
"""
from __future__ import annotations

import operator
from math import prod

from ...core import dtype as dt
from ...core.shape import (Size, as_shape, check_in_bounds, contiguous_strides,
                          expand_strides, infer_size, view_strides, wrap_dim, wrap_dims)
from ...core.tensor import Tensor, contiguous_format
from ...dispatch.keys import CONJ_BIT, MATH_BITS, SPARSE_KEYS, DispatchKey
from ..registry import composite, export, kernel_op, view
from ..wrappers import handlers_see, public

# ---- view / reshape --------------------------------------------------------------------


_VIEW_PLANS: dict = {}   # (shape, stride, requested size) -> the view's (shape, stride)
_NO_VIEW = (None, None)  # a plan saying the strides allow no view (reshape then copies)


def _view_plan(self, size):
    """(shape, stride) of self viewed as `size` (a tuple; -1 resolved), or `_NO_VIEW` when
    its strides allow no such view; infer_size's errors for a size that does not fit.
    Computed once per (layout, size): view and reshape ask it on every call."""
    key = (self._shape, self._stride, size)
    try:
        plan = _VIEW_PLANS.get(key)      # a function of the key: computed once per layout
    except TypeError:                    # an unhashable size element: infer_size refuses it
        key = plan = None
    if plan is None:
        shape = infer_size(size, self.numel())
        stride = view_strides(self._shape, self._stride, shape)
        plan = (shape, stride) if stride is not None else _NO_VIEW
        if key is not None and len(_VIEW_PLANS) < 4096 and \
                all(n.__class__ is int for n in shape + (stride or ())):   # no SymInt kept
            _VIEW_PLANS[key] = plan
    return plan


def _view_meta(self, size):
    try:                         # `_view_plan`'s cache, read here: every view call asks it
        plan = _VIEW_PLANS.get((self._shape, self._stride, size))
    except TypeError:            # a list, or an unhashable element
        plan = None
    if plan is None:
        plan = _view_plan(self, size if size.__class__ is tuple else tuple(size))
    shape, stride = plan
    if stride is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least "
            "one dimension spans across two contiguous subspaces). Use .reshape(...) "
            "instead.")
    return shape, stride, self._offset


view_op = view("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", _view_meta, function=False,
               doc="A view with a new shape; raises when the strides don't allow one.")
_view_method = Tensor.view       # the generated method: honours __torch_function__ itself


def _view_either(self, *shape, dtype=None):
    if dtype is None and len(shape) == 1 and isinstance(shape[0], dt.dtype):
        dtype = shape[0]
    if dtype is not None:
        from .dtype_views import view_as_dtype
        return view_as_dtype(self, dtype)
    return _view_method(self, *shape)


_view_general = public(_view_either, "view", True)     # honours __torch_function__


def view_dispatch(self, *shape, dtype=None):
    # A view by shape (every call but a dtype's) goes straight to the generated method,
    # whose own __torch_function__ check suffices: one frame, not three, on the common view.
    if dtype is None and (len(shape) != 1 or shape[0].__class__ is not dt.dtype):
        return _view_method(self, *shape)
    return _view_general(self, *shape, dtype=dtype)


view_dispatch.__doc__ = _view_method.__doc__
view_dispatch.__name__, view_dispatch.__qualname__ = "view", "Tensor.view"
Tensor.view = view_dispatch
handlers_see(_view_method, view_dispatch)     # as Tensor.view, whichever path a call took
handlers_see(_view_general, view_dispatch)


@composite(method=True)
def reshape(input, *shape):
    """A view when the strides allow one, otherwise a contiguous copy."""
    size, stride = _view_plan(input, as_shape(shape))   # cached: reshape runs in every layer
    if stride is not None:
        return _view_method(input, *size)    # Tensor.view's path for a shape, one frame less
    return unsafe_view_op.functional(input.clone(memory_format=contiguous_format),
                                     infer_size(as_shape(shape), input.numel()))


unsafe_view_op = kernel_op("_unsafe_view(Tensor self, SymInt[] size) -> Tensor", method=False,
                           function=False, doc="A contiguous tensor's elements under a new "
                           "shape, as a new tensor rather than a view (reshape's copy).")


def _unsafe_view_impl(self, size):
    shape = infer_size(size, self.numel())
    return Tensor._make(self._storage, self._offset, shape, contiguous_strides(shape),
                        self.dtype)


unsafe_view_op.impl("CPU")(_unsafe_view_impl)
unsafe_view_op.impl("CUDA")(_unsafe_view_impl)          # metadata only: any device
unsafe_view_op.impl("Meta")(_unsafe_view_impl)


@composite(method=True, function=False)
def view_as(self, other):
    return self.view(other.shape)


@composite(method=True, function=False)
def reshape_as(self, other):
    return self.reshape(other.shape)


def _alias_meta(self):
    return self._shape, self._stride, self._offset


alias = view("alias(Tensor(a) self) -> Tensor(a)", _alias_meta, method=False, function=False,
             doc="A view with the same metadata (what x[...] and x[:] return).")


# ---- as_strided ------------------------------------------------------------------------

def _as_strided_meta(self, size, stride, storage_offset=None):
    offset = self._offset if storage_offset is None else storage_offset
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    check_in_bounds(size, stride, offset, self.dtype.itemsize, self._storage.nbytes())
    return size, stride, offset


as_strided = view("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, "
                  "SymInt? storage_offset=None) -> Tensor(a)", _as_strided_meta,
                  doc="A view with explicit sizes, strides and offset, bounds-checked "
                      "against the storage.")


# ---- permutations ----------------------------------------------------------------------

def _transpose_meta(self, dim0, dim1):
    n = len(self._shape)
    # wrap_dim's common case inlined (views run in every layer, forward and backward)
    d0 = dim0 + (n if dim0 < 0 else 0) if dim0.__class__ is int and -n <= dim0 < n else \
        wrap_dim(dim0, n)
    d1 = dim1 + (n if dim1 < 0 else 0) if dim1.__class__ is int and -n <= dim1 < n else \
        wrap_dim(dim1, n)
    shape, stride = list(self._shape), list(self._stride)
    if n:
        shape[d0], shape[d1] = shape[d1], shape[d0]
        stride[d0], stride[d1] = stride[d1], stride[d0]
    return tuple(shape), tuple(stride), self._offset


transpose = view("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
                 _transpose_meta, doc="Swap two dimensions (a view).")


@composite(method=True)
def swapaxes(input, axis0, axis1):
    """numpy's name for transpose."""
    return input.transpose(axis0, axis1)


@composite(method=True)
def swapdims(input, dim0, dim1):
    """An alias of transpose."""
    return input.transpose(dim0, dim1)


def _t_meta(self):
    n = len(self._shape)
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    if n < 2:
        return self._shape, self._stride, self._offset
    (rows, cols), (row_stride, col_stride) = self._shape, self._stride
    return (cols, rows), (col_stride, row_stride), self._offset


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


def _as_dims(dims):
    if isinstance(dims, (list, tuple, Size)):
        return [operator.index(d) for d in dims]
    return [operator.index(dims)]


@composite(method=True)
def movedim(input, source, destination):
    """Move the dimensions in `source` to the positions in `destination` (a permute view)."""
    src, dst = _as_dims(source), _as_dims(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    n = input.dim()
    nsrc = [wrap_dim(d, n) for d in src]
    ndst = [wrap_dim(d, n) for d in dst]
    if len(set(nsrc)) != len(nsrc):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(ndst)) != len(ndst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    order = [-1] * max(n, 1)
    for s, d in zip(nsrc, ndst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in nsrc)
    order = [next(rest) if o == -1 else o for o in order[:n]]
    return input.permute(order)


@composite(method=True)
def moveaxis(input, source, destination):
    """numpy's name for movedim."""
    return movedim(input, source, destination)


# ---- expand ----------------------------------------------------------------------------

def _expand_meta(self, size, implicit=False):
    shape, stride = expand_strides(self._shape, self._stride, tuple(size), self.dtype,
                                   self._storage.device.type)
    return shape, stride, self._offset


expand = view("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
              _expand_meta, function=False,
              doc="Broadcast size-1 dimensions to a larger size without copying (stride 0); "
                  "-1 keeps a dimension's size.")


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
        dims = range(n)
    else:
        dims = wrap_dims(dim if isinstance(dim, (tuple, list)) else (dim,), n)
    keep = [i for i in range(n) if not (i in dims and self._shape[i] == 1)]
    return (tuple(self._shape[i] for i in keep), tuple(self._stride[i] for i in keep),
            self._offset)


# PyTorch's three overloads (each recording its own node: SqueezeBackward0/1/2), behind one
# function and method.
squeeze_all = view("squeeze(Tensor(a) self) -> Tensor(a)", _squeeze_meta, function=False,
                   method=False, doc="Remove every size-1 dimension (a view).")
squeeze_dim = view("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", _squeeze_meta,
                   function=False, method=False,
                   doc="Remove dimension `dim` if it has size 1 (a view either way).")
squeeze = view("squeeze.dims(Tensor(a) self, int[]? dim=None) -> Tensor(a)", _squeeze_meta,
               function=False, method=False,
               doc="Remove the size-1 dimensions among `dim` (a view either way).")


def squeeze_dispatch(input, dim=None):
    """Remove size-1 dimensions: all of them, dimension `dim`, or those in a tuple `dim`; a
    view even when nothing is removed."""
    if dim is None:
        return squeeze_all.functional(input)
    if isinstance(dim, (tuple, list)):
        return squeeze.functional(input, list(dim))
    return squeeze_dim.functional(input, dim)


export("squeeze", squeeze_dispatch, method=True)


# ---- select / slice / narrow -----------------------------------------------------------

def _select_meta(self, dim, index):
    n = len(self._shape)
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = dim if dim.__class__ is int and 0 <= dim < n else wrap_dim(dim, n)
    size = self._shape[d]
    index = operator.index(index)
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    if index < 0:
        index += size
    shape, stride = list(self._shape), list(self._stride)   # lists: Size slicing is slow
    del shape[d]
    step = stride.pop(d)
    return shape, tuple(stride), self._offset + index * step


select = view("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", _select_meta,
              doc="The slice at `index` along `dim`, with that dimension removed (a view).")


def _slice_meta(self, dim=0, start=None, end=None, step=1):
    n = len(self._shape)
    if n == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = dim if dim.__class__ is int and 0 <= dim < n else wrap_dim(dim, n)
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
    shape, stride = list(self._shape), list(self._stride)
    shape[d] = (end - start + step - 1) // step
    stride[d] *= step
    return shape, tuple(stride), self._offset + start * self._stride[d]


slice_op = view("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None,"
                " SymInt step=1) -> Tensor(a)", _slice_meta, method=False, function=False,
                doc="self[start:end:step] along dim (a view).")


def _narrow_meta(self, dim, start, length):
    if self.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
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


# ---- unfold / diagonal -----------------------------------------------------------------

def _unfold_meta(self, dimension, size, step):
    n = self.dim()
    d = wrap_dim(dimension, n)
    max_size = self._shape[d] if n else 1
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {max_size} but size is"
                           f" {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    shape, stride = list(self._shape), list(self._stride)
    shape.append(size)
    stride.append(stride[d] if n else 1)
    if n:
        shape[d] = (max_size - size) // step + 1
        stride[d] *= step
    return tuple(shape), tuple(stride), self._offset


unfold = view("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
              _unfold_meta, function=False,
              doc="All windows of `size` elements along `dimension`, `step` apart, as a new "
                  "last dimension (a view).")


def _diagonal_meta(self, offset=0, dim1=0, dim2=1):
    n = self.dim()
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    shape, stride = self._shape, self._stride
    if offset >= 0:
        length = max(min(shape[d1], shape[d2] - offset), 0)
        start = offset * stride[d2]
    else:
        length = max(min(shape[d1] + offset, shape[d2]), 0)
        start = -offset * stride[d1]
    keep = [i for i in range(n) if i != d1 and i != d2]
    return (tuple(shape[i] for i in keep) + (length,),
            tuple(stride[i] for i in keep) + (stride[d1] + stride[d2],),
            self._offset + (start if length else 0))


diagonal = view("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
                _diagonal_meta,
                doc="The diagonal over dim1 and dim2 as a new last dimension (a view).")


# ---- flatten / unflatten ---------------------------------------------------------------

@composite(method=True)
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim: a view when the strides allow one, else a copy."""
    n = input.dim()
    start, end = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if n == 0:
        return input.reshape(1)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input._shape
    return input.reshape(shape[:start] + (prod(shape[start:end + 1]),) + shape[end + 1:])


@composite(method=True)
def unflatten(input, dim, sizes):
    """Split dimension `dim` into `sizes` (one -1 allowed); always a view."""
    n = input.dim()
    d = wrap_dim(dim, n, scalar_ok=False)
    sizes = as_shape((sizes,))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    size = input._shape[d]
    try:
        sizes = infer_size(sizes, size)
    except RuntimeError as e:
        if "only one dimension" in str(e):
            raise RuntimeError("unflatten: only one dimension can be inferred") from None
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({size}) in the input tensor") from None
    return input.view(input._shape[:d] + tuple(sizes) + input._shape[d + 1:])


# ---- split / chunk / unbind / tensor_split ---------------------------------------------

def _pieces(self, d, sizes):
    """(shape, stride, offset) of consecutive pieces of the given sizes along dim d."""
    out, start = [], 0
    step = self._stride[d]
    for s in sizes:
        out.append((self._shape[:d] + (s,) + self._shape[d + 1:], self._stride,
                    self._offset + start * step))
        start += s
    return out


def _split_meta(self, split_size, dim=0):
    if self.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size="
                           f"{split_size}")
    d = wrap_dim(dim, self.dim())
    size = self._shape[d]
    if split_size == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {size}")
    num = max(-(-size // split_size), 1) if split_size else 1
    sizes = [split_size] * num
    sizes[-1] = split_size - (split_size * num - size)
    return _pieces(self, d, sizes)


split_op = view("split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
                _split_meta, method=False, function=False,
                doc="Views of consecutive `split_size` pieces along `dim`.")


def _split_with_sizes_meta(self, split_sizes, dim=0):
    if self.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, self.dim())
    size = self._shape[d]
    if any(s < 0 for s in split_sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries,"
                           f" but got split_sizes={list(split_sizes)}")
    if sum(split_sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                           f"(input tensor's size at dimension {d}), but got split_sizes="
                           f"{list(split_sizes)}")
    return _pieces(self, d, split_sizes)


split_with_sizes_op = view("split_with_sizes(Tensor(a) self, SymInt[] split_sizes, int dim=0) "
                           "-> Tensor(a)[]", _split_with_sizes_meta, method=False,
                           function=False, doc="Views of pieces of the given sizes along dim.")


def _split(tensor, split, dim):
    if isinstance(split, Tensor) and split.dim() == 0:
        split = int(split)
    if isinstance(split, (list, tuple, Size)):
        return tuple(split_with_sizes_op.function(tensor, as_shape((split,)), dim))
    return tuple(split_op.function(tensor, operator.index(split), dim))


def split(tensor, split_size_or_sections, dim=0):
    """Views of `tensor` in pieces: of size `split_size_or_sections` (the last may be
    smaller), or of the sizes in the list."""
    return _split(tensor, split_size_or_sections, dim)


def _split_method(self, split_size, dim=0):
    return _split(self, split_size, dim)


_split_method.__name__ = _split_method.__qualname__ = "split"
_split_method.__doc__ = split.__doc__


@composite(method=True)
def split_with_sizes(input, split_sizes, dim=0):
    return tuple(split_with_sizes_op.function(input, as_shape((split_sizes,)), dim))


export("split", split)
export("split", _split_method, method=True, function=False)


@composite(method=True)
def chunk(input, chunks, dim=0):
    """At most `chunks` views of equal size (the last may be smaller) along `dim`."""
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input.dim())
    size = input._shape[d]
    split_size = -(-size // chunks)
    if split_size == 0 and size == 0:   # keep the number of (empty) chunks
        return tuple(split_with_sizes_op.function(input, (0,) * chunks, d))
    return tuple(split_op.function(input, split_size, d))


def _unbind_meta(self, dim=0):
    d = wrap_dim(dim, self.dim(), scalar_ok=False)
    shape = self._shape[:d] + self._shape[d + 1:]
    stride = self._stride[:d] + self._stride[d + 1:]
    step = self._stride[d]
    return [(shape, stride, self._offset + i * step) for i in range(self._shape[d])]


unbind_op = view("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]", _unbind_meta,
                 method=False, function=False)


@composite(method=True)
def unbind(input, dim=0):
    """A tuple of views, one per index along `dim`, with that dimension removed."""
    return tuple(unbind_op.function(input, dim))


def _split_indices(indices, size):
    """Slices [0, i0), [i0, i1), ..., [ik, size) as (start, end) pairs."""
    bounds = [0] + list(indices) + [size]
    return list(zip(bounds[:-1], bounds[1:]))


@composite(method=True)
def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None):
    """Views split at `indices` (a list) or into `sections` nearly equal parts along dim."""
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    spec = next(x for x in (indices_or_sections, sections, indices, 1) if x is not None)
    if isinstance(spec, Tensor):
        if spec.device.type != "cpu":
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be on cpu, "
                               f"but it's on {spec.device}")
        if spec.dtype is not dt.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {spec.dtype.cname}")
        if spec.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {spec.dim()} dims")
        spec = spec.item() if spec.dim() == 0 else [int(i) for i in spec.tolist()]
    d = wrap_dim(dim, input.dim())
    size = input._shape[d]
    if isinstance(spec, (list, tuple, Size)):
        bounds = _split_indices([operator.index(i) for i in spec], size)
    else:
        n = operator.index(spec)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        small, extra = divmod(size, n)
        sizes = [small + 1] * extra + [small] * (n - extra)
        starts = [sum(sizes[:i]) for i in range(n)]
        bounds = [(s, s + k) for s, k in zip(starts, sizes)]
    return tuple(slice_op.function(input, d, s, e, 1) for s, e in bounds)


def _directional_split(name, min_dim, dim_of, doc):
    def fn(input, indices_or_sections):
        if input.dim() < min_dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension,"
                               f" but got a tensor with {input.dim()} dimensions!")
        d = dim_of(input)
        if not isinstance(indices_or_sections, (list, tuple, Size)):
            n = operator.index(indices_or_sections)
            size = input._shape[d]
            if n == 0 or size % n:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but "
                                   f"the size of the dimension {size} is not divisible by the "
                                   f"split_size {n}!")
        return tensor_split(input, indices_or_sections, d)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


for _name, _min, _dim, _doc in (
        ("hsplit", 1, lambda x: 1 if x.dim() > 1 else 0,
         "tensor_split along dimension 1 (0 for 1-D input); sections must divide evenly."),
        ("vsplit", 2, lambda x: 0, "tensor_split along dimension 0; sections must divide evenly."),
        ("dsplit", 3, lambda x: 2, "tensor_split along dimension 2; sections must divide evenly.")):
    export(_name, _directional_split(_name, _min, _dim, _doc), method=True)


# ---- complex views ---------------------------------------------------------------------

def _view_as_real_meta(self):
    if not self.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if self._keyset & CONJ_BIT:
        raise RuntimeError(
            "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the "
            "conjugate tensor so you can view it as real, use self.resolve_conj(); however, be "
            "warned that the resulting tensor will NOT alias the original.")
    return (self._shape + (2,), tuple(s * 2 for s in self._stride) + (1,), self._offset * 2,
            self.dtype.to_real())


view_as_real = view("view_as_real(Tensor(a) self) -> Tensor(a)", _view_as_real_meta,
                    method=False, doc="A complex tensor's (real, imag) pairs as a real tensor "
                                      "with a last dimension of size 2 (a view).")


def _view_as_complex_meta(self):
    if self.dtype not in (dt.float16, dt.float32, dt.float64):
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {self.dtype.cname}")
    if self.dim() == 0 or self._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if self._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in self._stride[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return (self._shape[:-1], tuple(s // 2 for s in self._stride[:-1]), self._offset // 2,
            self.dtype.to_complex())


view_as_complex = view("view_as_complex(Tensor(a) self) -> Tensor(a)", _view_as_complex_meta,
                       method=False, doc="A real tensor whose last dimension (size 2, stride 1)"
                                         " holds (real, imag) pairs, as complex (a view).")


@composite()
def real(input):
    """The real part: a view of a complex tensor; a real tensor itself."""
    if not input.is_complex():
        return input
    return view_as_real.functional(_stored(input)).select(-1, 0)


@composite()
def imag(input):
    """The imaginary part of a complex tensor (a view)."""
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    pairs = view_as_real.functional(_stored(input))
    if input._keyset & CONJ_BIT:           # conj's imaginary part: the stored one, negated
        pairs = pairs._neg_view()
    return pairs.select(-1, 1)


def _stored(input):
    """input, or for a conj() view the view of the stored values (real and imag read
    through it, as PyTorch's do)."""
    return input._conj() if input._keyset & CONJ_BIT else input


def _part_setter(part):
    def setter(self, value):
        target = part(self)
        if isinstance(value, Tensor):
            target.copy_(value)
        else:
            target.fill_(value)
    return setter


Tensor.real = property(real, _part_setter(real), doc="The real part (a view for complex).")
Tensor.imag = property(imag, _part_setter(imag), doc="The imaginary part (a view).")


# ---- detach / alias --------------------------------------------------------------------

def detach(input):
    """Shares storage and version counter but not the graph; not a view (`_base` is None).
    A tensor subclass with __torch_dispatch__ detaches through the dispatcher, so that its
    handler makes the result (aten.detach), as in PyTorch."""
    if input._keyset & _DETACH_DISPATCHES:
        return _detach_op(input)
    return _detach(input)


def _detach(input):
    out = Tensor._make(input._storage, input._offset, input._shape, input._stride,
                       input.dtype, input._vc)
    out._inference = input._inference
    out._keyset |= input._keyset & MATH_BITS
    return out


# keys whose tensors detach through the dispatcher: a __torch_dispatch__ subclass, vmap's
# BatchedTensor (its batching rule detaches the physical tensor)
_DETACH_DISPATCHES = (1 << DispatchKey.Python) | (1 << DispatchKey.FuncTorchBatched) | sum(
    1 << k for k in SPARSE_KEYS)   # and sparse tensors, whose kernel keeps their indices
_detach_op = kernel_op("detach(Tensor(a) self) -> Tensor(a)", method=False, function=False)
_detach_op.functional.register("CompositeExplicitAutograd", _detach)


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
    self._set_requires_grad(False)
    return self


def _data_get(self):
    """A tensor sharing storage but not the version counter (so in-place goes unseen)."""
    out = Tensor._make(self._storage, self._offset, self._shape, self._stride, self.dtype)
    out._keyset |= self._keyset & MATH_BITS
    return out


def _data_set(self, value):
    self.dtype = value.dtype    # first: the bounds check uses the new itemsize
    self._set_metadata(value._storage, value._offset, value._shape, value._stride)


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
        from ...core.storage import UntypedStorage
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


# ---- in-place views: self takes the metadata of one of its own views -------------------

def _restride_in_place(self, make_view):
    """self becomes `make_view(self)` (same storage, new shape/strides/offset). While
    recording, self's history continues through the view's node, as PyTorch's in-place
    view ops do; a leaf that requires grad cannot change this way."""
    from ...core.grad_state import state
    recording = state.enabled and self._requires_grad
    if recording and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    view = make_view(self if recording else self.detach())
    self._set_metadata(view._storage, view._offset, view._shape, view._stride)
    self._bump_version()
    if recording:
        self.grad_fn, self._output_nr = view.grad_fn, 0
    return self


def as_strided_(self, size, stride, storage_offset=None):
    """as_strided in place: self views its storage with the given geometry."""
    offset = self._offset if storage_offset is None else storage_offset
    return _restride_in_place(self, lambda t: t.as_strided(size, stride, offset))


def squeeze_(self, dim=None):
    return _restride_in_place(self, lambda t: t.squeeze() if dim is None else t.squeeze(dim))


def unsqueeze_(self, dim):
    return _restride_in_place(self, lambda t: t.unsqueeze(dim))


def transpose_(self, dim0, dim1):
    return _restride_in_place(self, lambda t: t.transpose(dim0, dim1))


def t_(self):
    return _restride_in_place(self, lambda t: t.t())


for _name, _fn in (("as_strided_", as_strided_), ("squeeze_", squeeze_),
                   ("unsqueeze_", unsqueeze_), ("transpose_", transpose_),
                   ("swapdims_", transpose_), ("swapaxes_", transpose_), ("t_", t_)):
    export(_name, _fn, method=True, function=_name == "as_strided_")
