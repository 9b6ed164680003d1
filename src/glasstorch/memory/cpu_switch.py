"""Choosing the CPU allocator, and the reserved-memory API that every allocator answers.

PyTorch's CPU allocator does not cache; glasstorch can put its caching allocator in front of
host memory (GLASSTORCH_CPU_ALLOCATOR=caching, or set_cpu_allocator("caching")) to show the
CUDA allocator's behaviour on any machine. With the plain allocator reserved == allocated.
"""
from __future__ import annotations

import os
import sys

from ..core.device import as_device
from .alloc_conf import parse_alloc_conf
from .caching_allocator import CachingAllocator
from .cpu_allocator import cpu_allocator
from .raw_backends import HostBackend, HostCachingAllocator
from .summary import format_memory_summary

ENV_VAR = "GLASSTORCH_CPU_ALLOCATOR"
_PLAIN = cpu_allocator      # the non-caching allocator, whatever the environment chose
_CHOICES = ("caching", "default")


def set_cpu_allocator(kind: str, backend=None) -> None:
    """Use the caching allocator ("caching", over `backend`, host memory by default) or the
    plain one ("default") for CPU storages allocated from now on."""
    from ..core import storage
    if kind not in _CHOICES:
        raise ValueError(f"set_cpu_allocator: expected one of {_CHOICES}, got {kind!r}")
    if kind == "default" and backend is not None:
        raise ValueError("set_cpu_allocator: the default allocator takes no backend")
    previous = storage.cpu_allocator
    if kind == "caching":
        caching = CachingAllocator(HostBackend() if backend is None else backend, "cpu",
                                   parse_alloc_conf())
        storage.cpu_allocator = HostCachingAllocator(caching)
    else:
        storage.cpu_allocator = _PLAIN
    if isinstance(previous, HostCachingAllocator):
        previous.caching.empty_cache()   # its live blocks still return to it when freed


def _caching(device):
    from . import _allocator
    return getattr(_allocator(device), "caching", None)    # None: the plain CPU allocator


def memory_reserved(device="cpu") -> int:
    """Bytes the allocator holds in segments, cached or in use (allocated for the plain one)."""
    caching = _caching(device)
    if caching is None:
        from . import memory_allocated
        return memory_allocated(device)
    return caching.memory_reserved()


def max_memory_reserved(device="cpu") -> int:
    caching = _caching(device)
    if caching is None:
        from . import max_memory_allocated
        return max_memory_allocated(device)
    return caching.stats["reserved_bytes"]["all"].peak


def empty_cache(device="cpu") -> None:
    """Give every wholly free cached segment back (without caching: the plain CPU
    allocator's recycled small blocks)."""
    caching = _caching(device)
    if caching is not None:
        caching.empty_cache()
    elif as_device(device).type == "cpu":
        _PLAIN.empty_recycled()


def memory_snapshot(device="cpu") -> list:
    """The cached segments with their blocks (torch.cuda.memory_snapshot); [] without caching."""
    caching = _caching(device)
    return [] if caching is None else caching.snapshot()["segments"]


def set_memory_limit(nbytes, device="cpu") -> None:
    """Make allocations on `device` that would take its live (for a caching allocator:
    reserved) bytes past `nbytes` raise OutOfMemoryError; None removes the limit. A
    glasstorch extension: it reproduces out-of-memory at sizes any machine has."""
    caching = _caching(device)
    if caching is not None:
        caching.set_memory_limit(nbytes)
        return
    from . import _allocator
    _allocator(device).set_limit(nbytes)


def set_per_process_memory_fraction(fraction: float, device="cpu") -> None:
    """Cap `device`'s memory at `fraction` of its total (for the CPU: of physical memory),
    as torch.cuda.set_per_process_memory_fraction does for a GPU."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    caching = _caching(device)
    if caching is not None:
        caching.set_memory_fraction(fraction)
        return
    set_memory_limit(int(fraction * HostBackend().mem_get_info()[1]), device)


def reset_accumulated_memory_stats(device="cpu") -> None:
    """Zero the allocated/freed totals and the event counters (current and peak stay)."""
    caching = _caching(device)
    if caching is not None:
        caching.reset_accumulated_stats()
    else:
        from . import _allocator
        _allocator(device).stats.reset_accumulated()


def memory_summary(device="cpu", abbreviated: bool = False) -> str:
    """PyTorch's memory_summary table for `device`."""
    from . import memory_stats
    dev = as_device(device)
    return format_memory_summary(memory_stats(dev), dev.type, dev.index or 0, abbreviated)


def _from_environment():
    """Apply GLASSTORCH_CPU_ALLOCATOR while glasstorch is being imported.

    core.storage imports this package before it binds `cpu_allocator`, so the choice is made
    by rebinding the name it is about to import from memory.cpu_allocator.
    """
    kind = os.environ.get(ENV_VAR)
    if not kind:
        return
    if kind not in _CHOICES:
        raise ValueError(f"{ENV_VAR}: expected one of {_CHOICES}, got {kind!r}")
    if kind == "caching":
        # the module itself: the package's `cpu_allocator` attribute is the instance
        module = sys.modules[f"{__package__}.cpu_allocator"]
        module.cpu_allocator = HostCachingAllocator(
            CachingAllocator(HostBackend(), "cpu", parse_alloc_conf()))


_from_environment()
