"""Derivative formulas of arithmetic: add, sub, mul, div, pow, and exp, log, sqrt, tanh, ...

Each family's formulas sit beside its declarations (PyTorch's derivatives.yaml).

Each formula receives the incoming gradient and what it names from the call (see
`ops/derivative.py`) and returns one gradient per Tensor input, written in
glasstorch ops so that double backward (create_graph=True) records them too. Gradients of
broadcast inputs are summed back to the input's shape by the engine.
"""
from __future__ import annotations

import cmath
import math

from ..derivative import derivative
from ..derivative import forward_derivative, linear_in_inputs
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from ..nn.activation import sigmoid_backward, tanh_backward
from ..shape.joining import where
from . import elementwise


def _reduced_dims(shape, dim):
    if dim is None or dim == () or not shape:        # a 0-d input's dim 0/-1 is no dim
        return tuple(range(len(shape)))
    return tuple(sorted(wrap_dim(d, len(shape)) for d in dim))


def _unreduce(grad, shape, dim, keepdim):
    """Broadcast a reduction's gradient back over the reduced dimensions."""
    if not keepdim and grad._shape:      # a 0-dim gradient (all dims reduced) expands as is
        for d in _reduced_dims(shape, dim):
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


def _zero(grad):
    """The gradient of a piecewise-constant function: zeros that do not depend on `grad`
    (a NaN or inf arriving stays out, as with PyTorch's zeros_like)."""
    return grad.new_zeros(grad._shape)


# ---- arithmetic ------------------------------------------------------------------------

@derivative(elementwise.add, "AddBackward0")
def _add(grad, alpha):
    return grad, (grad if alpha == 1 else grad * alpha)


@derivative(elementwise.sub, "SubBackward0")
def _sub(grad, alpha):
    return grad, (-grad if alpha == 1 else grad * -alpha)


linear_in_inputs(elementwise.add, elementwise.sub, elementwise.neg,
                 elementwise.mul.overload("Scalar"), elementwise.div.overload("Scalar"))


@derivative(elementwise.add.overload("Scalar"), "AddBackward1")
@derivative(elementwise.sub.overload("Scalar"), "SubBackward1")
def _add_scalar(grad):
    return (grad,)


@derivative(elementwise.rsub.overload("Scalar"), "RsubBackward1")
@derivative(elementwise.rsub, "RsubBackward0")
def _rsub(grad, alpha):
    return (-grad if alpha == 1 else grad * -alpha), grad


def conj(t):
    """Complex gradients are conjugated (PyTorch's convention: grad * conj(df/dz)); a no-op
    for real tensors and numbers, which most calls see."""
    if t.__class__ is complex:
        return t.conjugate()
    if isinstance(t, Tensor) and t.dtype.is_complex:
        return t.conj()
    return t


@derivative(elementwise.mul, "MulBackward0", needs={"self": (1,), "other": (0,)})
def _mul(grad, self, other, grad_input_mask):
    return (grad * conj(other) if grad_input_mask[0] else None,
            grad * conj(self) if grad_input_mask[1] else None)


@forward_derivative(elementwise.mul)
def _mul_jvp(primals, tangents, result):
    (self, other), (t_self, t_other) = primals, tangents
    if t_other is None:
        return t_self * other
    return self * t_other if t_self is None else t_self * other + self * t_other


@derivative(elementwise.mul.overload("Scalar"), "MulBackward1")
def _mul_scalar(grad, other):
    return (grad * conj(other),)


@derivative(elementwise.div.overload("Tensor"), "DivBackward0", needs={"self": (1,)})
def _div(grad, self, other, grad_input_mask):
    return (grad / conj(other) if grad_input_mask[0] else None,
            -grad * conj(self / (other * other)) if grad_input_mask[1] else None)


@derivative(elementwise.div,
            lambda self, other, rounding_mode: "DivBackward0" if rounding_mode is None
            else "DivBackward2", needs={"self": (1,)})
def _div_mode(grad, self, other, rounding_mode, grad_input_mask):
    if rounding_mode is not None:
        return _zero(grad), (_zero(grad) if hasattr(other, "dtype") else None)
    return _div(grad, self, other, grad_input_mask)


