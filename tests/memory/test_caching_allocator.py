"""The caching allocator's algorithm, scripted: every expected number below is derived by hand
from PyTorch's rules (rounding, pools, segment sizes, split thresholds, best fit, coalescing,
max_split_size, streams, retry, empty_cache), not read back from glasstorch."""
import pytest

import glasstorch as gt
from glasstorch.memory.alloc_conf import AllocConf, parse_alloc_conf
from glasstorch.memory.caching_allocator import (CachingAllocator,
                                                 _roundup_power2_next_division)
from glasstorch.memory.errors import OutOfMemoryError
from glasstorch.memory.raw_backends import (CapacityLimitedBackend, HostBackend,
                                            RawAllocationError)
from glasstorch.memory.summary import format_memory_summary

KiB, MiB = 1 << 10, 1 << 20


class FakeBackend:
    """Integer addresses only, segments 1 GiB apart; events complete when the test says."""

    def __init__(self, capacity=1 << 40):
        self.capacity, self.in_use, self.next_address, self.live = capacity, 0, 1 << 30, {}
        self.events = []

    def malloc(self, nbytes):
        if self.in_use + nbytes > self.capacity:
            raise RawAllocationError("full")
        address, self.next_address = self.next_address, self.next_address + (1 << 30)
        self.live[address] = nbytes
        self.in_use += nbytes
        return address

    def address(self, handle):
        return handle

    def free(self, handle):
        self.in_use -= self.live.pop(handle)

    def mem_get_info(self):
        return self.capacity - self.in_use, self.capacity

    def record_event(self, stream):
        event = Event()
        self.events.append(event)
        return event


class Event:
    done = False

    def query(self):
        return self.done

    def synchronize(self):
        self.done = True


def make(capacity=1 << 40, **conf):
    backend = FakeBackend(capacity)
    return CachingAllocator(backend, "cuda:0", AllocConf(**conf)), backend


def stat(alloc, key):
    return alloc.memory_stats()[key]


def cur(alloc, name, pool="all"):
    return stat(alloc, f"{name}.{pool}.current")


# ---- rounding, pools, segment sizes -------------------------------------------------------
@pytest.mark.parametrize("request_size,rounded", [
    (0, 512), (1, 512), (512, 512), (513, 1024), (1000, 1024), (MiB + 1, MiB + 512)])
def test_sizes_round_up_to_512(request_size, rounded):
    alloc, _ = make()
    assert alloc.round_size(request_size) == rounded


def test_roundup_power2_divisions():
    alloc, _ = make(roundup_power2_divisions=[4] * 64)
    assert _roundup_power2_next_division(1200, 4) == 1280   # 1024 + a quarter step of 256
    assert alloc.round_size(1200) == 1536          # not above 512 * 4: plain 512 rounding
    assert alloc.round_size(4097) == 5120          # 4096 + one step of 1024 (plain: 4608)
    assert alloc.round_size(8192) == 8192          # powers of two stay
    assert alloc.round_size(3 * MiB + 1) == 3 * MiB + 512 * KiB


@pytest.mark.parametrize("request_size,pool,segment", [
    (1000, "small", 2 * MiB), (MiB, "small", 2 * MiB), (MiB + 1, "large", 20 * MiB),
    (10 * MiB - 512, "large", 20 * MiB), (10 * MiB, "large", 10 * MiB),
    (11 * MiB, "large", 12 * MiB), (30 * MiB + 1, "large", 32 * MiB)])
def test_pool_choice_and_segment_size(request_size, pool, segment):
    alloc, backend = make()
    alloc.malloc(request_size)
    assert list(backend.live.values()) == [segment]
    assert cur(alloc, "reserved_bytes", pool + "_pool") == segment
    assert cur(alloc, "segment", pool + "_pool") == 1
    assert stat(alloc, "num_device_alloc") == 1


