"""Derivative formulas of convolution and pooling (ops/convolution.py, ops/pooling.py).

A convolution's gradients are convolutions again: the input's is the transposed
convolution of the gradient with the same weight, the weight's is a convolution of the
input with the gradient (their roles of stride and dilation swapped, batch and channels
exchanged, groups kept as groups). Written with the `convolution` op, every order of
derivative records itself.
"""
from __future__ import annotations

from ..autograd.recording import derivative
from . import pooling
from .convolution import col2im, convolution, im2col


def _expand(values, nd):
    values = tuple(values)
    return values * nd if len(values) == 1 else values


def _regroup(t, groups, order):
    """(N, g*C, *sp) with its (N, g, C) axes permuted to `order`, then the two axes next to
    `g` that belong together merged: 'cgn' -> (C, g*N, *sp), 'gcn' -> (g*C, N, *sp)."""
    n, c = t.shape[0], t.shape[1] // groups
    sp = tuple(t.shape[2:])
    axes = {"n": 0, "g": 1, "c": 2}
    u = t.reshape((n, groups, c) + sp).permute(
        tuple(axes[k] for k in order) + tuple(range(3, 3 + len(sp))))
    a, b, d = u.shape[:3]
    return u.reshape(((a, b * d) if order[1] == "g" else (a * b, d)) + sp)


def _narrow_to(t, sizes, first_dim=2):
    for i, s in enumerate(sizes):
        if t.shape[first_dim + i] != s:
            t = t.narrow(first_dim + i, 0, s)
    return t


def _weight_grad(x, gy, kernel, stride, padding, dilation, groups):
    """d(conv(x, w))/dw contracted with gy: a convolution over the batch (channels become
    the batch, the batch the channels), stride and dilation exchanged."""
    inp = _regroup(x, groups, "cgn")          # (Cg, g*N, *sp)
    wgt = _regroup(gy, groups, "gcn")         # (g*Og, N, *out)
    nd = len(kernel)
    r = convolution(inp, wgt, None, dilation, padding, stride, False, (0,) * nd, groups)
    return _narrow_to(r, kernel).transpose(0, 1)


@derivative("aten::convolution", "ConvolutionBackward0")
def _convolution(grad, input, weight, bias, stride, padding, dilation, transposed,
                 output_padding, groups):
    nd = weight.dim() - 2
    stride, padding, dilation = (_expand(v, nd) for v in (stride, padding, dilation))
    kernel = tuple(weight.shape[2:])
    in_sizes = tuple(input.shape[2:])
    g_input = g_weight = g_bias = None
    need_input, need_weight = input.requires_grad, weight.requires_grad
    if input.is_complex():       # the adjoint of a complex product conjugates the other factor
        input, weight = input.conj(), weight.conj()
    if not transposed:
        if need_input:
            out_sizes = grad.shape[2:]
            leftover = tuple(i - ((o - 1) * s - 2 * p + d * (k - 1) + 1) for i, o, s, p, d, k
                             in zip(in_sizes, out_sizes, stride, padding, dilation, kernel))
            g_input = convolution(grad, weight, None, stride, padding, dilation, True,
                                  leftover, groups)
        if need_weight:
            g_weight = _weight_grad(input, grad, kernel, stride, padding, dilation, groups)
    else:
        if need_input:
            g_input = _narrow_to(convolution(grad, weight, None, stride, padding, dilation,
                                             False, (0,) * nd, groups), in_sizes)
        if need_weight:
            g_weight = _weight_grad(grad, input, kernel, stride, padding, dilation, groups)
    if bias is not None and bias.requires_grad:
        g_bias = grad.sum((0,) + tuple(range(2, 2 + nd)))
    return g_input, g_weight, g_bias


@derivative("aten::im2col", "Im2ColBackward0")
def _im2col(grad, self_shape, kernel_size, dilation, padding, stride):
    return (col2im(grad, self_shape[-2:], kernel_size, dilation, padding, stride),)


@derivative("aten::col2im", "Col2ImBackward0")
def _col2im(grad, kernel_size, dilation, padding, stride):
    return (im2col(grad, kernel_size, dilation, padding, stride),)


# ---- pooling ------------------------------------------------------------------------------

def _values_grad(grad):
    """The gradient of a (values, indices) op's values: the engine hands a lone tensor when
    only the first output (the differentiable one) has a gradient slot."""
    return grad[0] if isinstance(grad, tuple) else grad


def _max_pool(nd):
    backward = getattr(pooling, f"max_pool{nd}d_with_indices_backward")

    @derivative(f"aten::max_pool{nd}d_with_indices", f"MaxPool{nd}DWithIndicesBackward0")
    def formula(grad, self, kernel_size, stride, padding, dilation, ceil_mode, result1):
        return (backward(_values_grad(grad), self, kernel_size, stride, padding, dilation,
                         ceil_mode, result1),)

    @derivative(f"aten::max_pool{nd}d_with_indices_backward",
                f"MaxPool{nd}DWithIndicesBackwardBackward0")
    def formula_backward(grad, indices):
        return pooling.plane_gather(grad, indices, nd), None, None


def _avg_pool(nd):
    forward = getattr(pooling, f"avg_pool{nd}d")
    backward = getattr(pooling, f"avg_pool{nd}d_backward")

    @derivative(f"aten::avg_pool{nd}d", f"AvgPool{nd}DBackward0")
    def formula(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
        return (backward(grad, self, kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override),)

    @derivative(f"aten::avg_pool{nd}d_backward", f"AvgPool{nd}DBackwardBackward0")
    def formula_backward(grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override):
        return forward(grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override), None


def _adaptive(nd):
    avg = getattr(pooling, f"_adaptive_avg_pool{nd}d")
    avg_backward = getattr(pooling, f"_adaptive_avg_pool{nd}d_backward")
    max_backward = getattr(pooling, f"adaptive_max_pool{nd}d_backward")

    @derivative(f"aten::_adaptive_avg_pool{nd}d", f"AdaptiveAvgPool{nd}DBackward0")
    def formula_avg(grad, self):
        return (avg_backward(grad, self),)

    @derivative(f"aten::_adaptive_avg_pool{nd}d_backward",
                f"AdaptiveAvgPool{nd}DBackwardBackward0")
    def formula_avg_backward(grad, grad_output_shape):
        return avg(grad, grad_output_shape[-nd:]), None

    @derivative(f"aten::adaptive_max_pool{nd}d", f"AdaptiveMaxPool{nd}DBackward0")
    def formula_max(grad, self, result1):
        return (max_backward(_values_grad(grad), self, result1),)

    @derivative(f"aten::adaptive_max_pool{nd}d_backward",
                f"AdaptiveMaxPool{nd}DBackwardBackward0")
    def formula_max_backward(grad, indices):
        return pooling.plane_gather(grad, indices, nd), None, None


for _nd in (2, 3):
    _max_pool(_nd)
    _avg_pool(_nd)
    _adaptive(_nd)


@derivative("aten::max_unpool2d", "MaxUnpool2DBackward0")
def _max_unpool2d(grad, indices):
    return pooling.plane_gather(grad, indices, 2), None


@derivative("aten::max_unpool3d", "MaxUnpool3DBackward0")
def _max_unpool3d(grad, indices):
    return pooling.plane_gather(grad, indices, 3), None
