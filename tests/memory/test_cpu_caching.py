"""The caching allocator switched on for CPU storages: statistics, the lifetime of NumPy views
of cached blocks, out-of-memory on a capacity-limited backend, and whole training runs."""
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.memory.raw_backends import CapacityLimitedBackend

import test_training_parity as parity

MiB = 1 << 20


@pytest.fixture
def caching(quiet_gc):
    gt.memory.set_cpu_allocator("caching")
    try:
        yield
    finally:
        gt.memory.set_cpu_allocator("default")


def test_stats_reserved_summary_snapshot_and_empty_cache(caching):
    t = gt.empty(1000)                          # 4000 bytes -> a 4096-byte block
    assert gt.memory.memory_allocated() == 4096
    assert gt.memory.memory_reserved() == 2 * MiB
    stats = gt.memory.memory_stats("cpu")
    assert stats["requested_bytes.small_pool.current"] == 4000
    assert stats["segment.small_pool.current"] == 1 and stats["num_device_alloc"] == 1
    (segment,) = gt.memory.memory_snapshot()
    assert segment["address"] == t.data_ptr() and segment["segment_type"] == "small"
    assert [(b["size"], b["state"]) for b in segment["blocks"]] == [
        (4096, "active_allocated"), (2 * MiB - 4096, "inactive")]
    summary = gt.memory.memory_summary("cpu")
    assert "glasstorch CPU memory summary" in summary
    assert "| CPU reserved memory   |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |" \
        in summary
    del t
    assert gt.memory.memory_allocated() == 0 and gt.memory.memory_reserved() == 2 * MiB
    assert gt.memory.max_memory_allocated() == 4096
    gt.memory.empty_cache()
    assert gt.memory.memory_reserved() == 0 and gt.memory.max_memory_reserved() == 2 * MiB
    gt.memory.reset_peak_memory_stats()
    assert gt.memory.max_memory_reserved() == 0 and gt.memory.memory_snapshot() == []


def test_a_freed_block_is_reused_best_fit():
    gt.memory.set_cpu_allocator("caching")
    try:
        keep = [gt.empty(256) for _ in range(3)]        # 1 KiB blocks, back to back
        address = keep[1].data_ptr()
        del keep[1]
        assert gt.empty(200).data_ptr() == address      # the 1 KiB hole fits best
        assert gt.memory.memory_stats()["num_device_alloc"] == 1
    finally:
        gt.memory.set_cpu_allocator("default")


def test_numpy_arrays_keep_their_block_allocated(caching):
    t = gt.arange(1024, dtype=gt.float32)
    a = t.numpy()
    strided = t._array()[::3]
    address = a.ctypes.data
    del t
    gc.collect()
    assert gt.memory.memory_allocated() == 4096        # still held by the arrays
    others = [gt.full((1024,), 7.0) for _ in range(4)]
    assert address not in {o.data_ptr() for o in others}
    np.testing.assert_array_equal(a, np.arange(1024, dtype=np.float32))
    np.testing.assert_array_equal(strided, np.arange(0, 1024, 3, dtype=np.float32))
    del a
    assert gt.memory.memory_allocated() == 5 * 4096    # `strided` still holds it
    del strided
    assert gt.memory.memory_allocated() == 4 * 4096
    assert gt.empty(1024).data_ptr() == address        # now it is reused
    assert all((o.numpy() == 7).all() for o in others)


def test_resize_and_zero_byte_storages(caching):
    s = gt.UntypedStorage(100)
    s[0] = 42
    assert gt.memory.memory_allocated() == 512
    s.resize_(5000)
    assert s[0] == 42 and gt.memory.memory_allocated() == 5120
    del s
    empty = gt.empty(0)
    assert gt.memory.memory_allocated() == 0 and empty.numel() == 0


def test_capacity_limited_backend_raises_out_of_memory(quiet_gc):
    gt.memory.set_cpu_allocator("caching", backend=CapacityLimitedBackend(4 * MiB))
    try:
        small = gt.ones(1000)
        with pytest.raises(gt.OutOfMemoryError, match="Tried to allocate 20.00 MiB") as info:
            gt.empty(MiB)                           # 4 MiB: large pool, a 20 MiB segment
        assert isinstance(info.value, RuntimeError)
        assert "4.00 MiB of which 2.00 MiB is free" in str(info.value)
        stats = gt.memory.memory_stats()
        assert stats["num_ooms"] == 1 and stats["num_alloc_retries"] == 1
        assert (small.numpy() == 1).all() and gt.memory.memory_allocated() == 4096
    finally:
        gt.memory.set_cpu_allocator("default")


