"""Derivative formulas of special_functions.py, and digamma's.

Same conventions as arithmetic_derivatives.py: formulas in glasstorch ops, so that double
backward records them; Python-number operands get no gradient (None).
"""
from __future__ import annotations

import math

from ..derivative import derivative
from ...core import dtype as dt
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from . import special_functions as mm
from ..shape.joining import where
from . import elementwise
from . import special_functions

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LN2 = math.log(2.0)


def _tensor_or(g, x):
    return g if isinstance(x, Tensor) else None


def _overload_name(base):
    """Backward0 for (Tensor, Tensor), Backward1 for a number self, Backward2 for a number
    other: PyTorch's Scalar overloads each have their own node."""
    def name(self, other):
        if not isinstance(self, Tensor):
            return f"{base}Backward1"
        return f"{base}Backward2" if not isinstance(other, Tensor) else f"{base}Backward0"
    return name


# ---- ops declared elsewhere ------------------------------------------------------------------

@derivative(elementwise.digamma, "DigammaBackward0")
def _digamma(grad, self):
    return (grad * mm.polygamma_op.function(1, self),)


# ---- cumulative extrema ----------------------------------------------------------------------

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


@derivative(special_functions.cummax, "CummaxBackward0")
def _cummax(grad, self, dim, result1):
    return _cum_extremum_backward(grad, self, result1, dim)


@derivative(special_functions.cummin, "CumminBackward0")
def _cummin(grad, self, dim, result1):
    return _cum_extremum_backward(grad, self, result1, dim)


# ---- binary pointwise ------------------------------------------------------------------------

@derivative(special_functions.logaddexp, "LogaddexpBackward0")
def _logaddexp(grad, self, other):
    return grad / (1 + (other - self).exp()), grad / (1 + (self - other).exp())


@derivative(special_functions.logaddexp2, "Logaddexp2Backward0")
def _logaddexp2(grad, self, other):
    return grad / (1 + (other - self).exp2()), grad / (1 + (self - other).exp2())


@derivative(special_functions.special_xlog1py, _overload_name("SpecialXlog1Py"))
def _xlog1py(grad, self, other):
    d_self = d_other = None
    if isinstance(self, Tensor):
        d_self = where((self == 0) & (other <= -1), 0.0,
                       mm.special_xlog1py.function(grad, other))
    if isinstance(other, Tensor):
        d_other = grad * self / (other + 1)
    return d_self, d_other


@derivative(special_functions.special_zeta, _overload_name("SpecialZeta"))
def _zeta(grad, self, other):
    if isinstance(self, Tensor) and self.requires_grad:
        raise RuntimeError("the derivative for 'zeta' is not implemented.")
    d_other = None
    if isinstance(other, Tensor):
        d_other = grad * -self * mm.special_zeta.function(self + 1.0, other)
    return None, d_other


def _igamma_slope(self, other):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)."""
    if self.requires_grad:
        raise RuntimeError("the derivative for 'igamma: input' is not implemented.")
    return ((self - 1) * other.log() - other - self.lgamma()).exp()


@derivative(special_functions.igamma, "IgammaBackward0")
def _igamma(grad, self, other):
    return None, grad * _igamma_slope(self, other)


@derivative(special_functions.igammac, "IgammacBackward0")
def _igammac(grad, self, other):
    return None, -grad * _igamma_slope(self, other)


# ---- unary special functions -----------------------------------------------------------------

@derivative(special_functions.sinc, "SincBackward0")
def _sinc(grad, self):
    px = self * math.pi
    slope = (px * px.cos() - px.sin()) / (px * self)
    return (where(self == 0, 0.0, grad * slope),)


@derivative(special_functions.i0, "I0Backward0")
def _i0(grad, self):
    return (grad * mm.special_i1.function(self),)


@derivative(special_functions.special_i0e, "SpecialI0EBackward0")
def _i0e(grad, self, result):
    return (grad * (mm.special_i1e.function(self) - self.sgn() * result),)


def _not_tiny(self):
    """Where |self| exceeds the dtype's epsilon, and self with tiny values replaced by it."""
    eps = dt.finfo(self.dtype).eps
    big = self.abs() > eps
    return big, where(big, self, eps)


