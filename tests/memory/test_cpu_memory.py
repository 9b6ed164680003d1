"""memory_allocated('cpu') is exact: every CPU storage comes from the CPU allocator."""

import numpy as np
import pytest

import glasstorch as gt


def test_allocation_and_free_are_counted_exactly(quiet_gc):
    base = gt.memory.memory_allocated("cpu")
    t = gt.empty(1000)
    assert gt.memory.memory_allocated("cpu") - base == 4000
    u = gt.empty(10, dtype=gt.float64)
    assert gt.memory.memory_allocated("cpu") - base == 4080
    del t
    assert gt.memory.memory_allocated("cpu") - base == 80
    del u
    assert gt.memory.memory_allocated("cpu") == base


def test_views_do_not_allocate_and_keep_the_storage_alive(quiet_gc):
    base = gt.memory.memory_allocated("cpu")
    t = gt.zeros(100)
    v = t.view(10, 10).transpose(0, 1)
    assert gt.memory.memory_allocated("cpu") - base == 400
    del t
    assert gt.memory.memory_allocated("cpu") - base == 400
    del v
    assert gt.memory.memory_allocated("cpu") == base


def test_op_outputs_are_counted_and_peak_tracks_the_maximum(quiet_gc):
    gt.memory.reset_peak_memory_stats("cpu")
    base = gt.memory.memory_allocated("cpu")
    a = gt.ones(256)
    b = a + a
    assert gt.memory.memory_allocated("cpu") - base == 2048
    del a, b
    assert gt.memory.max_memory_allocated("cpu") - base >= 2048
    stats = gt.memory.memory_stats("cpu")
    assert stats["allocated_bytes.all.current"] == gt.memory.memory_allocated("cpu")
    assert stats["allocated_bytes.all.peak"] == gt.memory.max_memory_allocated("cpu")


def test_from_numpy_memory_is_not_ours_to_count(quiet_gc):
    base = gt.memory.memory_allocated("cpu")
    t = gt.from_numpy(np.zeros(1000))
    assert gt.memory.memory_allocated("cpu") == base
    del t


@pytest.mark.parametrize("read_the_array_object", [True, False])
def test_data_pointer_reads_numpy_s_address_for_views_and_offsets(read_the_array_object,
                                                                   monkeypatch):
    from glasstorch.memory import cpu_allocator
    if not read_the_array_object:       # the portable way, taken where the probe disagrees
        monkeypatch.setattr(cpu_allocator, "_DATA_AT", 0)
    data_pointer = cpu_allocator.data_pointer
    base = np.empty(1000, np.uint8)
    for array in (base, base[3:], base[17:500], base[1:801].view(np.float32).reshape(20, 10)):
        assert data_pointer(array) == array.__array_interface__["data"][0]


@pytest.mark.parametrize("read_the_array_object", [True, False])
def test_cpu_storages_are_64_byte_aligned_for_every_size(read_the_array_object, monkeypatch,
                                                          quiet_gc):
    from glasstorch.memory import cpu_allocator
    if not read_the_array_object:
        monkeypatch.setattr(cpu_allocator, "_DATA_AT", 0)
    for n in (1, 3, 63, 64, 65, 1000, 4097):
        storage = gt.empty(n, dtype=gt.uint8).untyped_storage()
        assert storage.data_ptr() % 64 == 0
        assert storage.data_ptr() == storage.buf.__array_interface__["data"][0]


def test_a_freed_small_block_nobody_holds_is_recycled_and_still_counted(quiet_gc):
    base = gt.memory.memory_allocated("cpu")
    t = gt.empty(16)
    address = t.data_ptr()
    del t
    assert gt.memory.memory_allocated("cpu") == base
    u = gt.empty(4, 4)                      # the same number of bytes
    assert u.data_ptr() == address
    assert u.data_ptr() % 64 == 0
    assert gt.memory.memory_allocated("cpu") - base == 64
    del u
    assert gt.memory.memory_allocated("cpu") == base


@pytest.mark.parametrize("hold", ["array view", "storage buffer"])
def test_a_block_something_still_reads_is_never_recycled(quiet_gc, hold):
    t = gt.arange(16, dtype=gt.float32)
    kept = t._array().reshape(4, 4)[1:] if hold == "array view" else t.untyped_storage().buf
    expected = np.array(kept, copy=True)
    address = t.data_ptr()
    del t
    u = gt.full((16,), -1.0)               # would land on the freed block if recycled
    assert u.data_ptr() != address
    np.testing.assert_array_equal(kept, expected)


