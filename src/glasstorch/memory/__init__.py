"""Memory accounting per device (`glasstorch.memory.memory_allocated('cpu')`, ...)."""
from __future__ import annotations

from ..core.device import as_device, device_backend


def _allocator(device):
    d = as_device(device)
    if d.type == "cpu":
        from ..core import storage   # holds the active CPU allocator (set_cpu_allocator)
        return storage.cpu_allocator
    if d.type == "cuda":
        backend = device_backend("cuda")
        return backend.allocator(backend.index_of(d))
    raise RuntimeError(f"no memory statistics for device '{d}'")


def memory_allocated(device="cpu") -> int:
    """Bytes currently held by live storages on `device`."""
    return _allocator(device).stats.allocated_bytes


def max_memory_allocated(device="cpu") -> int:
    """The peak of memory_allocated since the start or the last reset_peak_memory_stats."""
    return _allocator(device).stats.peak_allocated_bytes


def reset_peak_memory_stats(device="cpu") -> None:
    _allocator(device).stats.reset_peak()


def memory_stats(device="cpu") -> dict:
    """Allocator counters under PyTorch's key names (`allocated_bytes.all.current`, ...),
    the whole key set of torch.cuda.memory_stats on every allocator, sorted."""
    return _allocator(device).stats.as_dict()
from .history import _dump_snapshot, _record_memory_history, _snapshot  # noqa: E402,F401
from .retention import retention_report  # noqa: E402,F401
from .planning import MemoryEstimate, estimate  # noqa: E402,F401
from .cpu_switch import (empty_cache, max_memory_reserved, memory_reserved,  # noqa: E402,F401
                         memory_snapshot, memory_summary, reset_accumulated_memory_stats,
                         set_cpu_allocator, set_memory_limit, set_per_process_memory_fraction)
from .errors import OutOfMemoryError, format_size  # noqa: E402,F401
