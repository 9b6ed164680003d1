"""torch.conv_tbc: a 1-D convolution over (time, batch, channel) input, the layout of
fairseq's convolutional sequence models. It is conv1d with the dims moved: the weight is
(kernel width, in channels, out channels) and `pad` zeros go at both ends of time."""
from __future__ import annotations

from ..registry import composite
from .convolution import conv1d


@composite()
def conv_tbc(self, weight, bias, pad=0):
    """(time + 2 pad - width + 1, batch, out channels) = conv1d over time."""
    if self.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if self.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(self.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)
