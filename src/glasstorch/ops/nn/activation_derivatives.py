"""Derivative formulas of the activations and native_dropout (activation.py) and of the
distance ops (distance.py).

Written in glasstorch ops so double backward records them. At the kinks the gradients are
PyTorch's: relu'(0) = 0, leaky_relu'(0) = negative_slope, elu'(0) = alpha * scale *
input_scale, hardtanh and the shrinks pass nothing at their bounds, threshold passes nothing
where input <= threshold, hardswish'(-3) = 0 and hardswish'(3) = 1; distances pass
nothing where the distance is 0.
"""
from __future__ import annotations

import math

import numpy as np

from ..derivative import derivative
from ...core.dtype import int64
from ...core.shape import wrap_dim
from .activation import gelu_backward, sigmoid_backward, tanh_backward, threshold_backward
from ..creation.factories import zeros_like
from ..shape.joining import cat, where
from . import activation
from . import distance

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _f32(v) -> float:
    return float(np.float32(v))


_F32_SIXTH = _f32(1.0 / 6.0)       # PyTorch's hardsigmoid backward uses 1/6 in float32


def _keep(grad, mask):
    """`grad` where `mask` holds, 0 elsewhere."""
    return where(mask, grad, 0.0)


@derivative(activation.relu, "ReluBackward0")
def _relu(grad, result):
    return (threshold_backward(grad, result, 0),)


@derivative(activation.threshold_backward, "ThresholdBackwardBackward0")
def _threshold_backward(grad, self, threshold, grad_input_mask):
    return (threshold_backward(grad, self, threshold),
            zeros_like(self) if grad_input_mask[1] else None)


def _leaky(grad, self, slope):
    return where(self > 0, grad, grad * slope)


@derivative(activation.leaky_relu, "LeakyReluBackward0", inplace_node_name="LeakyReluBackward1")
def _leaky_relu(grad, self, negative_slope):
    return (_leaky(grad, self, negative_slope),)


def _elu_grad(grad, self, alpha, scale, input_scale):
    negative = grad * (self * input_scale).exp() * (alpha * scale * input_scale)
    return where(self <= 0, negative, grad * scale)


@derivative(activation.elu, "EluBackward0", inplace_node_name="EluBackward1")
def _elu(grad, self, alpha, scale, input_scale):
    return (_elu_grad(grad, self, alpha, scale, input_scale),)


@derivative(activation.celu, "CeluBackward0", inplace_node_name="CeluBackward1")
def _celu(grad, self, alpha):
    # PyTorch's backward takes 1/alpha with alpha rounded to float32
    return (_elu_grad(grad, self, alpha, 1.0, 1.0 / _f32(alpha)),)


@derivative(activation.gelu, "GeluBackward0")
def _gelu(grad, self, approximate):
    return (gelu_backward(grad, self, approximate=approximate),)


