"""Derivative formulas of the gather/scatter/index_* ops (scatter.py).

A gather's gradient scatters back (scatter_add into zeros), a scatter's gathers; positions a
write overwrote get no gradient. The formulas are written in these same ops, which are
differentiable, so double backward works. Where src is larger than index (allowed), the
elements it never read get zero gradient (PyTorch fails on that shape instead).
index_select, take, masked_select, index.Tensor and masked_fill.Scalar have their formulas
in derivatives.py, beside subscripts.py.
"""
from __future__ import annotations

from ..derivative import derivative, derivative_not_implemented
from ...core import dtype as dt
from ..registry import functions as _fn
from . import scatter


def _used(src, index):
    """The part of src a gather/scatter reads: its leading corner of index's shape."""
    if src.dim() != index.dim():            # 0-dim against a 1-element vector
        return src.reshape(index._shape)
    for k, n in enumerate(index._shape):
        if src._shape[k] != n:
            src = src.narrow(k, 0, n)
    return src


def _padded(g, shape):
    """A gradient of the read corner, as a gradient of the whole src (zeros elsewhere)."""
    shape = tuple(shape)
    if tuple(g._shape) == shape:
        return g
    if g.dim() != len(shape):
        return g.reshape(shape)
    full = g.new_zeros(shape)
    full[tuple(slice(0, n) for n in g._shape)] = g
    return full


# ---- gather / scatter --------------------------------------------------------------------

@derivative(scatter.gather, "GatherBackward0")
def _gather(grad, self, dim, index):
    """Only self's shape is read, but self is saved, as PyTorch saves it: writing into it in
    place before backward is the same error."""
    return grad.new_zeros(self._shape).scatter_add(dim, index, grad), None


@derivative(scatter.scatter_src, "ScatterBackward0")
def _scatter_src(grad, dim, index, src_shape):
    return (grad.scatter(dim, index, 0), None,
            _padded(grad.gather(dim, index), src_shape))


@derivative(scatter.scatter_value, "ScatterBackward1")
def _scatter_value(grad, dim, index):
    return grad.scatter(dim, index, 0), None


@derivative(scatter.scatter_add, "ScatterAddBackward0")
def _scatter_add(grad, dim, index, src_shape):
    return grad, None, _padded(grad.gather(dim, index), src_shape)


def _prod_grads(grad, self, dim, index, src, result, include_self):
    """Each factor's gradient is the product of the other factors at its position; zeros
    are handled without dividing by them."""
    self_nz = self.masked_fill(self == 0, 1)
    others = self_nz.scatter_reduce(dim, index, src, "prod", include_self=include_self)
    g_self = grad * others / self_nz
    src_zero = src == 0
    zeros_at = self.new_zeros(self._shape).scatter_add(dim, index, src_zero.to(self.dtype))
    single_zero = src_zero.logical_and(zeros_at.gather(dim, index) == 1)
    without = self.scatter_reduce(dim, index, src.masked_fill(single_zero, 1), "prod",
                                  include_self=include_self)
    g_src = _fn["where"](single_zero, (grad * without).gather(dim, index),
                         (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1))
    return g_self, g_src


def _extremum_grads(grad, self, dim, index, src, result):
    """The gradient is shared evenly among the elements equal to the result (ties)."""
    value = result.gather(dim, index)
    self_is = (self == result).to(grad.dtype)
    src_is = (src == value).to(grad.dtype)
    share = grad / self_is.scatter_add(dim, index, src_is)
    return self_is * share, src_is * share.gather(dim, index)


@derivative(scatter.scatter_reduce, "ScatterReduceBackward0")
def _scatter_reduce(grad, self, dim, index, src, reduce, include_self, result):
    used = _used(src, index)
    if reduce == "sum":
        g_self, g_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        count = (grad.new_ones if include_self else grad.new_zeros)(self._shape)
        count = count.scatter_add(dim, index, grad.new_ones(index._shape))
        share = grad / count.masked_fill(count == 0, 1)
        g_self, g_src = share, share.gather(dim, index)
    elif reduce == "prod":
        g_self, g_src = _prod_grads(grad, self, dim, index, used, result, include_self)
    else:
        g_self, g_src = _extremum_grads(grad, self, dim, index, used, result)
    if not include_self:
        g_self = g_self.scatter(dim, index, 0)
    return g_self, None, _padded(g_src, src._shape)


# ---- index_add / index_copy / index_fill -------------------------------------------------

@derivative(scatter.index_add, "IndexAddBackward0")
def _index_add(grad, dim, index, source_shape, alpha):
    g = grad.index_select(dim, index).reshape(source_shape)
    return grad, None, (g if alpha == 1 else g * alpha)


@derivative(scatter.index_copy, "IndexCopyBackward0")
def _index_copy(grad, dim, index, source_shape):
    return (grad.index_fill(dim, index, 0), None,
            grad.index_select(dim, index).reshape(source_shape))


@derivative(scatter.index_fill_scalar, "IndexFillBackward0")
def _index_fill_scalar(grad, dim, index):
    return grad.index_fill(dim, index, 0), None


@derivative(scatter.index_fill_tensor, "IndexFillBackward1")
def _index_fill_tensor(grad, dim, index):
    filled = grad.new_zeros(grad._shape, dtype=dt.bool).index_fill(dim, index, True)
    return (grad.index_fill(dim, index, 0), None,
            grad.masked_fill(filled.logical_not(), 0).sum())


# ---- put / masks -------------------------------------------------------------------------

@derivative(scatter.put, "PutBackward0")
def _put(grad, index, source_shape, accumulate):
    g_self = grad if accumulate else grad.put(index, grad.new_zeros(source_shape))
    return g_self, None, grad.take(index).reshape(source_shape)


@derivative(scatter.masked_fill_tensor, "MaskedFillBackward1")
def _masked_fill_tensor(grad, mask):
    return (grad.masked_fill(mask, 0), None,
            grad.masked_fill(mask.logical_not(), 0).sum())


@derivative(scatter.masked_scatter, "MaskedScatterBackward0")
def _masked_scatter(grad, mask, source_shape):
    picked = grad.masked_select(mask)
    total = 1
    for n in source_shape:
        total *= n
    rest = grad.new_zeros((total - picked.numel(),))
    return (grad.masked_fill(mask, 0), None,
            _fn["cat"]([picked, rest]).reshape(source_shape))

# scatter with reduce=: PyTorch has no formula either.
derivative_not_implemented(scatter.scatter_reduce_src, scatter.scatter_reduce_value)
