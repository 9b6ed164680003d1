"""Indexing: Tensor.__getitem__/__setitem__ and the index ops behind them.

Basic indices (ints, slices, None, Ellipsis) become a chain of view ops applied left to
right, as PyTorch's applySlicing does: an int selects at once, so in `x[0, :, [1, 2]]` the
list indexes the already-selected tensor. Tensors, lists, NumPy arrays and bools are
collected per dimension and run as one advanced-indexing op (`aten::index`), which copies:
a boolean mask stands for the long indices of its nonzero elements, all indices broadcast
together, and when the indexed dimensions are not adjacent the result's index dimensions
go first (NumPy's rule). __setitem__ walks the same path and ends in one in-place op
(copy_/fill_ for basic indices, index_put_ for advanced ones), so the version counter
moves once.

The kernels (backends/cpu/indexing.py, except index and index_put_, whose plan is built
here) run on NumPy and CuPy arrays alike (CUDA tensors run them on the GPU); index
tensors may be on the CPU whatever the indexed tensor's device, and are moved to it.
"""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ...core.shape import (broadcast_shapes, broadcast_shapes2, has_internal_overlap,
    iterator_strides, view_strides, wrap_dim)
from ...core.tensor import Tensor
from ..copying.copies import _clone_impl, assign_array
from ..registry import composite, export, kernel_op, spec, structured, warn_user
from ..autocast import PROMOTE, autocast_policy
from ..shape.views import alias, select, slice_op, unsqueeze
from ...backends.cpu.indexing import (_assert_no_overlap, _scalar, add_at, check_scalar_fits,
    check_values, copyto_where, index_data, index_select_cpu, masked_fill_cpu,
    masked_select_cpu, nonzero_cpu, take_cpu)

# ---- scalars ---------------------------------------------------------------------------

TYPE_META_NAMES = {dt.bool: "bool", dt.uint8: "unsigned char", dt.int8: "signed char",
                   dt.int16: "short int", dt.int32: "int", dt.int64: "long int",
                   dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16", dt.float32: "float",
                   dt.float64: "double", dt.complex64: "c10::complex<float>",
                   dt.complex128: "c10::complex<double>"}
_SCALAR_TYPES = (bool, int, float, complex, np.number, np.bool_)


# ---- advanced indexing: the plan shared by index and index_put_ ------------------------

class _Plan:
    """Where an advanced index reads: NumPy key, result shape and PyTorch's result strides."""

    __slots__ = ("key", "shape", "stride", "empty")


def _check_index_dtypes(indices):
    for i, idx in enumerate(indices):
        if idx is not None and not isinstance(idx, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(idx).__name__}")
        if idx is not None and idx.dtype not in (dt.int64, dt.int32, dt.bool, dt.uint8):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _expand_masks(self, indices):
    """Per-dimension entries (array, shape, stride) or None; a k-dim mask gives k entries."""
    items = []
    for idx in indices:
        if idx is None:
            items.append(None)
            continue
        if idx.dtype is dt.bool or idx.dtype is dt.uint8:
            if idx.dtype is dt.uint8:
                warn_user("indexing with dtype torch.uint8 is now deprecated, please use a "
                          "dtype torch.bool instead.")
            if not idx._shape:         # PyTorch trips an internal assert here
                raise IndexError("a 0-dim boolean index is only supported as tensor[mask] or "
                                 "with a single value; use a 1-dim mask")
            start = len(items)
            for j, size in enumerate(idx._shape):
                if start + j >= self.dim() or size != self._shape[start + j]:
                    raise IndexError(
                        f"The shape of the mask {list(idx._shape)} at index {j} does not match "
                        f"the shape of the indexed tensor {list(self._shape)} at index "
                        f"{start + j}")
            if idx.device.type == "meta":
                raise NotImplementedError(
                    "indexing with a boolean mask on the 'meta' device: the result's shape "
                    "depends on the mask's values")
            for a in np.nonzero(index_data(idx, self)):
                items.append((a, (a.size,), (1,)))
        else:
            data = None if idx.device.type == "meta" else index_data(idx, self)
            items.append((data, idx._shape, idx._stride))
    if len(items) > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
    return items


