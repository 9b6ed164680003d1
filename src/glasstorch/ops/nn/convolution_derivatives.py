"""Derivative formulas of convolution and pooling (convolution.py, pooling.py).

A convolution's gradients come from one `convolution_backward` call (input, weight and
bias together, as PyTorch's ConvolutionBackward0). That op is differentiable in turn:
with y = conv(x, w) bilinear, the backward's outputs are the partial derivatives of
<conv(x, w), gy>, so contracting them with (ggx, ggw, ggb) gives
<conv(ggx, w) + conv(x, ggw) + ggb, gy>, whose gradients are that sum for gy and again
convolution backwards for x (weight ggw) and w (input ggx). Every order records itself.
"""
from __future__ import annotations

from ..derivative import derivative
from . import pooling
from .convolution import col2im, convolution, convolution_backward, im2col
from . import convolution as convolution_ops


@derivative(convolution_ops.convolution, "ConvolutionBackward0")
def _convolution(grad, input, weight, stride, padding, dilation, transposed, output_padding,
                 groups, grad_input_mask):
    bias_sizes = [grad.shape[1]] if grad_input_mask[2] else None
    return convolution_backward(grad, input, weight, bias_sizes, stride, padding, dilation,
                                transposed, output_padding, groups, grad_input_mask)


@derivative(convolution_ops.convolution_backward, "ConvolutionBackwardBackward0")
def _convolution_backward(grads, grad_output, input, weight, stride, padding, dilation,
                          transposed, output_padding, groups, grad_input_mask):
    # the engine's tuple stops at the last output with a gradient (a lone one is unwrapped)
    ggx, ggw, ggb = ((grads if isinstance(grads, tuple) else (grads,)) + (None,) * 3)[:3]
    args = (stride, padding, dilation, transposed, output_padding, groups)
    g_out = g_input = g_weight = None
    if grad_input_mask[0]:
        if ggx is not None:
            g_out = convolution(ggx, weight, ggb, *args)
        elif ggb is not None:
            g_out = ggb.reshape((1, -1) + (1,) * (grad_output.dim() - 2)).expand(
                grad_output.shape)
        if ggw is not None:
            term = convolution(input, ggw, None, *args)
            g_out = term if g_out is None else g_out + term
    if grad_input_mask[1] and ggw is not None:
        g_input = convolution_backward(grad_output, input, ggw, None, *args,
                                       (True, False, False))[0]
    if grad_input_mask[2] and ggx is not None:
        g_weight = convolution_backward(grad_output, ggx, weight, None, *args,
                                        (False, True, False))[1]
    return g_out, g_input, g_weight


@derivative(convolution_ops.im2col, "Im2ColBackward0")
def _im2col(grad, self_shape, kernel_size, dilation, padding, stride):
    return (col2im(grad, self_shape[-2:], kernel_size, dilation, padding, stride),)


@derivative(convolution_ops.col2im, "Col2ImBackward0")
def _col2im(grad, kernel_size, dilation, padding, stride):
    return (im2col(grad, kernel_size, dilation, padding, stride),)


# ---- pooling ------------------------------------------------------------------------------

def _values_grad(grad):
    """The gradient of a (values, indices) op's values: the engine hands a lone tensor when
    only the first output (the differentiable one) has a gradient slot."""
    return grad[0] if isinstance(grad, tuple) else grad


def _max_pool(nd):
    backward = getattr(pooling, f"max_pool{nd}d_with_indices_backward")

    @derivative(getattr(pooling, f"max_pool{nd}d_with_indices"), f"MaxPool{nd}DWithIndicesBackward0")
    def formula(grad, self, kernel_size, stride, padding, dilation, ceil_mode, result1):
        return (backward(_values_grad(grad), self, kernel_size, stride, padding, dilation,
                         ceil_mode, result1),)

    @derivative(getattr(pooling, f"max_pool{nd}d_with_indices_backward"),
                f"MaxPool{nd}DWithIndicesBackwardBackward0")
    def formula_backward(grad, indices):
        return pooling.plane_gather(grad, indices, nd), None, None


def _avg_pool(nd):
    forward = getattr(pooling, f"avg_pool{nd}d")
    backward = getattr(pooling, f"avg_pool{nd}d_backward")

    @derivative(getattr(pooling, f"avg_pool{nd}d"), f"AvgPool{nd}DBackward0")
    def formula(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
        return (backward(grad, self, kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override),)

    @derivative(getattr(pooling, f"avg_pool{nd}d_backward"), f"AvgPool{nd}DBackwardBackward0")
    def formula_backward(grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override):
        return forward(grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override), None


def _adaptive(nd):
    avg = getattr(pooling, f"_adaptive_avg_pool{nd}d")
    avg_backward = getattr(pooling, f"_adaptive_avg_pool{nd}d_backward")
    max_backward = getattr(pooling, f"adaptive_max_pool{nd}d_backward")

    @derivative(getattr(pooling, f"_adaptive_avg_pool{nd}d"), f"AdaptiveAvgPool{nd}DBackward0")
    def formula_avg(grad, self):
        return (avg_backward(grad, self),)

    @derivative(getattr(pooling, f"_adaptive_avg_pool{nd}d_backward"),
                f"AdaptiveAvgPool{nd}DBackwardBackward0")
    def formula_avg_backward(grad, grad_output_shape):
        return avg(grad, grad_output_shape[-nd:]), None

    @derivative(getattr(pooling, f"adaptive_max_pool{nd}d"), f"AdaptiveMaxPool{nd}DBackward0")
    def formula_max(grad, self, result1):
        return (max_backward(_values_grad(grad), self, result1),)

    @derivative(getattr(pooling, f"adaptive_max_pool{nd}d_backward"),
                f"AdaptiveMaxPool{nd}DBackwardBackward0")
    def formula_max_backward(grad, indices):
        return pooling.plane_gather(grad, indices, nd), None, None


for _nd in (2, 3):
    _max_pool(_nd)
    _avg_pool(_nd)
    _adaptive(_nd)


@derivative(pooling.max_unpool2d, "MaxUnpool2DBackward0")
def _max_unpool2d(grad, indices):
    return pooling.plane_gather(grad, indices, 2), None


@derivative(pooling.max_unpool3d, "MaxUnpool3DBackward0")
def _max_unpool3d(grad, indices):
    return pooling.plane_gather(grad, indices, 3), None
