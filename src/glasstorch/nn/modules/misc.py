"""Shape and resampling layers without parameters: Flatten/Unflatten, the padding layers,
pixel/channel shuffles, Upsample, Fold/Unfold, CosineSimilarity and PairwiseDistance."""
from __future__ import annotations

from collections.abc import Iterable

from .. import functional as F
from .module import Module

__all__ = ["Flatten", "Unflatten",
           "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d",
           "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Upsample",
           "UpsamplingNearest2d", "UpsamplingBilinear2d", "CosineSimilarity",
           "PairwiseDistance", "Fold", "Unfold"]


def _ntuple(value, n: int) -> tuple:
    if isinstance(value, Iterable):
        return tuple(value)
    return (value,) * n


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim into unflattened_size (a tuple/list of ints, one of them may be -1)."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for idx, elem in enumerate(unflattened_size):
            if not isinstance(elem, int):
                raise TypeError("unflattened_size must be tuple of ints, but found element "
                                f"of type {type(elem).__name__} at pos {idx}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# ---- padding -----------------------------------------------------------------------------

class _PadNd(Module):
    """F.pad with a fixed (left, right, top, bottom, front, back) padding and mode; the
    padding is kept as a 2n-tuple, as torch prints it."""

    _n = 0
    _mode = "constant"
    _dims = None    # ranks accepted (checked only where torch checks: circular padding)

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._n)

    def forward(self, input):
        if self._dims is not None and input.dim() not in self._dims:
            expected = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {expected} input (got {input.dim()}D input)")
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    """Pads with a constant value."""

    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Constant padding of the last dim."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Constant padding of the last 2 dims."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Constant padding of the last 3 dims."""

    _n = 3


class _ZeroPad:
    """Zero padding: ConstantPadNd with value 0.0, printed with the padding alone."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Zero padding of the last dim."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Zero padding of the last 2 dims."""


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Zero padding of the last 3 dims."""


class ReflectionPad1d(_PadNd):
    """Reflection padding (the edge not repeated) of the last dim."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Reflection padding of the last 2 dims."""

    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Reflection padding of the last 3 dims."""

    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Edge-replicating padding of the last dim."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Edge-replicating padding of the last 2 dims."""

    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Edge-replicating padding of the last 3 dims."""

    _n, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Wrap-around padding of the last dim of (N, C, L) or (C, L) inputs."""

    _n, _mode, _dims = 1, "circular", (2, 3)


class CircularPad2d(_PadNd):
    """Wrap-around padding of the last 2 dims of (N, C, H, W) or (C, H, W) inputs."""

    _n, _mode, _dims = 2, "circular", (3, 4)


class CircularPad3d(_PadNd):
    """Wrap-around padding of the last 3 dims of 4-D or 5-D inputs."""

    _n, _mode, _dims = 3, "circular", (4, 5)


# ---- shuffles and resampling -------------------------------------------------------------

class PixelShuffle(Module):
    """(*, C·r², H, W) -> (*, C, H·r, W·r)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H·r, W·r) -> (*, C·r², H, W)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleaves the channels of `groups` groups (ShuffleNet)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Upsample(Module):
    """F.interpolate to a size or by a scale_factor (stored as float(s), as torch)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners=None, recompute_scale_factor=None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode,
                             self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def __setstate__(self, state):
        if "recompute_scale_factor" not in state:
            state["recompute_scale_factor"] = True
        super().__setstate__(state)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with align_corners=True."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


# ---- distances ---------------------------------------------------------------------------

class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along dim."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """p-norm of x1 - x2 + eps along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# ---- sliding blocks ----------------------------------------------------------------------

class Fold(Module):
    """Sums sliding local blocks (N, C·∏k, L) back into an (N, C, *output_size) tensor."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extracts sliding local blocks of an (N, C, H, W) tensor as (N, C·∏k, L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