def _broadcast_strides(shape, stride, target):
    lead = len(target) - len(shape)
    return tuple(0 if i < lead or shape[i - lead] != target[i] else stride[i - lead]
                 for i in range(len(target)))


def index_plan(self: Tensor, indices) -> _Plan:
    """Check and lay out `self[indices]` (indices: Tensors or None per dimension).

    Index values are checked wherever they are readable (meta indices give shapes only)."""
    _check_index_dtypes(indices)
    items = _expand_masks(self, indices)
    n = self.dim()
    items += [None] * (n - len(items))
    defined = [i for i, it in enumerate(items) if it is not None]
    if not defined:
        raise IndexError("advanced indexing needs at least one index tensor")
    shapes = [items[i][1] for i in defined]
    try:
        bshape = tuple(broadcast_shapes(*shapes))
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         f"with shapes {', '.join(str(list(s)) for s in shapes)}") from None
    sizes = [self._shape[i] for i in defined]
    if 0 in sizes and 0 not in bshape:
        raise IndexError("index is out of bounds for dimension with size 0")
    plan = _Plan()
    plan.key = tuple(slice(None) if it is None else it[0] for it in items)
    # PyTorch's layout: non-adjacent index dims move to the front; the indexed dims of self
    # are replaced by the broadcast index shape with stride 0, and the output strides come
    # from TensorIterator's ordering over that and the (broadcast) index tensors.
    order = list(range(n))
    if defined != list(range(defined[0], defined[-1] + 1)):
        order = defined + [i for i in range(n) if items[i] is None]
        defined = list(range(len(defined)))
    shape = [self._shape[i] for i in order]
    stride = [self._stride[i] for i in order]
    before, after = defined[0], n - defined[-1] - 1
    plan.shape = tuple(shape[:before]) + bshape + tuple(shape[n - after:])
    operands = [(plan.shape, tuple(stride[:before]) + (0,) * len(bshape) +
                 tuple(stride[n - after:]))]
    for i in (i for i, it in enumerate(items) if it is not None):
        # each index is expanded to the broadcast index shape, then viewed with size-1
        # dimensions around it (PyTorch's reshape_indexer); those keep view strides
        st = _broadcast_strides(items[i][1], items[i][2], bshape)
        vshape = (1,) * before + bshape + (1,) * after
        operands.append((vshape, view_strides(bshape, st, vshape)))
    plan.stride = iterator_strides(plan.shape, operands)
    plan.empty = 0 in plan.shape
    if not plan.empty:      # like PyTorch, an empty result reads no index
        for k, i in enumerate(i for i, it in enumerate(items) if it is not None):
            if items[i][0] is not None:
                _check_bounds(items[i][0], k, self._shape[i])
    return plan


def _check_bounds(a: np.ndarray, k: int, size: int) -> None:
    if not a.size:
        return
    if a.__class__ is np.ndarray:
        wrong = a.min() < -size or a.max() >= size
    else:                               # a GPU array: one synchronisation, not two
        wrong = bool(((a < -size) | (a >= size)).any())
    if wrong:
        bad = int(a[(a < -size) | (a >= size)].ravel()[0])
        raise IndexError(f"index {bad} is out of bounds for dimension {k} with size {size}")


# Index tensors may live on the CPU whatever self's device ("cross_device"), as in PyTorch.
index_op = kernel_op("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", method=False,
                     function=False, tags=("cross_device",),
                     doc="self[indices] for advanced (tensor) indices: a copy.")
index_op.on_cuda = "shared"


@index_op.impl("CPU")
def _index_cpu(self, indices):
    plan = index_plan(self, indices)
    out = Tensor._empty(plan.shape, self.dtype, self.device, plan.stride)
    if not plan.empty:
        np.copyto(out._array(), self._array()[plan.key])    # same dtype: no cast
    return out


@index_op.impl("Meta")
def _index_meta(self, indices):
    plan = index_plan(self, indices)
    return Tensor._empty(plan.shape, self.dtype, self.device, plan.stride)


# ---- index_put_ ------------------------------------------------------------------------

