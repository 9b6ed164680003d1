"""Derivative formulas of the shape ops: views, joining, views of bytes, writes into views.

Reshuffling ops (cat, split, unbind, flip, roll, repeat, tril...) differentiate into other
reshuffles, so their gradients stay recordable for double backward. Ops that gather
elements (index, take, index_select, masked_select, as_strided) scatter the gradient back
with `index_put_(accumulate=True)` into zeros, and views that pick a sub-lattice
(diagonal, unfold) write it into a zero tensor; those are first-order only for now.
The commonest formulas call composites as functions (`views.reshape`, `joining.cat`), not
their public wrappers: the engine runs formulas with __torch_function__ off (PyTorch's are
C++), so the wrapper's check is a frame spent for nothing.
"""
from __future__ import annotations

from ...core import dtype as dt
from ...core.shape import wrap_dim
from ..derivative import derivative, not_differentiable
from ..derivative import linear_in_inputs
from ..pointwise.math_derivatives import _drop
from ..registry import functions as _fn
from . import dtype_views, joining, view_scatter, views
from .joining import where


def _filled(grads, shapes):
    """A multi-output op's output gradients, zeros for the outputs that received none (the
    engine passes them only up to the last output that got one, unwrapped when that is the
    first)."""
    if not isinstance(grads, tuple):
        grads = (grads,)
    ref = next(g for g in grads if g is not None)
    grads = tuple(grads) + (None,) * (len(shapes) - len(grads))
    return [g if g is not None else ref.new_zeros(s) for g, s in zip(grads, shapes)]


# ---- joining and splitting ---------------------------------------------------------------

def _legacy_empty(shape, ndim) -> bool:
    """cat skips 1-D empty inputs whatever the other inputs' shapes (PyTorch legacy)."""
    return tuple(shape) == (0,) and ndim > 1


@derivative(joining._cat, "CatBackward0")
def _cat(grad, tensors_shape, dim):
    """The inputs' shapes as they were (an input later resized by out= changes nothing)."""
    d = wrap_dim(dim, grad.dim())
    kept = [shape[d] for shape in tensors_shape if not _legacy_empty(shape, grad.dim())]
    pieces = iter(grad.split(kept, d))
    return tuple(grad.new_zeros((0,)) if _legacy_empty(shape, grad.dim()) else next(pieces)
                 for shape in tensors_shape)


@derivative(joining._stack, "StackBackward0")
def _stack(grad, dim):
    return tuple(grad.unbind(wrap_dim(dim, grad.dim())))


linear_in_inputs(joining._cat, joining._stack)


def _piece_shapes(self_shape, d, sizes):
    return [tuple(self_shape[:d]) + (s,) + tuple(self_shape[d + 1:]) for s in sizes]


@derivative(views.split_with_sizes_op, "SplitWithSizesBackward0")
def _split_with_sizes(grads, self_shape, split_sizes, dim):
    d = wrap_dim(dim, len(self_shape))
    return (joining.cat(_filled(grads, _piece_shapes(self_shape, d, split_sizes)), d),)


@derivative(views.split_op, "SplitBackward0")
def _split(grads, self_shape, split_size, dim):
    d = wrap_dim(dim, len(self_shape))
    n = self_shape[d]
    sizes = [min(split_size, n - i) for i in range(0, n, split_size)] if split_size else [0]
    return (joining.cat(_filled(grads, _piece_shapes(self_shape, d, sizes)), d),)


@derivative(views.unbind_op, "UnbindBackward0")
def _unbind(grads, self_shape, dim):
    d = wrap_dim(dim, len(self_shape))
    shape = tuple(self_shape[:d]) + tuple(self_shape[d + 1:])
    return (joining.stack(_filled(grads, [shape] * self_shape[d]), d),)


# ---- reshuffles --------------------------------------------------------------------------

@derivative(joining.flip, "FlipBackward0")
def _flip(grad, dims):
    return (grad.flip(dims),)


@derivative(joining.roll, "RollBackward0")
def _roll(grad, shifts, dims):
    return (grad.roll([-s for s in shifts], dims),)


@derivative(joining.repeat, "RepeatBackward0")
def _repeat(grad, self_shape, sizes):
    """Split each repeated dim into (repeat, size) and sum the repeats (and new leading dims)."""
    lead = len(sizes) - len(self_shape)
    split = list(grad._shape[:lead])
    for r, s in zip(sizes[lead:], self_shape):
        split += [r, s]
    if 0 in split:
        return (grad.new_zeros(self_shape),)
    dims = tuple(range(lead)) + tuple(lead + 2 * i for i in range(len(self_shape)))
    g = grad.reshape(split)
    return ((g.sum(dims) if dims else g).reshape(self_shape),)


@derivative(joining.tril, "TrilBackward0")
def _tril(grad, diagonal):
    return (grad.tril(diagonal),)


@derivative(joining.triu, "TriuBackward0")
def _triu(grad, diagonal):
    return (grad.triu(diagonal),)


# ---- views onto a sub-lattice ------------------------------------------------------------

@derivative(views.diagonal, "DiagonalBackward0")
def _diagonal(grad, self_shape, offset, dim1, dim2):
    full = grad.new_zeros(self_shape)
    full.diagonal(offset, dim1, dim2).copy_(grad)
    return (full,)


