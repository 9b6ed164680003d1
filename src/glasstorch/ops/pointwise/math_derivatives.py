"""Derivative formulas of the other pointwise math functions and binary ops (elementwise.py).

Same conventions as arithmetic_derivatives.py (formulas in glasstorch ops so that double backward
records them). Python-number operands ("wrapped numbers") get no gradient (None).
"""
from __future__ import annotations

import math

from ..derivative import derivative, derivative_not_implemented, not_differentiable
from ...core.tensor import Tensor
from .arithmetic_derivatives import _reduced_dims, _zero, conj
from ..shape.joining import where
from . import comparison
from . import elementwise
from . import special_functions
from ..reduction import reductions

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _tensor_or(g, x):
    """`g` when `x` is a Tensor input, else None (a Python number has no gradient)."""
    return g if isinstance(x, Tensor) else None


def _drop(g, mask):
    """`g` with zeros where `mask` is set (`where` is differentiable, for double backward)."""
    return where(mask, 0.0, g)


# ---- unary pointwise -----------------------------------------------------------------------

@derivative(elementwise.exp2, "Exp2Backward0")
def _exp2(grad, result):
    return (grad * conj(result * _LN2),)


@derivative(elementwise.expm1, "Expm1Backward0")
def _expm1(grad, result):
    return (grad * conj(result + 1),)


@derivative(elementwise.log2, "Log2Backward0")
def _log2(grad, self):
    return (grad / conj(self * _LN2),)


@derivative(elementwise.log10, "Log10Backward0")
def _log10(grad, self):
    return (grad / conj(self * _LN10),)


@derivative(elementwise.log1p, "Log1PBackward0")
def _log1p(grad, self):
    return (grad / conj(self + 1),)


@derivative(elementwise.rsqrt, "RsqrtBackward0")
def _rsqrt(grad, result):
    return (grad * conj((result * result * result) * -0.5),)


@derivative(elementwise.square, "PowBackward0")
def _square(grad, self):
    return (grad * conj(self * 2),)


@derivative(elementwise.reciprocal, "ReciprocalBackward0")
def _reciprocal(grad, result):
    return (-grad * conj(result * result),)


@derivative(elementwise.sin, "SinBackward0")
def _sin(grad, self):
    return (grad * conj(self.cos()),)


@derivative(elementwise.cos, "CosBackward0")
def _cos(grad, self):
    return (-grad * conj(self.sin()),)


@derivative(elementwise.tan, "TanBackward0")
def _tan(grad, result):
    return (grad * conj(result * result + 1),)


@derivative(elementwise.asin, "AsinBackward0")
def _asin(grad, self):
    return (grad / conj((1 - self * self).sqrt()),)


@derivative(elementwise.acos, "AcosBackward0")
def _acos(grad, self):
    return (-grad / conj((1 - self * self).sqrt()),)


@derivative(elementwise.atan, "AtanBackward0")
def _atan(grad, self):
    return (grad / conj(self * self + 1),)


@derivative(elementwise.sinh, "SinhBackward0")
def _sinh(grad, self):
    return (grad * conj(self.cosh()),)


@derivative(elementwise.cosh, "CoshBackward0")
def _cosh(grad, self):
    return (grad * conj(self.sinh()),)


@derivative(elementwise.asinh, "AsinhBackward0")
def _asinh(grad, self):
    return (grad / conj((self * self + 1).sqrt()),)


@derivative(elementwise.acosh, "AcoshBackward0")
def _acosh(grad, self):
    return (grad / conj((self - 1).sqrt() * (self + 1).sqrt()),)


@derivative(elementwise.atanh, "AtanhBackward0")
def _atanh(grad, self):
    return (grad / conj(1 - self * self),)


@derivative(elementwise.logit, "LogitBackward0")
def _logit(grad, self, eps):
    g = grad / (self * (1 - self))
    if eps is None:
        return (g,)
    outside = (self < eps).logical_or(self > 1 - eps)
    return (_drop(g, outside),)


@derivative(elementwise.erf, "ErfBackward0")
def _erf(grad, self):
    return (grad * (-(self * self)).exp() * _TWO_OVER_SQRT_PI,)


@derivative(elementwise.erfc, "ErfcBackward0")
def _erfc(grad, self):
    return (grad * (-(self * self)).exp() * -_TWO_OVER_SQRT_PI,)


