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
    """Give every wholly free cached segment back (nothing to do without caching)."""
    caching = _caching(device)
    if caching is not None:
        caching.empty_cache()


def memory_snapshot(device="cpu") -> list:
    """The cached segments with their blocks (torch.cuda.memory_snapshot); [] without caching."""
    caching = _caching(device)
    return [] if caching is None else caching.snapshot()["segments"]


def _plain_stats(stats: dict) -> dict:
    """Full caching-allocator keys for the plain allocator: every buffer is its own segment."""
    full = dict.fromkeys((f"{s}.{p}.{f}" for s in ("allocation", "segment", "active",
                          "inactive_split", "allocated_bytes", "reserved_bytes", "active_bytes",
                          "inactive_split_bytes", "requested_bytes")
                          for p in ("all", "large_pool", "small_pool")
                          for f in ("current", "peak", "allocated", "freed")), 0)
    for name in ("allocated_bytes", "allocation"):
        for f in ("current", "peak", "allocated", "freed"):
            value = stats.get(f"{name}.all.{f}", 0)
            twins = (("reserved_bytes", "active_bytes", "requested_bytes")
                     if name == "allocated_bytes" else ("segment", "active"))
            for key in (name,) + twins:
                full[f"{key}.all.{f}"] = value
    return full


def memory_summary(device="cpu", abbreviated: bool = False) -> str:
    """PyTorch's memory_summary table for `device`."""
    from . import memory_stats
    dev = as_device(device)
    caching = _caching(dev)
    stats = caching.memory_stats() if caching is not None else _plain_stats(memory_stats(dev))
    return format_memory_summary(stats, dev.type, dev.index or 0, abbreviated)


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