def _gelu_second_derivative(x, approximate):
    """gelu''(x), written in ops so that it records (higher-order gradients)."""
    if approximate == "tanh":   # (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2), u = k (x + c x^3)
        t = ((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI).tanh()
        du = (x * x * (3 * 0.044715) + 1) * _SQRT_2_OVER_PI
        ddu = x * (6 * 0.044715 * _SQRT_2_OVER_PI)
        return (1 - t * t) * (du + x * (ddu - 2 * t * du * du) * 0.5)
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return pdf * (2 - x * x)


@derivative(activation.gelu_backward, "GeluBackwardBackward0")
def _gelu_backward(grad, grad_output, self, approximate, grad_input_mask):
    return (gelu_backward(grad, self, approximate=approximate) if grad_input_mask[0] else None,
            grad * grad_output * _gelu_second_derivative(self, approximate)
            if grad_input_mask[1] else None)


@derivative(activation.tanh_backward, "TanhBackwardBackward0")
def _tanh_backward(grad, grad_output, output, grad_input_mask):
    return (tanh_backward(grad, output) if grad_input_mask[0] else None,
            grad * (-2 * output * grad_output) if grad_input_mask[1] else None)


@derivative(activation.sigmoid_backward, "SigmoidBackwardBackward0")
def _sigmoid_backward(grad, grad_output, output, grad_input_mask):
    return (sigmoid_backward(grad, output) if grad_input_mask[0] else None,
            grad * grad_output * (-2 * output + 1) if grad_input_mask[1] else None)


@derivative(activation.silu, "SiluBackward0")
def _silu(grad, self):
    s = self.sigmoid()
    return (grad * s * (self * (1 - s) + 1),)


def _softplus_of(x):
    """log(1 + exp(x)) written in differentiable ops, stable for large |x|."""
    return x.clamp_min(0) + (-x.abs()).exp().log1p()


@derivative(activation.mish, "MishBackward0")
def _mish(grad, self):
    t = _softplus_of(self).tanh()
    return (grad * (t + self * self.sigmoid() * (1 - t * t)),)


@derivative(activation.softplus, "SoftplusBackward0")
def _softplus(grad, self, beta, threshold):
    bx = self * beta
    return (where(bx > threshold, grad, grad * bx.sigmoid()),)


@derivative(activation.hardtanh, "HardtanhBackward0")
def _hardtanh(grad, self, min_val, max_val):
    return (_keep(grad, (self > min_val).logical_and(self < max_val)),)


@derivative(activation.hardsigmoid, "HardsigmoidBackward0")
def _hardsigmoid(grad, self):
    return (_keep(grad * _F32_SIXTH, (self > -3).logical_and(self < 3)),)


@derivative(activation.hardswish, "HardswishBackward0")
def _hardswish(grad, self):
    middle = where(self < 3, grad * (self / 3 + 0.5), grad)
    return (where(self <= -3, 0.0, middle),)


def _shrink(grad, self, lambd):
    return (_keep(grad, (self < -lambd).logical_or(self > lambd)),)


@derivative(activation.softshrink, "SoftshrinkBackward0")
def _softshrink(grad, self, lambd):
    return _shrink(grad, self, lambd)


@derivative(activation.hardshrink, "HardshrinkBackward0")
def _hardshrink(grad, self, lambd):
    return _shrink(grad, self, lambd)


@derivative(activation.threshold, "ThresholdBackward0", inplace_node_name="ThresholdBackward1")
def _threshold(grad, self, threshold):
    return (threshold_backward(grad, self, threshold),)


@derivative(activation.log_sigmoid, "LogSigmoidBackward0")
def _log_sigmoid(grad, self):
    return (grad * (-self).sigmoid(),)


@derivative(activation.glu, "GluBackward0")
def _glu(grad, self, dim):
    d = wrap_dim(dim, self.dim())
    a, b = self.chunk(2, d)
    s = b.sigmoid()
    return (cat([grad * s, grad * a * s * (1 - s)], d),)


@derivative(activation._prelu_kernel, "PreluKernelBackward0")
def _prelu_kernel(grad, self, weight):
    positive = self > 0
    return where(positive, grad, grad * weight), where(positive, 0.0, grad * self)


@derivative(activation.rrelu_with_noise, "RreluWithNoiseBackward0", inplace_node_name="RreluWithNoiseBackward1")
def _rrelu_with_noise(grad, self, noise, lower, upper, training):
    if training and upper - lower > 1e-6:
        return grad * noise, None
    return _leaky(grad, self, (lower + upper) / 2), None


@derivative(activation.native_dropout, "NativeDropoutBackward0")
def _native_dropout(grad, p, train, result1):
    """grad * mask * scale; PyTorch scales by 1 unless `train` is given and true."""
    g = grad[0]
    if g is None:
        return (None,)
    scale = 1.0 if not train else (0.0 if p == 1 else 1.0 / (1.0 - p))
    return (g * result1 * scale,)


# ---- distances (ops/distance.py) -----------------------------------------------------------

def _safe_divisor(x):
    return where(x == 0, 1.0, x)


def _distance_weight(diff, dist, p):
    """d dist / d diff for p-norm distances, 0 where the distance is 0 (as PyTorch)."""
    zero = dist == 0
    if p == 0:
        return diff * 0
    if p == 1:
        return diff.sign()
    if p == 2:
        return where(zero, 0.0, diff / _safe_divisor(dist))
    if math.isinf(p):
        return diff.sign() * (diff.abs() == dist)
    a = diff.abs()
    if p < 1:
        a = where(diff == 0, 1.0, a)         # |0|^(p-1) is infinite: those pass nothing
        w = diff.sign() * (a / _safe_divisor(dist)).pow(p - 1)
        return where(zero.logical_or(diff == 0), 0.0, w)
    return where(zero, 0.0, diff.sign() * (a / _safe_divisor(dist)).pow(p - 1))


@derivative(distance.cdist_forward, "CdistBackward0")
def _cdist_forward(grad, x1, x2, p, result):
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    g = grad.unsqueeze(-1) * _distance_weight(diff, result.unsqueeze(-1), p)
    return g.sum(-2), -g.sum(-3)


@derivative(distance.euclidean_dist, "EuclideanDistBackward0")
def _euclidean_dist(grad, x1, x2, result):
    ratio = where(result == 0, 0.0, grad / _safe_divisor(result))
    return (x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2),
            x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(x1))


@derivative(distance.pdist_forward, "PdistBackward0")
def _pdist_forward(grad, self, p, result):
    n = self.shape[0]
    rows, cols = (self.new_tensor(i, dtype=int64) for i in np.triu_indices(n, 1))
    diff = self.index_select(0, rows) - self.index_select(0, cols)
    g = grad.unsqueeze(-1) * _distance_weight(diff, result.unsqueeze(-1), p)
    return (self.new_zeros(self.shape).index_add(0, rows, g).index_add(0, cols, -g),)