@derivative(elementwise.erfinv, "ErfinvBackward0")
def _erfinv(grad, result):
    return (grad * (result * result).exp() * _SQRT_PI_OVER_2,)


@derivative(elementwise.lgamma, "LgammaBackward0")
def _lgamma(grad, self):
    return (grad * self.digamma(),)


# piecewise-constant functions: zero gradient; frac(x) = x - trunc(x): identity gradient
for _name, _node in (("floor", "FloorBackward0"), ("ceil", "CeilBackward0"),
                     ("trunc", "TruncBackward0"), ("sign", "SignBackward0")):
    derivative(getattr(elementwise, _name), _node)(lambda grad: (_zero(grad),))


@derivative(elementwise.round,
            lambda self, decimals=None: "RoundBackward0" if decimals is None
            else "RoundBackward1")
def _round(grad):
    return (_zero(grad),)


@derivative(elementwise.frac, "FracBackward0")
def _frac(grad):
    return (grad,)


# ---- clamp -------------------------------------------------------------------------------

def _clamp_name(self, min=None, max=None):
    return "ClampBackward0" if _is_tensor(min) or _is_tensor(max) else "ClampBackward1"


@derivative(elementwise.clamp.overload("default"), _clamp_name)
@derivative(elementwise.clamp, _clamp_name)
def _clamp(grad, self, min, max):
    """The gradient passes to self where min <= self <= max; to a tensor bound where it
    is the one selected (max wins where max < min, as in PyTorch)."""
    if min is not None and max is not None:
        keep = (self >= min).logical_and(self <= max)
        g_min = g_max = None
        if _is_tensor(min):
            g_min = where((self < min).logical_and(min < max), grad, 0.0)
        if _is_tensor(max):
            g_max = where((self > max).logical_or(max < min), grad, 0.0)
        return where(keep, grad, 0.0), g_min, g_max
    if min is not None:
        return _clamp_min(grad, self, min) + (None,)
    if max is not None:
        g_self, g_max = _clamp_max(grad, self, max)
        return g_self, None, g_max
    return grad, None, None


# A NaN in self compares false both ways: neither self nor the bound gets its gradient.

@derivative(elementwise.clamp_min.overload("default"), "ClampMinBackward0")
@derivative(elementwise.clamp_min,
            lambda self, min: "ClampMinBackward1" if _is_tensor(min) else "ClampMinBackward0")
def _clamp_min(grad, self, min):
    return where(self >= min, grad, 0.0), _tensor_or(where(self < min, grad, 0.0), min)


@derivative(elementwise.clamp_max.overload("default"), "ClampMaxBackward0")
@derivative(elementwise.clamp_max,
            lambda self, max: "ClampMaxBackward1" if _is_tensor(max) else "ClampMaxBackward0")
def _clamp_max(grad, self, max):
    return where(self <= max, grad, 0.0), _tensor_or(where(self > max, grad, 0.0), max)


# ---- binary pointwise --------------------------------------------------------------------

def _split_ties(grad, self, other):
    """Where the operands are equal, each gets half the gradient (as PyTorch)."""
    return where(self == other, grad / 2, grad)


@derivative(elementwise.maximum, "MaximumBackward0")
def _maximum(grad, self, other):
    g = _split_ties(grad, self, other)
    return _drop(g, self < other), _tensor_or(_drop(g, self > other), other)


@derivative(elementwise.minimum, "MinimumBackward0")
def _minimum(grad, self, other):
    g = _split_ties(grad, self, other)
    return _drop(g, self > other), _tensor_or(_drop(g, self < other), other)


@derivative(elementwise.fmax, "FmaxBackward0")
def _fmax(grad, self, other):
    self_wins = (self >= other).logical_or(other.isnan())
    return (where(self_wins, grad, 0.0),
            _tensor_or(_drop(grad, self_wins), other))


@derivative(elementwise.fmin, "FminBackward0")
def _fmin(grad, self, other):
    self_wins = (self <= other).logical_or(other.isnan())
    return (where(self_wins, grad, 0.0),
            _tensor_or(_drop(grad, self_wins), other))