@derivative(special_functions.special_i1, "SpecialI1Backward0")
def _i1(grad, self, result):
    big, safe = _not_tiny(self)
    return (grad * where(big, mm.i0.function(safe) - result / safe, 0.5),)


@derivative(special_functions.special_i1e, "SpecialI1EBackward0")
def _i1e(grad, self, result):
    big, safe = _not_tiny(self)
    slope = mm.special_i0e.function(safe) - result * (safe.sgn() + safe.reciprocal())
    return (grad * where(big, slope, 0.5),)


@derivative(special_functions.special_erfcx, "SpecialErfcxBackward0")
def _erfcx(grad, self, result):
    return ((2.0 * self * result - _TWO_OVER_SQRT_PI) * grad,)


@derivative(special_functions.special_ndtri, "SpecialNdtriBackward0")
def _ndtri(grad, result):
    return (grad * _SQRT_2PI * (result * result / 2).exp(),)


@derivative(special_functions.special_log_ndtr, "SpecialLogNdtrBackward0")
def _log_ndtr(grad, self, result):
    return (grad / _SQRT_2PI * (-(result + self * self / 2)).exp(),)


@derivative(special_functions.special_entr, "SpecialEntrBackward0")
def _entr(grad, self):
    return (grad * -(1 + self.log()),)


@derivative(special_functions.polygamma_op, "PolygammaBackward0")
def _polygamma(grad, n, self):
    return (grad * mm.polygamma_op.function(n + 1, self),)


@derivative(special_functions.mvlgamma, "MvlgammaBackward0")
def _mvlgamma(grad, self, p):
    total = self.digamma()
    for i in range(1, p):
        total = total + (self - i / 2).digamma()
    return (grad * total,)


# ---- trace, renorm, rotations and diagonals --------------------------------------------------

@derivative(special_functions.trace, "TraceBackward0")
def _trace(grad, self_shape):
    from ..creation.ranges import eye
    return (eye(self_shape[0], self_shape[1], dtype=grad.dtype, device=grad.device) * grad,)


@derivative(special_functions.renorm, "RenormBackward0")
def _renorm(grad, self, p, dim, maxnorm):
    """y = x * f(n) with f = maxnorm / (n + 1e-7) on the slices whose p-norm n exceeds
    maxnorm (else 1): dy/dx = f + x * f'(n) * dn/dx, summed over each slice."""
    d = wrap_dim(dim, self.dim())
    others = [i for i in range(self.dim()) if i != d]
    mag = self.abs()
    if p == math.inf:
        norm = mag.amax(others, keepdim=True)
        hit = (mag == norm).to(self.dtype)
        dnorm = self.sgn() * hit / hit.sum(others, keepdim=True)
    else:
        norm = mag.pow(p).sum(others, keepdim=True).pow(1.0 / p)
        dnorm = self.sgn() * (mag / norm).pow(p - 1)
    over = norm > maxnorm
    factor = where(over, maxnorm / (norm + 1e-7), 1.0)
    dfactor = where(over, -maxnorm / ((norm + 1e-7) * (norm + 1e-7)), 0.0)
    inner = (grad * self).sum(others, keepdim=True)
    return (grad * factor + where(over, inner * dfactor * dnorm, 0.0),)


# ---- deg2rad, rad2deg, frexp -----------------------------------------------------------------

@derivative(special_functions.deg2rad, "Deg2RadBackward0")
def _deg2rad(grad):
    return (grad * (math.pi / 180.0),)


@derivative(special_functions.rad2deg, "Rad2DegBackward0")
def _rad2deg(grad):
    return (grad * (180.0 / math.pi),)


@derivative(special_functions.frexp_op, "FrexpBackward0")
def _frexp(grad, result1):
    """mantissa = input / 2**exponent with the exponent piecewise constant."""
    g = grad[0] if isinstance(grad, tuple) else grad
    return (None if g is None else g / result1.exp2(),)


@derivative(special_functions.nextafter, "NextafterBackward0")
def _nextafter(grad, other):
    """The step is piecewise constant: the identity for input, nothing for other."""
    return grad, (grad * 0 if isinstance(other, Tensor) else None)


# ---- index_reduce ----------------------------------------------------------------------------

@derivative(special_functions.index_reduce, "IndexReduceBackward0")
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


# ---- scatters into views (ops/view_scatter.py) ------------------------------------------------


