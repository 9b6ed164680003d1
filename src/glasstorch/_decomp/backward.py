"""Decompositions of the backward ops of normalisations, activations and losses.

glasstorch's autograd differentiates these ops through its own formulas (ops/derivatives_*),
so it never needed PyTorch's separate backward operators (`aten::native_layer_norm_backward`,
`aten::silu_backward`, ...). Tools call them by name, though, and a traced backward graph
contains them. So each op glasstorch lacks is defined here, with its decomposition as its
CompositeImplicitAutograd kernel: it runs on every backend, and its own gradient (double
backward) is the chain rule through its pieces. An op that some other part of glasstorch
declares with kernels of its own keeps them; the decomposition is then only an entry in
the table.
"""
from __future__ import annotations

import math

from .._ops import ops_namespace
from . import define_by_decomposition as _backward_op
from .decompositions import (_cast, _channel_view, _nll_targets, _reshape, _scalar_like,
                             _softplus, _upcast, _where, prims)

aten = ops_namespace("aten")


def _sum(t, dims, keepdim=False):
    return aten.sum.dim_IntList(t, dims, keepdim)


def _zeros_like(t):
    return prims.full.default(list(t.shape), 0, dtype=t.dtype, device=t.device,
                              requires_grad=False)


# ---- normalisation -----------------------------------------------------------------------------

def _normalized_grad(g, x_hat, rstd, dims, n: int):
    """The input gradient of (x - mean) * rstd over `dims` (n elements each), for the
    upstream gradient g: rstd / n * (n g - sum g - x_hat sum(g x_hat))."""
    if n == 0:
        return g
    projection = aten.add.Tensor(_sum(g, dims, True),
                                 aten.mul.Tensor(x_hat, _sum(aten.mul.Tensor(g, x_hat), dims,
                                                             True)))
    return aten.mul.Tensor(aten.sub.Tensor(aten.mul.Tensor(g, n), projection),
                           aten.div.Tensor_mode(rstd, n))


@_backward_op("native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] "
              "normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, "
              "bool[3] output_mask) -> (Tensor, Tensor, Tensor)")
def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    axis = input.dim() - len(normalized_shape)
    inner, outer = list(range(axis, input.dim())), list(range(axis))
    x, g_out = _upcast(input), _upcast(grad_out)
    x_hat = aten.mul.Tensor(aten.sub.Tensor(x, mean), rstd)
    g = aten.mul.Tensor(g_out, weight) if weight is not None else g_out
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad_input = _cast(_normalized_grad(g, x_hat, rstd, inner, math.prod(normalized_shape)),
                           input.dtype)
    # over the leading dims; with none (all dims normalized), an empty dim list would sum all
    if output_mask[1] and weight is not None:
        product = aten.mul.Tensor(g_out, x_hat)
        grad_weight = _cast(_sum(product, outer) if outer else product, weight.dtype)
    if output_mask[2] and bias is not None:
        grad_bias = _cast(_sum(g_out, outer) if outer else g_out, bias.dtype)
    return grad_input, grad_weight, grad_bias


@_backward_op("native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
              "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, "
              "Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> "
              "(Tensor, Tensor, Tensor)")
def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                               save_invstd, train, eps, output_mask):
    ndim, dims = input.dim(), [0] + list(range(2, input.dim()))
    x, g = _upcast(input), _upcast(grad_out)
    if train:
        mean, invstd = save_mean, save_invstd
    else:
        mean, invstd = running_mean, aten.rsqrt.default(aten.add.Tensor(running_var, eps))
    centered = aten.sub.Tensor(x, _channel_view(mean, ndim))
    grad_sum = _sum(g, dims)
    dot = _sum(aten.mul.Tensor(g, centered), dims)
    scale = invstd if weight is None else aten.mul.Tensor(invstd, weight)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        if train:
            n = input.numel() // input.shape[1]
            projection = aten.mul.Tensor(centered, _channel_view(
                aten.div.Tensor_mode(aten.mul.Tensor(dot, aten.mul.Tensor(invstd, invstd)), n),
                ndim))
            g = aten.sub.Tensor(aten.sub.Tensor(g, projection),
                                _channel_view(aten.div.Tensor_mode(grad_sum, n), ndim))
        grad_input = _cast(aten.mul.Tensor(g, _channel_view(scale, ndim)), input.dtype)
    if output_mask[1]:
        grad_weight = aten.mul.Tensor(dot, invstd)
    if output_mask[2]:
        grad_bias = grad_sum
    return grad_input, grad_weight, grad_bias


