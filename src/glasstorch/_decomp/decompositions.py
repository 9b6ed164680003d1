"""The decompositions: each composite op as the math it computes, in core ATen ops.

Each function has its op's schema signature (keyword-only arguments stay keyword-only), so
`decomposition_table[func](*args, **kwargs)` runs with the arguments a dispatch mode
receives. Half-precision inputs are computed in float32 and the result converted back, as
PyTorch's CPU kernels do.
"""
from __future__ import annotations

import math

from .. import _prims  # noqa: F401  (the prims namespace)
from .._ops import ops_namespace
from ..autograd.grad_mode import no_grad
from ..core import dtype as dt
from ..core.promotion import common_dtype
from ..core.tensor import Tensor
from . import define_by_decomposition, register_decomposition

aten = ops_namespace("aten")
prims = ops_namespace("prims")

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


# ---- helpers -----------------------------------------------------------------------------------

def _compute_dtype(t):
    return dt.float32 if t.dtype in (dt.float16, dt.bfloat16) else t.dtype


def _upcast(t):
    """t in the dtype to compute in (float32 for float16 and bfloat16)."""
    target = _compute_dtype(t)
    return t if t.dtype is target else aten._to_copy.default(t, dtype=target)


def _cast(t, dtype):
    return t if t.dtype is dtype else aten._to_copy.default(t, dtype=dtype)


def _reduce(loss, reduction: int):
    if reduction == 1:
        return aten.mean.dim(loss, None)
    if reduction == 2:
        return aten.sum.dim_IntList(loss, None)
    if reduction == 0:
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _reshape(t, shape):
    """A view of t with `shape`, through a row-major copy when t's strides forbid one."""
    if not t.is_contiguous():
        t = aten.clone.default(t)
    return aten.view.default(t, shape)


def _channel_view(t, ndim: int):
    """A per-channel (C,) tensor shaped to broadcast over (N, C, *spatial)."""
    return aten.view.default(t, [t.shape[0]] + [1] * (ndim - 2))


def _where(cond, x, y):
    return aten.where.self(cond, x, y)


# ---- softmax -----------------------------------------------------------------------------------

def _shifted(x, dim):
    """x minus its maximum along dim, so exp cannot overflow (an empty x has no maximum)."""
    return aten.sub.Tensor(x, aten.amax.default(x, [dim], True)) if x.numel() else x


@register_decomposition(aten._softmax.default)
def _softmax(self, dim: int, half_to_float: bool):
    e = aten.exp.default(_shifted(_upcast(self), dim))
    out = aten.div.Tensor_mode(e, aten.sum.dim_IntList(e, [dim], True))
    return out if half_to_float else _cast(out, self.dtype)


@register_decomposition(aten._log_softmax.default)
def _log_softmax(self, dim: int, half_to_float: bool):
    shifted = _shifted(_upcast(self), dim)
    total = aten.sum.dim_IntList(aten.exp.default(shifted), [dim], True)
    out = aten.sub.Tensor(shifted, aten.log.default(total))
    return out if half_to_float else _cast(out, self.dtype)


@register_decomposition(aten._softmax_backward_data.default)
def _softmax_backward_data(grad_output, output, dim: int, input_dtype):
    grad_y = aten.mul.Tensor(grad_output, output)
    grad = aten.sub.Tensor(grad_y, aten.mul.Tensor(
        output, aten.sum.dim_IntList(grad_y, [dim], True)))
    return _cast(grad, input_dtype)


@register_decomposition(aten._log_softmax_backward_data.default)
def _log_softmax_backward_data(grad_output, output, dim: int, input_dtype):
    grad = aten.sub.Tensor(grad_output, aten.mul.Tensor(
        aten.exp.default(output), aten.sum.dim_IntList(grad_output, [dim], True)))
    return _cast(grad, input_dtype)


# ---- normalisation -----------------------------------------------------------------------------

def _normalize(x, dims, eps):
    """((x - mean) * rstd, mean, rstd) over `dims`, mean and rstd kept as size-1 dims."""
    var, mean = aten.var_mean.correction(x, dims, correction=0, keepdim=True)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))
    return aten.mul.Tensor(aten.sub.Tensor(x, mean), rstd), mean, rstd


