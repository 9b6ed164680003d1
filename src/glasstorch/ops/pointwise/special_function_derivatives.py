"""Derivative formulas of special_functions.py, and digamma's.

Same conventions as arithmetic_derivatives.py: formulas in glasstorch ops, so that double
backward records them; Python-number operands get no gradient (None).
"""
from __future__ import annotations

import math

from ..derivative import derivative
from .arithmetic_derivatives import _zero
from ...core import dtype as dt
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
    return grad, (_zero(grad) if isinstance(other, Tensor) else None)


# ---- index_reduce ----------------------------------------------------------------------------


# ---- scatters into views (ops/view_scatter.py) ------------------------------------------------