@_backward_op("native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, "
              "Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, "
              "bool[3] output_mask) -> (Tensor, Tensor, Tensor)")
def native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group,
                               output_mask):
    grouped = [N, group, C // group, HxW]
    x = _reshape(_upcast(input), grouped)
    g_out = _reshape(_upcast(grad_out), [N, C, HxW])
    mean4, rstd4 = (aten.view.default(t, [N, group, 1, 1]) for t in (mean, rstd))
    x_hat = aten.mul.Tensor(aten.sub.Tensor(x, mean4), rstd4)
    g = g_out if weight is None else aten.mul.Tensor(g_out, aten.view.default(weight, [C, 1]))
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad = _normalized_grad(_reshape(g, grouped), x_hat, rstd4, [2, 3],
                                (C // group) * HxW)
        grad_input = _cast(_reshape(grad, list(input.shape)), input.dtype)
    if output_mask[1] and weight is not None:
        grad_weight = _sum(aten.mul.Tensor(g_out, _reshape(x_hat, [N, C, HxW])), [0, 2])
    if output_mask[2]:
        grad_bias = _sum(g_out, [0, 2])
    return grad_input, grad_weight, grad_bias


# ---- activations -------------------------------------------------------------------------------

@_backward_op("silu_backward(Tensor grad_output, Tensor self) -> Tensor")
def silu_backward(grad_output, self):
    s = aten.sigmoid.default(self)
    slope = aten.mul.Tensor(s, aten.add.Tensor(
        aten.mul.Tensor(self, aten.rsub.Tensor(s, 1)), 1))         # s (1 + x (1 - s))
    return aten.mul.Tensor(grad_output, slope)


@_backward_op("mish_backward(Tensor grad_output, Tensor self) -> Tensor")
def mish_backward(grad_output, self):
    t = aten.tanh.default(_softplus(self))
    slope = aten.add.Tensor(t, aten.mul.Tensor(
        aten.mul.Tensor(self, aten.sigmoid.default(self)),
        aten.rsub.Tensor(aten.mul.Tensor(t, t), 1)))             # t + x sigmoid(x) (1 - t^2)
    return aten.mul.Tensor(grad_output, slope)


@_backward_op("hardswish_backward(Tensor grad_output, Tensor self) -> Tensor")
def hardswish_backward(grad_output, self):
    middle = aten.mul.Tensor(grad_output, aten.add.Tensor(aten.div.Tensor_mode(self, 3), 0.5))
    return _where(aten.le.Tensor(self, -3), _scalar_like(grad_output, 0),
                  _where(aten.lt.Tensor(self, 3), middle, grad_output))


@_backward_op("hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor")
def hardsigmoid_backward(grad_output, self):
    inside = aten.logical_and.default(aten.gt.Tensor(self, -3), aten.lt.Tensor(self, 3))
    return _where(inside, aten.div.Tensor_mode(grad_output, 6), _scalar_like(grad_output, 0))


@_backward_op("elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, "
              "bool is_result, Tensor self_or_result) -> Tensor")
def elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    if is_result:        # from the output y: the negative side's slope is input_scale (y + a s)
        negative = aten.add.Tensor(self_or_result, alpha * scale)
    else:
        negative = aten.mul.Tensor(aten.exp.default(aten.mul.Tensor(self_or_result,
                                                                    input_scale)),
                                   alpha * scale)
    return _where(aten.le.Tensor(self_or_result, 0),
                  aten.mul.Tensor(aten.mul.Tensor(grad_output, negative), input_scale),
                  aten.mul.Tensor(grad_output, scale))


@_backward_op("leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, "
              "bool self_is_result) -> Tensor")
def leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    return _where(aten.gt.Tensor(self, 0), grad_output,
                  aten.mul.Tensor(grad_output, negative_slope))


@_backward_op("softplus_backward(Tensor grad_output, Tensor self, Scalar beta, "
              "Scalar threshold) -> Tensor")
def softplus_backward(grad_output, self, beta, threshold):
    scaled = aten.mul.Tensor(self, beta)
    slope = aten.sigmoid.default(scaled)
    return _where(aten.gt.Tensor(scaled, threshold), grad_output,
                  aten.mul.Tensor(grad_output, slope))


@_backward_op("native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor")
def native_dropout_backward(grad_output, mask, scale):
    return aten.mul.Tensor(aten.mul.Tensor(grad_output, _cast(mask, grad_output.dtype)),
                           scale)


# ---- losses ------------------------------------------------------------------------------------

def _mean_scale(self, reduction):
    return 1 / self.numel() if reduction == 1 and self.numel() else 1


@_backward_op("mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
              "int reduction) -> Tensor")
def mse_loss_backward(grad_output, self, target, reduction):
    diff = aten.sub.Tensor(self, target)
    return aten.mul.Tensor(aten.mul.Tensor(diff, 2 * _mean_scale(self, reduction)),
                           grad_output)


@_backward_op("smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
              "int reduction, float beta) -> Tensor")
def smooth_l1_loss_backward(grad_output, self, target, reduction, beta):
    norm = _mean_scale(self, reduction)
    diff = aten.sub.Tensor(self, target)
    sign = aten.mul.Tensor(aten.sign.default(diff), norm)
    if beta == 0:
        return aten.mul.Tensor(sign, grad_output)
    inner = aten.mul.Tensor(diff, norm / beta)
    return aten.mul.Tensor(_where(aten.lt.Tensor(aten.abs.default(diff), beta), inner, sign),
                           grad_output)


@_backward_op("huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
              "int reduction, float delta) -> Tensor")
def huber_loss_backward(grad_output, self, target, reduction, delta):
    norm = _mean_scale(self, reduction)
    diff = aten.sub.Tensor(self, target)
    clipped = aten.clamp_max.Tensor(aten.clamp_min.Tensor(diff, _scalar_like(diff, -delta)),
                                    _scalar_like(diff, delta))
    return aten.mul.Tensor(aten.mul.Tensor(clipped, norm), grad_output)


def _nll_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    flat, x, safe, w = _nll_targets(self, target, weight, ignore_index)
    g = grad_output
    if reduction == 0 and flat:
        g = aten.unsqueeze.default(g, 0)
    elif reduction == 1:
        g = aten.div.Tensor_mode(g, total_weight)
    per_target = aten.neg.default(aten.mul.Tensor(w, g))
    grad = aten.scatter.src(_zeros_like(x), 1, aten.unsqueeze.default(safe, 1),
                            aten.unsqueeze.default(_cast(per_target, self.dtype), 1))
    return aten.squeeze.dims(grad, [0]) if flat else grad


@_backward_op("nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, "
              "int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor")
def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                      total_weight):
    return _nll_backward(grad_output, self, target, weight, reduction, ignore_index,
                         total_weight)


@_backward_op("nll_loss2d_backward(Tensor grad_output, Tensor self, Tensor target, "
              "Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> "
              "Tensor")
def nll_loss2d_backward(grad_output, self, target, weight, reduction, ignore_index,
                        total_weight):
    return _nll_backward(grad_output, self, target, weight, reduction, ignore_index,
                         total_weight)


_BCE_EPSILON = 1e-12


@_backward_op("binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, "
              "Tensor? weight=None, int reduction=1) -> Tensor")
def binary_cross_entropy_backward(grad_output, self, target, weight=None, reduction=1):
    """(x - t) / max(x (1 - x), 1e-12), as PyTorch's kernel bounds the denominator."""
    denominator = aten.clamp_min.Tensor(
        aten.mul.Tensor(self, aten.rsub.Tensor(self, 1)), _scalar_like(self, _BCE_EPSILON))
    grad = aten.div.Tensor_mode(aten.sub.Tensor(self, target), denominator)
    if weight is not None:
        grad = aten.mul.Tensor(grad, weight)
    return aten.mul.Tensor(aten.mul.Tensor(grad, _mean_scale(self, reduction)), grad_output)
