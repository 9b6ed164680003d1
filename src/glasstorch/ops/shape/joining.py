"""Joining and rearranging: cat/stack and their h/v/d/column variants, where, tril/triu,
flip, roll, repeat/tile/repeat_interleave, atleast_Nd, meshgrid and broadcast_tensors.

Ops whose output shape follows from metadata are `structured` (the function, in-place and
`out=` variants come from one declaration); the rest are composites of those and of views,
so meshgrid and broadcast_tensors return expanded views and atleast_Nd returns its input
when it already has enough dimensions. The CPU kernels are in backends/cpu/joining.py.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from ...core import dtype as dt
from ...core.grad_state import state as _grad_state
from ...core.shape import (Size, as_shape, broadcast_shapes2, channels_last_strides,
                          check_nonnegative, contiguous_strides, is_non_overlapping_and_dense,
                          wrap_dim, wrap_dims)
from ...core.tensor import Tensor, contiguous_format, preserve_format, suggest_memory_format
from ..copying.copies import strides_for
from ...backends.cpu.indexing import check_scalar_fits
from ..pointwise.meta import pointwise_spec
from ...core.promotion import common_dtype
from ..registry import (PLAIN_FLOATS, TensorSpec, composite, export, kernel_op, spec,
                        structured, warn_user)
from ..autocast import PROMOTE, autocast_policy
from ...backends.cpu.joining import (_skipped, cat_cpu, flip_cpu, repeat_counts_cpu,
    repeat_cpu, roll_cpu, stack_cpu, tri_kernel, where_cpu)

# ---- tensor lists ----------------------------------------------------------------------

def _tensor_list(name: str, tensors) -> list:
    """The argument of cat/stack/hstack as a list, with PyTorch's argument errors."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def _promoted(tensors) -> dt.dtype:
    d = tensors[0].dtype
    for t in tensors[1:]:
        d = dt.promote_types(d, t.dtype)
    return d


def _check_out_is_not_an_input(tensors, out, dim):
    """cat(out=) refuses an input that shares any memory with out as out will be once resized
    to the result (PyTorch resizes, then checks); judged on that shape without resizing, so
    that a refused call leaves out as it was."""
    shared = [t for t in tensors if t._storage is out._storage and t.numel()]
    if shared and not any(t is out for t in tensors):
        shape = _cat_meta(tensors, dim).shape
        target = out if out._shape == shape else Tensor._make(
            out._storage, out._offset, shape, contiguous_strides(shape), out.dtype, out._vc)
        shared = [t for t in shared if _overlaps(target, t)]
    if shared or any(t is out for t in tensors):
        raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location. Please "
                           "clone() the tensor before performing the operation.")


def _overlaps(a: Tensor, b: Tensor) -> bool:
    """Whether two tensors of one storage share memory, as PyTorch judges it: not when either
    is empty or not dense (too hard to tell), else when their byte ranges intersect."""
    if not a.numel() or not is_non_overlapping_and_dense(a._shape, a._stride) or \
            not is_non_overlapping_and_dense(b._shape, b._stride):
        return False
    a_start, b_start = a._offset * a.dtype.itemsize, b._offset * b.dtype.itemsize
    return a_start < b_start + b.nbytes and b_start < a_start + a.nbytes


def _check_out_autograd(name, tensors, out):
    """Autograd's refusal of out= when an input or out itself requires grad: PyTorch makes
    it before the kernel's dtype check (which these ops make before dispatching)."""
    if _grad_state.enabled and (out._requires_grad or any(t._requires_grad for t in tensors)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")


def _check_out_cast(name, tensors, out):
    if out is not None and not dt.can_cast(_promoted(tensors), out.dtype):
        raise TypeError(f"torch.{name}(): input types can't be cast to the desired output type "
                        f"{out.dtype.cname}")


# ---- cat -------------------------------------------------------------------------------

def _channels_last_like(t: Tensor) -> bool:
    """The input suggests a channels-last result (PyTorch's suggest_memory_format)."""
    return suggest_memory_format(t._shape, t._stride) is not contiguous_format


def _cat_shape_error(ref, t, i, d):
    if t.dim() != ref.dim():
        raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} and "
                           f"{t.dim()}")
    k = next(k for k, (a, b) in enumerate(zip(ref._shape, t._shape)) if k != d and a != b)
    raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                       f"{ref._shape[k]} but got size {t._shape[k]} for tensor number {i} in "
                       "the list.")


def _no_zero_dim(tensors) -> None:
    for i, t in enumerate(tensors):
        if not t._shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")


