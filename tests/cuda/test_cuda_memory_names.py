"""torch.cuda's raw allocations and memory-fraction getter over glasstorch's caching
allocator (simulated CuPy off the GPU)."""
import pytest

import glasstorch as gt


def test_caching_allocator_alloc_and_delete_count_in_the_stats():
    before = gt.cuda.memory_allocated()
    ptr = gt.cuda.caching_allocator_alloc(1024)
    assert isinstance(ptr, int) and gt.cuda.memory_allocated() >= before + 1024
    nested = gt.cuda.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == \
        gt.cuda.memory_stats()["allocated_bytes.all.current"]
    gt.cuda.caching_allocator_delete(ptr)
    assert gt.cuda.memory_allocated() == before
    with pytest.raises(RuntimeError, match="was not allocated by caching_allocator_alloc"):
        gt.cuda.caching_allocator_delete(ptr)


def test_memory_fraction_reads_back_and_backend_is_native():
    assert gt.cuda.get_per_process_memory_fraction() == 1.0
    gt.cuda.set_per_process_memory_fraction(0.5)
    try:
        assert gt.cuda.get_per_process_memory_fraction() == 0.5
    finally:
        gt.cuda.set_per_process_memory_fraction(1.0)
    assert gt.cuda.get_allocator_backend() == "native"