def test_small_request_stats_after_malloc_and_free():
    alloc, _ = make()
    block = alloc.malloc(1000)
    expect = {"allocated_bytes": 1024, "active_bytes": 1024, "requested_bytes": 1000,
              "reserved_bytes": 2 * MiB, "inactive_split_bytes": 2 * MiB - 1024,
              "allocation": 1, "active": 1, "segment": 1, "inactive_split": 1}
    for name, value in expect.items():
        assert cur(alloc, name, "small_pool") == value, name
        assert cur(alloc, name) == value, name
        assert cur(alloc, name, "large_pool") == 0, name
    alloc.free(block)
    s = alloc.memory_stats()
    assert s["allocated_bytes.all.current"] == 0 and s["allocated_bytes.all.freed"] == 1024
    assert s["allocated_bytes.all.peak"] == 1024
    assert s["requested_bytes.all.current"] == 0 and s["requested_bytes.all.freed"] == 1000
    assert s["inactive_split.all.current"] == 0      # coalesced back into one whole block
    assert s["inactive_split_bytes.all.freed"] == 2 * MiB - 1024
    assert s["reserved_bytes.all.current"] == 2 * MiB      # cached, not given back
    assert s["num_device_free"] == 0


# ---- splitting thresholds --------------------------------------------------------------------
def test_large_block_splits_only_when_more_than_1mib_remains():
    alloc, _ = make()
    whole = alloc.malloc(19 * MiB)              # 20 MiB segment, 1 MiB would remain: no split
    assert whole.size == 20 * MiB and not whole.is_split()
    assert cur(alloc, "allocated_bytes") == 20 * MiB
    assert cur(alloc, "inactive_split") == 0
    split = alloc.malloc(19 * MiB - 512)        # 1 MiB + 512 remains: split
    assert split.size == 19 * MiB - 512 and split.next.size == MiB + 512
    assert cur(alloc, "inactive_split_bytes", "large_pool") == MiB + 512
    big = alloc.malloc(11 * MiB)                # own 12 MiB segment, 1 MiB remains: no split
    assert big.size == 12 * MiB


def test_small_block_splits_when_512_bytes_remain():
    alloc, _ = make()
    a = alloc.malloc(MiB)
    b = alloc.malloc(MiB - 512)                 # from the 1 MiB remainder: 512 remain
    assert b.address == a.address + MiB and b.size == MiB - 512
    assert cur(alloc, "inactive_split_bytes") == 512 and cur(alloc, "inactive_split") == 1
    c = alloc.malloc(1)                         # takes the last 512 exactly: no split
    assert c.address == b.address + b.size and c.size == 512 and c.next is None
    assert cur(alloc, "inactive_split_bytes") == 0 and cur(alloc, "inactive_split") == 0
    assert stat(alloc, "num_device_alloc") == 1


# ---- coalescing and best fit -----------------------------------------------------------------
def test_free_coalesces_with_free_neighbours():
    alloc, _ = make()
    a, b, c = alloc.malloc(512), alloc.malloc(1024), alloc.malloc(2048)
    assert cur(alloc, "inactive_split") == 1
    assert cur(alloc, "inactive_split_bytes") == 2 * MiB - 3584
    alloc.free(b)                               # between two live blocks: a new free split block
    assert cur(alloc, "inactive_split") == 2
    assert cur(alloc, "inactive_split_bytes") == 2 * MiB - 3584 + 1024
    alloc.free(a)                               # merges with b
    assert cur(alloc, "inactive_split") == 2
    assert cur(alloc, "inactive_split_bytes") == 2 * MiB - 2048
    assert cur(alloc, "active") == 1 and cur(alloc, "active_bytes") == 2048
    alloc.free(c)                               # merges with both: one whole free segment
    assert cur(alloc, "inactive_split") == 0 and cur(alloc, "inactive_split_bytes") == 0
    (segment,) = alloc.snapshot()["segments"]
    assert segment["blocks"] == [{"address": a.address, "size": 2 * MiB, "requested_size": 0,
                                  "state": "inactive", "frames": []}]


