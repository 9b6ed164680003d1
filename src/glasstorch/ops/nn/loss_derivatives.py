"""Derivative formulas of loss.py (softmax, log_softmax and the loss operators).

Written in glasstorch ops so that double backward records them. Class weights and
`pos_weight` get no gradient (as in PyTorch). Reductions: 0 none, 1 mean, 2 sum.
"""
from __future__ import annotations

from ..derivative import derivative, derivative_not_implemented
from ..derivative import forward_derivative
from ..shape.joining import where
from .loss import _ctc_loss_backward, _log_softmax_backward_data, _softmax_backward_data
from ..creation.ranges import arange
from . import loss

_MEAN = 1


def _first(grad):
    return grad[0] if isinstance(grad, tuple) else grad


def _mean_scale(grad, reduction, count):
    return grad / count if reduction == _MEAN else grad


def _class_onehot(target, n_classes, cdim):
    """Boolean mask, True at each target's class along `cdim` (inserted into target)."""
    shape = [1] * (target.dim() + 1)
    shape[cdim] = n_classes
    return target.unsqueeze(cdim) == arange(n_classes, device=target.device).view(shape)


# ---- softmax -------------------------------------------------------------------------------

@derivative(loss._softmax, "SoftmaxBackward0")
def _softmax(grad, result, dim):
    return (_softmax_backward_data(grad, result, dim, result.dtype),)


@forward_derivative(loss._softmax)
def _softmax_jvp(primals, tangents, result):
    t, dim = tangents[0], primals[1]
    return result * (t - (t * result).sum(dim, keepdim=True))


@derivative(loss._log_softmax, "LogSoftmaxBackward0")
def _log_softmax(grad, result, dim):
    return (_log_softmax_backward_data(grad, result, dim, result.dtype),)


@forward_derivative(loss._log_softmax)
def _log_softmax_jvp(primals, tangents, result):
    t, dim = tangents[0], primals[1]
    return t - (t * result.exp()).sum(dim, keepdim=True)


@derivative(loss._softmax_backward_data, "SoftmaxBackwardDataBackward0")
def _softmax_backward(grad, grad_output, output, dim):
    """d[y (g - sum(g y))]: linear in g; in y, grad (g - sum(g y)) - g sum(grad y)."""
    return (_softmax_backward_data(grad, output, dim, output.dtype),
            grad * (grad_output - (grad_output * output).sum(dim, keepdim=True))
            - grad_output * (grad * output).sum(dim, keepdim=True))


@derivative(loss._log_softmax_backward_data, "LogSoftmaxBackwardDataBackward0")
def _log_softmax_backward(grad, grad_output, output, dim):
    """d[g - exp(y) sum(g)]: in g, grad - sum(grad exp(y)); in y, -grad exp(y) sum(g)."""
    e = output.exp()
    return (grad - (grad * e).sum(dim, keepdim=True),
            -(grad * e) * grad_output.sum(dim, keepdim=True))


# ---- nll_loss ------------------------------------------------------------------------------

def _nll_gradient(backward):
    """The derivative of an nll_loss forward op: its backward op, as PyTorch's
    (d/dx[t] = -w[t] * grad, divided by the total weight for 'mean'; ignored targets 0)."""
    def formula(grad, self, target, weight, reduction, ignore_index, result1):
        # total_weight unpacks with history only where grad mode is on (create_graph)
        total = result1.detach() if result1._requires_grad else result1
        return backward(_first(grad), self, target, None if weight is None else weight.detach(),
                        reduction, ignore_index, total), None, None
    return formula


# total_weight is an output without history, as in PyTorch
derivative(loss.nll_loss_forward, "NllLossBackward0", outputs=(0,))(
    _nll_gradient(loss.nll_loss_backward))
derivative(loss.nll_loss2d_forward, "NllLoss2DBackward0", outputs=(0,))(
    _nll_gradient(loss.nll_loss2d_backward))


def _nll_backward_backward(grad, grad_output, self, target, weight, reduction, ignore_index,
                           total_weight):
    """The backward is linear in grad_output: its gradient there is nll_loss of `grad` (self
    gets none, PyTorch's zeros)."""
    forward = loss.nll_loss_forward if self.dim() <= 2 else loss.nll_loss2d_forward
    return forward(grad, target, weight, reduction, ignore_index)[0], None, None, None, None


derivative(loss.nll_loss_backward, "NllLossBackwardBackward0")(_nll_backward_backward)
derivative(loss.nll_loss2d_backward, "NllLoss2DBackwardBackward0")(_nll_backward_backward)


# ---- pointwise losses ----------------------------------------------------------------------

def _both(g):
    return g, -g


@derivative(loss.mse_loss, "MseLossBackward0")
def _mse(grad, self, target, reduction):
    d = self - target
    return _both(_mean_scale(grad, reduction, d.numel()) * d * 2)