@register_decomposition(aten.native_layer_norm.default)
def native_layer_norm(input, normalized_shape, weight, bias, eps: float):
    axis = input.dim() - len(normalized_shape)
    out, mean, rstd = _normalize(_upcast(input), list(range(axis, input.dim())), eps)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    return (_cast(out, input.dtype), _cast(mean, input.dtype), _cast(rstd, input.dtype))


@register_decomposition(aten.native_batch_norm.default)
def native_batch_norm(input, weight, bias, running_mean, running_var, training: bool,
                      momentum: float, eps: float):
    x, ndim = _upcast(input), input.dim()
    dims = [0] + list(range(2, ndim))
    if training:
        out, mean, rstd = _normalize(x, dims, eps)
        save_mean = aten.squeeze.dims(mean, dims)
        save_rstd = aten.squeeze.dims(rstd, dims)
        n = input.numel() // input.shape[1]
        with no_grad():             # the running statistics are buffers, not results
            if running_mean is not None:
                aten.copy_.default(running_mean, aten.add.Tensor(
                    aten.mul.Tensor(save_mean, momentum),
                    aten.mul.Tensor(running_mean, 1 - momentum)))
            if running_var is not None:
                var = aten.mul.Tensor(aten.squeeze.dims(aten.var_mean.correction(
                    x, dims, correction=0, keepdim=True)[0], dims),
                    n / (n - 1) if n > 1 else math.inf)      # nan from one value, as PyTorch
                aten.copy_.default(running_var, aten.add.Tensor(
                    aten.mul.Tensor(var, momentum),
                    aten.mul.Tensor(running_var, 1 - momentum)))
    else:
        rstd = aten.rsqrt.default(aten.add.Tensor(running_var, eps))
        out = aten.mul.Tensor(aten.sub.Tensor(x, _channel_view(running_mean, ndim)),
                              _channel_view(rstd, ndim))
        save_mean = prims.full.default([0], 0, dtype=x.dtype, device=input.device,
                                       requires_grad=False)
        save_rstd = save_mean
    if weight is not None:
        out = aten.mul.Tensor(out, _channel_view(weight, ndim))
    if bias is not None:
        out = aten.add.Tensor(out, _channel_view(bias, ndim))
    return (_cast(out, input.dtype), _cast(save_mean, input.dtype),
            _cast(save_rstd, input.dtype))


