"""Allocator statistics with PyTorch's key names (`allocated_bytes.all.current`, ...)."""
from __future__ import annotations

# torch.cuda.memory_stats' array statistics, each {all,large_pool,small_pool}.{fields}
ARRAY_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
               "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
POOLS = ("all", "large_pool", "small_pool")
FIELDS = ("current", "peak", "allocated", "freed")
OVERSIZE_STATS = ("oversize_allocations", "oversize_segments")    # each .{fields}
COUNTERS = ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
            "num_device_free", "num_oom_rejections")


def stats_keys() -> list:
    """Every key memory_stats() has, sorted (with max_split_size)."""
    keys = [f"{s}.{p}.{f}" for s in ARRAY_STATS for p in POOLS for f in FIELDS]
    keys += [f"{s}.{f}" for s in OVERSIZE_STATS for f in FIELDS]
    return sorted(keys + list(COUNTERS) + ["max_split_size"])


class MemoryStats:
    """Counters the plain (non-caching) CPU allocator keeps.

    Its hot path only adds up bytes and counts; the rest of PyTorch's keys follow from what
    a non-caching allocator is: every buffer is its own segment (reserved == active ==
    allocated), it asks for exactly the requested bytes, nothing is split or retried, and it
    has no pools (the large_pool/small_pool entries stay 0).
    """

    __slots__ = ("allocated_bytes", "peak_allocated_bytes", "allocation_count",
                 "total_allocated_bytes", "free_count", "peak_count", "num_ooms")

    def __init__(self):
        self.allocated_bytes = 0
        self.peak_allocated_bytes = 0
        self.allocation_count = 0
        self.total_allocated_bytes = 0
        self.free_count = 0
        self.peak_count = 0          # most live buffers at once, as of the last free
        self.num_ooms = 0

    @property
    def total_freed_bytes(self) -> int:
        """Bytes freed in all (what was allocated less what is live: one counter fewer to
        keep on every free)."""
        return self.total_allocated_bytes - self.allocated_bytes

    @property
    def live_count(self) -> int:
        return self.allocation_count - self.free_count

    def reset_peak(self) -> None:
        self.peak_allocated_bytes = self.allocated_bytes
        self.peak_count = self.live_count

    def reset_accumulated(self) -> None:
        """allocated/freed totals and the counters back to 0 (reset_accumulated_memory_stats);
        the live buffers are counted as allocated again so current = allocated - freed."""
        self.total_allocated_bytes = self.allocated_bytes
        self.allocation_count, self.free_count = self.live_count, 0
        self.num_ooms = 0

    def as_dict(self) -> dict:
        live = self.live_count
        byte_stat = (self.allocated_bytes, max(self.peak_allocated_bytes, self.allocated_bytes),
                     self.total_allocated_bytes, self.total_freed_bytes)
        count_stat = (live, max(self.peak_count, live), self.allocation_count, self.free_count)
        out = dict.fromkeys(stats_keys(), 0)
        for name in ARRAY_STATS:
            if name.startswith("inactive_split"):
                continue
            values = byte_stat if name.endswith("_bytes") else count_stat
            for field, value in zip(FIELDS, values):
                out[f"{name}.all.{field}"] = value
        out.update(num_ooms=self.num_ooms, num_device_alloc=self.allocation_count,
                   num_device_free=self.free_count, max_split_size=-1)
        return out
