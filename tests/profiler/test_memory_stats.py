"""memory_stats' key set against torch's, peak >= current on every allocator, the CPU limit."""
import re

import pytest
from hypothesis import given, settings, strategies as st

import glasstorch
from glasstorch.memory import set_cpu_allocator
from glasstorch.memory.caching_allocator import CachingAllocator
from glasstorch.memory.raw_backends import HostBackend
from glasstorch.memory.stats import MemoryStats, stats_keys
from glasstorch.memory.cpu_allocator import CPUAllocator


def _torch_documented_keys(torch):
    """The keys torch.cuda.memory_stats documents (its docstring lists each pattern)."""
    keys = set()
    documented = r'``"([a-z_]+(?:\.\{[a-z_,]+\})*)"``'
    for pattern in re.findall(documented, torch.cuda.memory_stats.__doc__):
        parts = [p.strip("{}").split(",") for p in pattern.split(".")]
        expanded = [""]
        for choices in parts:
            expanded = [f"{e}.{c}" if e else c for e in expanded for c in choices]
        keys.update(expanded)
    keys.discard("reserved_bytes_by_private_pools")   # only with private pools
    keys.discard("_")                                 # a placeholder in the text
    # The docstring says "allocated.*"; the allocator's key (c10's DeviceStats, and every
    # torch.cuda.memory_stats() dict) is "allocation.*".
    return {k.replace("allocated.", "allocation.", 1) if k.startswith("allocated.") else k
            for k in keys}


@pytest.mark.parametrize("kind", ["default", "caching"])
def test_key_set_is_torchs(kind):
    torch = pytest.importorskip("torch")
    set_cpu_allocator(kind)
    try:
        keys = set(glasstorch.memory.memory_stats("cpu"))
    finally:
        set_cpu_allocator("default")
    assert keys == _torch_documented_keys(torch) == set(stats_keys())


def test_plain_allocator_reserved_equals_allocated():
    keep = [glasstorch.ones(100), glasstorch.ones(1000)]
    del keep[0]
    s = glasstorch.memory.memory_stats()
    for f in ("current", "peak", "allocated", "freed"):
        assert s[f"reserved_bytes.all.{f}"] == s[f"allocated_bytes.all.{f}"] \
            == s[f"active_bytes.all.{f}"] == s[f"requested_bytes.all.{f}"]
        assert s[f"segment.all.{f}"] == s[f"allocation.all.{f}"]
    assert glasstorch.memory.memory_reserved() == glasstorch.memory.memory_allocated()


def _check_peaks(stats: dict):
    for key, value in stats.items():
        if key.endswith(".current"):
            assert stats[key[:-len("current")] + "peak"] >= value, key
            assert stats[key[:-len("current")] + "allocated"] - \
                stats[key[:-len("current")] + "freed"] == value, key


ops = st.lists(st.tuples(st.booleans(), st.integers(0, 3 << 20), st.integers(0, 50)),
               max_size=40)


@settings(max_examples=40, deadline=None)
@given(ops, st.integers(0, 40))
def test_peak_never_below_current_plain(seq, reset_at):
    a, live = CPUAllocator(), []
    for i, (alloc, nbytes, pick) in enumerate(seq):
        if i == reset_at:
            a.stats.reset_peak()
        if alloc or not live:
            live.append((nbytes, a.allocate(nbytes)))
        else:
            n, buf = live.pop(pick % len(live))
            a.free(n, buf)
        _check_peaks(a.stats.as_dict())


@settings(max_examples=30, deadline=None)
@given(ops, st.integers(0, 40))
def test_peak_never_below_current_caching(seq, reset_at):
    a, live = CachingAllocator(HostBackend()), []
    for i, (alloc, nbytes, pick) in enumerate(seq):
        if i == reset_at:
            a.reset_peak_stats()
        if alloc or not live:
            live.append(a.malloc(nbytes))
        else:
            a.free(live.pop(pick % len(live)))
        _check_peaks({k: v for k, v in a.memory_stats().items() if "." in k})
    a.empty_cache()


def test_summary_never_shows_a_peak_below_current():
    x = [glasstorch.ones(10) for _ in range(5)]
    glasstorch.memory.reset_peak_memory_stats()
    x += [glasstorch.ones(10) for _ in range(3)]
    for line in glasstorch.memory.memory_summary().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[1] and cells[1][0].isdigit():
            cur, peak = (int(c.split()[0]) for c in cells[1:3])
            assert peak >= cur, line


def test_cpu_limit_raises_and_leaves_nothing_allocated():
    a = glasstorch.ones(256)
    before = glasstorch.memory.memory_stats()
    glasstorch.memory.set_memory_limit(before["allocated_bytes.all.current"] + 1024)
    try:
        with pytest.raises(glasstorch.OutOfMemoryError,
                           match=r"CPU out of memory\. Tried to allocate 3\.91 MiB\. "
                                 r"The CPU memory limit is [0-9.]+ (KiB|MiB|GiB)"):
            glasstorch.randn(1024, 1000) @ glasstorch.ones(1000, 2)
        with pytest.raises(RuntimeError):          # OutOfMemoryError is a RuntimeError
            a.repeat(100)
        b = glasstorch.ones(16)                    # what fits still works
    finally:
        glasstorch.memory.set_memory_limit(None)
    after = glasstorch.memory.memory_stats()
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"] + 64
    assert after["num_ooms"] == before["num_ooms"] + 2
    del b
    glasstorch.randn(1024, 1000)                   # no limit any more
    with pytest.raises(ValueError, match="non-negative"):
        glasstorch.memory.set_memory_limit(-1)


def test_fraction_limit_on_the_caching_cpu_allocator():
    set_cpu_allocator("caching")
    try:
        glasstorch.memory.set_memory_limit(4 << 20)
        glasstorch.ones(1000)
        with pytest.raises(glasstorch.OutOfMemoryError, match="4.00 MiB allowed"):
            glasstorch.empty(5 << 20, dtype=glasstorch.uint8)
        assert glasstorch.memory.memory_stats()["num_ooms"] == 1
    finally:
        set_cpu_allocator("default")
    with pytest.raises(ValueError, match="Allowed range"):
        glasstorch.cpu.set_per_process_memory_fraction(1.5)
    with pytest.raises(TypeError):
        glasstorch.cpu.set_per_process_memory_fraction(1)


def test_reset_accumulated_keeps_current():
    s = MemoryStats()
    s.allocated_bytes, s.allocation_count, s.total_allocated_bytes = 10, 2, 30
    s.free_count = 1
    assert s.total_freed_bytes == 20           # what was allocated less what is live
    s.reset_accumulated()
    d = s.as_dict()
    assert d["allocated_bytes.all.current"] == 10 == d["allocated_bytes.all.allocated"] - \
        d["allocated_bytes.all.freed"]
    assert d["allocation.all.current"] == 1


def test_png_without_matplotlib_says_which_extra(monkeypatch, tmp_path):
    from glasstorch.memory import visualize
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"glasstorch\[viz\]"):
        visualize.render_png({"segments": [], "device_traces": [[]]}, str(tmp_path / "a.png"))