def test_best_fit_takes_the_smallest_block_that_fits():
    alloc, _ = make()
    x1 = alloc.malloc(8 * KiB)
    alloc.malloc(512)
    x2 = alloc.malloc(4 * KiB)
    alloc.malloc(512)
    x3 = alloc.malloc(16 * KiB)
    alloc.malloc(512)
    addresses = {x1.address: "x1", x2.address: "x2", x3.address: "x3"}
    x2_address = x2.address     # freed blocks are reused objects: keep the numbers
    for x in (x1, x2, x3):
        alloc.free(x)
    got = alloc.malloc(3 * KiB)                 # 4 KiB is the best fit; it is split
    assert addresses[got.address] == "x2" and got.size == 3 * KiB
    got = alloc.malloc(5 * KiB)                 # 8 KiB next
    assert addresses[got.address] == "x1"
    got = alloc.malloc(1024)                    # the 1 KiB left of x2 fits exactly
    assert got.address == x2_address + 3 * KiB and got.size == 1024
    got = alloc.malloc(12 * KiB)                # only x3 (16 KiB) or the tail fit: x3 is smaller
    assert addresses[got.address] == "x3"
    assert stat(alloc, "num_device_alloc") == 1


# ---- max_split_size ---------------------------------------------------------------------------
def test_max_split_size_keeps_oversize_blocks_whole():
    alloc, backend = make(max_split_size=40 * MiB)
    a = alloc.malloc(50 * MiB)
    assert a.size == 50 * MiB
    assert stat(alloc, "oversize_allocations.current") == 1
    assert stat(alloc, "oversize_segments.current") == 1
    assert stat(alloc, "max_split_size") == 40 * MiB
    alloc.free(a)
    b = alloc.malloc(45 * MiB)                  # >= max_split: reuses 50 MiB (< 45 + 20), unsplit
    assert b.address == a.address and b.size == 50 * MiB and not b.is_split()
    alloc.free(b)
    c = alloc.malloc(21 * MiB)                  # below max_split: never takes an oversize block
    assert c.segment is not a.segment and c.size == 22 * MiB
    alloc.free(c)
    d = alloc.malloc(29 * MiB)                  # 50 >= 29 + 20: too wasteful, a new segment
    assert d.segment is not a.segment and d.size == 30 * MiB
    assert len(backend.live) == 3
    assert stat(alloc, "oversize_allocations.allocated") == 2


def test_without_max_split_size_a_large_block_is_split():
    alloc, _ = make()
    a = alloc.malloc(50 * MiB)
    address = a.address
    alloc.free(a)
    b = alloc.malloc(21 * MiB)
    assert b.address == address and b.size == 21 * MiB and b.next.size == 29 * MiB
    assert stat(alloc, "max_split_size") == -1


def test_release_available_cached_blocks_frees_the_smallest_fitting_oversize_block():
    alloc, backend = make(capacity=100 * MiB, max_split_size=40 * MiB)
    a, b = alloc.malloc(50 * MiB), alloc.malloc(45 * MiB)
    alloc.free(a)
    alloc.free(b)
    c = alloc.malloc(22 * MiB)      # 95 + 22 > 100: frees the 46 MiB block, no full retry
    assert c.size == 22 * MiB
    assert sorted(backend.live.values()) == [22 * MiB, 50 * MiB]
    assert stat(alloc, "num_alloc_retries") == 0 and stat(alloc, "num_device_free") == 1
    assert stat(alloc, "oversize_segments.current") == 1


# ---- streams --------------------------------------------------------------------------------
def test_blocks_are_reused_only_on_their_own_stream():
    alloc, backend = make()
    a = alloc.malloc(1000, stream=0)
    address, segment = a.address, a.segment
    alloc.free(a)
    b = alloc.malloc(1000, stream=1)
    assert b.segment is not segment and stat(alloc, "num_device_alloc") == 2
    c = alloc.malloc(1000, stream=0)
    assert c.address == address
    (s0, s1) = alloc.snapshot()["segments"]
    assert (s0["stream"], s1["stream"]) == (0, 1)


def test_record_stream_delays_reuse_until_the_event_completes():
    alloc, backend = make()
    a = alloc.malloc(1000, stream=0)
    alloc.record_stream(a, 0)                   # its own stream: ignored
    alloc.record_stream(a, 1)
    alloc.free(a)
    assert cur(alloc, "allocated_bytes") == 0 and cur(alloc, "active") == 1
    states = [blk["state"] for blk in alloc.snapshot()["segments"][0]["blocks"]]
    assert states == ["active_pending_free", "inactive"]
    assert len(backend.events) == 1
    b = alloc.malloc(1000, stream=0)            # the event is pending: a is not reused
    assert b.address == a.address + 1024
    backend.events[0].done = True
    c = alloc.malloc(1000, stream=0)            # processed at this malloc: a is free again
    assert c.address == a.address
    assert cur(alloc, "active") == 2


