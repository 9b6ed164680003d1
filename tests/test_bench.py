"""The benchmark harness (`python -m bench`): a few cheap workloads through the real check
and timing code with tiny settings, and the check's refusal of results that differ; the GPU
suite's timing, workloads (on the CPU, at small sizes), allocator arithmetic and skipping."""
import gc
import os
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

# bench/ lives at the repository root, next to tests/; plain `pytest` does not put the root
# on sys.path (`python -m pytest` does).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import glasstorch  # noqa: E402
from bench import cli, gpu, harness, report, training  # noqa: E402

MODULES = {"glasstorch": glasstorch, "torch": torch, "numpy": np}
TINY = harness.Settings(rounds=1, min_time=0.001, warmup_time=0.001, quick=True)


@pytest.mark.parametrize("name", ["add", "transpose", "view", "autograd", "nanogpt", "mingpt"])
def test_cheap_workloads_check_and_time(name):
    (workload,) = cli.select(name)
    row = harness.measure(workload, MODULES, TINY)
    assert row.error == ""
    assert set(row.times) == {"glasstorch", "torch"}
    assert all(t > 0 for t in row.times.values())
    assert row.metric == pytest.approx(row.times["glasstorch"] / row.times["torch"])
    assert row.met is (row.metric <= workload.target.bound)


def test_compare_refuses_other_values_dtypes_shapes_and_strides():
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours = glasstorch.from_numpy(values.copy())
    assert harness.compare([ours], [torch.from_numpy(values.copy())], 1e-5, 1e-6) == ""
    changed = values.copy()
    changed[1, 2] += 0.5
    assert "values differ" in harness.compare([ours], [torch.from_numpy(changed)], 1e-5, 1e-6)
    assert "dtype" in harness.compare([ours], [torch.from_numpy(values.astype(np.float64))],
                                      1e-5, 1e-6)
    assert "shape" in harness.compare([ours], [torch.from_numpy(values.reshape(3, 2))],
                                      1e-5, 1e-6)
    transposed = torch.from_numpy(values.T.copy()).t()          # same values, other strides
    assert "strides" in harness.compare([ours], [transposed], 1e-5, 1e-6)
    assert "outputs" in harness.compare([ours, ours], [transposed], 1e-5, 1e-6)


def _disagreeing(lib):
    value = 1.0 if lib is glasstorch else 2.0
    return harness.Case(lambda: lib.full((3,), value))


def _failing(lib):
    if lib is glasstorch:
        raise NotImplementedError("no kernel for this op")
    return harness.Case(lambda: lib.ones(3))


def _failing_later(lib):
    calls = []

    def call():
        calls.append(1)
        if len(calls) > 1 and lib is glasstorch:
            raise RuntimeError("out of memory")
        return lib.ones(3)
    return harness.Case(call)


def test_a_wrong_or_failing_library_is_reported_not_timed():
    for setup, message in [(_disagreeing, "glasstorch differs from torch: output: values"),
                           (_failing, "error: glasstorch: NotImplementedError: no kernel"),
                           (_failing_later, "error: while timing: RuntimeError: out of memory")]:
        row = harness.measure(harness.Workload("w", "d", setup, harness.Target(1.0)),
                              MODULES, TINY)
        assert row.error.startswith("error: ") and message in row.error
        assert row.times == {} and row.met is None
        assert "error" in report.text_table([row])