def test_empty_cache_lets_the_recycled_blocks_go(quiet_gc):
    from glasstorch.memory.cpu_allocator import cpu_allocator
    t = gt.empty(16)
    del t
    assert cpu_allocator._recycled_bytes >= 64
    gt.memory.empty_cache("cpu")
    assert cpu_allocator._recycled_bytes == 0 and not cpu_allocator._recycled


@pytest.fixture
def small_large_blocks(monkeypatch):
    """Blocks from 1 MiB count as large (glibc would map them afresh), kept up to 5 MiB."""
    from glasstorch.memory import cpu_allocator as module
    monkeypatch.setattr(module, "RECYCLE_LARGE_FROM", 1 << 20)
    monkeypatch.setattr(module, "RECYCLE_LARGE_MAX_BYTES", 5 << 20)
    module.cpu_allocator.empty_recycled()
    yield module.cpu_allocator
    module.cpu_allocator.empty_recycled()


def test_a_freed_large_block_is_reused_by_the_next_allocation_of_its_size(
        quiet_gc, small_large_blocks):
    base = gt.memory.memory_allocated("cpu")
    t = gt.empty(1 << 19)                           # 2 MiB
    address = t.data_ptr()
    del t
    assert gt.memory.memory_allocated("cpu") == base
    assert gt.empty(1 << 18).data_ptr() != address  # another size does not take it
    u = gt.full((1 << 19,), 3.0)
    assert u.data_ptr() == address and u.data_ptr() % 64 == 0
    assert gt.memory.memory_allocated("cpu") - base == 2 << 20
    np.testing.assert_array_equal(u.numpy(), 3.0)


def test_a_block_of_exactly_the_mmap_threshold_is_kept(quiet_gc, monkeypatch):
    """glibc maps a 32 MiB tensor's buffer afresh (its request is 32 MiB + alignment + a
    header): the allocator keeps it like any larger one, so no new pages come next time."""
    from glasstorch.memory import cpu_allocator as module
    monkeypatch.setattr(module, "RECYCLE_LARGE_MAX_BYTES", 256 << 20)   # whatever the env says
    module.cpu_allocator.empty_recycled()
    t = gt.empty(module.MMAP_THRESHOLD // 4)                # float32: exactly 32 MiB
    address = t.data_ptr()
    del t
    try:
        assert gt.empty(module.MMAP_THRESHOLD // 4).data_ptr() == address
    finally:
        module.cpu_allocator.empty_recycled()


def test_a_large_block_something_still_reads_is_not_kept(quiet_gc, small_large_blocks):
    t = gt.arange(1 << 19, dtype=gt.float32)
    kept = t._array()[5:]
    address = t.data_ptr()
    del t
    u = gt.full((1 << 19,), -1.0)
    assert u.data_ptr() != address
    np.testing.assert_array_equal(kept[:3], [5.0, 6.0, 7.0])


def test_kept_large_blocks_are_bounded_and_the_oldest_go_first(quiet_gc, small_large_blocks):
    blocks = [gt.empty(1 << 19) for _ in range(3)]           # 2 MiB each, 5 MiB kept at most
    addresses = [b.data_ptr() for b in blocks]
    while blocks:
        del blocks[0]                                        # freed first to last
    assert small_large_blocks._large_bytes == 4 << 20
    again = [gt.empty(1 << 19) for _ in range(2)]
    assert {t.data_ptr() for t in again} == set(addresses[1:])


def test_empty_cache_and_a_failed_allocation_let_the_large_blocks_go(quiet_gc,
                                                                   small_large_blocks):
    gt.empty(1 << 19)                             # made and freed at once
    assert small_large_blocks._large_bytes == 2 << 20
    gt.memory.empty_cache("cpu")
    assert small_large_blocks._large_bytes == 0 and not small_large_blocks._large

    def no_memory(*args):
        raise MemoryError
    gt.empty(1 << 19)                             # made and freed at once
    buf = small_large_blocks.allocate(3 << 20, _empty=no_memory)   # retried once emptied
    assert buf.nbytes == 3 << 20 and not small_large_blocks._large
    small_large_blocks.free(3 << 20, buf)
    small_large_blocks.empty_recycled()
    with pytest.raises(gt.OutOfMemoryError, match="not enough memory"):
        small_large_blocks.allocate(3 << 20, _empty=no_memory)
