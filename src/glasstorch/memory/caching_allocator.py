"""A device-agnostic caching allocator over a raw backend (c10's CUDACachingAllocator).

Segments come from the backend; the allocator carves them into blocks by integer address,
caches freed blocks per (pool, stream), and reuses them best-fit, so a steady training loop
stops calling the backend after its first step. The rules and statistics are PyTorch's:
sizes round to 512 bytes, requests up to 1 MiB share 2 MiB segments (small pool), larger
ones use 20 MiB segments below 10 MiB and their own 2 MiB-rounded segment above; blocks
split and coalesce; a miss frees the cache and retries once before OutOfMemoryError.
"""
from __future__ import annotations

import threading
from bisect import bisect_left, insort

from .alloc_conf import UNLIMITED, AllocConf, parse_alloc_conf
from .errors import OutOfMemoryError, format_size
from .raw_backends import RawAllocationError

MIN_BLOCK_SIZE = 512            # kMinBlockSize
SMALL_SIZE = 1 << 20            # kSmallSize: largest request served by the small pool
SMALL_BUFFER = 2 << 20          # kSmallBuffer: small-pool segment size
LARGE_BUFFER = 20 << 20         # kLargeBuffer: large-pool segment size below MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 << 20      # kMinLargeAlloc
ROUND_LARGE = 2 << 20           # kRoundLarge

STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
         "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
POOL_NAMES = ("all", "small_pool", "large_pool")
_FIELDS = ("current", "peak", "allocated", "freed")


class Stat:
    """current/peak/allocated/freed with PyTorch's update rules."""

    __slots__ = _FIELDS

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def increase(self, n: int) -> None:
        self.current += n
        self.allocated += n
        if self.current > self.peak:
            self.peak = self.current

    def decrease(self, n: int) -> None:
        self.current -= n
        self.freed += n


class Block:
    """A run of bytes inside one segment; `prev`/`next` link the segment's blocks by address."""

    __slots__ = ("address", "size", "requested_size", "stream", "pool", "segment", "allocated",
                 "prev", "next", "stream_uses", "events", "gc_count")

    def __init__(self, address, size, stream, pool, segment):
        self.address = address
        self.size = size
        self.requested_size = 0
        self.stream = stream
        self.pool = pool
        self.segment = segment
        self.allocated = False
        self.prev = self.next = None
        self.stream_uses = set()
        self.events = []
        self.gc_count = 0       # lookups since it was cached (garbage_collection_threshold)

    def is_split(self) -> bool:
        return self.prev is not None or self.next is not None

    def __repr__(self):
        state = "allocated" if self.allocated else "free"
        return f"Block(address={self.address:#x}, size={self.size}, {state})"


class Segment:
    """One backend allocation: its handle, base address and size."""

    __slots__ = ("handle", "address", "size", "stream", "pool")

    def __init__(self, handle, address, size, stream, pool):
        self.handle, self.address, self.size = handle, address, size
        self.stream, self.pool = stream, pool


class BlockPool:
    """The cached (free) blocks of one pool, ordered by (stream, size, address)."""

    def __init__(self, is_small: bool):
        self.is_small = is_small
        self.keys = []          # sorted (stream index, size, address)
        self.blocks = {}        # key -> Block

    def insert(self, block, stream_index):
        key = (stream_index, block.size, block.address)
        insort(self.keys, key)
        self.blocks[key] = block

    def remove(self, block, stream_index):
        key = (stream_index, block.size, block.address)
        del self.keys[bisect_left(self.keys, key)]
        del self.blocks[key]

    def lower_bound(self, stream_index, size):
        """The smallest cached block on that stream with at least `size` bytes, or None."""
        i = bisect_left(self.keys, (stream_index, size, -1))
        if i == len(self.keys) or self.keys[i][0] != stream_index:
            return None
        return self.blocks[self.keys[i]]

    def __iter__(self):
        return iter([self.blocks[k] for k in self.keys])

    def __len__(self):
        return len(self.keys)