def test_write_section_replaces_only_the_generated_part(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(f"# B\n\nintro\n\n{report.BEGIN}\nold\n{report.END}\n\n## History\nkept\n")
    report.write_section(f"{report.BEGIN}\nnew\n{report.END}", str(path))
    assert path.read_text() == (f"# B\n\nintro\n\n{report.BEGIN}\nnew\n{report.END}\n\n"
                                "## History\nkept\n")


def test_list_and_unknown_names(capsys):
    assert cli.main(["--list", "--only", "add,sum16"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["add", "sum16"]
    with pytest.raises(SystemExit, match="unknown workload"):
        cli.select("add,nonsense")


# ---- the GPU suite (bench/gpu.py): what can be checked without a GPU ----------------------

SMALL = gpu.Sizes(launch=16, elementwise=1000, matmul=32, copy_bytes=16384, upload_bytes=16384)


class _FakeDevice:
    """Calls that return almost at once and leave `work` seconds for a device, as CUDA
    launches do; `synchronize` waits until the device is done."""

    def __init__(self, work):
        self.work, self.free_at = work, 0.0

    def launch(self):
        time.sleep(self.work / 5)                   # the host's share: a launch's overhead
        self.free_at = max(time.perf_counter(), self.free_at) + self.work

    def synchronize(self):
        time.sleep(max(0.0, self.free_at - time.perf_counter()))


def test_timing_counts_the_device_work_the_calls_queued():
    work = 1e-3

    def setup(lib):
        device, out = _FakeDevice(work), lib.ones(1)

        def call():
            device.launch()
            return out
        return harness.Case(call, sync=device.synchronize)
    row = harness.measure(harness.Workload("w", "d", setup, harness.Target(1.0)), MODULES, TINY)
    assert row.error == ""
    assert all(t >= work for t in row.times.values())  # not the host's 0.2 ms per launch


@pytest.mark.parametrize("name", ["add", "fma_relu", "c_fma_relu", "matmul_f32", "matmul_f16",
                                  "copy_d2d", "copy_h2d"])
def test_gpu_workloads_check_and_time_on_the_cpu_at_small_sizes(name):
    (workload,) = [w for w in gpu.workloads("cpu", SMALL) if w.name == name]
    row = harness.measure(workload, MODULES, TINY)
    assert row.error == ""
    assert set(row.times) == {"glasstorch", "torch"}
    assert row.met is workload.target.met(row.metric)


def test_copy_workloads_report_bandwidth_ratios():
    (copy,) = [w for w in gpu.workloads("cpu", SMALL) if w.name == "copy_d2d"]
    assert copy.metric({"glasstorch": 2.0, "torch": 1.0}) == 0.5     # half torch's GB/s
    assert copy.extra({"glasstorch": 1e-6}) == "GB/s copied: glasstorch 16.4"


_IDLE_X = np.array([[0.0, 1.0, -2.0, 0.5], [0.0, -1.5, 0.3, 2.0]], dtype=np.float32)
_IDLE_Y = np.array([0, 2])


def _linear(lib):
    """The step's model; inputs _IDLE_X keep its first input at 0, so the weights' first
    column gets a gradient of exactly 0."""
    return lib.nn.Linear(4, 3)


def _linear_nudged(lib):
    """_linear whose first-column gradient in glasstorch is 2e-9 (torch's: 0), as a backward
    that sums in another order can leave."""
    layer = _linear(lib)
    if lib is glasstorch:
        layer.weight.register_hook(lambda g: g + 2e-9)
    return layer


def _step_row(build, make_optimizer):
    setup = training.training_step(build, make_optimizer, _IDLE_X, _IDLE_Y)
    workload = harness.Workload("step", "d", setup, harness.Target(1.0),
                                rtol=training.STEP_RTOL, atol=training.STEP_ATOL)
    return harness.measure(workload, MODULES, TINY)


def _adamw(lib, params):
    return lib.optim.AdamW(params, lr=1e-3)


def test_step_check_accepts_a_near_zero_gradient_that_differs_within_its_tolerance():
    setup = training.training_step(_linear_nudged, _adamw, _IDLE_X, _IDLE_Y)
    ours, theirs = (setup(lib) for lib in (glasstorch, torch))
    ours_grads, theirs_grads = (case.observe(case.call())[1:3] for case in (ours, theirs))
    assert (theirs_grads[0][:, 0] == 0).all() and np.allclose(ours_grads[0].numpy()[:, 0], 2e-9)
    # Adam turns the 2e-9 into a move of lr * 2e-9 / (2e-9 + eps) = lr / 6: torch's weights
    # and ours differ by far more than float32 rounding, and rightly so.
    initial = list(training.reference_state(_linear).values())
    moved_ours, moved_theirs = (training.expected_weights(_adamw, initial, grads)
                                for grads in (ours_grads, theirs_grads))
    assert np.abs(moved_ours[0] - moved_theirs[0]).max() > 1e-4
    assert _step_row(_linear_nudged, _adamw).error == ""


@pytest.mark.parametrize("make_optimizer", [
    lambda lib, p: lib.optim.AdamW(p, lr=1e-3, weight_decay=0.0 if lib is glasstorch else 0.01),
    lambda lib, p: lib.optim.AdamW(p, lr=1.01e-3 if lib is glasstorch else 1e-3),
    lambda lib, p: (lib.optim.Adam if lib is glasstorch else lib.optim.AdamW)(
        p, lr=1e-3, weight_decay=0.01),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=lib is glasstorch),
], ids=["no-weight-decay", "lr-1%-high", "coupled-decay", "nesterov"])
def test_step_check_refuses_a_wrong_update(make_optimizer):
    row = _step_row(_linear, make_optimizer)
    assert "glasstorch differs from torch: output 3: values differ" in row.error


def test_allocator_hit_rate_counts_new_segments_per_block_allocation():
    counts = iter([{"allocation.all.allocated": 10, "segment.all.allocated": 2},
                   {"allocation.all.allocated": 30, "segment.all.allocated": 3,
                    "num_alloc_retries": 0}])
    calls = []
    case = harness.Case(lambda: calls.append(1))
    assert gpu.allocator_hit_rate(case, lambda: next(counts), warm_steps=2) == (0.95, 20, 1, 0)
    assert len(calls) == 3                          # two warm steps, then the counted one
    frozen = {"allocation.all.allocated": 5, "segment.all.allocated": 1}
    with pytest.raises(RuntimeError, match="0 block allocations"):
        gpu.allocator_hit_rate(case, lambda: frozen)


def test_allocator_hit_rate_of_a_warm_step_on_glasstorchs_caching_allocator():
    from glasstorch.memory import memory_stats, set_cpu_allocator
    set_cpu_allocator("caching")
    try:
        case = training.step_setup("mlp")(glasstorch)
        rate, blocks, segments, retries = gpu.allocator_hit_rate(
            case, lambda: memory_stats("cpu"))
    finally:
        set_cpu_allocator("default")
    assert blocks > 0 and retries == 0
    assert rate == 1 - segments / blocks and rate > 0.95


def _cuda(available):
    def is_available():
        if isinstance(available, Exception):
            raise available
        return available
    return SimpleNamespace(is_available=is_available)


def test_unavailable_says_which_library_sees_no_gpu():
    ours = SimpleNamespace(cuda=_cuda(True))
    theirs = SimpleNamespace(cuda=_cuda(True), version=SimpleNamespace(cuda="13.0"),
                             __version__="2.11.0+cu130")
    assert gpu.unavailable(theirs, ours) == ""
    ours.cuda = _cuda(RuntimeError("CuPy found no driver"))
    theirs.cuda, theirs.version.cuda, theirs.__version__ = _cuda(False), None, "2.13.0+cpu"
    assert gpu.unavailable(theirs, ours) == (
        "glasstorch.cuda.is_available() raised RuntimeError: CuPy found no driver; "
        "torch.cuda.is_available() is False (torch 2.13.0+cpu is built without CUDA)")


@pytest.mark.skipif(glasstorch.cuda.is_available() and torch.cuda.is_available(),
                    reason="both libraries see a GPU: the suite would run, not skip")
def test_gpu_suite_without_a_gpu_says_why_and_exits_0(capsys):
    assert cli.main(["--device", "cuda"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("skipped the GPU benchmarks: ") and "is_available() is False" in line


def test_gpu_suite_list_and_write(capsys):
    assert cli.main(["--device", "cuda", "--list", "--only", "matmul_f16,copy_h2d"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [
        "matmul_f16", "copy_h2d"]
    with pytest.raises(SystemExit):
        cli.main(["--device", "cuda", "--write"])
    assert "--write records CPU runs" in capsys.readouterr().err


def test_hit_rate_rows_and_the_verdict_line():
    hits = harness.Row("alloc_hits", "d", {"glasstorch": 0.99, "torch": 1.0},
                       harness.Target(0.95, "min", "hit rate"), metric=0.99, unit="fraction")
    assert report.cells(hits)[1:6] == ("99.0%", "100.0%", "0.99x", "hit rate >= 0.95 (0.99)",
                                       "yes")
    slow = harness.Row("gpt", "d", {"glasstorch": 2.0, "torch": 1.0}, harness.Target(1.5),
                       metric=2.0)
    broken = harness.Row("copy_h2d", "d", target=harness.Target(0.9), error="error: x")
    assert gpu.verdict([hits, slow, broken]) == (
        "targets: 1 met, 1 missed (gpt), 1 error (copy_h2d) of 3")
    assert gpu.verdict([hits]) == "targets: 1 met of 1"


def test_the_header_names_both_libraries_blas_and_threads():
    from bench import machine
    info = machine.describe(torch, glasstorch)
    assert info["threads"].startswith(f"torch {torch.get_num_threads()} ")
    assert f"glasstorch {glasstorch.get_num_threads()}" in info["threads"]
    assert info["blas"].startswith("NumPy: ") and "; torch: " in info["blas"]
    blas = machine.numpy_blas()
    if blas["core"] is not None:          # NumPy's OpenBLAS, found among the loaded libraries
        assert f"kernel {blas['core']}" in info["blas"] and blas["threads"] >= 1


@pytest.fixture(scope="module")
def workers():
    with harness.WorkerPool(threads=1) as pool:
        yield pool


def test_worker_pool_times_each_library_alone_in_its_own_process(workers):
    (workload,) = cli.select("nanogpt")
    row = harness.measure(workload, MODULES, TINY, workers)
    assert row.error == ""
    assert set(row.times) == {"glasstorch", "torch"} and all(t > 0 for t in row.times.values())
    # The reference weights come from the parent's saved file: neither worker imported the
    # other library (WorkerPool.time raises if one did).
    pids = {lib: workers._workers[lib][0].pid for lib in row.times}
    assert len(set(pids.values()) | {os.getpid()}) == 3


def test_worker_pool_reports_a_worker_that_dies_and_starts_a_new_one(workers):
    with pytest.raises(RuntimeError, match="worker exited with code 1: .*unknown workload"):
        workers.request("glasstorch", {"setup": "no-such-workload"})
    assert workers.request("glasstorch", {"setup": "add"}) == {"ok": True, "foreign": []}
    with pytest.raises(RuntimeError, match="glasstorch worker: unknown request"):
        workers.request("glasstorch", {"bogus": 1})


def test_worker_pool_refuses_a_worker_that_imported_the_other_library(workers):
    # This process never checked `mlp`, so no reference weights were saved for it and the
    # glasstorch worker builds them in torch; that worker is then replaced by a clean one.
    with pytest.raises(RuntimeError, match="glasstorch worker imported torch .*mlp"):
        workers.time("mlp", ["glasstorch"], TINY)
    assert workers.request("glasstorch", {"setup": "add"}) == {"ok": True, "foreign": []}


def test_a_worker_label_names_a_variant_of_its_library(monkeypatch):
    from bench import worker
    seen = []

    def worker_setup(label, lib):
        seen.append((label, lib))
        return harness.Case(lambda: lib.ones(2))
    variant = harness.Workload("v", "d", setup=lambda lib: pytest.fail("setup was called"),
                               worker_setup=worker_setup)
    monkeypatch.setattr(cli, "all_workloads", lambda device="cpu": [variant])
    timer = worker.Worker("torch.compile", threads=1)
    try:
        # In this process glasstorch is imported too: the worker notices.
        assert timer.answer({"setup": "v"}) == {"ok": True, "foreign": ["glasstorch"]}
        assert timer.answer({"time": 3})["seconds"] > 0
    finally:
        gc.unfreeze()                 # a worker freezes its objects after setting up
    assert seen == [("torch.compile", torch)]


def test_worker_pool_kills_a_worker_that_does_not_answer():
    with harness.WorkerPool(threads=1, timeout=0.5) as pool:
        with pytest.raises(RuntimeError, match="no answer to a setup request within 0.5 s"):
            pool.request("glasstorch", {"setup": "add"})   # importing takes longer than that
        assert not pool._workers
