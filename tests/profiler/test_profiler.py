"""glasstorch.profiler against torch.profiler: events, nesting, counts, schedule, table, trace."""
import json
import threading
import warnings

import pytest

import glasstorch
import glasstorch.nn as gnn
from glasstorch.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                                 schedule, tensorboard_trace_handler)
from glasstorch.profiler.events import build_events


def _model_step(lib, record=True):
    """One training step of a small MLP in `lib` (glasstorch or torch)."""
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    x = lib.randn(3, 4)
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                              record_shapes=record, profile_memory=True) as prof:
        with lib.profiler.record_function("train_step"):
            loss = m(x).sum()
            loss.backward()
            opt.step()
    return prof


@pytest.fixture(scope="module")
def prof():
    return _model_step(glasstorch)


def _counts(prof):
    return {e.key: e.count for e in prof.key_averages()}


def test_forward_backward_and_optimizer_are_all_visible(prof):
    names = set(_counts(prof))
    assert {"train_step", "aten::addmm", "aten::relu", "aten::sum"} <= names
    assert "autograd::engine::evaluate_function: AddmmBackward0" in names
    assert "AddmmBackward0" in names and "ReluBackward0" in names
    assert "torch::autograd::AccumulateGrad" in names
    assert "Optimizer.step#SGD.step" in names
    assert _counts(prof)["aten::_fused_sgd_"] == 4          # one fused update per parameter


def test_counts_match_torch_where_decompositions_agree(prof):
    torch = pytest.importorskip("torch")
    theirs = {e.key: e.count for e in _model_step(torch).key_averages()}
    ours = _counts(prof)
    for name in ("aten::addmm", "aten::mm", "aten::relu", "aten::sum", "train_step",
                 "Optimizer.step#SGD.step", "AddmmBackward0", "ReluBackward0",
                 "SumBackward0", "autograd::engine::evaluate_function: AddmmBackward0",
                 "torch::autograd::AccumulateGrad"):
        assert ours.get(name) == theirs.get(name), name


def test_nesting_self_time_and_children(prof):
    events = prof.events()
    for e in events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-9
        assert sum(c.cpu_time_total for c in e.cpu_children) <= e.cpu_time_total + 1e-9
        for c in e.cpu_children:
            assert c.cpu_parent is e
            assert e.time_range.start <= c.time_range.start <= c.time_range.end \
                <= e.time_range.end
    root = next(e for e in events if e.name == "train_step")
    assert root.cpu_parent is None
    step = next(e for e in events if e.name == "Optimizer.step#SGD.step")
    assert step.cpu_parent is root
    assert {c.name for c in step.cpu_children} == {"aten::_fused_sgd_"}
    node = next(e for e in events if e.name == "autograd::engine::evaluate_function: "
                                               "ReluBackward0")
    assert [c.name for c in node.cpu_children] == ["ReluBackward0"]
    assert [c.name for c in node.cpu_children[0].cpu_children] == ["aten::threshold_backward"]
    total = sum(e.self_cpu_time_total for e in events)
    assert total == pytest.approx(root.cpu_time_total, rel=1e-6)


def test_record_shapes(prof):
    relu = next(e for e in prof.events() if e.name == "aten::relu")
    assert relu.input_shapes == [[3, 8]]
    addmm = [e.input_shapes for e in prof.events() if e.name == "aten::addmm"]
    assert addmm[0] == [[8], [3, 4], [4, 8], [], []]
    grouped = prof.key_averages(group_by_input_shape=True)
    assert sorted(str(e.input_shapes) for e in grouped if e.key == "aten::addmm") == \
        ["[[2], [3, 8], [8, 2], [], []]", "[[8], [3, 4], [4, 8], [], []]"]


def test_memory_columns(prof):
    relu = next(e for e in prof.events() if e.name == "aten::relu")
    assert relu.self_cpu_memory_usage == 3 * 8 * 4               # its float32 output
    root = next(e for e in prof.events() if e.name == "train_step")
    assert root.cpu_memory_usage == sum(e.self_cpu_memory_usage for e in prof.events()
                                        if e.name != "[memory]")


def _header(table):
    return [line for line in table.splitlines() if line.strip()][:3]