def _cat_meta(tensors, dim=0):
    _no_zero_dim(tensors)
    dtype = _promoted(tensors)
    ref = next((t for t in tensors if not _skipped(t)), None)
    if ref is None:
        return spec((0,), dtype)
    n = len(ref._shape)
    d = dim if dim.__class__ is int and 0 <= dim < n else wrap_dim(dim, n)
    shape = list(ref._shape)
    shape[d] = total = 0
    for i, t in enumerate(tensors):
        if _skipped(t):
            continue
        other = list(t._shape)
        if len(other) == n:
            total += other[d]
            other[d] = 0
        if other != shape:
            _cat_shape_error(ref, t, i, d)
    shape[d] = total
    shape = Size(shape)
    if all(_channels_last_like(t) for t in tensors):
        return TensorSpec(shape, dtype, channels_last_strides(shape))
    return TensorSpec(shape, dtype, contiguous_strides(shape))


_cat = structured("cat(Tensor[] tensors, int dim=0) -> Tensor", _cat_meta, method=False,
                  function=False, inplace=False,
                  doc="Concatenate tensors along an existing dimension (dtypes promote).")
_cat.impl("CPU")(cat_cpu)


def _plain_float_cat(general):
    """cat's fast path (`OpDeclaration.fast_path`): float32 or float64 tensors of one dtype
    and up to three dims, their shapes equal but along `dim` (a split's gradient, the
    pieces of a fused q, k, v projection): one `np.concatenate` into a row-major output,
    what `cat_cpu` copies piece by piece after the meta function's promotion and checks
    (three (8, 32, 64) pieces needing grad: 24.0 -> 19.0 us a call)."""
    def kernel(tensors, dim=0):
        first = tensors[0] if tensors else None
        if first.__class__ is Tensor and first.dtype in PLAIN_FLOATS and dim.__class__ is int:
            d, shape = first.dtype, first._shape
            n = len(shape)
            if 0 < n <= 3 and -n <= dim < n:
                dim %= n
                total, rest = 0, shape[:dim] + shape[dim + 1:]
                for t in tensors:
                    s = t._shape
                    if t.__class__ is not Tensor or t.dtype is not d or len(s) != n or \
                            s[:dim] + s[dim + 1:] != rest or s == (0,):
                        return general(tensors, dim)
                    total += s[dim]
                out = Tensor._empty(shape[:dim] + (total,) + shape[dim + 1:], d)
                np.concatenate([t._array() for t in tensors], axis=dim, out=out._array())
                return out
        return general(tensors, dim)
    return kernel


_cat.fast_path(_plain_float_cat)


def cat(tensors, dim=0, *, out=None):
    """Concatenate `tensors` along `dim` (1-D empty tensors are skipped; dtypes promote)."""
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    if out is not None:                       # checked before out's dtype, as in PyTorch
        _no_zero_dim(tensors)
        _check_out_is_not_an_input(tensors, out, dim)
        _check_out_autograd("cat", tensors, out)
    _check_out_cast("cat", tensors, out)
    return _cat.function(tensors, dim, out=out)


def concat(tensors, dim=0, *, out=None):
    """Alias of cat."""
    return cat(tensors, dim, out=out)


def concatenate(tensors, axis=0, out=None):
    """Alias of cat with NumPy's argument name."""
    return cat(tensors, axis, out=out)


for _f in (cat, concat, concatenate):
    export(_f.__name__, _f)


# ---- stack and the h/v/d/column variants -----------------------------------------------

def _stack_meta(tensors, dim=0):
    ref = tensors[0]
    for i, t in enumerate(tensors[1:], 1):
        if t._shape != ref._shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(ref._shape)} at entry 0 and {list(t._shape)} at entry "
                               f"{i}")
    d = wrap_dim(dim, ref.dim() + 1)
    return spec(ref._shape[:d] + (len(tensors),) + ref._shape[d:], _promoted(tensors))


_stack = structured("stack(Tensor[] tensors, int dim=0) -> Tensor", _stack_meta, method=False,
                    function=False, inplace=False,
                    doc="Join equal-shaped tensors along a new dimension.")
_stack.impl("CPU")(stack_cpu)


