"""The CPU allocator: 64-byte aligned host memory, counted exactly (c10's CPUAllocator).

Every CPU storage's bytes come from here, so `memory_allocated('cpu')` is exact. Like
PyTorch's, it does not cache: a freed block goes straight back to NumPy's allocator, and
`empty` memory is not zeroed.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .stats import MemoryStats

ALIGNMENT = 64  # bytes, c10's gAlignment
addressof = ctypes.addressof
_byte = ctypes.c_char  # from_buffer reads an address faster than ndarray.ctypes


class CPUAllocator:
    """Hands out aligned uint8 buffers and keeps statistics of what is live.

    `observer`, when set, is called as observer(event, nbytes, address) with event "alloc"
    or "free" (memory history recording); None costs the hot path one attribute check.
    """

    observer = None

    def __init__(self):
        self.stats = MemoryStats()

    def allocate(self, nbytes: int, _empty=np.empty, _u8=np.uint8) -> np.ndarray:
        """A fresh, uninitialised, 64-byte aligned uint8 buffer of exactly `nbytes`."""
        try:
            raw = _empty(nbytes + ALIGNMENT, _u8)
        except (MemoryError, ValueError):
            raise RuntimeError(
                f"DefaultCPUAllocator: not enough memory: you tried to allocate {nbytes} "
                "bytes.") from None
        base = addressof(_byte.from_buffer(raw))
        start = -base & (ALIGNMENT - 1)
        stats = self.stats
        stats.allocated_bytes += nbytes
        stats.total_allocated_bytes += nbytes
        stats.allocation_count += 1
        if stats.allocated_bytes > stats.peak_allocated_bytes:
            stats.peak_allocated_bytes = stats.allocated_bytes
        if self.observer is not None:
            self.observer("alloc", nbytes, base + start)
        return raw[start:start + nbytes]

    def free(self, nbytes: int, buf=None) -> None:
        """Account for `nbytes` going back; `buf` (the allocated buffer) names the address."""
        self.stats.on_free(nbytes)
        if self.observer is not None and nbytes and buf is not None:
            self.observer("free", nbytes, addressof(_byte.from_buffer(buf)))


cpu_allocator = CPUAllocator()
