"""Allocation history (torch.cuda.memory._record_memory_history's API) and its pictures."""
import pickle
import subprocess
import sys

import pytest

import glasstorch as gt
from glasstorch.core.storage import UntypedStorage
from glasstorch.memory import visualize
from glasstorch.memory.cpu_allocator import cpu_allocator

HERE = __file__


def line():
    """The caller's line number: the line the test's next statement is on, minus one."""
    return sys._getframe(1).f_lineno


@pytest.fixture
def recording(quiet_gc):
    gt.memory._record_memory_history(clear_history=True)
    try:
        yield
    finally:
        gt.memory._record_memory_history(enabled=None)


def trace():
    return gt.memory._snapshot()["device_traces"][0]


def user_line(frames):
    """The test's own frame among the stack (the innermost frame in this file)."""
    mine = [f for f in frames if f["filename"] == HERE]
    return mine[0]["line"] if mine else None


def test_recording_is_off_by_default_and_off_after_disabling(quiet_gc):
    assert cpu_allocator.observer is None
    gt.memory._record_memory_history()
    assert cpu_allocator.observer is not None
    gt.empty(10)
    gt.memory._record_memory_history(enabled=None)
    assert cpu_allocator.observer is None
    gt.empty(10)
    assert gt.memory._snapshot() == {"segments": [], "device_traces": [[]]}


def test_known_sequence_of_allocations_and_frees(recording):
    n = line(); a = gt.empty(1000)                    # noqa: E702
    b = gt.empty(10, dtype=gt.float64)
    a_ptr, b_ptr = a.data_ptr(), b.data_ptr()
    n_del = line(); del a                             # noqa: E702
    events = trace()
    assert [(e["action"], e["addr"], e["size"]) for e in events] == [
        ("alloc", a_ptr, 4000), ("alloc", b_ptr, 80), ("free_completed", a_ptr, 4000)]
    assert [user_line(e["frames"]) for e in events] == [n, n + 1, n_del]
    assert events[0]["frames"][0]["name"] == "allocate"      # innermost frame first
    assert events[2]["frames"][0]["name"] == "free"
    times = [e["time_us"] for e in events]
    assert times == sorted(times)
    assert all(e["stream"] == 0 for e in events)
    del b


def test_op_outputs_and_resize_are_recorded(recording):
    x = gt.ones(4)
    n = line(); y = x * 2                             # noqa: E702
    s = UntypedStorage(100)
    old = s.data_ptr()
    s.resize_(300)
    events = trace()
    assert (events[1]["action"], events[1]["size"], user_line(events[1]["frames"])) == \
        ("alloc", 16, n)
    assert [(e["action"], e["size"]) for e in events[2:]] == [
        ("alloc", 100), ("alloc", 300), ("free_completed", 100)]
    assert events[4]["addr"] == old and events[3]["addr"] == s.data_ptr()
    del y


def test_segments_hold_the_live_allocations_with_their_stacks(recording):
    keep = gt.empty(300_000)
    n = line(); gone = gt.empty(7)                    # noqa: E702
    snap = gt.memory._snapshot()
    seg = {s["address"]: s for s in snap["segments"]}
    assert set(seg) == {keep.data_ptr(), gone.data_ptr()}
    small = seg[gone.data_ptr()]
    assert (small["total_size"], small["segment_type"], small["device"]) == (28, "small", "cpu")
    assert seg[keep.data_ptr()]["segment_type"] == "large"
    (block,) = small["blocks"]
    assert (block["state"], block["size"], user_line(block["frames"])) == \
        ("active_allocated", 28, n)
    del gone
    assert [s["address"] for s in gt.memory._snapshot()["segments"]] == [keep.data_ptr()]
    gt.memory._record_memory_history(clear_history=True)    # forgets the trace only
    snap = gt.memory._snapshot()
    assert snap["device_traces"] == [[]]
    assert snap["segments"][0]["frames"] == seg[keep.data_ptr()]["frames"] != []


@pytest.mark.parametrize("context, alloc_stack, free_stack",
                         [("all", True, True), ("alloc", True, False),
                          ("state", False, False), (None, False, False)])
def test_context_picks_which_events_carry_stacks(quiet_gc, context, alloc_stack, free_stack):
    gt.memory._record_memory_history(context=context, clear_history=True)
    try:
        t = gt.empty(5)
        keep = gt.empty(6)
        del t
        alloc, _, free = trace()
        block = gt.memory._snapshot()["segments"][0]["blocks"][0]
    finally:
        gt.memory._record_memory_history(enabled=None)
    assert bool(alloc["frames"]) == alloc_stack
    assert bool(free["frames"]) == free_stack
    assert bool(block["frames"]) == (context is not None)
    del keep


def test_enabled_state_keeps_live_blocks_but_no_trace(quiet_gc):
    gt.memory._record_memory_history(enabled="state", clear_history=True)
    try:
        t = gt.empty(5)
        snap = gt.memory._snapshot()
    finally:
        gt.memory._record_memory_history(enabled=None)
    assert snap["device_traces"] == [[]]
    assert [s["address"] for s in snap["segments"]] == [t.data_ptr()]