def test_empty_cache_completes_pending_frees():
    alloc, backend = make()
    a = alloc.malloc(1000)
    alloc.record_stream(a, "side")
    alloc.free(a)
    alloc.empty_cache()
    assert backend.live == {} and stat(alloc, "num_sync_all_streams") == 1
    assert cur(alloc, "active") == 0 and cur(alloc, "reserved_bytes") == 0


# ---- retry, empty_cache, OOM ---------------------------------------------------------------
def test_a_miss_frees_the_cache_and_retries_once():
    alloc, backend = make(capacity=22 * MiB)
    alloc.free(alloc.malloc(1000))              # a cached 2 MiB small segment
    big = alloc.malloc(20 * MiB + 1)            # needs 22 MiB: only after freeing the cache
    assert big.segment.size == 22 * MiB and big.size == 20 * MiB + 512   # split: 1.5 MiB left
    s = alloc.memory_stats()
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    assert s["num_device_alloc"] == 2 and s["num_device_free"] == 1
    assert s["segment.small_pool.current"] == 0 and s["segment.large_pool.current"] == 1
    assert s["reserved_bytes.all.peak"] == 22 * MiB


def test_empty_cache_releases_only_whole_free_segments():
    alloc, backend = make()
    keep = alloc.malloc(1000, stream=0)         # segment A: split, one block live
    alloc.free(alloc.malloc(1000, stream=1))    # segment B: wholly free
    alloc.free(alloc.malloc(5 * MiB))           # segment C (large): wholly free
    assert cur(alloc, "reserved_bytes") == 24 * MiB
    alloc.empty_cache()
    assert list(backend.live) == [keep.segment.address]
    assert cur(alloc, "reserved_bytes") == 2 * MiB and stat(alloc, "num_device_free") == 2
    alloc.free(keep)
    alloc.empty_cache()
    assert backend.live == {} and cur(alloc, "segment") == 0


def _fragment(alloc):
    """Two 20 MiB segments as 6+6+6+2 MiB with the middle 6 MiB of each free."""
    blocks = [alloc.malloc(6 * MiB) for _ in range(6)]
    alloc.free(blocks[1])
    alloc.free(blocks[4])
    return blocks


def test_fragmentation_oom_names_the_sizes_and_gives_the_hint():
    alloc, backend = make(capacity=40 * MiB)
    _fragment(alloc)
    assert cur(alloc, "allocated_bytes") == 24 * MiB and cur(alloc, "reserved_bytes") == 40 * MiB
    with pytest.raises(gt.OutOfMemoryError) as info:
        alloc.malloc(8 * MiB)
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError) and gt.OutOfMemoryError is OutOfMemoryError
    assert "Tried to allocate 20.00 MiB" in msg
    assert "total capacity of 40.00 MiB of which 0 bytes is free" in msg
    assert "24.00 MiB is allocated by glasstorch" in msg
    assert "16.00 MiB is reserved by glasstorch but unallocated" in msg
    assert "max_split_size_mb" in msg and "GLASSTORCH_ALLOC_CONF" in msg
    s = alloc.memory_stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 1 and s["num_device_free"] == 0
    assert cur(alloc, "allocated_bytes") == 24 * MiB     # nothing changed
    assert alloc.malloc(6 * MiB).size == 6 * MiB        # a fitting block is still served


def test_oom_without_fragmentation_has_no_hint():
    alloc, _ = make(capacity=10 * MiB)
    alloc.malloc(1000)
    with pytest.raises(OutOfMemoryError) as info:
        alloc.malloc(9 * MiB)
    msg = str(info.value)
    assert "Tried to allocate 20.00 MiB" in msg and "of which 8.00 MiB is free" in msg
    assert "1024 bytes is allocated" in msg and "max_split_size_mb" not in msg


