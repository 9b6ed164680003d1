"""Allocator statistics with PyTorch's key names (`allocated_bytes.all.current`, ...)."""
from __future__ import annotations


class MemoryStats:
    """Counters an allocator keeps: current, peak, allocated and freed totals per stat."""

    __slots__ = ("allocated_bytes", "peak_allocated_bytes", "allocation_count",
                 "total_allocated_bytes", "total_freed_bytes", "free_count")

    def __init__(self):
        self.allocated_bytes = 0
        self.peak_allocated_bytes = 0
        self.allocation_count = 0
        self.total_allocated_bytes = 0
        self.total_freed_bytes = 0
        self.free_count = 0

    def on_free(self, nbytes: int) -> None:
        self.allocated_bytes -= nbytes
        self.total_freed_bytes += nbytes
        self.free_count += 1

    def reset_peak(self) -> None:
        self.peak_allocated_bytes = self.allocated_bytes

    def as_dict(self) -> dict:
        live = self.allocation_count - self.free_count
        return {
            "allocated_bytes.all.current": self.allocated_bytes,
            "allocated_bytes.all.peak": self.peak_allocated_bytes,
            "allocated_bytes.all.allocated": self.total_allocated_bytes,
            "allocated_bytes.all.freed": self.total_freed_bytes,
            "allocation.all.current": live,
            "allocation.all.allocated": self.allocation_count,
            "allocation.all.freed": self.free_count,
        }
