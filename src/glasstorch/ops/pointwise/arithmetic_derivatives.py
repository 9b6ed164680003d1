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

from ...autograd.recording import derivative
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from ..shape.joining import where


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

@derivative("aten::add.Tensor", "AddBackward0")
def _add(grad, alpha):
    return grad, (grad if alpha == 1 else grad * alpha)


@derivative("aten::sub.Tensor", "SubBackward0")
def _sub(grad, alpha):
    return grad, (-grad if alpha == 1 else grad * -alpha)


@derivative("aten::rsub.Scalar", "RsubBackward1")
@derivative("aten::rsub.Tensor", "RsubBackward0")
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


@derivative("aten::mul.Tensor", "MulBackward0")
def _mul(grad, self, other, grad_input_mask):
    return (grad * conj(other) if grad_input_mask[0] else None,
            grad * conj(self) if grad_input_mask[1] else None)


@derivative("aten::div.Tensor", "DivBackward0")
def _div(grad, self, other, grad_input_mask):
    return (grad / conj(other) if grad_input_mask[0] else None,
            -grad * conj(self / (other * other)) if grad_input_mask[1] else None)


@derivative("aten::div.Tensor_mode",
            lambda self, other, rounding_mode: "DivBackward0" if rounding_mode is None
            else "DivBackward2")
def _div_mode(grad, self, other, rounding_mode, grad_input_mask):
    if rounding_mode is not None:
        return grad * 0, (grad * 0 if hasattr(other, "dtype") else None)
    return _div(grad, self, other, grad_input_mask)


@derivative("aten::neg", "NegBackward0")
def _neg(grad):
    return (-grad,)


@derivative("aten::pow.Scalar", "PowBackward2")
def _pow_number_base(grad, self, exponent, result):
    """d/dx b**x = b**x log b; a zero base gives 0 where the exponent is >= 0 (its
    log is -inf there, the power 0 or 1)."""
    if self == 0:
        return (grad * where(exponent >= 0, 0.0, result * -math.inf),)
    if isinstance(self, complex):
        return (grad * conj(result * cmath.log(self)),)
    return (grad * (result * (math.log(self) if self > 0 else math.nan)),)


@derivative("aten::pow.Tensor_Scalar", "PowBackward0")
@derivative("aten::pow.Tensor_Tensor",
            lambda self, exponent: "PowBackward1" if hasattr(exponent, "dtype")
            else "PowBackward0")
def _pow(grad, self, exponent, result):
    d_self = grad * conj(exponent * self.pow(exponent - 1))
    if not hasattr(exponent, "dtype"):
        return d_self, None
    return d_self, grad * conj(result * self.log())


# ---- pointwise functions -----------------------------------------------------------------

@derivative("aten::exp", "ExpBackward0")
def _exp(grad, result):
    return (grad * conj(result),)


@derivative("aten::log", "LogBackward0")
def _log(grad, self):
    return (grad / conj(self),)


@derivative("aten::sqrt", "SqrtBackward0")
def _sqrt(grad, result):
    return (grad / (2 * conj(result)),)


@derivative("aten::tanh", "TanhBackward0")
def _tanh(grad, result):
    return (grad * conj(1 - result * result),)


@derivative("aten::sigmoid", "SigmoidBackward0")
def _sigmoid(grad, result):
    return (grad * conj(result * (1 - result)),)


@derivative("aten::abs", "AbsBackward0")
def _abs(grad, self):
    return (grad * self.sgn(),)


@derivative("aten::sgn", "SgnBackward0")
def _sgn(grad):
    return (grad * 0,)      # piecewise constant (real inputs)


# ---- reductions --------------------------------------------------------------------------

@derivative("aten::sum.dim_IntList", "SumBackward1")
def _sum(grad, self_shape, dim, keepdim):
    return (_unreduce(grad, self_shape, dim, keepdim),)


@derivative("aten::sum", "SumBackward0")
def _sum_all(grad, self_shape):
    return (grad.expand(self_shape),)


@derivative("aten::mean.dim", "MeanBackward1")
def _mean(grad, self_shape, dim, keepdim):
    count = 1
    for d in _reduced_dims(self_shape, dim) if self_shape else ():
        count *= self_shape[d]
    return (_unreduce(grad, self_shape, dim, keepdim) / count,)