@derivative(elementwise.atan2, "Atan2Backward0")
def _atan2(grad, self, other):
    """As PyTorch's: times the reciprocal of x^2 + y^2, taken as 0 where that is 0 (at the
    origin, or where it underflows), so the gradient there is 0 rather than NaN."""
    denom = self * self + other * other
    recip = where(denom == 0, 0.0, denom.reciprocal())
    # -grad, not -self: an integer self would negate in its own dtype (PyTorch's bug, docs/04)
    return grad * other * recip, _tensor_or(-grad * self * recip, other)


@derivative(elementwise.hypot, "HypotBackward0", needs={"self": (0,), "other": (1,)})
def _hypot(grad, self, other, result, grad_input_mask):
    return (grad * self / result if grad_input_mask[0] else None,
            grad * other / result if grad_input_mask[1] else None)


def _xlogy_name(self, other):
    if not _is_tensor(self):
        return "XlogyBackward1"
    return "XlogyBackward0" if _is_tensor(other) else "XlogyBackward2"


@derivative(elementwise.xlogy.overload("Scalar_Other"), "XlogyBackward2")
@derivative(elementwise.xlogy, _xlogy_name)
def _xlogy(grad, self, other):
    g_self = None
    if _is_tensor(self):
        g_self = grad * (self != 0).to(grad.dtype).xlogy(other)
    g_other = grad * self / other if _is_tensor(other) else None
    return g_self, g_other


@derivative(elementwise.copysign,
            lambda self, other: "CopysignBackward0" if _is_tensor(other)
            else "CopysignBackward1", needs={"self": (0,)})
def _copysign(grad, self, result, grad_input_mask):
    """No gradient flows to the sign source; self is saved only for its own gradient."""
    g_self = grad * _drop(result / self, self == 0) if grad_input_mask[0] else None
    return g_self, _zero(grad)


@derivative(elementwise.lerp.overload("Scalar"), "LerpBackward0")
@derivative(elementwise.lerp,
            lambda self, end, weight: "LerpBackward1" if _is_tensor(weight)
            else "LerpBackward0")
def _lerp(grad, self, end, weight):
    return (grad * (1 - weight), _tensor_or(grad * weight, end),
            _tensor_or(grad * (end - self), weight))


@derivative(elementwise.addcmul, "AddcmulBackward0")
def _addcmul(grad, tensor1, tensor2, value):
    return grad, grad * tensor2 * value, grad * tensor1 * value


@derivative(elementwise.addcdiv, "AddcdivBackward0")
def _addcdiv(grad, tensor1, tensor2, value):
    return grad, grad * value / tensor2, -grad * value * tensor1 / (tensor2 * tensor2)


@derivative(elementwise.remainder.overload("Scalar"), "RemainderBackward0",
            needs={"self": ()})        # a number divisor: self's gradient reads nothing
@derivative(elementwise.remainder,
            lambda self, other: "RemainderBackward1" if _is_tensor(other)
            else "RemainderBackward0", needs={"self": (1,), "other": (1,)})
def _remainder(grad, self, other, grad_input_mask):
    g_other = None
    if len(grad_input_mask) > 1 and grad_input_mask[1]:
        if not _is_tensor(self):     # `number % tensor`: PyTorch has no formula for it either
            raise RuntimeError("derivative for aten::remainder is not implemented")
        g_other = -grad * self.div(other, rounding_mode="floor")
    return grad, g_other


@derivative(elementwise.fmod.overload("Scalar"), "FmodBackward0",
            needs={"self": ()})        # a number divisor: self's gradient reads nothing
@derivative(elementwise.fmod,
            lambda self, other: "FmodBackward1" if _is_tensor(other) else "FmodBackward0",
            needs={"self": (1,), "other": (1,)})
def _fmod(grad, self, other):
    g_other = None
    if _is_tensor(other):
        g_other = -grad * self.div(other, rounding_mode="trunc")
    return grad, g_other


def _float_power_name(self, exponent):
    if not _is_tensor(self):
        return "PowBackward2"
    return "PowBackward1" if _is_tensor(exponent) else "PowBackward0"


@derivative(elementwise.float_power, _float_power_name)
def _float_power(grad, self, exponent, result):
    g_self = g_exp = None
    if _is_tensor(self):
        g_self = grad * exponent * self.double().pow(exponent - 1)
        if _is_tensor(exponent):
            g_exp = grad * result * self.double().log()
    else:
        g_exp = grad * result * math.log(self)
    return g_self, g_exp