@register_decomposition(aten.native_group_norm.default)
def native_group_norm(input, weight, bias, N: int, C: int, HxW: int, group: int, eps: float):
    x = _reshape(_upcast(input), [N, group, (C // group) * HxW])
    out, mean, rstd = _normalize(x, [2], eps)
    out = _reshape(out, list(input.shape))
    if weight is not None:
        out = aten.mul.Tensor(out, _channel_view(weight, input.dim()))
    if bias is not None:
        out = aten.add.Tensor(out, _channel_view(bias, input.dim()))
    return (_cast(out, input.dtype), _cast(aten.view.default(mean, [N, group]), input.dtype),
            _cast(aten.view.default(rstd, [N, group]), input.dtype))


@register_decomposition(aten.var_mean.correction)
def var_mean(self, dim=None, *, correction=None, keepdim=False):
    return (aten.var.correction(self, dim, correction=correction, keepdim=keepdim),
            aten.mean.dim(self, dim, keepdim))


# ---- activations -------------------------------------------------------------------------------

_SQRT1_2 = math.sqrt(0.5)
_SQRT_2_PI = math.sqrt(2 / math.pi)
_GELU_CUBIC = 0.044715


@register_decomposition(aten.gelu.default)
def gelu(self, *, approximate="none"):
    x = _upcast(self)
    if approximate == "tanh":
        cube = aten.mul.Tensor(aten.mul.Tensor(x, x), x)
        inner = aten.mul.Tensor(aten.add.Tensor(x, aten.mul.Tensor(cube, _GELU_CUBIC)),
                                _SQRT_2_PI)
        out = aten.mul.Tensor(aten.mul.Tensor(x, 0.5),
                              aten.add.Tensor(aten.tanh.default(inner), 1))
    else:
        cdf = aten.mul.Tensor(aten.add.Tensor(
            aten.erf.default(aten.mul.Tensor(x, _SQRT1_2)), 1), 0.5)
        out = aten.mul.Tensor(x, cdf)
    return _cast(out, self.dtype)


@register_decomposition(aten.gelu_backward.default)
def gelu_backward(grad_output, self, *, approximate="none"):
    x, g = _upcast(self), _upcast(grad_output)
    if approximate == "tanh":
        x_sq = aten.mul.Tensor(x, x)
        inner = aten.mul.Tensor(aten.add.Tensor(
            x, aten.mul.Tensor(aten.mul.Tensor(x_sq, x), _GELU_CUBIC)), _SQRT_2_PI)
        t = aten.tanh.default(inner)
        d_inner = aten.mul.Tensor(aten.add.Tensor(
            aten.mul.Tensor(x_sq, 3 * _GELU_CUBIC), 1), _SQRT_2_PI)
        d_tanh = aten.rsub.Tensor(aten.mul.Tensor(t, t), 1)          # 1 - t^2
        slope = aten.add.Tensor(
            aten.mul.Tensor(aten.add.Tensor(t, 1), 0.5),
            aten.mul.Tensor(aten.mul.Tensor(x, 0.5), aten.mul.Tensor(d_tanh, d_inner)))
    else:
        cdf = aten.mul.Tensor(aten.add.Tensor(
            aten.erf.default(aten.mul.Tensor(x, _SQRT1_2)), 1), 0.5)
        pdf = aten.mul.Tensor(aten.exp.default(aten.mul.Tensor(aten.mul.Tensor(x, x), -0.5)),
                              1 / math.sqrt(2 * math.pi))
        slope = aten.add.Tensor(cdf, aten.mul.Tensor(x, pdf))
    return _cast(aten.mul.Tensor(g, slope), grad_output.dtype)


@register_decomposition(aten.tanh_backward.default)
def tanh_backward(grad_output, output):
    """grad_output * (1 - output^2), in float32 for 16-bit floats as the kernel."""
    g, y = _upcast(grad_output), _upcast(output)
    r = aten.mul.Tensor(g, aten.rsub.Scalar(aten.mul.Tensor(y, y), 1))
    return _cast(r, common_dtype(grad_output, output))


@register_decomposition(aten.sigmoid_backward.default)
def sigmoid_backward(grad_output, output):
    """grad_output * (1 - output) * output, in the kernel's order."""
    g, y = _upcast(grad_output), _upcast(output)
    r = aten.mul.Tensor(aten.mul.Tensor(g, aten.rsub.Scalar(y, 1)), y)
    return _cast(r, common_dtype(grad_output, output))


@register_decomposition(aten.silu.default)
def silu(self):
    return aten.mul.Tensor(self, aten.sigmoid.default(self))


def _softplus(x, beta=1, threshold=20):
    scaled = aten.mul.Tensor(x, beta) if beta != 1 else x
    soft = aten.log1p.default(aten.exp.default(scaled))
    if beta != 1:
        soft = aten.div.Tensor_mode(soft, beta)
    return _where(aten.gt.Tensor(scaled, threshold), x, soft)


@register_decomposition(aten.softplus.default)
def softplus(self, beta=1, threshold=20):
    return _softplus(self, beta, threshold)


@register_decomposition(aten.mish.default)
def mish(self):
    return aten.mul.Tensor(self, aten.tanh.default(_softplus(self)))


def _relu6(x):
    return aten.clamp_max.Tensor(aten.clamp_min.Tensor(x, _scalar_like(x, 0)),
                                 _scalar_like(x, 6))


def _scalar_like(x, value):
    return prims.full.default([], value, dtype=x.dtype, device=x.device, requires_grad=False)


@register_decomposition(aten.hardsigmoid.default)
def hardsigmoid(self):
    return aten.div.Tensor_mode(_relu6(aten.add.Tensor(self, 3)), 6)


@register_decomposition(aten.hardswish.default)
def hardswish(self):
    return aten.mul.Tensor(self, aten.div.Tensor_mode(_relu6(aten.add.Tensor(self, 3)), 6))


@register_decomposition(aten.elu.default)
def elu(self, alpha=1, scale=1, input_scale=1):
    negative = aten.mul.Tensor(aten.expm1.default(aten.mul.Tensor(self, input_scale)),
                               alpha * scale)
    return _where(aten.gt.Tensor(self, 0), aten.mul.Tensor(self, scale), negative)


@register_decomposition(aten.leaky_relu.default)
def leaky_relu(self, negative_slope=0.01):
    return _where(aten.gt.Tensor(self, 0), self, aten.mul.Tensor(self, negative_slope))


@register_decomposition(aten.threshold_backward.default)
def threshold_backward(grad_output, self, threshold):
    return _where(aten.le.Tensor(self, threshold), _scalar_like(grad_output, 0), grad_output)


@register_decomposition(aten.native_dropout.default)
def native_dropout(input, p: float, train):
    """train=None drops, as the kernels do."""
    if train is False or p == 0:
        keep = prims.full.default(list(input.shape), True, dtype=dt.bool, device=input.device,
                                  requires_grad=False)
        return aten.clone.default(input), keep
    if p == 1:
        keep = prims.full.default(list(input.shape), False, dtype=dt.bool,
                                  device=input.device, requires_grad=False)
        return aten.mul.Tensor(input, keep), keep
    chance = prims.full.default(list(input.shape), 1 - p, dtype=_compute_dtype(input),
                                device=input.device, requires_grad=False)
    keep = aten.ne.Tensor(aten.bernoulli.default(chance), 0)
    return aten.mul.Tensor(aten.mul.Tensor(input, keep), 1 / (1 - p)), keep


# ---- pointwise composites ----------------------------------------------------------------------

@register_decomposition(aten.addcmul.default)
def addcmul(self, tensor1, tensor2, *, value=1):
    product = aten.mul.Tensor(tensor1, tensor2)
    return aten.add.Tensor(self, aten.mul.Tensor(product, value) if value != 1 else product)


@register_decomposition(aten.addcdiv.default)
def addcdiv(self, tensor1, tensor2, *, value=1):
    quotient = aten.div.Tensor_mode(tensor1, tensor2)
    return aten.add.Tensor(self, aten.mul.Tensor(quotient, value) if value != 1 else quotient)


@register_decomposition(aten.lerp.Tensor)
def lerp(self, end, weight):
    """start + w * (end - start) for |w| < 0.5, else end - (end - start) * (1 - w): exact
    at both ends, as PyTorch's kernel."""
    diff = aten.sub.Tensor(end, self)
    if not isinstance(weight, Tensor):          # a Python number: pick the form here
        if abs(weight) < 0.5:
            return aten.add.Tensor(self, aten.mul.Tensor(diff, weight))
        return aten.sub.Tensor(end, aten.mul.Tensor(diff, 1 - weight))
    near_start = aten.add.Tensor(self, aten.mul.Tensor(weight, diff))
    near_end = aten.sub.Tensor(end, aten.mul.Tensor(diff, aten.rsub.Tensor(weight, 1)))
    return _where(aten.lt.Tensor(aten.abs.default(weight), 0.5), near_start, near_end)


# ---- losses ------------------------------------------------------------------------------------

@register_decomposition(aten.mse_loss.default)
def mse_loss(self, target, reduction=1):
    diff = aten.sub.Tensor(self, target)
    return _reduce(aten.mul.Tensor(diff, diff), reduction)


@register_decomposition(aten.smooth_l1_loss.default)
def smooth_l1_loss(self, target, reduction=1, beta=1.0):
    z = aten.abs.default(aten.sub.Tensor(self, target))
    if beta == 0:
        return _reduce(z, reduction)
    quadratic = aten.div.Tensor_mode(aten.mul.Tensor(aten.mul.Tensor(z, z), 0.5), beta)
    return _reduce(_where(aten.lt.Tensor(z, beta), quadratic,
                          aten.sub.Tensor(z, 0.5 * beta)), reduction)


@register_decomposition(aten.huber_loss.default)
def huber_loss(self, target, reduction=1, delta=1.0):
    z = aten.abs.default(aten.sub.Tensor(self, target))
    quadratic = aten.mul.Tensor(aten.mul.Tensor(z, z), 0.5)
    linear = aten.mul.Tensor(aten.sub.Tensor(z, 0.5 * delta), delta)
    return _reduce(_where(aten.lt.Tensor(z, delta), quadratic, linear), reduction)


def _nll_targets(self, target, weight, ignore_index):
    """What nll_loss and its backward share: (flat, x, safe, w) with x batched (N, C, *),
    safe the targets with ignored ones at class 0, and w each target's weight (0 where
    ignored)."""
    flat = self.dim() == 1
    x = aten.unsqueeze.default(self, 0) if flat else self
    t = aten.unsqueeze.default(target, 0) if flat else target
    valid = aten.ne.Tensor(t, ignore_index)
    safe = _where(valid, t, _scalar_like(t, 0))
    if weight is not None:
        w = aten.view.default(aten.index_select.default(weight, 0, _reshape(safe, [-1])),
                              list(safe.shape))
        w = _where(valid, w, _scalar_like(w, 0))
    else:
        w = _cast(valid, self.dtype)
    return flat, x, safe, w


def _nll(self, target, weight, reduction, ignore_index):
    """(loss, total_weight) of nll_loss for (N, C, *) or (C,) log-probabilities."""
    flat, x, safe, w = _nll_targets(self, target, weight, ignore_index)
    picked = aten.squeeze.dims(aten.gather.default(x, 1, aten.unsqueeze.default(safe, 1)), [1])
    losses = aten.neg.default(aten.mul.Tensor(picked, w))
    total_weight = aten.sum.dim_IntList(w, None)
    if reduction == 0:
        zero = _scalar_like(self, 0)
        return (aten.squeeze.dims(losses, [0]) if flat else losses), zero
    loss = aten.sum.dim_IntList(losses, None)
    if reduction == 1:
        loss = aten.div.Tensor_mode(loss, total_weight)
    return loss, total_weight


@register_decomposition(aten.nll_loss_forward.default)
def nll_loss_forward(self, target, weight, reduction: int, ignore_index: int):
    return _nll(self, target, weight, reduction, ignore_index)


@register_decomposition(aten.nll_loss2d_forward.default)
def nll_loss2d_forward(self, target, weight, reduction: int, ignore_index: int):
    return _nll(self, target, weight, reduction, ignore_index)


@register_decomposition(aten.binary_cross_entropy.default)
def binary_cross_entropy(self, target, weight=None, reduction=1):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch's kernel."""
    floor = _scalar_like(self, -100)
    log_x = aten.maximum.default(aten.log.default(self), floor)
    log_1mx = aten.maximum.default(aten.log1p.default(aten.neg.default(self)), floor)
    loss = aten.neg.default(aten.add.Tensor(
        aten.mul.Tensor(target, log_x),
        aten.mul.Tensor(aten.rsub.Tensor(target, 1), log_1mx)))
    if weight is not None:
        loss = aten.mul.Tensor(loss, weight)
    return _reduce(loss, reduction)


@register_decomposition(aten.binary_cross_entropy_with_logits.default)
def binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None, reduction=0):
    # reduction=0: glasstorch's schema default (ops/loss.py explains why it is not Mean)
    """(1 - t) x + w_pos (log(1 + exp(-|x|)) + max(-x, 0)): -log sigmoid(x) without
    overflow, w_pos = 1 + (pos_weight - 1) t."""
    softplus_neg = aten.add.Tensor(
        aten.log1p.default(aten.exp.default(aten.neg.default(aten.abs.default(self)))),
        aten.clamp_min.Tensor(aten.neg.default(self), _scalar_like(self, 0)))
    if pos_weight is not None:
        softplus_neg = aten.mul.Tensor(softplus_neg, aten.add.Tensor(
            aten.mul.Tensor(aten.sub.Tensor(pos_weight, 1), target), 1))
    loss = aten.add.Tensor(aten.mul.Tensor(aten.rsub.Tensor(target, 1), self), softplus_neg)
    if weight is not None:
        loss = aten.mul.Tensor(loss, weight)
    return _reduce(loss, reduction)


# ---- composite ops PyTorch has and glasstorch had not -----------------------------------------

@define_by_decomposition("rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
                         "float? eps=None) -> Tensor")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the last dims, times weight; eps defaults to the
    dtype's machine epsilon, as PyTorch's."""
    x = _upcast(input)
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    eps = dt.finfo(input.dtype).eps if eps is None else eps
    rms = aten.rsqrt.default(aten.add.Tensor(
        aten.mean.dim(aten.mul.Tensor(x, x), dims, True), eps))
    out = _cast(aten.mul.Tensor(x, rms), input.dtype)
    return aten.mul.Tensor(out, weight) if weight is not None else out


@define_by_decomposition("l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor")
def l1_loss(self, target, reduction=1):
    return _reduce(aten.abs.default(aten.sub.Tensor(self, target)), reduction)


@define_by_decomposition("cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, "
                         "int reduction=1, SymInt ignore_index=-100, "
                         "float label_smoothing=0.0) -> Tensor")
def cross_entropy_loss(self, target, weight=None, reduction=1, ignore_index=-100,
                       label_smoothing=0.0):
    """log_softmax over the class dimension, then nll_loss (class indices) or the
    probability-weighted sum (class probabilities), with label smoothing mixed in."""
    class_dim = 1 if self.dim() >= 2 else 0
    classes = self.shape[class_dim]
    logp = aten._log_softmax.default(self, class_dim, False)
    weight_view = None if weight is None else aten.view.default(
        weight, [classes] + [1] * (self.dim() - class_dim - 1))
    if target.dtype.is_floating_point:                 # class probabilities
        if label_smoothing > 0:
            target = aten.add.Tensor(aten.mul.Tensor(target, 1 - label_smoothing),
                                     label_smoothing / classes)
        terms = aten.mul.Tensor(logp, target)
        if weight_view is not None:
            terms = aten.mul.Tensor(terms, weight_view)
        losses = aten.neg.default(_sum_dims(terms, [class_dim]))
        if reduction == 1:
            return aten.div.Tensor_mode(aten.sum.dim_IntList(losses, None),
                                        max(self.numel() // max(classes, 1), 1))
        return _reduce(losses, reduction)
    nll = _nll_loss_nd(logp, target, weight, reduction, ignore_index)
    if label_smoothing <= 0:
        return nll
    terms = logp if weight_view is None else aten.mul.Tensor(logp, weight_view)
    ignored = aten.eq.Tensor(target, ignore_index)
    smooth = aten.masked_fill.Scalar(aten.neg.default(_sum_dims(terms, [class_dim])), ignored, 0)
    if reduction == 1:
        kept = aten.logical_not.default(ignored)
        if weight is None:
            denominator = aten.sum.dim_IntList(_cast(kept, smooth.dtype), None)
        else:
            safe = _where(kept, target, _scalar_like(target, 0))
            picked = aten.index_select.default(weight, 0, _reshape(safe, [-1]))
            denominator = aten.sum.dim_IntList(
                aten.mul.Tensor(picked, _cast(_reshape(kept, [-1]), picked.dtype)), None)
        smooth = aten.div.Tensor_mode(aten.sum.dim_IntList(smooth, None), denominator)
    else:
        smooth = _reduce(smooth, reduction)
    return aten.add.Tensor(aten.mul.Tensor(nll, 1 - label_smoothing),
                           aten.mul.Tensor(smooth, label_smoothing / classes))


def _sum_dims(t, dims):
    return aten.sum.dim_IntList(t, dims, False)


def _nll_loss_nd(logp, target, weight, reduction, ignore_index):
    """nll_loss for any number of dimensions, through the op glasstorch has for the shape."""
    if logp.dim() <= 2:
        return aten.nll_loss_forward.default(logp, target, weight, reduction, ignore_index)[0]
    if logp.dim() == 4:
        return aten.nll_loss2d_forward.default(logp, target, weight, reduction,
                                               ignore_index)[0]
    return _nll(logp, target, weight, reduction, ignore_index)[0]