@derivative(loss.smooth_l1_loss, "SmoothL1LossBackward0")
def _smooth_l1(grad, self, target, reduction, beta):
    d = self - target
    slope = d.sign() if beta == 0 else d.clamp(-beta, beta) / beta
    return _both(_mean_scale(grad, reduction, d.numel()) * slope)


@derivative(loss.huber_loss, "HuberLossBackward0")
def _huber(grad, self, target, reduction, delta):
    d = self - target
    return _both(_mean_scale(grad, reduction, d.numel()) * d.clamp(-delta, delta))


@derivative(loss.soft_margin_loss, "SoftMarginLossBackward0")
def _soft_margin(grad, self, target, reduction):
    g = _mean_scale(grad, reduction, max(self.numel(), target.numel()))
    s = (-(self * target)).sigmoid()
    return -g * target * s, -g * self * s


def _weighted(g, weight):
    return g if weight is None else g * weight.detach()


@derivative(loss.binary_cross_entropy, "BinaryCrossEntropyBackward0")
def _bce(grad, self, target, weight, reduction):
    g = _weighted(_mean_scale(grad, reduction, self.numel()), weight)
    d_self = g * (self - target) / ((1 - self) * self).clamp_min(1e-12)
    d_target = g * ((-self).log1p().clamp_min(-100) - self.log().clamp_min(-100))
    return d_self, d_target, None


def _softplus_neg(x):
    """log(1 + exp(-x)) without overflow."""
    return (-x).clamp_min(0) + (-x.abs()).exp().log1p()


@derivative(loss.binary_cross_entropy_with_logits, "BinaryCrossEntropyWithLogitsBackward0")
def _bce_logits(grad, self, target, weight, pos_weight, reduction):
    g = _weighted(_mean_scale(grad, reduction, self.numel()), weight)
    if pos_weight is None:
        return g * ((-self).sigmoid().neg() + 1 - target), -g * self, None, None
    pw = pos_weight.detach()
    scale = (pw - 1) * target + 1
    d_self = g * ((1 - target) - scale * (-self).sigmoid())
    d_target = g * ((pw - 1) * _softplus_neg(self) - self)
    return d_self, d_target, None, None


# ---- margin losses over classes ------------------------------------------------------------

def _per_sample(grad, reduction, self2, batched):
    """The incoming gradient as an (N, 1) column (or a scalar), 'mean' divided by N."""
    if batched and grad.dim() == 1:
        return grad.unsqueeze(1)
    return _mean_scale(grad, reduction, self2.shape[0])


@derivative(loss.multi_margin_loss, "MultiMarginLossBackward0")
def _multi_margin(grad, self, target, p, margin, weight, reduction):
    c = self.shape[-1] if self.dim() else 1
    x = self if self.dim() == 2 else self.reshape(1, c)
    t = target.reshape(-1)
    onehot = _class_onehot(t, c, 1)
    z = margin - where(onehot, x, 0.0).sum(1, keepdim=True) + x
    active = (z > 0).logical_and(onehot.logical_not())
    slope = active.to(self.dtype) if p == 1 else where(active, z * 2, 0.0)
    if weight is not None:
        slope = slope * weight.detach().take(t).unsqueeze(1)
    slope = slope * _per_sample(grad, reduction, x, self.dim() == 2) / c
    d = slope - where(onehot, slope.sum(1, keepdim=True), 0.0)
    return d.reshape(self.shape), None, None


@derivative(loss.multilabel_margin_loss_forward, "MultilabelMarginLossBackward0")
def _multilabel_margin(grad, self, target, reduction, result1):
    c = self.shape[-1] if self.dim() else 1
    x = self.reshape(-1, c)
    t = target.reshape(-1, c)
    listed = (t >= 0).cumprod(1).bool()
    counts = _class_onehot(t, c, 2).logical_and(listed.unsqueeze(2)).sum(1).to(self.dtype)
    others = 1 - result1.detach().reshape(-1, c)
    z = 1 - x.unsqueeze(2) + x.unsqueeze(1)                       # [n, j, i]
    pairs = where(z > 0, counts.unsqueeze(2) * others.unsqueeze(1), 0.0)
    g = _per_sample(_first(grad), reduction, x, self.dim() == 2) / c
    d = (pairs.sum(1) - pairs.sum(2)) * g
    return d.reshape(self.shape), None


# ---- ctc_loss ----------------------------------------------------------------------------

@derivative(loss._ctc_loss, "CtcLossBackward0")
def _ctc(grad, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity,
         result0, result1):
    g = _first(grad)
    return _ctc_loss_backward(g, log_probs, targets, input_lengths, target_lengths,
                              result0.detach(), result1.detach(), blank, zero_infinity), None

# ctc_loss's double backward: PyTorch has no formula either.
derivative_not_implemented(loss._ctc_loss_backward)