# ---- reductions --------------------------------------------------------------------------

def _keep(t, shape, dim, keepdim):
    """A reduction's output (or gradient) with the reduced dims kept as size 1."""
    if not keepdim and shape:
        for d in _reduced_dims(shape, dim):
            t = t.unsqueeze(d)
    return t


@derivative(reductions.prod.overload("default"), "ProdBackward0")
def _prod_all(grad, self, result):
    return _prod(grad, self, None, False, result)


@derivative(reductions.prod, "ProdBackward1")
def _prod(grad, self, dim, keepdim, result):
    """d prod / d x_i is the product of the other elements: result / x_i when no element is
    zero (the result is saved, as PyTorch saves it); with one zero in the slice only that
    zero gets a gradient, with two or more nothing does."""
    shape = self.shape
    if not bool((self == 0).any()):
        if dim is not None and not keepdim and shape:
            grad, result = grad.unsqueeze(dim), result.unsqueeze(dim)
        return (grad * conj(result / self),)
    x, g, d = self, grad, dim
    if dim is None:
        x, g, d = self.reshape(-1), grad.reshape(1), 0
    elif not keepdim and shape:
        g = g.unsqueeze(dim)
    zero = x == 0
    zeros = zero.sum(d, keepdim=True)
    safe = where(zero, 1.0, x)
    others = safe.prod(d, keepdim=True)
    out = _drop(g * others / safe, zeros != 0)
    out = out + where(zero.logical_and(zeros == 1), g * others, 0.0)
    return (out.reshape(shape),)


@derivative(elementwise.nan_to_num, "NanToNumBackward0")
def _nan_to_num(grad, self):
    return (grad * self.isfinite(),)       # replaced values are constants


@derivative(elementwise.angle, "AngleBackward0")
def _angle(grad, self):
    if not self.dtype.is_complex:
        return (_zero(grad),)              # piecewise constant for real inputs
    return ((grad * self / self.abs().pow(2) * 1j).where(self != 0, 0),)


@derivative(elementwise.complex_, "ComplexBackward0")
def _complex(grad):
    return grad.real, grad.imag


@derivative(elementwise.polar, "PolarBackward0")
def _polar(grad, result):
    g = grad.conj()
    return (g * result.sgn()).real, (g * result * 1j).real


@derivative(elementwise._conj_physical, "ConjPhysicalBackward0")
def _conj_physical(grad):
    return (grad.conj_physical(),)


# ---- random sampling: the samples do not depend differentiably on the parameters -------


# Results that are bools, integers or bit tests: no gradient flows through them.
not_differentiable(
    elementwise.signbit, elementwise.isnan, elementwise.isinf, elementwise.isfinite, elementwise.isreal,
    elementwise.isposinf, elementwise.isneginf, elementwise.bitwise_and, elementwise.bitwise_or,
    elementwise.bitwise_xor, elementwise.bitwise_left_shift,
    elementwise.bitwise_right_shift, elementwise.bitwise_not, elementwise.logical_and,
    elementwise.logical_or, elementwise.logical_xor, elementwise.logical_not, elementwise.eq,
    elementwise.ne, elementwise.lt, elementwise.le, elementwise.gt,
    elementwise.ge, special_functions.gcd, special_functions.lcm, *comparison.ISIN_OVERLOADS.values(),
    *(getattr(elementwise, name).overload("Scalar") for name in (
        "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor",
        "bitwise_left_shift", "bitwise_right_shift")))
# PyTorch gives the special functions below no gradient: their results never require grad.
not_differentiable(
    special_functions.special_bessel_j0, special_functions.special_bessel_j1,
    special_functions.special_bessel_y0, special_functions.special_bessel_y1,
    special_functions.special_spherical_bessel_j0, special_functions.special_airy_ai,
    special_functions.special_modified_bessel_i0, special_functions.special_modified_bessel_i1,
    special_functions.special_modified_bessel_k0, special_functions.special_modified_bessel_k1,
    special_functions.special_scaled_modified_bessel_k0,
    special_functions.special_scaled_modified_bessel_k1,
    *special_functions.polynomial_ops.values())
# Differentiable in principle, but PyTorch has no formula: backward raises there too.
derivative_not_implemented(elementwise.floor_divide, special_functions.heaviside)
