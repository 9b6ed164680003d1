"""Derivative formulas of the reductions and scans (reductions.py, statistics.py).

See ops/derivative.py for how a formula is declared and what it receives.
"""
from __future__ import annotations

import math
from math import prod

from ...core import dtype as dt
from ...core.shape import wrap_dim
from ..creation.ranges import arange
from ..derivative import derivative, not_differentiable
from ..derivative import linear_in_inputs
from ..pointwise.arithmetic_derivatives import _reduced_dims, _unreduce
from ..pointwise.math_derivatives import _drop, _keep
from ..shape.joining import cat, where
from ..sorting.derivatives import _evenly as _evenly_among_equal, _scatter_back
from . import reductions
from . import scans


def _two_grads(grad):
    """(first, second) output gradients of a two-output op (either may be None)."""
    if isinstance(grad, tuple):
        return (grad + (None, None))[:2]
    return grad, None


def _reverse_cumsum(g, dim):
    """Sums from each position to the end along `dim` (cumsum's adjoint). Accumulated from
    the end, as PyTorch: a total minus a prefix would spread a NaN or inf to every position
    and lose precision."""
    return g.flip(dim).cumsum(dim).flip(dim)


def _count(shape, dim):
    n = 1
    for d in _reduced_dims(shape, dim):
        n *= shape[d]
    return n


def _evenly(grad, self, result, dim, keepdim):
    """Gradient of max/min-like reductions: shared equally among the tied extrema. A
    multiplication by the mask, as PyTorch's: a NaN extremum (no element equals it) or a
    NaN gradient makes the whole slice's gradient NaN."""
    shape = self.shape
    dim = tuple(dim) if dim else None      # amax's dim=[] reduces every dim
    hit = self == _keep(result, shape, dim, keepdim)
    count = hit.sum(_reduced_dims(shape, dim), keepdim=True)
    return _unreduce(grad, shape, dim, keepdim) / count * hit


@derivative(reductions.sum_op, "SumBackward1")
def _sum(grad, self_shape, dim, keepdim):
    return (_unreduce(grad, self_shape, dim, keepdim),)


@derivative(reductions.sum_op.overload("default"), "SumBackward0")
def _sum_all(grad, self_shape):
    return (grad.expand(self_shape),)


@derivative(reductions.mean, "MeanBackward1")
def _mean(grad, self_shape, dim, keepdim):
    count = 1
    for d in _reduced_dims(self_shape, dim) if self_shape else ():
        count *= self_shape[d]
    return (_unreduce(grad, self_shape, dim, keepdim) / count,)


@derivative(reductions.mean.overload("default"), "MeanBackward0")
def _mean_all(grad, self_shape):
    return (grad.expand(self_shape) / max(prod(self_shape), 1),)


linear_in_inputs(reductions.sum_op, reductions.sum_op.overload("default"), reductions.mean,
                 reductions.mean.overload("default"))


@derivative(reductions.amax, "AmaxBackward0")
def _amax(grad, self, dim, keepdim, result):
    return (_evenly(grad, self, result, dim, keepdim),)


@derivative(reductions.amin, "AminBackward0")
def _amin(grad, self, dim, keepdim, result):
    return (_evenly(grad, self, result, dim, keepdim),)


@derivative(reductions.max_all, "MaxBackward1")
def _max_all(grad, self, result):
    return (_evenly_among_equal(grad, self, result),)


@derivative(reductions.min_all, "MinBackward1")
def _min_all(grad, self, result):
    return (_evenly_among_equal(grad, self, result),)


@derivative(reductions.max_dim, "MaxBackward0")
def _max_dim(grad, self_shape, dim, keepdim, result1):
    """To the forward's own indices (saved, as PyTorch: writing into them in place makes
    backward fail rather than pick other elements)."""
    return (_scatter_back(grad, self_shape, dim, result1, keepdim),)


@derivative(reductions.min_dim, "MinBackward0")
def _min_dim(grad, self_shape, dim, keepdim, result1):
    return (_scatter_back(grad, self_shape, dim, result1, keepdim),)