@derivative(elementwise.div.overload("Scalar"), "DivBackward1")
def _div_scalar(grad, other):
    return (grad / conj(other),)


@derivative(elementwise.div.overload("Scalar_mode"), "DivBackward3")
def _div_scalar_mode(grad, other, rounding_mode):
    return (_zero(grad) if rounding_mode is not None else grad / conj(other),)


@derivative(elementwise.neg, "NegBackward0")
def _neg(grad):
    return (-grad,)


@derivative(elementwise.pow.overload("Scalar"), "PowBackward2")
def _pow_number_base(grad, self, exponent, result):
    """d/dx b**x = b**x log b; a zero base gives 0 where the exponent is >= 0 (its
    log is -inf there, the power 0 or 1)."""
    if self == 0:
        return (grad * where(exponent >= 0, 0.0, result * -math.inf),)
    if isinstance(self, complex):
        return (grad * conj(result * cmath.log(self)),)
    return (grad * (result * (math.log(self) if self > 0 else math.nan)),)


@derivative(elementwise.pow.overload("Tensor_Scalar"), "PowBackward0")
def _pow_number_exponent(grad, self, exponent):
    """Saves self, not the result, as PyTorch: an in-place pow_ on a view leaves nothing
    that a later write to the view could change under the backward."""
    if exponent == 0:
        return (self.new_zeros(self._shape),)        # even where self is 0
    return (grad * conj(exponent * self.pow(exponent - 1)),)


@derivative(elementwise.pow,
            lambda self, exponent: "PowBackward1" if hasattr(exponent, "dtype")
            else "PowBackward0")
def _pow(grad, self, exponent, result, grad_input_mask):
    """A zero exponent gives self no gradient (even where self is 0); a zero base gives the
    exponent none where the exponent is >= 0 (log 0 is -inf there, the power 0 or 1)."""
    d_self = d_exp = None
    if grad_input_mask[0]:
        d_self = grad * conj(exponent * self.pow(exponent - 1))
        if hasattr(exponent, "dtype"):
            d_self = where(exponent == 0, 0.0, d_self)
    if hasattr(exponent, "dtype") and grad_input_mask[1]:
        if exponent.dtype.is_complex:
            flat = (exponent.real >= 0).logical_and(exponent.imag == 0)
        else:
            flat = exponent >= 0
        flat = flat.logical_and(self == 0)
        d_exp = grad * where(flat, 0.0, conj(result * self.log()))
    return d_self, d_exp


# ---- pointwise functions -----------------------------------------------------------------

@derivative(elementwise.exp, "ExpBackward0")
def _exp(grad, result):
    return (grad * conj(result),)


@derivative(elementwise.log, "LogBackward0")
def _log(grad, self):
    return (grad / conj(self),)


@derivative(elementwise.sqrt, "SqrtBackward0")
def _sqrt(grad, result):
    return (grad / (2 * conj(result)),)


@derivative(elementwise.tanh, "TanhBackward0")
def _tanh(grad, result):
    if result.dtype.is_complex:
        return (grad * conj(1 - result * result),)
    return (tanh_backward(grad, result),)


@derivative(elementwise.sigmoid, "SigmoidBackward0")
def _sigmoid(grad, result):
    if result.dtype.is_complex:
        return (grad * conj(result * (1 - result)),)
    return (sigmoid_backward(grad, result),)


@derivative(elementwise.abs, "AbsBackward0")
def _abs(grad, self):
    return (grad * self.sgn(),)


@derivative(elementwise.sgn, "SgnBackward0")
def _sgn(grad, self, result):
    """Zero for real inputs (piecewise constant); for complex z, sgn(z) = z/|z| changes
    only with the angle: (g - sgn^2 conj(g)) / 2|z|, zero at z = 0."""
    if not self.dtype.is_complex:
        return (_zero(grad),)
    magnitude = self.abs()
    return (where(magnitude == 0, 0.0, (grad - result * result * conj(grad)) / (2 * magnitude)),)


# ---- reductions --------------------------------------------------------------------------


# ---- copies and views --------------------------------------------------------------------


# ---- matrix products ---------------------------------------------------------------------