def test_capacity_limited_backend_counts_and_refuses():
    backend = CapacityLimitedBackend(4 * MiB, HostBackend())
    alloc = CachingAllocator(backend, "cpu", AllocConf())
    a = alloc.malloc(MiB)
    assert backend.in_use == 2 * MiB and backend.mem_get_info() == (2 * MiB, 4 * MiB)
    assert backend.address(a.segment.handle) % 512 == 0
    with pytest.raises(OutOfMemoryError, match="Tried to allocate 20.00 MiB"):
        alloc.malloc(MiB + 1)
    alloc.free(a)
    alloc.empty_cache()
    assert backend.in_use == 0
    with pytest.raises(ValueError):
        CapacityLimitedBackend(-1)


# ---- garbage collection with a memory fraction -------------------------------------------------
def test_garbage_collection_frees_old_unsplit_blocks_above_the_threshold():
    alloc, backend = make(capacity=100 * MiB, garbage_collection_threshold=0.5)
    alloc.set_memory_fraction(0.5)              # 50 MiB allowed, collect above 25 MiB
    a = alloc.malloc(12 * MiB)
    alloc.free(a)
    b = alloc.malloc(14 * MiB)                  # a ages by one lookup
    alloc.free(b)
    alloc.malloc(16 * MiB)                      # 26 MiB reserved > 25: the older a goes
    assert sorted(backend.live.values()) == [14 * MiB, 16 * MiB]
    assert stat(alloc, "num_device_free") == 1
    with pytest.raises(OutOfMemoryError, match="allowed;"):
        alloc.malloc(40 * MiB)                  # 16 + 40 is over the 50 MiB fraction
    with pytest.raises(ValueError):
        alloc.set_memory_fraction(1.5)


# ---- statistics bookkeeping ----------------------------------------------------------------------
def test_peak_reset_and_key_names():
    alloc, _ = make()
    a = alloc.malloc(3 * MiB)
    alloc.free(a)
    s = alloc.memory_stats()
    assert list(s) == sorted(s)
    for name in ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
                 "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"):
        for pool in ("all", "large_pool", "small_pool"):
            for field in ("current", "peak", "allocated", "freed"):
                assert f"{name}.{pool}.{field}" in s
    for key in ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
                "num_sync_all_streams", "oversize_allocations.peak", "oversize_segments.freed"):
        assert key in s
    assert s["allocated_bytes.large_pool.peak"] == 3 * MiB
    alloc.reset_peak_stats()
    assert stat(alloc, "allocated_bytes.large_pool.peak") == 0
    assert stat(alloc, "reserved_bytes.all.peak") == 20 * MiB
    alloc.reset_accumulated_stats()
    assert stat(alloc, "allocated_bytes.all.allocated") == 0
    assert stat(alloc, "num_device_alloc") == 0


def test_freeing_twice_is_an_error():
    alloc, _ = make()
    a = alloc.malloc(10)
    alloc.free(a)
    with pytest.raises(RuntimeError, match="not allocated"):
        alloc.free(a)
    with pytest.raises(ValueError):
        alloc.malloc(-1)


def test_snapshot_lists_segments_and_blocks():
    alloc, _ = make()
    a = alloc.malloc(1000)
    b = alloc.malloc(3 * MiB, stream=7)
    snap = alloc.snapshot()
    small, large = snap["segments"]
    assert snap["device_traces"] == []
    assert small["segment_type"] == "small" and small["total_size"] == 2 * MiB
    assert small["allocated_size"] == 1024 and small["active_size"] == 1024
    assert small["requested_size"] == 1000 and small["stream"] == 0
    assert small["address"] == a.address and small["device"] == "cuda:0"
    assert [(blk["size"], blk["state"]) for blk in small["blocks"]] == [
        (1024, "active_allocated"), (2 * MiB - 1024, "inactive")]
    assert large["segment_type"] == "large" and large["stream"] == 7
    assert [(blk["address"], blk["size"], blk["state"]) for blk in large["blocks"]] == [
        (b.address, 3 * MiB, "active_allocated"), (b.address + 3 * MiB, 17 * MiB, "inactive")]