def test_table_header_matches_torch(prof):
    torch = pytest.importorskip("torch")
    theirs = _model_step(torch)
    for kw in ({}, {"group_by_input_shape": True}):
        t_lines = _header(theirs.key_averages(**kw).table(sort_by="cpu_time_total"))
        g_lines = _header(prof.key_averages(**kw).table(sort_by="cpu_time_total"))
        assert g_lines[1].split("  ") == t_lines[1].split("  ") or \
            g_lines[1].split() == t_lines[1].split()
        # the columns have torch's widths, except the shapes column (our shapes differ)
        assert g_lines[0].split()[:9] == t_lines[0].split()[:9]
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=3)
    assert len([ln for ln in table.splitlines() if ln.startswith(" ")]) == 1 + 3
    assert table.splitlines()[-1].startswith("Self CPU time total: ")


def test_chrome_trace_is_valid(prof, tmp_path):
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.load(open(path))
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len([e for e in prof.events() if e.name != "[memory]"])
    for e in complete:
        assert {"name", "cat", "pid", "tid", "ts", "dur", "args"} <= set(e)
        assert e["dur"] >= 0
    addmm = next(e for e in complete if e["name"] == "aten::addmm")
    assert addmm["args"]["Input Dims"] == [[8], [3, 4], [4, 8], [], []]
    assert any(e["ph"] == "i" and e["name"] == "[memory]" for e in data["traceEvents"])


def _steps_per_trace(lib, sched_kw, n_steps):
    saved = []

    def ready(p):
        saved.append(sorted(e.trace_name for e in p.events() if e.name == "ProfilerStep*"))

    x = lib.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = lib.profiler.schedule(**sched_kw)
    with lib.profiler.profile(schedule=sched, on_trace_ready=ready) as p:
        for _ in range(n_steps):
            x = x + 1
            p.step()
    return saved


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2),
                                dict(wait=1, warmup=1, active=2, repeat=1),
                                dict(wait=0, warmup=0, active=1, repeat=2, skip_first=2),
                                dict(wait=2, warmup=1, active=3, repeat=2)])
def test_schedule_saves_the_steps_torch_saves(kw):
    torch = pytest.importorskip("torch")
    assert _steps_per_trace(glasstorch, kw, 9) == _steps_per_trace(torch, kw, 9)


def test_schedule_actions():
    s = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [s(i) for i in range(5)] == [ProfilerAction.NONE, ProfilerAction.WARMUP,
                                        ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
                                        ProfilerAction.NONE]
    with pytest.raises(AssertionError, match="active=0"):
        schedule(wait=0, warmup=1, active=0)


def test_record_function_decorator_and_legacy_api():
    @record_function("my_fn")
    def f(t):
        return t * 2

    x = glasstorch.ones(3, requires_grad=True)
    with glasstorch.autograd.profiler.profile() as p:
        f(x).sum().backward()
    counts = {e.key: e.count for e in p.key_averages()}
    assert counts["my_fn"] == 1 and counts["aten::mul"] >= 1
    assert "MulBackward0" in counts
    assert "Self CPU time total" in p.table()


def test_nothing_recorded_outside_the_block():
    from glasstorch.profiler import _recorder
    with profile() as p:
        glasstorch.ones(2).add(1)
    assert _recorder.collectors == []
    with record_function("outside"):
        glasstorch.ones(2).add(1)
    assert "outside" not in {e.key for e in p.key_averages()}
    with pytest.raises(RuntimeError, match="didn't finish"):
        profile().events()


def test_tensorboard_trace_handler(tmp_path):
    with profile(activities=[ProfilerActivity.CPU],
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path), "worker0")):
        glasstorch.ones(2).mul(3)
    (f,) = tmp_path.iterdir()
    assert f.name.startswith("worker0.") and f.name.endswith(".pt.trace.json")
    assert any(e.get("name") == "aten::mul" for e in json.load(open(f))["traceEvents"])


def test_adam_fused_update_is_visible():
    p = gnn.Parameter(glasstorch.ones(3))
    opt = glasstorch.optim.AdamW([p])
    p.grad = glasstorch.ones(3)
    with profile() as prof:
        opt.step()
        opt.zero_grad()
    names = {e.key for e in prof.key_averages()}
    assert {"Optimizer.step#AdamW.step", "aten::_fused_adamw_",
            "Optimizer.zero_grad#AdamW.zero_grad"} <= names


