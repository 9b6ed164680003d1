"""glasstorch.cuda's device, stream, event, seed and memory API, checked on the GPU (or on
simulated CuPy) against what the same calls report through CuPy itself."""
import gc
import inspect
import pickle

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cuda import runtime


def test_device_queries_agree_with_cupy():
    cp = runtime.cupy()
    assert gt.cuda.is_available()
    assert gt.cuda.device_count() == cp.cuda.runtime.getDeviceCount() >= 1
    assert gt.cuda.current_device() == cp.cuda.runtime.getDevice()
    props = gt.cuda.get_device_properties(0)
    raw = cp.cuda.runtime.getDeviceProperties(0)
    assert props.total_memory == raw["totalGlobalMem"] > 0
    assert gt.cuda.get_device_capability() == (raw["major"], raw["minor"])
    assert gt.cuda.get_device_name() == props.name and isinstance(props.name, str)
    free, total = gt.cuda.mem_get_info()
    assert 0 <= free <= total == props.total_memory


def test_bad_device_indices_raise():
    n = gt.cuda.device_count()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        gt.cuda.set_device(n)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        gt.zeros(2, device=f"cuda:{n}")
    with pytest.raises(ValueError, match="Expected a cuda device"):
        gt.cuda.get_device_properties("cpu")


def test_tensors_name_their_gpu_and_print_it():
    t = gt.arange(3.0, device="cuda")
    assert t.device == gt.device("cuda", 0) and t.is_cuda and t.get_device() == 0
    assert "device='cuda:0'" in repr(t)
    assert t.tolist() == [0.0, 1.0, 2.0] and t[1].item() == 1.0


def test_device_context_manager_restores_the_current_device():
    before = gt.cuda.current_device()
    with gt.cuda.device(0):
        assert gt.cuda.current_device() == 0
    with gt.cuda.device(None):
        pass
    assert gt.cuda.current_device() == before


def test_stream_context_makes_the_stream_current():
    s = gt.cuda.Stream()
    default = gt.cuda.current_stream()
    assert default == gt.cuda.default_stream()
    with gt.cuda.stream(s):
        assert gt.cuda.current_stream() == s
        x = gt.ones(4, device="cuda") * 2
    assert gt.cuda.current_stream() == default
    s.synchronize()
    assert s.query()
    assert x.sum().item() == 8.0


def test_events_time_work_and_refuse_untimed_pairs():
    start, end = gt.cuda.Event(enable_timing=True), gt.cuda.Event(enable_timing=True)
    start.record()
    gt.ones(1000, device="cuda").sum()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    untimed = gt.cuda.Event()
    untimed.record()
    with pytest.raises(RuntimeError, match="enable_timing"):
        start.elapsed_time(untimed)
    with pytest.raises(RuntimeError, match="recorded"):
        gt.cuda.Event(enable_timing=True).elapsed_time(end)


def test_wait_stream_and_wait_event_order_streams():
    a, b = gt.cuda.Stream(), gt.cuda.Stream()
    with gt.cuda.stream(a):
        x = gt.full((1000,), 3.0, device="cuda")
    b.wait_stream(a)
    with gt.cuda.stream(b):
        y = x * 2
    b.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), np.full(1000, 6.0, np.float32))


def test_gpu_seeds_are_separate_from_the_cpu_seed():
    gt.manual_seed(0)
    assert gt.cuda.initial_seed() == 0
    gt.cuda.manual_seed(5)
    assert gt.cuda.initial_seed() == 5 and gt.initial_seed() == 0
    gt.cuda.manual_seed_all(7)
    assert gt.cuda.initial_seed() == 7
    state = gt.cuda.get_rng_state()
    assert state.dtype is gt.uint8 and state.device.type == "cpu"
    gt.cuda.set_rng_state(state)


def test_memory_accounting_is_exact_and_returns_to_the_start(quiet_gc):
    gt.cuda.synchronize()
    before = gt.cuda.memory_allocated()
    x = gt.empty(1000, device="cuda")                  # 4000 bytes -> one 4096-byte block
    assert gt.cuda.memory_allocated() - before == 4096
    assert gt.cuda.memory_reserved() >= gt.cuda.memory_allocated()
    stats = gt.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == gt.cuda.memory_allocated()
    assert gt.cuda.max_memory_allocated() >= gt.cuda.memory_allocated()
    del x
    assert gt.cuda.memory_allocated() == before
    gt.cuda.empty_cache()
    assert gt.cuda.memory_reserved() >= gt.cuda.memory_allocated()
    assert "memory summary" in gt.cuda.memory_summary()


def test_cupy_temporaries_come_from_glasstorchs_allocator(quiet_gc):
    cp = runtime.cupy()
    gt.zeros(1, device="cuda")             # the allocator exists and CuPy is routed to it
    count = gt.cuda.memory_stats()["allocation.all.allocated"]
    tmp = cp.ones(1 << 20, cp.float32)     # a CuPy array made outside any glasstorch op
    assert gt.cuda.memory_stats()["allocation.all.allocated"] == count + 1
    assert gt.cuda.memory_allocated() >= tmp.nbytes
    del tmp


