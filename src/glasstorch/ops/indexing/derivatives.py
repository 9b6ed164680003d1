"""Derivative formulas of the index ops (subscripts.py).

See ops/derivative.py for how a formula is declared and what it receives.
"""
from __future__ import annotations

from ...core import dtype as dt
from ...core.shape import broadcast_shapes, wrap_dim
from ..derivative import derivative, not_differentiable, recorded_through
from . import subscripts
from .subscripts import index_op
from . import index_reduce
from ..shape.joining import where


@derivative(subscripts.masked_fill, "MaskedFillBackward0")
def _masked_fill(grad, mask):
    return grad.masked_fill(mask, 0), None


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


@derivative(subscripts.index_put_copy_op, "IndexPutBackward0")
def _index_put(grad, indices, accumulate):
    """self's gradient passes except where values were written (unless accumulating);
    values' gradient is what the written positions received (summed over broadcasting).
    The values themselves are not saved (PyTorch keeps only their metadata): writing into
    them in place before backward is no error. The operator, not the Python method: the
    indices hold None for the dims a slice took whole (`x[:, idx] = v`)."""
    g_self = grad if accumulate else subscripts.index_put_copy_op.functional(
        grad, indices, grad.new_zeros(()))
    return (g_self,) + (None,) * len(indices) + (index_op.functional(grad, indices),)


# Positions: no gradient flows through them.
not_differentiable(subscripts.nonzero_op)


def _index_put_copy(self, indices, values, accumulate=False):
    return subscripts.index_put_copy_op.functional(self, indices, values, accumulate)


recorded_through(subscripts.index_put_op, _index_put_copy)


@derivative(index_reduce.index_reduce, "IndexReduceBackward0")
def _index_reduce(grad, self, dim, index, source, reduce, include_self, result):
    """prod: the product of the other factors (zeros handled without dividing by them);
    mean: grad over the count; amax/amin: split evenly among the tied extremes. Positions
    of self replaced (include_self=False) get no gradient (though an equal self still takes
    its share of an extreme, as in torch)."""
    if self.dim() == 0:
        grad, self, source, result = (t.view(1) for t in (grad, self, source, result))
        dim = 0
        squeeze = True
    else:
        squeeze = False
    d = wrap_dim(dim, self.dim())
    touched = None if include_self else \
        self.new_zeros(self.shape).index_fill(d, index, 1) != 0
    if reduce == "prod":
        masked_self = self.masked_fill(self == 0, 1)
        self_others = masked_self.index_reduce(d, index, source, "prod",
                                               include_self=include_self)
        grad_self = grad * self_others / masked_self
        src_zero = source == 0
        zeros_in_group = self.new_zeros(self.shape).index_add(
            d, index, src_zero.to(self.dtype)).index_select(d, index)
        single_zero = src_zero & (zeros_in_group == 1)
        src_others = self.index_reduce(d, index, source.masked_fill(single_zero, 1), "prod",
                                       include_self=include_self)
        grad_source = where(single_zero, (grad * src_others).index_select(d, index),
                            (grad * result).index_select(d, index)
                            / source.masked_fill(src_zero, 1))
    elif reduce == "mean":
        counts = (self.new_ones(self.shape) if include_self else self.new_zeros(self.shape))
        counts = counts.index_add(d, index, source.new_ones(source.shape))
        counts = counts.masked_fill(counts == 0, 1)
        grad_self = grad / counts
        grad_source = (grad / counts).index_select(d, index)
    else:
        self_is = (self == result).to(self.dtype)     # counted even when not included, as torch
        source_is = (source == result.index_select(d, index)).to(self.dtype)
        shares = grad / self_is.index_add(d, index, source_is)
        grad_self = self_is * shares
        grad_source = source_is * shares.index_select(d, index)
    if touched is not None:
        grad_self = grad_self.masked_fill(touched, 0)
    if squeeze:
        return grad_self.view(()), None, grad_source.view(())
    return grad_self, None, grad_source
