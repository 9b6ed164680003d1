"""Derivative formulas of the sorting and selection ops (ops/sorting.py).

The selected values' gradient goes back to the positions their indices name (PyTorch's
value_selecting_reduction_backward), written with index_put so that double backward records
too. median()/nanmedian() share the gradient among the elements equal to the result.
"""
from __future__ import annotations

from ..derivative import derivative, derivative_not_implemented, not_differentiable
from ...core.shape import wrap_dim
from ..shape.joining import where
from ..creation.ranges import arange
from . import sort_and_select


def _scatter_back(grad, shape, dim, indices, keepdim=True):
    """A zero tensor of `shape` with `grad` put at `indices` along `dim` (`grad` may be the
    (values, indices) pair of gradients; only the values' one exists)."""
    if isinstance(grad, tuple):
        grad = grad[0]
    if grad is None:
        return None
    if not shape:
        return grad.reshape(())
    d = wrap_dim(dim, len(shape))
    if not keepdim:
        grad, indices = grad.unsqueeze(d), indices.unsqueeze(d)
    n = len(shape)
    where = []
    for j in range(n):
        if j == d:
            where.append(indices)
        else:
            view = [1] * n
            view[j] = indices.shape[j]
            where.append(arange(indices.shape[j], device=grad.device).reshape(view))
    return grad.new_zeros(shape).index_put(tuple(where), grad)


@derivative(sort_and_select.sort_op, "SortBackward0")
def _sort(grad, self_shape, dim, result1):
    return (_scatter_back(grad, self_shape, dim, result1),)


@derivative(sort_and_select.sort_stable_op, "SortBackward1")
def _sort_stable(grad, self_shape, dim, result1):
    return (_scatter_back(grad, self_shape, dim, result1),)


@derivative(sort_and_select.topk_op, "TopkBackward0")
def _topk(grad, self_shape, dim, result1):
    return (_scatter_back(grad, self_shape, dim, result1),)


@derivative(sort_and_select.kthvalue_op, "KthvalueBackward0")
def _kthvalue(grad, self_shape, dim, keepdim, result1):
    return (_scatter_back(grad, self_shape, dim, result1, keepdim),)


@derivative(sort_and_select.median_dim, "MedianBackward1")
def _median_dim(grad, self_shape, dim, keepdim, result1):
    return (_scatter_back(grad, self_shape, dim, result1, keepdim),)


@derivative(sort_and_select.nanmedian_dim, "NanmedianBackward1")
def _nanmedian_dim(grad, self_shape, dim, keepdim, result1):
    return (_scatter_back(grad, self_shape, dim, result1, keepdim),)


@derivative(sort_and_select.mode_op, "ModeBackward0")
def _mode(grad, self_shape, dim, keepdim, result1):
    return (_scatter_back(grad, self_shape, dim, result1, keepdim),)


def _evenly(grad, self, result):
    """The gradient shared equally among the elements equal to `result` (NaN: the NaNs)."""
    mask = (self == result).logical_or(self.isnan().logical_and(result.isnan()))
    return where(mask, grad / mask.sum(), 0.0)


@derivative(sort_and_select.median_all, "MedianBackward0")
def _median(grad, self, result):
    return (_evenly(grad, self, result),)


@derivative(sort_and_select.nanmedian_all, "NanmedianBackward0")
def _nanmedian(grad, self, result):
    return (_evenly(grad, self, result),)


def _not_differentiable(name):
    def formula(grad):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")
    return formula


derivative(sort_and_select.unique2_op, "Unique2Backward0")(_not_differentiable("_unique2"))
derivative(sort_and_select.unique_dim_op, "UniqueDimBackward0")(_not_differentiable("unique_dim"))
derivative(sort_and_select.unique_consecutive_op, "UniqueConsecutiveBackward0")(
    _not_differentiable("unique_consecutive"))

# Indices and positions: no gradient flows through them.
not_differentiable(sort_and_select.searchsorted_op, sort_and_select.bucketize_op)
# Counts of values: histc's result never requires grad; bincount's and histogram's do (with
# float weights), and their backward raises, as PyTorch's.
not_differentiable(sort_and_select.histc_op)
derivative_not_implemented(sort_and_select.bincount_op, sort_and_select.histogram_op,
                           sort_and_select.histogram_bins_op)
