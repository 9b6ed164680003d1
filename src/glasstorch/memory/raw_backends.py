"""Raw backends: where a caching allocator's segments come from (cudaMalloc's role).

A backend hands out whole segments and takes them back; the caching allocator carves them
into blocks by integer address. `CapacityLimitedBackend` caps another backend so that
fragmentation and out-of-memory happen at sizes a test can reach.
"""
from __future__ import annotations

import os
from typing import Protocol

import numpy as np

from .cpu_allocator import cpu_allocator as _plain   # its `observer` sees every CPU allocation

ALIGNMENT = 512   # segment start alignment: blocks inside stay 512-byte aligned


class RawAllocationError(Exception):
    """A backend could not provide a segment (cudaErrorMemoryAllocation's role)."""


class CompletedEvent:
    """An event on a stream that has no pending work: host streams run synchronously."""

    __slots__ = ()

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass


class RawBackend(Protocol):
    def malloc(self, nbytes: int): ...            # a segment handle; raises RawAllocationError
    def address(self, handle) -> int: ...         # its first byte's address
    def free(self, handle) -> None: ...
    def mem_get_info(self) -> tuple: ...          # (free bytes, total bytes)
    def record_event(self, stream): ...           # an object with query() and synchronize()


class HostBackend:
    """Host memory: each segment is an aligned uint8 NumPy array."""

    name = "host"

    def malloc(self, nbytes: int) -> np.ndarray:
        try:
            raw = np.empty(nbytes + ALIGNMENT, np.uint8)
        except (MemoryError, ValueError):
            raise RawAllocationError(f"host allocation of {nbytes} bytes failed") from None
        start = -raw.ctypes.data & (ALIGNMENT - 1)
        return raw[start:start + nbytes]

    def address(self, handle: np.ndarray) -> int:
        return handle.ctypes.data

    def free(self, handle) -> None:
        """NumPy frees the array once nothing references it."""

    def mem_get_info(self) -> tuple:
        try:
            with open("/proc/meminfo") as f:
                info = dict(line.split(":", 1) for line in f)
            free = int(info["MemAvailable"].split()[0]) * 1024
        except (OSError, KeyError, ValueError):
            free = 0
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return free, total

    def record_event(self, stream) -> CompletedEvent:
        return CompletedEvent()


class CapacityLimitedBackend:
    """Another backend (host memory by default) with at most `capacity_bytes` handed out."""

    def __init__(self, capacity_bytes: int, inner=None):
        if capacity_bytes < 0:
            raise ValueError(f"capacity_bytes must be non-negative, got {capacity_bytes}")
        self.capacity = int(capacity_bytes)
        self.inner = HostBackend() if inner is None else inner
        self.in_use = 0
        self._sizes = {}
        self.name = f"capacity-limited {self.inner.name}"

    def malloc(self, nbytes: int):
        if self.in_use + nbytes > self.capacity:
            raise RawAllocationError(
                f"capacity {self.capacity} bytes exceeded: {self.in_use} in use, "
                f"{nbytes} requested")
        handle = self.inner.malloc(nbytes)
        self._sizes[self.inner.address(handle)] = nbytes
        self.in_use += nbytes
        return handle

    def address(self, handle) -> int:
        return self.inner.address(handle)

    def free(self, handle) -> None:
        self.in_use -= self._sizes.pop(self.inner.address(handle))
        self.inner.free(handle)

    def mem_get_info(self) -> tuple:
        return self.capacity - self.in_use, self.capacity

    def record_event(self, stream):
        return self.inner.record_event(stream)


class _BlockOwner:
    """Owns one block while any NumPy view of its bytes lives; returns it when collected."""

    __slots__ = ("allocator", "block", "segment", "nbytes", "__array_interface__")

    def __del__(self):
        allocator = self.allocator
        if allocator is not None:
            self.allocator = None
            observer = _plain.observer if _plain is not None else None
            if observer is not None:
                observer("free", self.nbytes, self.block.address)
            allocator.free(self.block)


class HostCachingAllocator:
    """The CPU storages' allocator interface (allocate/free) over a CachingAllocator.

    A storage's `buf` is a view of a cached host segment whose NumPy base is a _BlockOwner:
    arrays from `t.numpy()` or `_array()` keep the block allocated after the storage is gone,
    so reusing the block can never overwrite bytes someone still reads.
    """

    def __init__(self, caching):
        self.caching = caching
        self.stats = _StatsView(caching)

    def allocate(self, nbytes: int, stream=0) -> np.ndarray:
        if nbytes == 0:
            return np.empty(0, np.uint8)     # like PyTorch: no block for zero bytes
        block = self.caching.malloc(nbytes, stream)
        owner = _BlockOwner()
        owner.allocator = self.caching
        owner.block = block
        owner.segment = block.segment.handle     # the segment outlives every view of it
        owner.nbytes = nbytes
        owner.__array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "version": 3,
            "data": (block.address, False)}
        if _plain.observer is not None:          # memory history records CPU allocations
            _plain.observer("alloc", nbytes, block.address)
        return np.asarray(owner)

    def free(self, nbytes: int, buf=None) -> None:
        """Nothing to do: the block goes back when the last view of it is collected."""


class _StatsView:
    """The plain CPU allocator's `stats` attributes, read from the caching allocator."""

    def __init__(self, caching):
        self._caching = caching

    @property
    def allocated_bytes(self):
        return self._caching.memory_allocated()

    @property
    def peak_allocated_bytes(self):
        return self._caching.stats["allocated_bytes"]["all"].peak

    def reset_peak(self):
        self._caching.reset_peak_stats()

    def as_dict(self):
        return self._caching.memory_stats()
