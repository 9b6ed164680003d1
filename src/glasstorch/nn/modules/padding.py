"""The padding layers: F.pad with a fixed padding and mode (constant, zero, reflection,
replication, circular), in PyTorch's module torch.nn.modules.padding."""
from __future__ import annotations

from .. import functional as F
from .module import Module
from .utils import _ntuple

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    """F.pad with a fixed (left, right, top, bottom, front, back) padding and mode; the
    padding is kept as a 2n-tuple, as torch prints it."""

    _n = 0
    _mode = "constant"
    _dims = None    # ranks accepted (checked only where torch checks: circular padding)

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(2 * self._n)(padding)

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


class _ReflectionPadNd(_PadNd):
    """Reflection padding (the edge not repeated)."""

    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Reflection padding (the edge not repeated) of the last dim."""

    _n = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Reflection padding of the last 2 dims."""

    _n = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Reflection padding of the last 3 dims."""

    _n = 3


class _ReplicationPadNd(_PadNd):
    """Edge-replicating padding."""

    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Edge-replicating padding of the last dim."""

    _n = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Edge-replicating padding of the last 2 dims."""

    _n = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Edge-replicating padding of the last 3 dims."""

    _n = 3


class _CircularPadNd(_PadNd):
    """Wrap-around padding."""

    _mode = "circular"


class CircularPad1d(_CircularPadNd):
    """Wrap-around padding of the last dim of (N, C, L) or (C, L) inputs."""

    _n, _dims = 1, (2, 3)


class CircularPad2d(_CircularPadNd):
    """Wrap-around padding of the last 2 dims of (N, C, H, W) or (C, H, W) inputs."""

    _n, _dims = 2, (3, 4)


class CircularPad3d(_CircularPadNd):
    """Wrap-around padding of the last 3 dims of 4-D or 5-D inputs."""

    _n, _dims = 3, (4, 5)