def test_max_entries_keeps_the_newest_events(quiet_gc):
    gt.memory._record_memory_history(max_entries=3, clear_history=True)
    try:
        kept = [gt.empty(n) for n in range(1, 6)]
        assert [e["size"] for e in trace()] == [12, 16, 20]
        gt.memory._record_memory_history(max_entries=4)    # resizing keeps what is there
        kept.append(gt.empty(6))
        assert [e["size"] for e in trace()] == [12, 16, 20, 24]
        gt.memory._record_memory_history(skip_actions=["alloc"], clear_history=True)
        del kept[0]
        gt.empty(9)
        assert [(e["action"], e["size"]) for e in trace()] == [("free_completed", 4),
                                                                ("free_completed", 36)]
    finally:
        gt.memory._record_memory_history(enabled=None)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="enabled"):
        gt.memory._record_memory_history(enabled="yes")
    with pytest.raises(ValueError, match="context"):
        gt.memory._record_memory_history(context="some")
    with pytest.raises(ValueError, match="stacks"):
        gt.memory._record_memory_history(stacks="cpp")
    with pytest.raises(ValueError, match="max_entries"):
        gt.memory._record_memory_history(max_entries=0)
    with pytest.raises(RuntimeError, match="meta"):
        gt.memory._record_memory_history(device="meta")
    assert cpu_allocator.observer is None


def test_dump_snapshot_pickle_loads_and_torch_reads_it(recording, tmp_path):
    a = gt.empty(1000)
    b = a + 1
    del a
    path = tmp_path / "snap.pickle"
    gt.memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        snap = pickle.load(f)
    assert snap == gt.memory._snapshot()
    assert [e["action"] for e in snap["device_traces"][0]] == ["alloc", "alloc",
                                                                "free_completed"]
    memory_viz = pytest.importorskip("torch.cuda._memory_viz")
    text = memory_viz.trace(snap)          # torch's own reader of snapshots
    assert "3 entries" in text and "free completed" in text
    del b


def _three_sites():
    """A history with three sites of known sizes: 4000 B then freed, 800 B, 40 B."""
    gt.memory._record_memory_history(clear_history=True)
    try:
        lines = [line() + 1]
        a = gt.empty(1000)
        lines.append(line() + 1)
        b = gt.empty(200)
        del a
        lines.append(line() + 1)
        c = gt.empty(10)
        return gt.memory._snapshot(), lines, (b, c)
    finally:
        gt.memory._record_memory_history(enabled=None)


def test_timeline_stacks_live_bytes_by_site(quiet_gc):
    snap, lines, keep = _three_sites()
    tl = visualize.timeline(snap, top=2)
    first, second = (f"{HERE}:{n} (_three_sites)" for n in lines[:2])
    assert list(tl.series) == [first, second, visualize.OTHER]
    assert tl.times == [0, 1, 2, 3, 4]
    assert tl.series[first] == [0, 4000, 4000, 0, 0]
    assert tl.series[second] == [0, 0, 800, 800, 800]
    assert tl.series[visualize.OTHER] == [0, 0, 0, 0, 40]
    assert tl.totals == [0, 4000, 4800, 800, 840]
    assert tl.sites[0] == (first, 1, 4000, 4000, 0)


def test_html_is_self_contained_with_svg_and_site_names(quiet_gc, tmp_path):
    snap, lines, keep = _three_sites()
    out = tmp_path / "m.html"
    page = visualize.render_html(snap, out, top=2)
    assert out.read_text(encoding="utf-8") == page
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "</svg>" in page
    assert page.count("<polygon") == 3
    for n in lines:
        assert f"test_history.py:{n} (_three_sites)" in page
    assert "https:" not in page and "<script src" not in page and "<link" not in page
    assert page.count("http:") == page.count('xmlns="http://www.w3.org/2000/svg"') == 1
    assert "3.91 KiB" in page          # the first site's peak, 4000 bytes


def test_cli_writes_html_from_a_dumped_snapshot(quiet_gc, tmp_path):
    snap, lines, keep = _three_sites()
    src = tmp_path / "snap.pickle"
    src.write_bytes(pickle.dumps(snap))
    out = tmp_path / "out.html"
    done = subprocess.run([sys.executable, "-m", "glasstorch.memory.visualize", str(src),
                           "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"test_history.py:{lines[0]}" in out.read_text(encoding="utf-8")


def test_snapshot_loading_refuses_code(tmp_path):
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(pickle.dumps({"device_traces": [[]], "x": pickle.Pickler}))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        visualize.load_snapshot(str(bad))


def test_png_needs_matplotlib(quiet_gc, tmp_path, monkeypatch):
    snap, _, keep = _three_sites()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        visualize.render_png(snap, tmp_path / "m.png")


def test_png_rendering(quiet_gc, tmp_path):
    pytest.importorskip("matplotlib")
    snap, _, keep = _three_sites()
    out = tmp_path / "m.png"
    visualize.render_png(snap, out, top=2)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