index_put_op = kernel_op("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, "
                         "bool accumulate=False) -> Tensor(a!)", mutates=(0,), method=False,
                         function=False, tags=("cross_device",),
                         doc="self[indices] = values (or += with accumulate=True), in place.")
index_put_op.on_cuda = "shared"


def _single_mask(self, indices, values):
    """The broadcastable mask when `self[mask] = one_value` can be a masked fill."""
    if values.numel() != 1 or values.device.type == "meta":
        return None
    mask, before = None, 0
    for idx in indices:
        if idx is None:
            if mask is None:
                before += 1
            continue
        if idx.dtype not in (dt.bool, dt.uint8) or mask is not None:
            return None
        mask = idx
    if mask is None:
        return None
    for j, size in enumerate(mask._shape):
        if before + j >= self.dim() or size != self._shape[before + j]:
            raise IndexError(
                f"The shape of the mask {list(mask._shape)} at index {j} does not match the "
                f"shape of the indexed tensor {list(self._shape)} at index {before + j}")
    trailing = self.dim() - before - mask.dim()
    return index_data(mask, self).astype(bool).reshape(mask._shape + (1,) * trailing)


def _warn_expanded(name: str, example: str) -> None:
    warn_user(f"Use of {name} on expanded tensors is deprecated. Please clone() the tensor "
              f"before performing this operation. This also applies to advanced indexing e.g. "
              f"{example}")


def _index_put_checks(self, indices, values, accumulate):
    """The masked-fill mask when that fast path applies, else the plan (after checks)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    indices = tuple(indices)
    expanded = has_internal_overlap(self._shape, self._stride)
    if expanded:
        _warn_expanded("index_put_", "tensor[indices] = tensor")
    if not accumulate:
        mask = _single_mask(self, indices, values)
        if mask is not None:
            if expanded:                  # PyTorch's index_put_ calls masked_fill_ here
                _warn_expanded("masked_fill_", "tensor[mask] = scalar")
            check_scalar_fits(values.item(), self.dtype)
            return mask, None
    for other in (values,) + indices:
        if other is not None:
            _assert_no_overlap(self, other)
    plan = index_plan(self, indices)
    check_values(self, plan, values)
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{self.dtype.cname} for the destination and {values.dtype.cname} "
                           "for the source.")
    return None, plan


@index_put_op.impl("CPU")
def _index_put_cpu(self, indices, values, accumulate=False):
    mask, plan = _index_put_checks(self, indices, values, accumulate)
    arr = self._array()
    if mask is not None:
        copyto_where(arr, values.item(), mask)
        return self
    if plan.empty:
        return self
    v = np.broadcast_to(index_data(values, self), plan.shape)
    if accumulate:
        add_at(arr, plan.key, v)
    else:
        arr[plan.key] = v
    return self


@index_put_op.impl("Meta")
def _index_put_meta(self, indices, values, accumulate=False):
    _index_put_checks(self, indices, values, accumulate)
    return self


def _check_put_args(name, indices, values, position):
    """The Python binding's checks: a tuple of Tensors (no None) and a Tensor of values."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices' (position {position}) must be tuple of "
                        f"Tensors, not {type(indices).__name__}")
    for i, idx in enumerate(indices):
        if not isinstance(idx, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position - 1}, but got"
                            f" {type(idx).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values' (position {position + 1}) must be Tensor, "
                        f"not {type(values).__name__}")


def index_put_(input, indices, values, accumulate=False):
    """input[indices] = values in place (values broadcast; accumulate=True adds, summing
    repeated indices); values must have input's dtype."""
    _check_put_args("index_put_", indices, values, 2)
    return index_put_op.functional(input, tuple(indices), values, accumulate)


# The out-of-place form is an operator of its own: the functional form autograd records for
# index_put_ (and so for `x[idx] = v` with values that require grad).
index_put_copy_op = kernel_op("index_put(Tensor self, Tensor?[] indices, Tensor values, "
                              "bool accumulate=False) -> Tensor", method=False, function=False,
                              tags=("cross_device",),
                              doc="A copy of self with self[indices] = values.")
index_put_copy_op.on_cuda = "shared"


@index_put_copy_op.impl("CPU")
def _index_put_copy_cpu(self, indices, values, accumulate=False):
    return _index_put_cpu(_clone_impl(self), indices, values, accumulate)


