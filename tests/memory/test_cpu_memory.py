"""memory_allocated('cpu') is exact: every CPU storage comes from the CPU allocator."""

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
    import numpy as np
    base = gt.memory.memory_allocated("cpu")
    t = gt.from_numpy(np.zeros(1000))
    assert gt.memory.memory_allocated("cpu") == base
    del t
