"""torch.accelerator: the device-agnostic face of the machine's accelerator.

glasstorch's one accelerator is CUDA (through CuPy). When a GPU is usable every function here
is glasstorch.cuda's; otherwise `is_available()` is False, `current_accelerator()` is None,
`device_count()` is 0, and the rest raise as PyTorch's do on a CPU-only machine.

    >>> import glasstorch as torch
    >>> torch.accelerator.is_available() == torch.cuda.is_available()
    True
"""
from __future__ import annotations

import warnings

from . import cuda as _cuda
from .core.device import device as _device

__all__ = ["current_accelerator", "current_device_idx", "current_device_index",
           "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache",
           "get_device_capability", "get_memory_info", "is_available", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize"]


def current_accelerator(check_available: bool = False):
    """device('cuda') when glasstorch can use a GPU, else None."""
    if _cuda.is_available() and _cuda.device_count() > 0:
        return _device("cuda")
    return None


def is_available() -> bool:
    return current_accelerator() is not None


def device_count() -> int:
    return _cuda.device_count() if is_available() else 0


def _backend():
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return _cuda


def _index(device) -> int | None:
    if device is None or isinstance(device, int):
        return device
    d = _device(device)
    if d.type != "cuda":
        raise ValueError(f"{d} doesn't match the current accelerator cuda.")
    return d.index


def current_device_index() -> int:
    return _backend().current_device()


def current_device_idx() -> int:
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /) -> None:
    _backend().set_device(_index(device))


def set_device_idx(device, /) -> None:
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def current_stream(device=None, /):
    return _backend().current_stream(_index(device))


def set_stream(stream) -> None:
    if not isinstance(stream, _cuda.Stream):
        raise TypeError(f"set_stream(): argument 'stream' must be a Stream, not "
                        f"{type(stream).__name__}")
    _backend().set_stream(stream)


def synchronize(device=None, /) -> None:
    _backend().synchronize(_index(device))


class device_index:
    """Within the block, the current accelerator device is `device` (None: unchanged)."""

    def __init__(self, device, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def empty_cache() -> None:
    _backend().empty_cache()


def empty_host_cache() -> None:
    """Release cached pinned host memory (glasstorch's pinned blocks are freed as they go)."""
    _backend()


def get_device_capability(device=None, /) -> dict:
    major, minor = _backend().get_device_capability(_index(device))
    return {"major": major, "minor": minor}


def get_memory_info(device_index=None, /) -> tuple:
    return _backend().mem_get_info(_index(device_index))


def memory_stats(device_index=None, /) -> dict:
    return _backend().memory_stats(_index(device_index))


def memory_allocated(device_index=None, /) -> int:
    return _backend().memory_allocated(_index(device_index))


def max_memory_allocated(device_index=None, /) -> int:
    return _backend().max_memory_allocated(_index(device_index))


def memory_reserved(device_index=None, /) -> int:
    return _backend().memory_reserved(_index(device_index))


def max_memory_reserved(device_index=None, /) -> int:
    return _backend().max_memory_reserved(_index(device_index))


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    _backend().reset_accumulated_memory_stats(_index(device_index))


def reset_peak_memory_stats(device_index=None, /) -> None:
    _backend().reset_peak_memory_stats(_index(device_index))