@derivative(views.unfold, "UnfoldBackward0")
def _unfold(grad, self_shape, dimension, size, step):
    """Window element j of every window comes from a strided slice starting at j."""
    d = wrap_dim(dimension, max(len(self_shape), 1))
    if not self_shape:
        return (grad.sum(),)
    windows = grad._shape[d]
    total = None
    for j in range(size):
        part = _slice(grad.select(-1, j), self_shape, d, j, j + (windows - 1) * step + 1,
                      step)[0]
        total = part if total is None else total + part
    return (total if total is not None else grad.new_zeros(self_shape),)


@derivative(views.view_as_real, "ViewAsRealBackward0")
def _view_as_real(grad):
    return (_fn["view_as_complex"](grad.contiguous()),)


@derivative(views.view_as_complex, "ViewAsComplexBackward0")
def _view_as_complex(grad):
    return (_fn["view_as_real"](grad),)


# ---- gathers: scatter the gradient back --------------------------------------------------


@derivative(views.as_strided, "AsStridedBackward0")
def _as_strided(grad, self_geometry, size, stride, storage_offset):
    """Scatter-add into a zero buffer laid out as self's storage, then view it as self
    (only self's geometry is kept: its values may change without affecting this)."""
    self_shape, self_stride, self_offset = self_geometry
    start = self_offset if storage_offset is None else storage_offset
    positions = grad.new_zeros((), dtype=dt.int64) + start
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        positions = positions + _fn["arange"](n, device=grad.device).reshape(shape) * s
    extent = max([self_offset + sum((n - 1) * s for n, s in zip(self_shape, self_stride))]
                 + ([int(positions.max())] if grad.numel() else [0])) + 1
    buf = grad.new_zeros((extent,))
    buf.index_put_((positions.expand(tuple(size)).reshape(-1),), grad.reshape(-1),
                   accumulate=True)
    return (buf.as_strided(self_shape, self_stride, self_offset),)


# Integer results or reinterpreted bits: no gradient flows through them.
not_differentiable(dtype_views.view_dtype_op, joining._repeat_counts)
# detach: an alias cut from the graph, by definition.
not_differentiable(views._detach_op)


@derivative(views.alias, "AliasBackward0")
def _alias(grad):
    return (grad,)


@derivative(views.unsafe_view_op, "UnsafeViewBackward0")
def _unsafe_view(grad, self_shape):
    return (views.reshape(grad, self_shape),)


@derivative(views.view_op, "ViewBackward0")
def _view(grad, self_shape):
    return (views.reshape(grad, self_shape),)


@derivative(views.transpose, "TransposeBackward0")
def _transpose(grad, dim0, dim1):
    return (grad.transpose(dim0, dim1),)


@derivative(views.t, "TBackward0")
def _t(grad):
    return (grad.t(),)


@derivative(views.permute, "PermuteBackward0")
def _permute(grad, dims):
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[wrap_dim(d, n)] = i
    return (grad.permute(inverse),)


@derivative(views.expand, "ExpandBackward0")
def _expand(grad, self_shape):
    return (grad,)      # the engine sums it back to self's shape


@derivative(views.unsqueeze, "UnsqueezeBackward0")
def _unsqueeze(grad, dim):
    return (grad.squeeze(dim),)


@derivative(views.squeeze_all, "SqueezeBackward0")
@derivative(views.squeeze_dim, "SqueezeBackward1")
@derivative(views.squeeze, "SqueezeBackward2")
def _squeeze(grad, self_shape):
    return (grad.reshape(self_shape),)


@derivative(views.select, "SelectBackward0")
def _select(grad, self_shape, dim, index):
    return (view_scatter.select_backward(grad, self_shape, dim, index),)


@derivative(views.slice_op, "SliceBackward0")
def _slice(grad, self_shape, dim, start, end, step):
    return (view_scatter.slice_backward(grad, self_shape, dim, start, end, step),)


@derivative(view_scatter.select_backward, "SelectBackwardBackward0")
def _select_backward(grad, dim, index):
    return (grad.select(dim, index),)


@derivative(view_scatter.slice_backward, "SliceBackwardBackward0")
def _slice_backward(grad, dim, start, end, step):
    return (views.slice_op.functional(grad, dim, start, end, step),)


@derivative(views.narrow, "NarrowBackward0")
def _narrow(grad, self_shape, dim, start, length):
    if start < 0:                                  # counted from the end, as the view was
        start += self_shape[dim]
    return _slice(grad, self_shape, dim, start, start + length, 1)


@derivative(joining._where, "WhereBackward0")
def _where(grad, condition):
    return None, where(condition, grad, 0.0), _drop(grad, condition)


@derivative(view_scatter.diagonal_scatter, "DiagonalScatterBackward0")
def _diagonal_scatter(grad, src_shape, offset, dim1, dim2):
    return (grad.diagonal_scatter(grad.new_zeros(src_shape), offset, dim1, dim2),
            grad.diagonal(offset, dim1, dim2))


@derivative(view_scatter.select_scatter, "SelectScatterBackward0")
def _select_scatter(grad, src_shape, dim, index):
    return (grad.select_scatter(grad.new_zeros(src_shape), dim, index), grad.select(dim, index))


@derivative(view_scatter.slice_scatter, "SliceScatterBackward0")
def _slice_scatter(grad, src_shape, dim, start, end, step):
    return (grad.slice_scatter(grad.new_zeros(src_shape), dim, start, end, step),
            view_scatter._sliced(grad, dim, start, end, step))