def _double_sum(x):
    return (x * 2).sum()


def test_with_stack_keeps_the_users_frames():
    x = glasstorch.ones(3)
    with profile(with_stack=True) as p:
        _double_sum(x)
    mul = next(e for e in p.events() if e.name == "aten::mul")
    assert mul.stack[0].endswith(": _double_sum") and __file__ in mul.stack[0]
    assert all("glasstorch/" not in f.split("(")[0] or "tests" in f for f in mul.stack)
    table = p.key_averages(group_by_stack_n=1).table()
    assert "Source Location" in table.splitlines()[1] and "_double_sum" in table
    with profile() as p:
        _double_sum(x)
    assert all(e.stack == [] for e in p.events())


def _flops(lib):
    a, b, c = lib.ones(64, 32), lib.ones(32, 16), lib.ones(16)
    with lib.profiler.profile(with_flops=True) as p:
        lib.mm(a, b)
        lib.addmm(c, a, b)
        lib.bmm(lib.ones(2, 3, 4), lib.ones(2, 4, 5))
        a * a
        a + a
    return {e.key: e.flops for e in p.key_averages() if e.flops}, p


def test_with_flops_counts_as_torch():
    torch = pytest.importorskip("torch")
    ours, p = _flops(glasstorch)
    assert ours == _flops(torch)[0] == {"aten::mm": 65536, "aten::addmm": 65536,
                                        "aten::bmm": 240, "aten::mul": 2048, "aten::add": 2048}
    header = p.key_averages().table().splitlines()[1]
    assert header.rstrip().endswith("Total FLOPs") and "Input Shapes" not in header


def test_export_stacks(tmp_path):
    x = glasstorch.ones(300, 300)
    with profile(with_stack=True) as p:
        _double_sum(x)
    path = tmp_path / "stacks.txt"
    p.export_stacks(str(path))
    lines = path.read_text().splitlines()
    assert lines and all(int(line.rsplit(" ", 1)[1]) > 0 for line in lines)
    frames = lines[0].rsplit(" ", 1)[0].split(";")
    assert frames[-1].endswith(":__double_sum") and " " not in lines[0].rsplit(" ", 1)[0]
    with pytest.raises(ValueError, match="self_cpu_time_total"):
        p.export_stacks(str(path), "cpu_memory_usage")


def test_the_profilers_own_work_is_left_out_of_times():
    """Bookkeeping at a time goes to the innermost event running then: out of its self
    time and out of its own and its parents' totals; the timeline keeps the real span."""
    tid = threading.get_ident()
    records = [("outer", 0.0, 10.0, tid, None, "user_annotation", None),
               ("aten::view", 2.0, 4.0, tid, None, "cpu_op", None)]
    outer, view = build_events(records, [], 0.0, 0.0, [(3.0, 1.0), (1.0, 0.5), (9.0, 0.25)])
    assert view.cpu_parent is outer
    assert view.profiler_overhead_us == pytest.approx(1e6)
    assert view.cpu_time_total == pytest.approx(1e6) and view.self_cpu_time_total == \
        pytest.approx(1e6)
    assert outer.profiler_overhead_us == pytest.approx(0.75e6)
    assert outer.cpu_time_total == pytest.approx(10e6 - 1.75e6)
    assert outer.self_cpu_time_total == pytest.approx(10e6 - 1.75e6 - 1e6)
    assert outer.time_range.elapsed_us() == pytest.approx(10e6)


def test_a_cheap_ops_self_time_leaves_out_the_dispatch_traces_bookkeeping():
    """A view passes three dispatch layers; the trace's work around the inner two lies
    inside the view's span and is not the view's."""
    x = glasstorch.randn(8, 6, requires_grad=True) * 1.0
    with profile() as p:
        for _ in range(50):
            x.view(6, 8)
    views = [e for e in p.events() if e.name == "aten::view"]
    assert len(views) == 50
    assert all(e.profiler_overhead_us > 0 for e in views)
    for e in views:
        assert e.self_cpu_time_total == pytest.approx(
            e.time_range.elapsed_us() - e.profiler_overhead_us, abs=1e-6)