def test_steady_loop_reuses_cached_blocks(quiet_gc):
    x = gt.randn(256, 256).cuda()
    for _ in range(2):
        (x @ x).relu().sum()
    segments = gt.cuda.memory_stats()["segment.all.allocated"]
    for _ in range(5):
        (x @ x).relu().sum()
    assert gt.cuda.memory_stats()["segment.all.allocated"] == segments


def test_out_of_memory_is_raised_after_freeing_the_cache(quiet_gc):
    gt.cuda.empty_cache()
    total = gt.cuda.get_device_properties().total_memory
    gt.cuda.set_per_process_memory_fraction(0.0)
    try:
        with pytest.raises(gt.cuda.OutOfMemoryError, match="CUDA out of memory. Tried to "
                                                           "allocate"):
            gt.empty(512 * 1024, device="cuda")
    finally:
        gt.cuda.set_per_process_memory_fraction(1.0)
    assert total > 0
    assert gt.cuda.memory_stats()["num_ooms"] >= 1
    y = gt.empty(512 * 1024, device="cuda")     # and the allocator still works afterwards
    del y


def test_record_stream_delays_reuse_until_the_other_stream_is_done(quiet_gc):
    side = gt.cuda.Stream()
    x = gt.ones(1 << 16, device="cuda")
    address = x.data_ptr()
    with gt.cuda.stream(side):
        y = x * 2
    x.record_stream(side)
    del x
    gc.collect()
    z = gt.empty(1 << 16, device="cuda")
    # Until `side` is known to be done the block may not be handed out again; once it is,
    # reuse is allowed (work here may already be finished, so both outcomes are legal only
    # in that order).
    if z.data_ptr() == address:
        assert side.query()
    side.synchronize()
    assert y.sum().item() == 2.0 * (1 << 16)


def test_storage_of_a_gpu_tensor():
    t = gt.tensor([1, 2, 3], dtype=gt.uint8, device="cuda")
    s = t.untyped_storage()
    assert s.device == gt.device("cuda:0") and s.nbytes() == 3 and s.is_cuda
    assert s[1] == 2 and s.tolist() == [1, 2, 3]
    assert s.data_ptr() == t.data_ptr() != 0
    host = gt.UntypedStorage(3)
    host.copy_(s)
    assert host.tolist() == [1, 2, 3]


@pytest.fixture
def two_gpus(cuda_backend):
    """Two GPUs: the simulation grows a second one; a real machine needs two."""
    if cuda_backend == "real":
        if gt.cuda.device_count() < 2:
            pytest.skip("needs two GPUs")
        yield
        return
    import simulated_cupy
    simulated_cupy.reset(device_count=2)
    runtime.use_cupy(simulated_cupy)
    try:
        yield
    finally:
        simulated_cupy.reset()
        runtime.use_cupy(simulated_cupy)


def test_ops_run_on_their_tensors_gpu_whatever_the_current_one(two_gpus):
    assert gt.cuda.current_device() == 0
    x = gt.arange(6.0).view(2, 3).to("cuda:1")
    y = (x * 2).sum(0)                         # shared kernels launch on cuda:1
    assert y.device == gt.device("cuda:1") and y.tolist() == [6.0, 10.0, 14.0]
    assert gt.cuda.current_device() == 0
    z = x.to("cuda:0")                          # a copy between GPUs
    assert z.device == gt.device("cuda:0") and z.tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x + z
    with gt.cuda.device(1):
        assert gt.zeros(1, device="cuda").device == gt.device("cuda:1")
    assert gt.cuda.memory_allocated(1) > 0


def test_set_default_device_cuda_puts_new_tensors_on_the_gpu():
    gt.set_default_device("cuda")
    try:
        assert gt.get_default_device() == gt.device("cuda", 0)
        assert gt.zeros(2).device == gt.device("cuda:0")
        assert gt.randn(3).device.type == "cuda"
        assert gt.tensor([1, 2]).device.type == "cuda"
    finally:
        gt.set_default_device(None)
    assert gt.zeros(1).device == gt.device("cpu")


def test_memory_history_on_the_gpu_names_the_line_that_allocated(tmp_path):
    gt.cuda.memory._record_memory_history(max_entries=1000)
    try:
        kept = gt.empty(1 << 18, device="cuda")           # the line a snapshot must name
        kept_line = inspect.currentframe().f_lineno - 1
        freed = gt.empty(100, device="cuda")
        del freed
        snap = gt.cuda.memory._snapshot()
    finally:
        gt.cuda.memory._record_memory_history(enabled=None)
    blocks = [b for s in snap["segments"] for b in s["blocks"]
              if b["address"] == kept.data_ptr()]
    assert blocks and blocks[0]["state"] == "active_allocated"
    assert any(f["line"] == kept_line and f["filename"] == __file__
               for f in blocks[0]["frames"])
    actions = [e["action"] for e in snap["device_traces"][0]]
    assert actions.count("alloc") >= 2 and "free_completed" in actions
    assert all(s["device"] == "cuda:0" for s in snap["segments"])
    gt.cuda.memory._dump_snapshot(str(tmp_path / "snap.pickle"))
    with open(tmp_path / "snap.pickle", "rb") as f:
        assert "segments" in pickle.load(f)