@index_put_copy_op.impl("Meta")
def _index_put_copy_meta(self, indices, values, accumulate=False):
    return _index_put_meta(_clone_impl(self), indices, values, accumulate)


def index_put(input, indices, values, accumulate=False):
    """Out-of-place index_put_: a copy of input with input[indices] = values."""
    _check_put_args("index_put", indices, values, 2)
    return index_put_copy_op.functional(input, tuple(indices), values, accumulate)


def _put_method(fn):
    def method(self, indices, values, accumulate=False):
        _check_put_args(fn.__name__, indices, values, 1)
        return fn(self, indices, values, accumulate)
    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


for _fn in (index_put_, index_put):
    export(_fn.__name__, _fn)
    export(_fn.__name__, _put_method(_fn), method=True, function=False)


# ---- parsing an index expression -------------------------------------------------------

_SEQUENCE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed"
    " in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error "
    "or a different result")
_SEQUENCES = (list, tuple, range, np.ndarray, str)


def _as_tuple(index) -> tuple:
    """PyTorch's (and old NumPy's) rule for when a list index means several indices."""
    if index.__class__ is tuple:
        return index
    if isinstance(index, (list, range)) and len(index) < 32:
        for item in index:
            if isinstance(item, (Tensor, slice) + _SEQUENCES) or item is None \
                    or item is Ellipsis:
                warn_user(_SEQUENCE_WARNING)
                return tuple(index)
    return (index,)


def _bad_index(item):
    return IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                      f"Variables are valid indices (got {type(item).__name__})")


def _sequence_index(seq, device) -> Tensor:
    """A list or array used as an index: a bool/uint8 mask, else a long index tensor."""
    if isinstance(seq, str):
        raise _bad_index(seq)
    try:
        arr = np.asarray(seq)
    except ValueError:
        raise IndexError(f"index {seq!r} is not a rectangular sequence") from None
    if arr.dtype.kind not in "biuf":
        raise _bad_index(seq)
    if arr.dtype.kind != "b" and arr.dtype != np.uint8:
        arr = arr.astype(np.int64)
    t = Tensor._empty(arr.shape, dt.from_numpy_dtype(arr.dtype))
    assign_array(t._array(), arr)
    return t if device.type == "cpu" else t.to(device)


def _bool_index(value: bool, device) -> Tensor:
    """x[True] / x[False]: a long index [0] or [] into a new size-1 dimension."""
    t = Tensor._empty((1,) if value else (0,), dt.int64)
    if value:
        t._array()[0] = 0
    return t if device.type == "cpu" else t.to(device)