def _step(model, opt, x, y):
    loss = gt.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def _train(steps):
    gt.manual_seed(0)
    model = parity.mlp(gt)
    opt = gt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(1)
    x = gt.from_numpy(rng.standard_normal((16, 20)).astype(np.float32))
    y = gt.from_numpy(rng.integers(0, 5, 16))
    losses = [_step(model, opt, x, y) for _ in range(steps)]
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_training_matches_the_default_allocator_and_stops_calling_the_backend(quiet_gc):
    expected_losses, expected_params = _train(4)
    gt.memory.set_cpu_allocator("caching")
    try:
        losses, params = _train(1)
        warm = gt.memory.memory_stats()["num_device_alloc"]
        losses, params = _train(4)
        assert gt.memory.memory_stats()["num_device_alloc"] == warm   # all from the cache
        assert losses == expected_losses
        for p, e in zip(params, expected_params):
            np.testing.assert_array_equal(p, e)
        del params
        gc.collect()
        assert gt.memory.memory_allocated() == 0
        assert gt.memory.memory_reserved() >= 2 * MiB
    finally:
        gt.memory.set_cpu_allocator("default")


def test_training_parity_with_torch_under_caching(caching):
    parity.test_loss_curve_follows_torch(parity.cnn, (1, 8, 8), "adam")
    stats = gt.memory.memory_stats()
    assert stats["allocation.all.allocated"] > 100 and stats["num_ooms"] == 0


def test_default_allocator_reports_reserved_as_allocated(quiet_gc):
    t = gt.empty(1000)
    assert gt.memory.memory_reserved() == gt.memory.memory_allocated()
    assert gt.memory.max_memory_reserved() == gt.memory.max_memory_allocated()
    assert gt.memory.memory_snapshot() == []
    gt.memory.empty_cache()
    summary = gt.memory.memory_summary()
    assert "Allocated memory" in summary and "CPU reserved memory" in summary
    assert all(len(line) == 77 for line in summary.splitlines())
    del t


def test_blocks_live_across_a_switch_go_back_to_their_allocator(quiet_gc):
    gt.memory.set_cpu_allocator("caching")
    t = gt.ones(1000)
    gt.memory.set_cpu_allocator("default")
    base = gt.memory.memory_allocated()
    del t                                       # returns to the caching allocator, no error
    assert gt.memory.memory_allocated() == base


def test_set_cpu_allocator_rejects_bad_arguments():
    with pytest.raises(ValueError, match="'cachin'"):
        gt.memory.set_cpu_allocator("cachin")
    with pytest.raises(ValueError, match="no backend"):
        gt.memory.set_cpu_allocator("default", backend=CapacityLimitedBackend(1))


def _run(env_value, code):
    env = dict(os.environ, GLASSTORCH_CPU_ALLOCATOR=env_value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_environment_variable_switches_at_import():
    done = _run("caching", "import glasstorch as gt; t = gt.ones(10); "
                "print(gt.memory.memory_reserved(), gt.memory.memory_allocated())")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.split() == [str(2 * MiB), "512"]
    bad = _run("sometimes", "import glasstorch")
    assert bad.returncode != 0 and "GLASSTORCH_CPU_ALLOCATOR" in bad.stderr


def test_memory_history_records_allocations_under_caching(caching):
    gt.memory._record_memory_history()
    try:
        x = gt.zeros(1000, 100)                       # this line is the allocation site
        line = sys._getframe().f_lineno - 1
        address = x.data_ptr()
        del x
        trace = gt.memory._snapshot()["device_traces"][0]
    finally:
        gt.memory._record_memory_history(enabled=None)
    events = [(e["action"], e["size"]) for e in trace if e["addr"] == address]
    assert events[:2] == [("alloc", 400_000), ("free_completed", 400_000)]
    alloc = next(e for e in trace if e["addr"] == address)
    assert any(f["line"] == line and f["filename"] == __file__ for f in alloc["frames"])
