"""torch.cuda's memory functions, answered by glasstorch's caching allocator of each GPU.

Before CUDA is first used (or without a GPU) there is nothing allocated: the counters read
0 and the statistics are empty, as in PyTorch.
"""
from __future__ import annotations

import sys

from .. import memory as _memory
from ..memory import history as _history
from ..backends.cuda import allocator as _allocator, runtime


def _initialized(device) -> bool:
    return runtime.is_available() and _allocator.is_initialized(runtime.index_of(device))


def _cuda(device) -> str:
    return f"cuda:{runtime.index_of(device)}"


def memory_allocated(device=None) -> int:
    """Bytes held by live tensors on the GPU."""
    return _memory.memory_allocated(_cuda(device)) if _initialized(device) else 0


def max_memory_allocated(device=None) -> int:
    return _memory.max_memory_allocated(_cuda(device)) if _initialized(device) else 0


def memory_reserved(device=None) -> int:
    """Bytes in segments the caching allocator holds, in use or cached."""
    return _memory.memory_reserved(_cuda(device)) if _initialized(device) else 0


def max_memory_reserved(device=None) -> int:
    return _memory.max_memory_reserved(_cuda(device)) if _initialized(device) else 0


def memory_stats(device=None) -> dict:
    """The allocator's counters under PyTorch's key names ({} before CUDA is used)."""
    return _memory.memory_stats(_cuda(device)) if _initialized(device) else {}


def memory_summary(device=None, abbreviated: bool = False) -> str:
    runtime.require()
    return _memory.memory_summary(_cuda(device), abbreviated)


def memory_snapshot(device=None) -> list:
    return _memory.memory_snapshot(_cuda(device)) if _initialized(device) else []


def reset_peak_memory_stats(device=None) -> None:
    if _initialized(device):
        _memory.reset_peak_memory_stats(_cuda(device))


def reset_accumulated_memory_stats(device=None) -> None:
    if _initialized(device):
        _allocator.device_allocator(runtime.index_of(device)).caching.reset_accumulated_stats()


def empty_cache() -> None:
    """Return every wholly free cached segment of every GPU to the driver (cudaFree)."""
    for allocator in _allocator.initialized_allocators().values():
        allocator.caching.empty_cache()


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap this process's allocations on the GPU at `fraction` of its total memory."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _allocator.device_allocator(runtime.index_of(device)).caching.set_memory_fraction(fraction)


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the GPU, as the driver reports them."""
    index = runtime.index_of(device)
    with runtime.DeviceGuard(index):
        free, total = runtime.cupy().cuda.runtime.memGetInfo()
    return int(free), int(total)


def _record_memory_history(enabled="all", context="all", stacks="all",
                           max_entries: int = sys.maxsize, device=None, **kwargs) -> None:
    """Record every allocation on the GPU with its Python stack (torch.cuda.memory's)."""
    _history._record_memory_history(enabled, context, stacks, max_entries,
                                     device=_cuda(device), **kwargs)


def _snapshot(device=None) -> dict:
    """The GPU's segments and blocks (live ones with the stack that allocated them) and the
    recorded trace, in torch's layout."""
    return _history._snapshot(_cuda(device))


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    _history._dump_snapshot(filename, _cuda(None))