@derivative(reductions.var_op, "VarBackward0")
def _var(grad, self, dim, correction, keepdim):
    c = 1 if correction is None else correction
    dims = _reduced_dims(self.shape, dim)
    centered = self - self.mean(dims, keepdim=True)
    dof = _count(self.shape, dim) - c
    scale = 2.0 / dof if dof else math.inf         # no degrees of freedom: NaN, as PyTorch
    return (_unreduce(grad, self.shape, dim, keepdim) * centered * scale,)


@derivative(reductions.std_op, "StdBackward0")
def _std(grad, self, dim, correction, keepdim, result):
    c = 1 if correction is None else correction
    dims = _reduced_dims(self.shape, dim)
    centered = self - self.mean(dims, keepdim=True)
    g = _unreduce(where(result == 0, 0.0, grad / result), self.shape, dim, keepdim)
    return (g * centered / (_count(self.shape, dim) - c),)


@derivative(reductions.logsumexp, "LogsumexpBackward0")
def _logsumexp(grad, self, dim, keepdim, result):
    shape = self.shape
    return (_unreduce(grad, shape, dim, keepdim)
            * (self - _keep(result, shape, dim, keepdim)).exp(),)


@derivative(reductions.norm_op, "LinalgVectorNormBackward0")
def _norm(grad, self, p, dim, keepdim, result):
    shape = self.shape
    p = 2.0 if p is None else float(p)
    g = _unreduce(grad, shape, dim, keepdim)
    if p == 0.0:
        return (None,)                 # piecewise constant: no gradient, as PyTorch
    if p == 1.0:
        return (g * self.sgn(),)
    r = _keep(result, shape, dim, keepdim)
    if p == 2.0:
        return (_drop(g * self / r, r == 0),)
    if math.isinf(p):
        return (_evenly(grad, self.abs(), result, dim, keepdim) * self.sgn(),)
    a = self.abs()
    return (_drop(g * self * a.pow(p - 2) / r.pow(p - 1), r == 0),)


@derivative(reductions.cumsum, "CumsumBackward0")
def _cumsum(grad, dim):
    return (_reverse_cumsum(grad, dim),)


@derivative(reductions.cumprod, "CumprodBackward0")
def _cumprod(grad, self, dim, result):
    """d/dx_j of sum_i g_i prod_{k<=i} x_k is sum_{i>=j} g_i y_i / x_j when no x is zero.
    With zeros, the products leaving x_j out are built explicitly (O(n^2) per slice):
    prod_{k<j} x_k * prod_{j<k<=i} x_k, so that the result stays differentiable. Along a
    dim of size 1 (or of one element) the product is the input itself: the gradient passes
    as is (as PyTorch's, even at NaN)."""
    if self.numel() <= 1 or (self.dim() and self.shape[wrap_dim(dim, self.dim())] == 1):
        return (grad,)
    if self.is_complex():          # holomorphic: the conjugate of the derivatives above
        self, result = self.conj(), result.conj()
    if not bool((self == 0).any()):
        return (_reverse_cumsum(grad * result, dim) / self,)
    x, g = self.movedim(dim, -1), grad.movedim(dim, -1)
    n = x.shape[-1]
    ones = x.new_ones(x.shape[:-1] + (1,))
    before = cat([ones, x[..., :-1]], -1).cumprod(-1)               # prod_{k<j} x_k
    k = arange(n, device=x.device)
    later = k.unsqueeze(0) > k.unsqueeze(1)                          # [j, k]: k > j
    between = where(later, x.unsqueeze(-2), 1.0).cumprod(-1)         # [j, i]: prod_{j<k<=i}
    upper = later.logical_or(k.unsqueeze(0) == k.unsqueeze(1))       # [j, i]: i >= j
    out = before * where(upper, g.unsqueeze(-2) * between, 0.0).sum(-1)
    return (out.movedim(-1, dim),)


@derivative(reductions.nansum, "NansumBackward0")
def _nansum(grad, self, dim, keepdim):
    return (_drop(_unreduce(grad, self.shape, dim, keepdim), self.isnan()),)


