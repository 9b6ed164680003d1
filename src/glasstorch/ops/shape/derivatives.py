"""Derivative formulas of the shape, indexing and joining ops.

Reshuffling ops (cat, split, unbind, flip, roll, repeat, tril...) differentiate into other
reshuffles, so their gradients stay recordable for double backward. Ops that gather
elements (index, take, index_select, masked_select, as_strided) scatter the gradient back
with `index_put_(accumulate=True)` into zeros, and views that pick a sub-lattice
(diagonal, unfold) write it into a zero tensor; those are first-order only for now.
"""
from __future__ import annotations

from ..derivative import derivative, not_differentiable
from ...core import dtype as dt
from ...core.shape import broadcast_shapes, wrap_dim
from ..pointwise.arithmetic_derivatives import _slice
from ..indexing.subscripts import index_op
from ..registry import functions as _fn
from ..creation import construction
from ..indexing import subscripts
from ..nn import normalization
from . import joining
from . import views
from . import dtype_views
from ..creation import factories


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

def _legacy_empty(t, ndim) -> bool:
    """cat skips 1-D empty inputs whatever the other inputs' shapes (PyTorch legacy)."""
    return tuple(t._shape) == (0,) and ndim > 1


@derivative(joining._cat, "CatBackward0")
def _cat(grad, tensors, dim):
    d = wrap_dim(dim, grad.dim())
    kept = [t._shape[d] for t in tensors if not _legacy_empty(t, grad.dim())]
    pieces = iter(grad.split(kept, d))
    return tuple(grad.new_zeros((0,)) if _legacy_empty(t, grad.dim()) else next(pieces)
                 for t in tensors)


@derivative(joining._stack, "StackBackward0")
def _stack(grad, dim):
    return tuple(grad.unbind(wrap_dim(dim, grad.dim())))


def _piece_shapes(self_shape, d, sizes):
    return [tuple(self_shape[:d]) + (s,) + tuple(self_shape[d + 1:]) for s in sizes]


@derivative(views.split_with_sizes_op, "SplitWithSizesBackward0")
def _split_with_sizes(grads, self_shape, split_sizes, dim):
    d = wrap_dim(dim, len(self_shape))
    return (_fn["cat"](_filled(grads, _piece_shapes(self_shape, d, split_sizes)), d),)


@derivative(views.split_op, "SplitBackward0")
def _split(grads, self_shape, split_size, dim):
    d = wrap_dim(dim, len(self_shape))
    n = self_shape[d]
    sizes = [min(split_size, n - i) for i in range(0, n, split_size)] if split_size else [0]
    return (_fn["cat"](_filled(grads, _piece_shapes(self_shape, d, sizes)), d),)


@derivative(views.unbind_op, "UnbindBackward0")
def _unbind(grads, self_shape, dim):
    d = wrap_dim(dim, len(self_shape))
    shape = tuple(self_shape[:d]) + tuple(self_shape[d + 1:])
    return (_fn["stack"](_filled(grads, [shape] * self_shape[d]), d),)


# ---- reshuffles --------------------------------------------------------------------------

@derivative(construction.flip, "FlipBackward0")
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


@derivative(subscripts.masked_fill, "MaskedFillBackward0")
def _masked_fill(grad, mask):
    return grad.masked_fill(mask, 0), None


# ---- views onto a sub-lattice ------------------------------------------------------------

@derivative(construction.diagonal, "DiagonalBackward0")
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

@derivative(subscripts.index_select, "IndexSelectBackward0")
def _index_select(grad, self_shape, dim, index):
    if not self_shape:
        return (grad.reshape(()),)
    d = wrap_dim(dim, len(self_shape))
    full = grad.new_zeros(self_shape)
    full.movedim(d, 0).index_put_((index.reshape(-1),), grad.movedim(d, 0), accumulate=True)
    return (full,)


@derivative(subscripts.take, "TakeBackward0")
def _take(grad, self_shape, index):
    full = grad.new_zeros(self_shape)
    full.view(-1).index_put_((index.reshape(-1),), grad.reshape(-1), accumulate=True)
    return (full,)


@derivative(subscripts.masked_select, "MaskedSelectBackward0")
def _masked_select(grad, self_shape, mask):
    shape = broadcast_shapes(self_shape, mask._shape)
    full = grad.new_zeros(shape)
    full.index_put_((mask.expand(shape),), grad, accumulate=True)
    return full, None


@derivative(subscripts.index_op, "IndexBackward0")
def _index(grad, self_shape, indices):
    """Scatter-add into a zero tensor through a permuted view of it whose indexed dims come
    first (where index_put_ wants them), with the gradient's index dims moved to match."""
    expanded = []               # one entry per dim of self: an index tensor or None
    for ix in indices:
        if ix is not None and ix.dtype in (dt.bool, dt.uint8):
            expanded.extend(ix.nonzero().unbind(1))
        else:
            expanded.append(ix)
    n = len(self_shape)
    expanded += [None] * (n - len(expanded))
    picked = [i for i, ix in enumerate(expanded) if ix is not None]
    rest = [i for i in range(n) if expanded[i] is None]
    if not picked:
        return (grad,) + (None,) * len(indices)
    order = picked + rest
    full = grad.new_zeros(self_shape)
    adjacent = picked == list(range(picked[0], picked[-1] + 1))
    g = grad
    if adjacent and picked[0] > 0:
        nb = grad.dim() - len(rest)          # the broadcast index dims, at picked[0]
        g = g.movedim(tuple(range(picked[0], picked[0] + nb)), tuple(range(nb)))
    full.permute(order).index_put_(tuple(expanded[i] for i in picked), g, accumulate=True)
    return (full,) + (None,) * len(indices)


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


@derivative(subscripts.index_put_copy_op, "IndexPutBackward0")
def _index_put(grad, indices, values, accumulate):
    """self's gradient passes except where values were written (unless accumulating);
    values' gradient is what the written positions received (summed over broadcasting)."""
    g_self = grad if accumulate else grad.index_put(indices, grad.new_zeros(()))
    return (g_self,) + (None,) * len(indices) + (index_op.functional(grad, indices),)

# Integer results or reinterpreted bits: no gradient flows through them.
not_differentiable(dtype_views.view_dtype_op, joining._repeat_counts, normalization.one_hot)
# detach: an alias cut from the graph, by definition.
not_differentiable(views._detach_op)


@derivative(factories.lift_fresh_copy_op, "LiftFreshBackward0_copy")    # PyTorch's name
def _lift_fresh_copy(grad):
    return (grad,)