# ---- configuration -------------------------------------------------------------------------------
def test_alloc_conf_parses_pytorch_syntax():
    conf = parse_alloc_conf("max_split_size_mb:128, garbage_collection_threshold:0.6,"
                            "roundup_power2_divisions:4")
    assert conf.max_split_size == 128 * MiB and conf.garbage_collection_threshold == 0.6
    assert conf.divisions_for(5000) == 4 and conf.divisions_for(1 << 34) == 4
    conf = parse_alloc_conf("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]")
    assert conf.divisions_for(100 * MiB) == 1 and conf.divisions_for(300 * MiB) == 1
    assert conf.divisions_for(600 * MiB) == 2 and conf.divisions_for(1500 * MiB) == 4
    assert conf.divisions_for(3000 * MiB) == 8
    assert conf.divisions_for(1000 * MiB) == 2 and conf.divisions_for(1024 * MiB) == 4
    assert parse_alloc_conf("").max_split_size == AllocConf().max_split_size
    assert parse_alloc_conf("expandable_segments:False").garbage_collection_threshold == 0


@pytest.mark.parametrize("text,match", [
    ("max_split_size_mb:20", "max_split_size_mb too small"),
    ("max_split_size_mb:abc", "'abc' for max_split_size_mb"),
    ("garbage_collection_threshold:1.5", "garbage_collection_threshold"),
    ("garbage_collection_threshold:x", "expected a number"),
    ("roundup_power2_divisions:3", "power of 2"),
    ("roundup_power2_divisions:[300:2]", "'300'"),
    ("roundup_power2_divisions:[256:2", "missing"),
    ("expandable_segments:True", "not supported"),
    ("expandable_segments:yes", "True or False"),
    ("max_split_size_mb", "expected 'key:value'"),
    ("colour:blue", "unknown option 'colour'"),
])
def test_alloc_conf_errors_name_the_bad_key_or_value(text, match):
    with pytest.raises(ValueError, match=match):
        parse_alloc_conf(text)


def test_alloc_conf_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("GLASSTORCH_ALLOC_CONF", "max_split_size_mb:64")
    assert CachingAllocator(FakeBackend()).conf.max_split_size == 64 * MiB


# ---- memory_summary's layout against PyTorch's own formatter ------------------------------------
def _fake_stats(seed):
    alloc, _ = make(max_split_size=40 * MiB)
    blocks = [alloc.malloc(n) for n in (1000, 3 * MiB, 50 * MiB, 700 * MiB, 5000)]
    alloc.free(blocks[seed % len(blocks)])
    return alloc.memory_stats()


@pytest.mark.parametrize("abbreviated", [False, True])
@pytest.mark.parametrize("seed", [0, 2])
def test_summary_matches_torch_layout(monkeypatch, abbreviated, seed):
    from oracle import oracle_torch
    torch = oracle_torch()
    import torch.cuda.memory as tcm
    stats = _fake_stats(seed)
    stats["allocation.all.allocated"] = 800_000       # exercises the K count unit
    monkeypatch.setattr(tcm, "memory_stats", lambda device=None: stats)
    expected = tcm.memory_summary(device=0, abbreviated=abbreviated).split("\n")
    got = format_memory_summary(stats, "cuda", 0, abbreviated).split("\n")
    assert len(got) == len(expected)
    assert "glasstorch CUDA memory summary, device ID 0" in got[1]
    assert len(got[1]) == len(expected[1]) == 77
    assert got[:1] + got[2:] == expected[:1] + expected[2:]
    del torch


def test_summary_for_cpu_renames_the_device_rows():
    text = format_memory_summary(_fake_stats(0), "cpu")
    assert "CPU reserved memory" in text and "CPU reserved segments" in text
    assert "Oversize CPU segments" in text and "GPU" not in text
    assert all(len(line) == 77 for line in text.splitlines())


def test_a_free_arriving_inside_malloc_waits_until_malloc_is_done():
    """A garbage-collector finalizer may free a block while malloc is half-way through."""
    alloc, backend = make()
    victim = alloc.malloc(1000)
    real_malloc = backend.malloc

    def malloc_that_collects(nbytes):
        alloc.free(victim)                      # re-entrant: deferred, not applied here
        assert victim.allocated
        return real_malloc(nbytes)

    backend.malloc = malloc_that_collects
    big = alloc.malloc(5 * MiB)
    assert not victim.allocated and big.allocated
    assert cur(alloc, "allocated_bytes") == 5 * MiB and cur(alloc, "inactive_split") == 1