def stack(tensors, dim=0, *, out=None):
    """Join equal-shaped tensors along a new dimension `dim`."""
    tensors = _tensor_list("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    if out is not None:
        _check_out_autograd("stack", tensors, out)
    _check_out_cast("cat", tensors, out)       # PyTorch's stack runs cat: same message
    return _stack.function(tensors, dim, out=out)


export("stack", stack)


def _stacker(name, prepare, dim_of, doc):
    def fn(tensors, *, out=None):
        tensors = _tensor_list(name, tensors)
        if not tensors:
            raise RuntimeError(f"{name} expects a non-empty TensorList")
        tensors = [prepare(t) for t in tensors]
        return cat(tensors, dim_of(tensors), out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _column(t: Tensor) -> Tensor:
    return t.reshape(t.numel(), 1) if t.dim() <= 1 else t


for _name, _prep, _dim, _doc in (
        ("hstack", lambda t: _atleast_1d(t), lambda ts: 0 if ts[0].dim() == 1 else 1,
         "Concatenate column-wise (along dim 1, or dim 0 for 1-D tensors)."),
        ("vstack", lambda t: _atleast_2d(t), lambda ts: 0,
         "Concatenate row-wise (along dim 0, after making the tensors at least 2-D)."),
        ("row_stack", lambda t: _atleast_2d(t), lambda ts: 0, "Alias of vstack."),
        ("dstack", lambda t: _atleast_3d(t), lambda ts: 2,
         "Concatenate depth-wise (along dim 2, after making the tensors at least 3-D)."),
        ("column_stack", _column, lambda ts: 1,
         "Stack 0-D and 1-D tensors as columns (and concatenate 2-D ones) along dim 1.")):
    export(_name, _stacker(_name, _prep, _dim, _doc))


# ---- where -----------------------------------------------------------------------------

def _where_meta(condition, self, other):
    if condition.dtype is not dt.bool:
        if condition.dtype is not dt.uint8:
            raise RuntimeError("where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {condition.dtype.cname}")
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and"
                      " will be removed in a future version of PyTorch. Use a boolean condition"
                      " instead.", UserWarning, stacklevel=5)
    dtype = common_dtype(self, other)
    for x in (self, other):
        if not isinstance(x, Tensor):
            check_scalar_fits(x, dtype)
    return pointwise_spec((condition, self, other), dtype)


_where = structured("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
                    _where_meta, method=False, function=False, inplace=False, promotes=False,
                    doc="Elements of input where condition is True, else of other.")
_where.impl("CPU")(where_cpu)


def where(condition, input=None, other=None, *, out=None):
    """where(condition, input, other): elementwise choice, broadcasting and promoting (numbers
    allowed); where(condition): nonzero(condition, as_tuple=True)."""
    if input is None and other is None:
        from ..indexing.subscripts import nonzero
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() missing required argument 'input' or 'other' (both or neither "
                        "must be given)")
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' (position 1) must be Tensor, not "
                        f"{type(condition).__name__}")
    return _where.function(condition, input, other, out=out)


def _where_method(self, condition, other):
    return where(condition, self, other)


_where_method.__name__ = _where_method.__qualname__ = "where"
_where_method.__doc__ = "self.where(condition, y) is torch.where(condition, self, y)."
export("where", where)
export("where", _where_method, method=True, function=False)


# ---- tril / triu -----------------------------------------------------------------------

def _tri_meta(name):
    def meta(self, diagonal=0):
        if self.dim() < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return spec(self._shape, self.dtype)
    meta.__name__ = meta.__qualname__ = f"_{name}_meta"
    return meta


tril = structured("tril(Tensor self, int diagonal=0) -> Tensor", _tri_meta("tril"), promotes=False,
                  doc="The lower triangle of the last two dimensions; the rest is zero.")
triu = structured("triu(Tensor self, int diagonal=0) -> Tensor", _tri_meta("triu"), promotes=False,
                  doc="The upper triangle of the last two dimensions; the rest is zero.")
tril.impl("CPU")(tri_kernel(True))
triu.impl("CPU")(tri_kernel(False))


# ---- flip / roll -----------------------------------------------------------------------

def _flip_meta(self, dims):
    wrap_dims(dims, self.dim())
    return TensorSpec(self._shape, self.dtype, strides_for(self, preserve_format))


flip = structured("flip(Tensor self, int[] dims) -> Tensor", _flip_meta, inplace=False,
                  out=False, doc="A copy with the order of elements reversed along `dims`.")
flip.impl("CPU")(flip_cpu)


