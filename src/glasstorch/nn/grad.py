"""torch.nn.grad: the gradients of a convolution with respect to its input and its weight,
given the gradient of its output (what a custom backward or a pruning method needs without
building the forward graph itself). Each differentiates the convolution with the autograd
engine, so it agrees with conv's own backward."""
from __future__ import annotations

from .. import autograd
from ..ops.creation.factories import zeros
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    probe = zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                  requires_grad=True)
    with autograd.enable_grad():
        out = conv(probe, weight.detach(), None, stride, padding, dilation, groups)
        return autograd.grad(out, probe, grad_output)[0]


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    probe = zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device,
                  requires_grad=True)
    with autograd.enable_grad():
        out = conv(input.detach(), probe, None, stride, padding, dilation, groups)
        return autograd.grad(out, probe, grad_output)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """d(conv1d)/d(input) applied to grad_output; input_size is the input's shape."""
    return _input_grad(F.conv1d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """d(conv1d)/d(weight) applied to grad_output; weight_size is the weight's shape."""
    return _weight_grad(F.conv1d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(F.conv2d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(F.conv2d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(F.conv3d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(F.conv3d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)
