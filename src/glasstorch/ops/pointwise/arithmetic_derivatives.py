"""Derivative formulas, beside the op declarations (PyTorch's derivatives.yaml).

Each formula receives the incoming gradient and what it names from the call (see
`autograd.recording.Derivative`) and returns one gradient per Tensor input, written in
glasstorch ops so that double backward (create_graph=True) records them too. Gradients of
broadcast inputs are summed back to the input's shape by the engine.
"""
from __future__ import annotations

import cmath
import math
from math import prod

from ..derivative import derivative
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from ..shape.joining import where
from ..copying import copies
from ..indexing import subscripts
from ..linalg import products
from ..nn import normalization
from . import elementwise
from ..reduction import reductions
from ..shape import views


def _reduced_dims(shape, dim):
    if dim is None or dim == ():
        return tuple(range(len(shape)))
    return tuple(sorted(wrap_dim(d, len(shape)) for d in dim))


def _unreduce(grad, shape, dim, keepdim):
    """Broadcast a reduction's gradient back over the reduced dimensions."""
    if not keepdim and grad._shape:      # a 0-dim gradient (all dims reduced) expands as is
        for d in _reduced_dims(shape, dim):
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


# ---- arithmetic ------------------------------------------------------------------------

@derivative(elementwise.add, "AddBackward0")
def _add(grad, alpha):
    return grad, (grad if alpha == 1 else grad * alpha)


@derivative(elementwise.sub, "SubBackward0")
def _sub(grad, alpha):
    return grad, (-grad if alpha == 1 else grad * -alpha)


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


@derivative(elementwise.mul, "MulBackward0")
def _mul(grad, self, other, grad_input_mask):
    return (grad * conj(other) if grad_input_mask[0] else None,
            grad * conj(self) if grad_input_mask[1] else None)


@derivative(elementwise.div.overload("Tensor"), "DivBackward0")
def _div(grad, self, other, grad_input_mask):
    return (grad / conj(other) if grad_input_mask[0] else None,
            -grad * conj(self / (other * other)) if grad_input_mask[1] else None)


@derivative(elementwise.div,
            lambda self, other, rounding_mode: "DivBackward0" if rounding_mode is None
            else "DivBackward2")
def _div_mode(grad, self, other, rounding_mode, grad_input_mask):
    if rounding_mode is not None:
        return grad * 0, (grad * 0 if hasattr(other, "dtype") else None)
    return _div(grad, self, other, grad_input_mask)


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
@derivative(elementwise.pow,
            lambda self, exponent: "PowBackward1" if hasattr(exponent, "dtype")
            else "PowBackward0")
def _pow(grad, self, exponent, result):
    d_self = grad * conj(exponent * self.pow(exponent - 1))
    if not hasattr(exponent, "dtype"):
        return d_self, None
    return d_self, grad * conj(result * self.log())


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
    return (grad * conj(1 - result * result),)


@derivative(elementwise.sigmoid, "SigmoidBackward0")
def _sigmoid(grad, result):
    return (grad * conj(result * (1 - result)),)


@derivative(elementwise.abs, "AbsBackward0")
def _abs(grad, self):
    return (grad * self.sgn(),)


@derivative(elementwise.sgn, "SgnBackward0")
def _sgn(grad):
    return (grad * 0,)      # piecewise constant (real inputs)


# ---- reductions --------------------------------------------------------------------------

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


# ---- copies and views --------------------------------------------------------------------

@derivative(copies.clone_op, "CloneBackward0")
def _clone(grad):
    return (grad,)


@derivative(copies.to_copy, "ToCopyBackward0")
def _to_copy(grad):
    return (grad,)      # the engine casts the gradient back to the input's dtype


@derivative(subscripts.alias, "AliasBackward0")
def _alias(grad):
    return (grad,)


@derivative(normalization.unsafe_view_op, "UnsafeViewBackward0")
def _unsafe_view(grad, self_shape):
    return (grad.reshape(self_shape),)


@derivative(views.view_op, "ViewBackward0")
def _view(grad, self_shape):
    return (grad.reshape(self_shape),)


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


@derivative(subscripts.unsqueeze, "UnsqueezeBackward0")
def _unsqueeze(grad, dim):
    return (grad.squeeze(dim),)


@derivative(views.squeeze, "SqueezeBackward0")
def _squeeze(grad, self_shape):
    return (grad.reshape(self_shape),)


# ---- matrix products ---------------------------------------------------------------------

@derivative(products.bmm, "BmmBackward0")
def _bmm(grad, self, mat2, grad_input_mask):
    return (grad.bmm(conj(mat2).transpose(1, 2)) if grad_input_mask[0] else None,
            conj(self).transpose(1, 2).bmm(grad) if grad_input_mask[1] else None)


def _matmul_name(self, other):
    dims = (self.dim(), other.dim())
    return {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0",
            (1, 2): "SqueezeBackward4"}.get(dims, "UnsafeViewBackward0")


@derivative(normalization.matmul, _matmul_name)
def _matmul(grad, self, other, grad_input_mask):
    a, b = conj(self), conj(other)
    if a.dim() == 1 and b.dim() == 1:
        return grad * b, grad * a
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    g = grad
    if a.dim() == 1:
        g = g.unsqueeze(-2)
    if b.dim() == 1:
        g = g.unsqueeze(-1)
    ga = g.matmul(b2.transpose(-1, -2)) if grad_input_mask[0] else None
    gb = a2.transpose(-1, -2).matmul(g) if grad_input_mask[1] else None
    if a.dim() == 1 and ga is not None:
        ga = ga.squeeze(-2)
    if b.dim() == 1 and gb is not None:
        gb = gb.squeeze(-1)
    return ga, gb


@derivative(subscripts.select, "SelectBackward0")
def _select(grad, self_shape, dim, index):
    full = grad.new_zeros(self_shape)
    full.select(dim, index).copy_(grad)
    return (full,)


@derivative(subscripts.slice_op, "SliceBackward0")
def _slice(grad, self_shape, dim, start, end, step):
    full = grad.new_zeros(self_shape)
    key = (slice(None),) * wrap_dim(dim, len(self_shape)) + (slice(start, end, step),)
    full[key] = grad
    return (full,)


@derivative(views.narrow, "NarrowBackward0")
def _narrow(grad, self_shape, dim, start, length):
    return _slice(grad, self_shape, dim, start, start + length, 1)
