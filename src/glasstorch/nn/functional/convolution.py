"""Convolution, unfold and fold: torch.nn.functional's signatures over ops/convolution.py."""
from __future__ import annotations

from ...core.tensor import Tensor
from ...ops.nn.conv_tbc import conv_tbc
from ...ops.nn.convolution import (col2im, conv1d, conv2d, conv3d, conv_transpose1d,
                                conv_transpose2d, conv_transpose3d, im2col)

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "conv_tbc", "unfold", "fold"]


def _pair(v) -> tuple:
    return (v, v) if isinstance(v, int) else tuple(v)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding local blocks of a (N, C, H, W) or (C, H, W) input as columns
    (N, C*prod(kernel_size), L) (im2col)."""
    return im2col(input, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns (N, C*prod(kernel_size), L) back into an image (N, C, *output_size),
    overlapping values added (col2im), the adjoint of unfold."""
    return col2im(input, _pair(output_size), _pair(kernel_size), _pair(dilation),
                  _pair(padding), _pair(stride))