def _classify(item, device):
    """(kind, value) for one index item, converting lists, arrays and NumPy scalars."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", item
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, _SEQUENCES):
        item = _sequence_index(item, device)
    if isinstance(item, Tensor):
        if item.dim() == 0:
            if item.dtype is dt.bool or item.dtype is dt.uint8:
                return "bool", bool(item.item())
            if item.dtype.category == dt.INT:
                return "int", int(item.item())
        return "tensor", item
    raise _bad_index(item)


def _specified_dims(kind, value) -> int:
    if kind == "int" or kind == "slice":
        return 1
    if kind == "tensor":
        return value.dim() if value.dtype is dt.bool or value.dtype is dt.uint8 else 1
    return 0


def _select_at(result, dim, value, position, ndim):
    if dim >= len(result._shape):
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    size = result._shape[dim]
    if not -size <= value < size:            # PyTorch names the position in the index
        raise IndexError(f"index {value} is out of bounds for dimension {position} with size "
                         f"{size}")
    return select.functional(result, dim, value)


_INT64_MAX = (1 << 63) - 1


def _bound(value, default: int):
    """A slice's start or stop as PyTorch passes it to aten::slice: None as `default`
    (0, or the largest int64 for a stop), ints clamped to int64."""
    if value is None:
        return default
    if value.__class__ is int:
        return min(max(value, -_INT64_MAX - 1), _INT64_MAX)
    return value


def _slice_at(result, dim, s: slice, ndim, whole_is_self=True):
    """result[..., s] along `dim` (aten::slice with PyTorch's arguments); within an index
    tuple (`whole_is_self`), a slice that starts at 0 and reaches the end with step 1 is
    no op at all, as in PyTorch (a lone slice index is always one)."""
    step = 1 if s.step is None else s.step
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if not result._shape:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if dim >= len(result._shape):
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    start, stop = _bound(s.start, 0), _bound(s.stop, _INT64_MAX)
    if whole_is_self and step.__class__ is int and step == 1 and start.__class__ is int and \
            start == 0 and stop.__class__ is int and stop >= result._shape[dim]:
        return result
    return slice_op.functional(result, dim, start, stop, step)


def apply_indices(self: Tensor, index: tuple):
    """Apply the basic part of an index as views; return (view, advanced indices or None).

    The advanced indices are aligned with the view's dimensions (None where not indexed; a
    k-dim mask occupies one entry standing for k dimensions)."""
    ndim = len(self._shape)
    result, dim = self, 0
    if len(index) <= ndim and all(i.__class__ is int or i.__class__ is slice for i in index):
        for position, item in enumerate(index):        # the common case: ints and slices
            if item.__class__ is int:
                result = _select_at(result, dim, item, position, ndim)
            else:
                result = _slice_at(result, dim, item, ndim)
                dim += 1
        return result, None
    items = [_classify(item, self.device) for item in index]
    specified = sum(_specified_dims(k, v) for k, v in items)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    advanced, covered = [], 0

    def record(tensor, span):
        nonlocal covered
        advanced.extend([None] * (dim - covered))
        advanced.append(tensor)
        covered = dim + span

    for position, (kind, value) in enumerate(items):
        if kind == "int":
            result = _select_at(result, dim, value, position, ndim)
        elif kind == "slice":
            result = _slice_at(result, dim, value, ndim)
            dim += 1
        elif kind == "none":
            result = unsqueeze.functional(result, dim)
            dim += 1
        elif kind == "ellipsis":
            dim += ndim - specified
        elif kind == "bool":
            result = unsqueeze.functional(result, dim)
            record(_bool_index(value, self.device), 1)
            dim += 1
        else:
            span = _specified_dims(kind, value)
            record(value, span)
            dim += span
    return result, (advanced or None)


# ---- __getitem__ / __setitem__ ---------------------------------------------------------

def _zero_dim_int_error(index):
    if index == 0:
        return IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                          "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    return IndexError(f"index {index} is out of bounds for dimension 0 with size 0")


def getitem(self, index):
    """self[index]: views for ints/slices/None/Ellipsis, a copy for tensor/list/bool indices."""
    if index.__class__ is slice and not self._shape:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if index.__class__ is int:
        if not self._shape:
            raise _zero_dim_int_error(index)
        size = self._shape[0]
        if not -size <= index < size:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {size}")
        return select.functional(self, 0, index)
    if index.__class__ is slice:
        return _slice_at(self, 0, index, 1, whole_is_self=False)
    result, advanced = apply_indices(self, _as_tuple(index))
    if advanced is not None:
        return index_op.functional(result, advanced)
    return alias.functional(self) if result is self else result


def _assign_name(value) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def _strip_leading_ones(value: Tensor) -> Tensor:
    shape = value._shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return value if k == 0 else value.view(shape[k:])


def setitem(self, index, value):
    """self[index] = value: writes through the views into self (one version bump)."""
    if not isinstance(value, Tensor):
        if not isinstance(value, _SCALAR_TYPES):
            raise TypeError(f"can't assign a {_assign_name(value)} to a {self.type()}")
        value = _scalar(value)
        check_scalar_fits(value, self.dtype)
    if index is False:
        return
    if not self._shape:
        if index.__class__ is int:
            raise _zero_dim_int_error(index)
        if index.__class__ is slice:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    result, advanced = apply_indices(self, _as_tuple(index))
    if advanced is None:
        if isinstance(value, Tensor):
            # PyTorch's copy_to: the value as it is when it fits exactly (its overlap check
            # then sees `t[i] *= 2`'s own view, the same elements), else expanded without
            # its leading 1s (a stride-0 source the overlap check lets through)
            result.copy_(value if value._shape == result._shape else
                         _strip_leading_ones(value).expand(result._shape))
        elif has_internal_overlap(result._shape, result._stride):
            # PyTorch copies the number as a tensor: after autograd's checks (a view of a
            # leaf), copy_ refuses the expanded target
            from ..creation.factories import full
            result.copy_(full((), value, dtype=self.dtype, device=self.device))
        else:
            result.fill_(value)
        return
    if not isinstance(value, Tensor):
        from ..creation.factories import full
        value = full((), value, dtype=self.dtype, device=self.device)
    index_put_op.functional(result, advanced, _strip_leading_ones(value), False)


export("__getitem__", getitem, method=True, function=False)
export("__setitem__", setitem, method=True, function=False)


# ---- index_select / take ---------------------------------------------------------------

def _index_select_meta(self, dim, index):
    d = wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype is not dt.int64 and index.dtype is not dt.int32:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if self.dim() == 0:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                             f"{index.numel()} value(s)")
        return spec((), self.dtype)
    return spec(self._shape[:d] + (index.numel(),) + self._shape[d + 1:], self.dtype)


index_select = structured("index_select(Tensor self, int dim, Tensor index) -> Tensor",
                          _index_select_meta, inplace=False, promotes=False,
                          doc="The entries of `index` along `dim` (a copy).")
index_select.impl("CPU")(index_select_cpu)


def _take_meta(self, index):
    if index.dtype is not dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{index.dtype.cname}")
    return spec(index._shape, self.dtype)


take = structured("take(Tensor self, Tensor index) -> Tensor", _take_meta, inplace=False,
                  promotes=False,
                  doc="Elements of self, read as if flattened, at `index` (shaped like index).")
take.impl("CPU")(take_cpu)


# ---- masks -----------------------------------------------------------------------------

def _masked_fill_meta(self, mask, value):
    if mask.dtype is not dt.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{TYPE_META_NAMES[mask.dtype]}")
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    check_scalar_fits(_scalar(value), self.dtype)
    return spec(broadcast_shapes2(mask._shape, self._shape), self.dtype)


masked_fill = structured("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
                         _masked_fill_meta, out=False,
                         doc="self with `value` where `mask` is True (mask broadcasts; value is "
                             "a number or a 0-dim tensor).")
masked_fill.impl("CPU")(masked_fill_cpu)
masked_fill.fills_expanded = True


masked_select = kernel_op("masked_select(Tensor self, Tensor mask) -> Tensor",
                          doc="The elements of self where mask is True, as a 1-D copy.",
                          tags=("dynamic_output_shape",))
masked_select.on_cuda = "shared"
masked_select.impl("CPU")(masked_select_cpu)


# ---- nonzero / argwhere ----------------------------------------------------------------

nonzero_op = kernel_op("nonzero(Tensor self) -> Tensor", method=False, function=False,
                       doc="Indices of the nonzero elements, one row per element (int64).",
                       tags=("dynamic_output_shape",))
nonzero_op.on_cuda = "shared"
nonzero_op.impl("CPU")(nonzero_cpu)


def nonzero(input, *, out=None, as_tuple=False):
    """Indices of nonzero elements: an (n, ndim) int64 tensor, or with as_tuple=True one
    1-D index tensor per dimension (usable as input[result])."""
    if as_tuple:
        source = input if input.dim() else input.unsqueeze(0)
        return nonzero_op.functional(source).unbind(1)
    result = nonzero_op.functional(input)
    if out is not None:
        out.resize_(result._shape)
        return out.copy_(result)
    return result


def _nonzero_method(self, *, as_tuple=False):
    return nonzero(self, as_tuple=as_tuple)


_nonzero_method.__name__ = _nonzero_method.__qualname__ = "nonzero"
_nonzero_method.__doc__ = nonzero.__doc__
export("nonzero", nonzero)
export("nonzero", _nonzero_method, method=True, function=False)


@composite(method=True)
def argwhere(input):
    """Indices of the nonzero elements as an (n, ndim) tensor (nonzero())."""
    return nonzero_op.functional(input)


# autocast runs these in another precision (ops/autocast.py)
autocast_policy(index_put_copy_op, cuda=PROMOTE)