class CachingAllocator:
    """malloc/free/record_stream/empty_cache over `backend`, with PyTorch's statistics."""

    def __init__(self, backend, device="cpu", conf: AllocConf | None = None):
        self.backend = backend
        self.device = device
        self.conf = parse_alloc_conf() if conf is None else conf
        self.small_pool = BlockPool(True)
        self.large_pool = BlockPool(False)
        self.segments = {}          # address -> Segment
        self.active = set()         # allocated or pending-free blocks
        self.pending = []           # freed blocks waiting for their stream events
        self._streams = {}          # stream -> index, for ordering pools by stream
        self.memory_fraction = None
        self.memory_limit = None    # bytes (set_memory_limit); None: only the fraction caps
        self.reserved = 0           # total_allocated_memory: bytes in segments
        # Frees can arrive re-entrantly (a finalizer run by the garbage collector in the
        # middle of malloc) or from other threads: the lock serialises threads, and a free
        # that arrives while this thread is inside the allocator waits in `_deferred`.
        self._lock = threading.RLock()
        self._busy = False
        self._deferred = []
        self.reset_stats()

    # ---- statistics -------------------------------------------------------------------
    def reset_stats(self):
        self.stats = {name: {pool: Stat() for pool in POOL_NAMES} for name in STATS}
        self._pairs = {small: {name: (pools["all"], pools[own])
                               for name, pools in self.stats.items()}
                       for small, own in ((True, "small_pool"), (False, "large_pool"))}
        self.oversize_allocations = Stat()
        self.oversize_segments = Stat()
        self.num_alloc_retries = self.num_ooms = self.num_sync_all_streams = 0
        self.num_device_alloc = self.num_device_free = 0

    def _update(self, pool, changes):
        """Apply (stat name, delta) changes to the 'all' entries and to the pool's own
        (Stat.increase / Stat.decrease inlined, for both: every malloc and free comes here
        three or four times)."""
        pairs = self._pairs[pool.is_small]
        for name, n in changes:
            every, own = pairs[name]
            if n >= 0:
                current = every.current = every.current + n
                every.allocated += n
                if current > every.peak:
                    every.peak = current
                current = own.current = own.current + n
                own.allocated += n
                if current > own.peak:
                    own.peak = current
            else:
                every.current += n
                every.freed -= n
                own.current += n
                own.freed -= n

    def memory_stats(self) -> dict:
        """A flat dict with PyTorch's keys, sorted (torch.cuda.memory_stats)."""
        out = {}
        for name, pools in self.stats.items():
            for pool, stat in pools.items():
                for f in _FIELDS:
                    out[f"{name}.{pool}.{f}"] = getattr(stat, f)
        for name, stat in (("oversize_allocations", self.oversize_allocations),
                           ("oversize_segments", self.oversize_segments)):
            for f in _FIELDS:
                out[f"{name}.{f}"] = getattr(stat, f)
        out.update(num_alloc_retries=self.num_alloc_retries, num_ooms=self.num_ooms,
                   num_sync_all_streams=self.num_sync_all_streams,
                   num_device_alloc=self.num_device_alloc,
                   num_device_free=self.num_device_free, num_oom_rejections=0,
                   max_split_size=(-1 if self.conf.max_split_size == UNLIMITED
                                   else self.conf.max_split_size))
        return dict(sorted(out.items()))

    def reset_peak_stats(self):
        for pools in self.stats.values():
            for stat in pools.values():
                stat.peak = stat.current
        for stat in (self.oversize_allocations, self.oversize_segments):
            stat.peak = stat.current

    def reset_accumulated_stats(self):
        for pools in self.stats.values():
            for stat in pools.values():
                stat.allocated = stat.freed = 0
        for stat in (self.oversize_allocations, self.oversize_segments):
            stat.allocated = stat.freed = 0
        self.num_alloc_retries = self.num_ooms = self.num_sync_all_streams = 0
        self.num_device_alloc = self.num_device_free = 0

    def memory_allocated(self) -> int:
        return self.stats["allocated_bytes"]["all"].current

    def memory_reserved(self) -> int:
        return self.stats["reserved_bytes"]["all"].current

    # ---- sizes --------------------------------------------------------------------------
    def round_size(self, size: int) -> int:
        """The block size a request of `size` bytes gets (round_size)."""
        if size < MIN_BLOCK_SIZE:
            return MIN_BLOCK_SIZE
        divisions = self.conf.divisions_for(size)
        if divisions > 1 and size > MIN_BLOCK_SIZE * divisions:
            return _roundup_power2_next_division(size, divisions)
        return -(-size // MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE

    @staticmethod
    def allocation_size(size: int) -> int:
        """The segment size a miss for a block of `size` bytes asks the backend for."""
        if size <= SMALL_SIZE:
            return SMALL_BUFFER
        if size < MIN_LARGE_ALLOC:
            return LARGE_BUFFER
        return -(-size // ROUND_LARGE) * ROUND_LARGE

    def _stream_index(self, stream):
        index = self._streams.get(stream)
        if index is None:
            index = self._streams[stream] = len(self._streams)
        return index

    # ---- malloc ---------------------------------------------------------------------------
    def malloc(self, nbytes: int, stream=0) -> Block:
        """A block of at least `nbytes` bytes usable on `stream`."""
        with self._lock:
            self._busy = True
            try:
                return self._malloc(nbytes, stream)
            finally:
                self._busy = False
                self._drain()

    def _drain(self):
        while self._deferred:
            self._busy = True
            try:
                self._free(self._deferred.pop())
            finally:
                self._busy = False

    def _malloc(self, nbytes, stream):
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
        self._process_events()
        size = self.round_size(nbytes)
        pool = self.small_pool if size <= SMALL_SIZE else self.large_pool
        alloc_size = self.allocation_size(size)
        sidx = self._stream_index(stream)
        block = self._get_free_block(pool, sidx, size)
        if block is None:
            if self._capped() and self.conf.garbage_collection_threshold > 0:
                self._garbage_collect()
            block = self._alloc_block(pool, stream, alloc_size, False)
            if block is None and self._release_available_cached_blocks(pool, sidx, size):
                block = self._alloc_block(pool, stream, alloc_size, False)
            if block is None:
                self._release_cached_blocks()
                block = self._alloc_block(pool, stream, alloc_size, True)
            if block is None:
                self.num_ooms += 1
                raise OutOfMemoryError(self._oom_message(alloc_size, size))
        return self._alloc_found_block(block, pool, sidx, size, nbytes)

    def _get_free_block(self, pool, sidx, size):
        if self.conf.garbage_collection_threshold > 0:
            for cached in pool:
                cached.gc_count += 1
        block = pool.lower_bound(sidx, size)
        if block is None:
            return None
        max_split = self.conf.max_split_size
        if size < max_split <= block.size:
            return None         # never hand an oversize block to a small request
        if size >= max_split and block.size >= size + self.conf.max_non_split_rounding_size:
            return None         # nor one much larger than an oversize request
        pool.remove(block, sidx)
        block.gc_count = 0
        return block

    def _alloc_block(self, pool, stream, alloc_size, is_retry):
        if is_retry:
            self.num_alloc_retries += 1
        if self._capped() and self.reserved + alloc_size > self._allowed_maximum():
            return None
        try:
            handle = self.backend.malloc(alloc_size)
        except RawAllocationError:
            return None
        address = self.backend.address(handle)
        segment = Segment(handle, address, alloc_size, stream, pool)
        self.segments[address] = segment
        self.reserved += alloc_size
        self.num_device_alloc += 1
        self._update(pool, (("segment", 1), ("reserved_bytes", alloc_size)))
        if alloc_size >= self.conf.max_split_size:
            self.oversize_segments.increase(1)
        return Block(address, alloc_size, stream, pool, segment)

    def _should_split(self, block, size):
        remaining = block.size - size
        if block.pool.is_small:
            return remaining >= MIN_BLOCK_SIZE
        return size < self.conf.max_split_size and remaining > SMALL_SIZE

    def _alloc_found_block(self, block, pool, sidx, size, requested):
        already_split = block.is_split()
        if self._should_split(block, size):
            rest = block
            block = Block(rest.address, size, rest.stream, pool, rest.segment)
            block.prev = rest.prev
            if block.prev is not None:
                block.prev.next = block
            block.next = rest
            rest.prev = block
            rest.address += size
            rest.size -= size
            pool.insert(rest, sidx)
            if already_split:       # an inactive split block shrinks by `size`
                changes = [("inactive_split_bytes", -size)]
            else:                   # a fresh inactive split block appears
                changes = [("inactive_split_bytes", rest.size), ("inactive_split", 1)]
        elif already_split:         # an inactive split block becomes active
            changes = [("inactive_split_bytes", -block.size), ("inactive_split", -1)]
        else:
            changes = []
        block.allocated = True
        block.requested_size = requested
        self.active.add(block)
        changes += (("allocation", 1), ("allocated_bytes", block.size), ("active", 1),
                    ("active_bytes", block.size), ("requested_bytes", requested))
        self._update(pool, changes)
        if block.size >= self.conf.max_split_size:
            self.oversize_allocations.increase(1)
        return block

    # ---- free -----------------------------------------------------------------------------
    def free(self, block: Block) -> None:
        """Return `block`; it is cached until empty_cache, never handed to the backend here."""
        with self._lock:
            if self._busy:
                self._deferred.append(block)
                return
            self._busy = True
            try:
                self._free(block)
            finally:
                self._busy = False
                self._drain()

    def _free(self, block):
        if not block.allocated:
            raise RuntimeError(f"invalid free of {block!r}: it is not allocated")
        block.allocated = False
        freed = [("allocation", -1), ("allocated_bytes", -block.size)]
        if block.size >= self.conf.max_split_size:
            self.oversize_allocations.decrease(1)
        if block.stream_uses:
            # Other streams may still read it: reusable once their events complete.
            self._update(block.pool, freed)
            block.events = [self.backend.record_event(s) for s in block.stream_uses]
            block.stream_uses = set()
            self.pending.append(block)
        else:
            self._free_block(block, freed)

    def record_stream(self, block: Block, stream) -> None:
        """Mark `block` as used on `stream` too (ignored for its own stream)."""
        if stream != block.stream:
            block.stream_uses.add(stream)

    def _try_merge(self, dst, src, pool, sidx):
        if src is None or src.allocated or src.events or src.stream_uses or src in self.active:
            return 0
        if dst.prev is src:
            dst.address = src.address
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
        else:
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        subsumed = src.size
        pool.remove(src, sidx)
        dst.size += subsumed
        return subsumed

    def _free_block(self, block, changes=None):
        """Cache a freed block, merged with free neighbours; `changes`: statistics the
        caller still owes, applied with this block's."""
        pool = block.pool
        sidx = self._stream_index(block.stream)
        size, requested = block.size, block.requested_size
        split_blocks = split_bytes = 0
        for candidate in (block.prev, block.next):
            subsumed = self._try_merge(block, candidate, pool, sidx)
            if subsumed:
                split_blocks -= 1
                split_bytes -= subsumed
        self.active.discard(block)
        block.gc_count = 0
        pool.insert(block, sidx)
        if block.is_split():
            split_blocks += 1
            split_bytes += block.size
        changes = [] if changes is None else changes
        changes += (("active", -1), ("active_bytes", -size), ("requested_bytes", -requested))
        if split_blocks:
            changes.append(("inactive_split", split_blocks))
        if split_bytes:
            changes.append(("inactive_split_bytes", split_bytes))
        self._update(pool, changes)

    def _process_events(self):
        if not self.pending:
            return
        still = []
        for block in self.pending:
            if all(e.query() for e in block.events):
                block.events = []
                self._free_block(block)
            else:
                still.append(block)
        self.pending = still

    def _synchronize_and_free_events(self):
        self.num_sync_all_streams += 1
        for block in self.pending:
            for event in block.events:
                event.synchronize()
            block.events = []
            self._free_block(block)
        self.pending = []

    # ---- giving memory back ---------------------------------------------------------------
    def _release_block(self, block):
        """Hand a whole free segment back to the backend."""
        pool = block.pool
        pool.remove(block, self._stream_index(block.stream))
        segment = self.segments.pop(block.address)
        self.backend.free(segment.handle)
        self.reserved -= block.size
        self.num_device_free += 1
        self._update(pool, (("segment", -1), ("reserved_bytes", -block.size)))
        if block.size >= self.conf.max_split_size:
            self.oversize_segments.decrease(1)

    def _release_cached_blocks(self):
        self._synchronize_and_free_events()
        for pool in (self.large_pool, self.small_pool):
            for block in pool:
                if not block.is_split():
                    self._release_block(block)

    def _release_available_cached_blocks(self, pool, sidx, size):
        """With max_split_size set: free oversize cached blocks, largest first, to fit `size`."""
        max_split = self.conf.max_split_size
        if max_split == UNLIMITED:
            return False
        want = max(size, max_split)
        candidates = [b for b in pool if self._streams[b.stream] == sidx
                      and b.size >= max_split and not b.is_split()]
        fitting = [b for b in candidates if b.size >= want]
        if fitting:
            self._release_block(min(fitting, key=lambda b: (b.size, b.address)))
            return True
        released = 0
        for block in sorted(candidates, key=lambda b: (b.size, b.address), reverse=True):
            if released >= want:
                break
            self._release_block(block)
            released += block.size
        return released >= want

    def empty_cache(self) -> None:
        """Free every cached segment that is wholly unused; split segments stay."""
        with self._lock:
            self._busy = True
            try:
                self._release_cached_blocks()
            finally:
                self._busy = False
                self._drain()

    # ---- memory fraction and garbage collection ---------------------------------------------
    def set_memory_fraction(self, fraction: float) -> None:
        """Cap this allocator at `fraction` of the backend's total capacity."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        self.memory_fraction = fraction

    def set_memory_limit(self, nbytes) -> None:
        """Cap this allocator's reserved memory at `nbytes` (None: no byte cap)."""
        if nbytes is not None and (not isinstance(nbytes, int) or nbytes < 0):
            raise ValueError(f"memory limit must be a non-negative int or None, got {nbytes!r}")
        self.memory_limit = nbytes

    def _capped(self) -> bool:
        return self.memory_fraction is not None or self.memory_limit is not None

    def _allowed_maximum(self):
        caps = [] if self.memory_limit is None else [self.memory_limit]
        if self.memory_fraction is not None:
            caps.append(int(self.memory_fraction * self.backend.mem_get_info()[1]))
        return min(caps)

    def _garbage_collect(self):
        """Free old unsplit large cached blocks until usage is under the threshold."""
        limit = self.conf.garbage_collection_threshold * self._allowed_maximum()
        if self.reserved <= limit:
            return
        target = self.reserved - limit
        freeable = [b for b in self.large_pool if not b.is_split()]
        if not freeable:
            return
        self._synchronize_and_free_events()
        total_age = sum(b.gc_count for b in freeable)
        reclaimed, freed_any = 0, True
        while reclaimed < target and freed_any and freeable:
            age_threshold = total_age / len(freeable)
            freed_any = False
            for block in list(freeable):
                if block.gc_count >= age_threshold:
                    freed_any = True
                    reclaimed += block.size
                    total_age -= block.gc_count
                    freeable.remove(block)
                    self._release_block(block)

    # ---- reporting ----------------------------------------------------------------------------
    def _oom_message(self, alloc_size, size):
        free, total = self.backend.mem_get_info()
        allocated = self.memory_allocated()
        unallocated = self.reserved - allocated
        device = str(self.device)
        msg = (f"{device.split(':')[0].upper()} out of memory. Tried to allocate "
               f"{format_size(alloc_size)}. Device {device} has a total capacity of "
               f"{format_size(total)} of which {format_size(free)} is free. ")
        if self._capped():
            msg += f"{format_size(self._allowed_maximum())} allowed; "
        msg += (f"Of the allocated memory {format_size(allocated)} is allocated by glasstorch, "
                f"and {format_size(unallocated)} is reserved by glasstorch but unallocated.")
        if unallocated >= size:
            # Enough bytes are cached, only not in one piece: fragmentation.
            msg += (" If reserved but unallocated memory is large try setting "
                    "GLASSTORCH_ALLOC_CONF=max_split_size_mb:<N> to avoid fragmentation.")
        return msg

    def snapshot(self) -> dict:
        """Segments with their blocks, by address (torch.cuda.memory_snapshot's layout)."""
        segments = []
        for address in sorted(self.segments):
            seg = self.segments[address]
            blocks = []
            block = self._first_block(seg)
            while block is not None:
                if block.allocated:
                    state = "active_allocated"
                elif block in self.active:
                    state = "active_pending_free"
                else:
                    state = "inactive"
                blocks.append({"address": block.address, "size": block.size,
                               "requested_size": block.requested_size if state != "inactive"
                               else 0, "state": state, "frames": []})
                block = block.next
            segments.append({
                "device": self.device, "address": address, "total_size": seg.size,
                "allocated_size": sum(b["size"] for b in blocks
                                      if b["state"] == "active_allocated"),
                "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
                "requested_size": sum(b["requested_size"] for b in blocks),
                "stream": seg.stream, "segment_type": "small" if seg.pool.is_small else "large",
                "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                "blocks": blocks})
        return {"segments": segments, "device_traces": []}

    def _first_block(self, seg):
        for block in self.active:
            if block.segment is seg and block.prev is None:
                return block
        for block in seg.pool:
            if block.segment is seg and block.prev is None:
                return block
        raise AssertionError("segment without blocks")


def _roundup_power2_next_division(size, divisions):
    if size & (size - 1) == 0:
        return size
    floor = 1 << (size.bit_length() - 1)
    step = floor >> (divisions.bit_length() - 1)
    if step == 0:
        return floor << 1
    rounded = size & ~(step - 1)
    return size if rounded == size else rounded + step
