"""torch's functions that set and read autocast's per-thread state outside an `autocast`
block: `set_autocast_enabled("cpu", True)`, the per-device spellings old code uses
(`get_autocast_cpu_dtype`, `set_autocast_gpu_dtype`, the ipu/xla ones, each warning that
the device-argument form replaces it, as PyTorch does) and the nesting counter autocast
keeps so its cast cache is dropped when the outermost block exits.

IPU and XLA have no autocast keys here: their flags and dtypes are kept and read back, as
on a PyTorch build without those devices.
"""
from __future__ import annotations

import threading
import warnings

from ..core import dtype as dt
from ..dispatch.keys import local_keys
from .autocast_mode import _KEYS, _state, get_autocast_dtype, is_autocast_enabled

__all__ = ["set_autocast_enabled", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "is_autocast_ipu_enabled", "set_autocast_ipu_enabled", "is_autocast_xla_enabled",
           "set_autocast_xla_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "get_autocast_ipu_dtype",
           "set_autocast_ipu_dtype", "get_autocast_xla_dtype", "set_autocast_xla_dtype",
           "autocast_increment_nesting", "autocast_decrement_nesting"]


class _OtherDevices(threading.local):
    """Autocast state of the devices without dispatch keys here."""

    def __init__(self):
        self.enabled = {"ipu": False, "xla": False}
        self.dtypes = {"ipu": dt.float16, "xla": dt.bfloat16}


_other = _OtherDevices()


def set_autocast_enabled(*args) -> None:
    """set_autocast_enabled(device_type, enabled), or set_autocast_enabled(enabled) for
    CUDA: turn autocast on or off for the thread, outside any `autocast` block."""
    if len(args) == 1:
        device_type, enabled = "cuda", args[0]
    elif len(args) == 2:
        device_type, enabled = args
    else:
        raise TypeError("set_autocast_enabled() takes (enabled) or (device_type, enabled)")
    if device_type in _other.enabled:
        _other.enabled[device_type] = bool(enabled)
        return
    if device_type not in _KEYS:
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")
    bit = 1 << _KEYS[device_type]
    local_keys.excluded = (local_keys.excluded & ~bit) if enabled \
        else (local_keys.excluded | bit)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def _enabled(device_type: str) -> bool:
    if device_type in _other.enabled:
        return _other.enabled[device_type]
    return is_autocast_enabled(device_type)


def _dtype(device_type: str):
    if device_type in _other.dtypes:
        return _other.dtypes[device_type]
    return get_autocast_dtype(device_type)


def _set_dtype(device_type: str, dtype) -> None:
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"dtype must be a torch.dtype (got {type(dtype).__name__})")
    if device_type in _other.dtypes:
        _other.dtypes[device_type] = dtype
    else:
        _state.dtypes[device_type] = dtype


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def is_autocast_ipu_enabled() -> bool:
    _deprecated("is_autocast_ipu_enabled()", "is_autocast_enabled('ipu')")
    return _enabled("ipu")


def set_autocast_ipu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_ipu_enabled(enabled)", "set_autocast_enabled('ipu', enabled)")
    set_autocast_enabled("ipu", enabled)


def is_autocast_xla_enabled() -> bool:
    _deprecated("is_autocast_xla_enabled()", "is_autocast_enabled('xla')")
    return _enabled("xla")


def set_autocast_xla_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_xla_enabled(enabled)", "set_autocast_enabled('xla', enabled)")
    set_autocast_enabled("xla", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _set_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    _set_dtype("cuda", dtype)


def get_autocast_ipu_dtype():
    _deprecated("get_autocast_ipu_dtype()", "get_autocast_dtype('ipu')")
    return _dtype("ipu")


def set_autocast_ipu_dtype(dtype) -> None:
    _deprecated("set_autocast_ipu_dtype(dtype)", "set_autocast_dtype('ipu', dtype)")
    _set_dtype("ipu", dtype)


def get_autocast_xla_dtype():
    _deprecated("get_autocast_xla_dtype()", "get_autocast_dtype('xla')")
    return _dtype("xla")


def set_autocast_xla_dtype(dtype) -> None:
    _deprecated("set_autocast_xla_dtype(dtype)", "set_autocast_dtype('xla', dtype)")
    _set_dtype("xla", dtype)


def autocast_increment_nesting() -> int:
    """Count one more open autocast region; the new depth."""
    _state.depth += 1
    return _state.depth


def autocast_decrement_nesting() -> int:
    """Count one region closed; the new depth (0: the cast cache may be cleared)."""
    _state.depth -= 1
    return _state.depth