@composite(method=True)
def fliplr(input):
    """Flip the columns (dimension 1); needs at least 2 dimensions."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


@composite(method=True)
def flipud(input):
    """Flip the rows (dimension 0); needs at least 1 dimension."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def _roll_meta(self, shifts, dims=()):
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims) and not (len(shifts) == 1 and not dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    for d in dims:
        wrap_dim(d, self.dim(), scalar_ok=False)
    return spec(self._shape, self.dtype)


roll = structured("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", _roll_meta,
                  inplace=False, out=False,
                  doc="Shift elements circularly along `dims` (the flattened tensor if none).")
roll.impl("CPU")(roll_cpu)


# ---- repeat / tile / repeat_interleave -------------------------------------------------

def _repeat_meta(self, sizes):
    if len(sizes) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    padded = (1,) * (len(sizes) - self.dim()) + tuple(self._shape)
    shape = tuple(p * s for p, s in zip(padded, sizes))
    check_nonnegative(shape)
    return spec(shape, self.dtype)


repeat = structured("repeat(Tensor self, SymInt[] sizes) -> Tensor", _repeat_meta,
                    function=False, inplace=False, out=False,
                    doc="Tile the tensor `sizes[i]` times along each dimension (a copy).")
repeat.impl("CPU")(repeat_cpu)


def tile(input, dims):
    """Repeat input along each dimension; `dims` shorter than input.dim() is padded with 1s."""
    dims = as_shape((dims,))
    dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(dims)


def _tile_method(self, *dims):
    return tile(self, as_shape(dims))


_tile_method.__name__ = _tile_method.__qualname__ = "tile"
_tile_method.__doc__ = tile.__doc__
export("tile", tile)
export("tile", _tile_method, method=True, function=False)

_repeat_counts = kernel_op("repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size="
                           "None) -> Tensor", method=False, function=False,
                           doc="[0]*r0 + [1]*r1 + ...: each index repeated repeats[i] times.",
                           tags=("dynamic_output_shape",))
_repeat_counts.on_cuda = "shared"
_repeat_counts.impl("CPU")(repeat_counts_cpu)


@composite(method=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element `repeats` times (an int, or a tensor of per-element counts) along
    `dim` (the flattened input if None). With only a repeats tensor, returns the indices."""
    if repeats is None:
        return _repeat_counts.functional(input, output_size)
    if dim is None:
        input, dim = input.flatten(), 0
    d = wrap_dim(dim, input.dim())
    if isinstance(repeats, Tensor):
        if repeats.dim() > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.numel() == 1:
            repeats = repeats.reshape(1).expand(input._shape[d])
        elif repeats._shape[0] != input._shape[d]:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats._shape[0]} and input.size({d}) = "
                               f"{input._shape[d]}")
        return input.index_select(d, _repeat_counts.functional(repeats, output_size))
    repeats = operator.index(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = input._shape
    expanded = input.unsqueeze(d + 1).expand(shape[:d + 1] + (repeats,) + shape[d + 1:])
    return expanded.clone(memory_format=contiguous_format).flatten(d, d + 1)


# ---- atleast_Nd ------------------------------------------------------------------------

def _each(fn, tensors):
    if len(tensors) == 1:
        if isinstance(tensors[0], Tensor):
            return fn(tensors[0])
        tensors = tensors[0]
    return tuple(fn(t) for t in tensors)


def _atleast_1d(t):
    return t.reshape(1) if t.dim() == 0 else t


def _atleast_2d(t):
    if t.dim() == 0:
        return t.reshape(1, 1)
    return t.unsqueeze(0) if t.dim() == 1 else t


def _atleast_3d(t):
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    return t.unsqueeze(-1) if t.dim() == 2 else t


def atleast_1d(*tensors):
    """Each tensor with at least 1 dimension (itself if it has them); one tensor or a tuple."""
    return _each(_atleast_1d, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dimensions (1-D becomes a row); one tensor or a tuple."""
    return _each(_atleast_2d, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dimensions (1-D (n) becomes (1, n, 1), 2-D gets a
    trailing 1); one tensor or a tuple."""
    return _each(_atleast_3d, tensors)


for _f in (atleast_1d, atleast_2d, atleast_3d):
    export(_f.__name__, _f)


# ---- meshgrid / broadcast_tensors ------------------------------------------------------

def meshgrid(*tensors, indexing=None):
    """Coordinate grids (expanded views) from 0-D/1-D tensors; indexing 'ij' (matrix) or
    'xy' (Cartesian: the first two dimensions swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warn_user("torch.meshgrid: in an upcoming release, it will be required to pass the "
                  "indexing argument.")
        indexing = "ij"
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for a, b in zip(tensors, tensors[1:]):
        if a.dtype is not b.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if a.device != b.device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    if indexing not in ("ij", "xy"):
        raise RuntimeError('torch.meshgrid: indexing must be one of "xy" or "ij", but '
                           f"received: {indexing}")
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors = (tensors[1], tensors[0]) + tuple(tensors[2:])
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a {t.dim()}D tensor of shape {list(t._shape)}")
    n = len(tensors)
    shape = tuple(t.numel() for t in tensors)
    grids = [t.view(tuple(-1 if i == k else 1 for i in range(n))).expand(shape)
             for k, t in enumerate(tensors)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def broadcast_tensors(*tensors):
    """The tensors expanded (as views) to their common broadcast shape; a tensor that
    already has it is returned as is."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = ()
    for t in tensors:
        shape = broadcast_shapes2(shape, t._shape)
    return tuple(t if t._shape == shape else t.expand(shape) for t in tensors)


export("meshgrid", meshgrid)
export("broadcast_tensors", broadcast_tensors)

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(_cat, _stack, cpu=PROMOTE, cuda=PROMOTE)