@derivative(reductions.nanmean, "DivBackward0")
def _nanmean(grad, self, dim, keepdim):
    nan = self.isnan()
    count = nan.logical_not().sum(_reduced_dims(self.shape, dim), keepdim=True)
    return (_drop(_unreduce(grad, self.shape, dim, keepdim) / count, nan),)


@derivative(reductions.var_mean_op, "VarMeanBackward0")
def _var_mean(grad, self, dim, correction, keepdim):
    g_var, g_mean = _two_grads(grad)
    out = 0
    if g_var is not None:
        out = _var(g_var, self, dim, correction, keepdim)[0]
    if g_mean is not None:
        out = out + _unreduce(g_mean, self.shape, dim, keepdim) / _count(self.shape, dim)
    return (out,)


@derivative(reductions.std_mean_op, "StdMeanBackward0")
def _std_mean(grad, self, dim, correction, keepdim, result):
    g_std, g_mean = _two_grads(grad)
    out = 0
    if g_std is not None:
        out = _std(g_std, self, dim, correction, keepdim, result)[0]
    if g_mean is not None:
        out = out + _unreduce(g_mean, self.shape, dim, keepdim) / _count(self.shape, dim)
    return (out,)


@derivative(reductions.aminmax_op, "AminmaxBackward0")
def _aminmax(grad, self, dim, keepdim, result0, result1):
    g_min, g_max = _two_grads(grad)
    dims = None if dim is None else (dim,)
    out = 0
    if g_min is not None:
        out = _evenly(g_min, self, result0, dims, keepdim)
    if g_max is not None:
        out = out + _evenly(g_max, self, result1, dims, keepdim)
    return (out,)


@derivative(reductions.logcumsumexp, "LogcumsumexpBackward0")
def _logcumsumexp(grad, self, dim, result):
    """Sums exp(self_j - result_i) * grad_i over i >= j, split by the sign of grad and
    kept in log space (reverse logcumsumexp) so that nothing overflows; complex inputs use
    the plain reverse cumulative sum (the sign split has no complex meaning)."""
    if grad.dim() == 0:
        return (grad,)
    d = wrap_dim(dim, grad.dim())
    if grad.is_complex():   # holomorphic: conj(exp(self_j)) * sum_{i >= j} grad_i conj(exp(-r_i))
        tail = (grad * (-result).exp().conj()).flip(d).cumsum(d).flip(d)
        return (tail * self.exp().conj(),)
    lowest = dt.finfo(grad.dtype).min
    log_abs = grad.abs().log()
    pos = where(grad > 0, log_abs, lowest)
    neg = where(grad < 0, log_abs, lowest)

    def reverse_logcumsumexp(x):
        return x.flip(d).logcumsumexp(d).flip(d)
    return ((reverse_logcumsumexp(pos - result) + self).exp()
            - (reverse_logcumsumexp(neg - result) + self).exp(),)


# Indices, truth values and counts: no gradient flows through them.
not_differentiable(reductions.argmax, reductions.argmin, reductions.all_op, reductions.any_op,
                   reductions.all_op.overload("default"), reductions.any_op.overload("default"),
                   reductions.count_nonzero, reductions.count_nonzero.overload("default"))


def _cum_extremum_backward(grad, self, indices, dim):
    """Each running value's gradient goes to the element it came from (`grad` is the
    values' gradient: the indices are not differentiable)."""
    g = grad[0] if isinstance(grad, tuple) else grad
    if g is None or self.dim() == 0:
        return (g,)
    d = wrap_dim(dim, self.dim())
    from ..creation.ranges import arange
    index = []
    for i, n in enumerate(self.shape):
        if i == d:
            index.append(indices)
        else:
            shape = [1] * self.dim()
            shape[i] = n
            index.append(arange(n, device=self.device).reshape(shape))
    return (g.new_zeros(self.shape).index_put(index, g, accumulate=True),)


@derivative(scans.cummax, "CummaxBackward0")
def _cummax(grad, self, dim, result1):
    return _cum_extremum_backward(grad, self, result1, dim)


@derivative(scans.cummin, "CumminBackward0")
def _cummin(grad, self, dim, result1):
    return _cum_extremum_backward(grad, self, result1, dim)
