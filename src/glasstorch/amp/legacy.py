"""The per-device spellings PyTorch keeps for old code (`torch.cpu.amp.autocast`,
`torch.cuda.amp.GradScaler`, ...): the same classes with the device fixed, warning that
`glasstorch.amp` is the current spelling, as PyTorch does."""
from __future__ import annotations

import warnings

from ..core import dtype as dt
from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler

_DEFAULT_DTYPE = {"cpu": dt.bfloat16, "cuda": dt.float16}


def _deprecated(what: str, device: str) -> None:
    warnings.warn(f"`torch.{device}.amp.{what}(args...)` is deprecated. Please use "
                  f"`torch.amp.{what}('{device}', args...)` instead.", FutureWarning,
                  stacklevel=3)


def device_autocast(device: str) -> type:
    class autocast(_autocast):
        def __init__(self, enabled: bool = True, dtype=_DEFAULT_DTYPE[device],
                     cache_enabled: bool = True):
            _deprecated("autocast", device)
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

        def clone(self):
            return _autocast(self.device_type, self.fast_dtype, self._enabled,
                             self._cache_enabled)
    autocast.__qualname__ = "autocast"
    autocast.__module__ = f"glasstorch.{device}.amp"
    return autocast


def device_grad_scaler(device: str) -> type:
    class GradScaler(_GradScaler):
        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True):
            _deprecated("GradScaler", device)
            super().__init__(device, init_scale, growth_factor, backoff_factor,
                             growth_interval, enabled)
    GradScaler.__module__ = f"glasstorch.{device}.amp"
    return GradScaler