@derivative("aten::mean", "MeanBackward0")
def _mean_all(grad, self_shape):
    return (grad.expand(self_shape) / max(prod(self_shape), 1),)


# ---- copies and views --------------------------------------------------------------------

@derivative("aten::clone", "CloneBackward0")
def _clone(grad):
    return (grad,)


@derivative("aten::_to_copy", "ToCopyBackward0")
def _to_copy(grad):
    return (grad,)      # the engine casts the gradient back to the input's dtype


@derivative("aten::alias", "AliasBackward0")
def _alias(grad):
    return (grad,)


@derivative("aten::_unsafe_view", "UnsafeViewBackward0")
def _unsafe_view(grad, self_shape):
    return (grad.reshape(self_shape),)


@derivative("aten::view", "ViewBackward0")
def _view(grad, self_shape):
    return (grad.reshape(self_shape),)


@derivative("aten::transpose.int", "TransposeBackward0")
def _transpose(grad, dim0, dim1):
    return (grad.transpose(dim0, dim1),)


@derivative("aten::t", "TBackward0")
def _t(grad):
    return (grad.t(),)


@derivative("aten::permute", "PermuteBackward0")
def _permute(grad, dims):
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[wrap_dim(d, n)] = i
    return (grad.permute(inverse),)


@derivative("aten::expand", "ExpandBackward0")
def _expand(grad, self_shape):
    return (grad,)      # the engine sums it back to self's shape


@derivative("aten::unsqueeze", "UnsqueezeBackward0")
def _unsqueeze(grad, dim):
    return (grad.squeeze(dim),)


@derivative("aten::squeeze.dims", "SqueezeBackward0")
def _squeeze(grad, self_shape):
    return (grad.reshape(self_shape),)


# ---- matrix products ---------------------------------------------------------------------

@derivative("aten::bmm", "BmmBackward0")
def _bmm(grad, self, mat2, grad_input_mask):
    return (grad.bmm(conj(mat2).transpose(1, 2)) if grad_input_mask[0] else None,
            conj(self).transpose(1, 2).bmm(grad) if grad_input_mask[1] else None)


def _matmul_name(self, other):
    dims = (self.dim(), other.dim())
    return {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0",
            (1, 2): "SqueezeBackward4"}.get(dims, "UnsafeViewBackward0")


@derivative("aten::matmul", _matmul_name)
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


@derivative("aten::select.int", "SelectBackward0")
def _select(grad, self_shape, dim, index):
    full = grad.new_zeros(self_shape)
    full.select(dim, index).copy_(grad)
    return (full,)


@derivative("aten::slice.Tensor", "SliceBackward0")
def _slice(grad, self_shape, dim, start, end, step):
    full = grad.new_zeros(self_shape)
    key = (slice(None),) * wrap_dim(dim, len(self_shape)) + (slice(start, end, step),)
    full[key] = grad
    return (full,)


@derivative("aten::narrow", "NarrowBackward0")
def _narrow(grad, self_shape, dim, start, length):
    return _slice(grad, self_shape, dim, start, start + length, 1)
from . import math_derivatives as derivatives_math  # noqa: F401
from ..shape import derivatives as derivatives_shape  # noqa: F401,E402
from ..linalg import product_derivatives as derivatives_linalg  # noqa: F401,E402
from ..indexing import scatter_derivatives as derivatives_scatter  # noqa: F401,E402
from ..sorting import derivatives as derivatives_sorting  # noqa: F401,E402
from . import special_function_derivatives as derivatives_misc  # noqa: F401,E402
from ..linalg import decomposition_derivatives as derivatives_linalg_decomp  # noqa: F401,E402
from ..nn import convolution_derivatives as derivatives_conv  # noqa: F401,E402
from ..nn import activation_derivatives as derivatives_activation  # noqa: F401,E402
from ..nn import normalization_derivatives as derivatives_normalization  # noqa: F401,E402
from ..nn import loss_derivatives as derivatives_loss  # noqa: F401,E402
from ..fft import derivatives as derivatives_fft  # noqa: F401,E402
from ..nn import sampling_derivatives as derivatives_sampling  # noqa: F401,E402
