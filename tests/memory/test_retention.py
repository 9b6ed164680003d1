"""Small views pinning large storages: the live report and save()'s warning."""
import io
import sys
import warnings

import pytest

import glasstorch as gt
from glasstorch.memory.retention import RetentionReport, format_size
from tests.oracle import oracle_torch

HERE = __file__
MIB = 1 << 20


def entry_for(t, **kw):
    """The report's row for t's storage, or None."""
    rows = [r for r in gt.memory.retention_report(**kw)
            if r.address == t.untyped_storage().data_ptr()]
    return rows[0] if rows else None


def test_small_view_of_deleted_big_tensor_is_reported(quiet_gc):
    big = gt.zeros(10_000_000)
    small = big[:10]
    del big
    row = entry_for(small)
    assert row is not None
    assert (row.storage_bytes, row.viewed_bytes, row.kept_alive_bytes) == (
        40_000_000, 40, 40_000_000 - 40)
    assert row.shapes == [(10,)] and row.dtype == gt.float32
    assert row.frames is None and row.site == "(not recorded)"
    text = str(gt.memory.retention_report())
    assert format_size(40_000_000 - 40) in text and "38.15 MiB" in text
    assert "40 bytes" in text and ".clone()" in text
    torch = oracle_torch()            # torch's storage of the view is just as large
    tb = torch.zeros(10_000_000)
    assert tb[:10].untyped_storage().nbytes() == row.storage_bytes
    small = small.clone()             # the fix: the big storage goes away
    assert entry_for(small) is None


def test_report_names_the_allocating_line_when_recording(quiet_gc):
    gt.memory._record_memory_history(clear_history=True)
    try:
        n = sys._getframe().f_lineno + 1
        big = gt.zeros(10_000_000)
        small = big[:10]
        del big
        row = entry_for(small)
    finally:
        gt.memory._record_memory_history(enabled=None)
    assert row.site == f"{HERE}:{n} (test_report_names_the_allocating_line_when_recording)"
    assert f"test_retention.py:{n}" in str(RetentionReport([row]))


def test_no_false_positives(quiet_gc):
    plain = gt.zeros(10_000_000)
    big = gt.zeros(10_000_000)
    small = big[:10]                          # the base is still held: nothing is wasted
    half = gt.zeros(10_000_000)[:5_000_000]   # 2x, under the 4x ratio
    tiny = gt.zeros(1000)[:1]                 # 4x and more, but under 1 MiB extra
    both = gt.zeros(2 * MIB)
    lo, hi = both[:MIB], both[MIB:]           # two views that together span the storage
    del both
    reported = {r.address for r in gt.memory.retention_report()}
    for t in (plain, small, half, tiny, lo):
        assert t.untyped_storage().data_ptr() not in reported
    assert entry_for(tiny, min_extra_bytes=0).kept_alive_bytes == 3996
    del plain, big, small, half, tiny, lo, hi


def test_chains_of_views_and_several_views_of_one_storage(quiet_gc):
    big = gt.zeros(2_000_000)
    col = big.view(1000, 2000)[:2].t()        # views of views; the middle ones are dropped
    row0 = big[:3]
    del big
    rep = entry_for(col)
    assert rep.shapes == [(2000, 2), (3,)]
    assert rep.viewed_bytes == 2 * 2000 * 4   # rows 0 and 1; row0 lies inside them
    assert rep.kept_alive_bytes == 8_000_000 - 16_000
    del col, row0


def save_warnings(obj):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gt.save(obj, io.BytesIO())
    return [w for w in caught if issubclass(w.category, UserWarning)]


def test_save_warns_for_a_small_view_of_a_large_storage(quiet_gc):
    big = gt.zeros(2_000_000)
    (w,) = save_warnings({"model": {"layer.weight": big[:10]}, "step": 3})
    text = str(w.message)
    assert "['model']['layer.weight']" in text
    assert "(10,)" in text and "40 bytes" in text and "7.63 MiB" in text
    assert ".clone()" in text and "torch.save" in text
    assert w.filename == HERE                 # points at the caller of save()


def test_save_does_not_warn_for_a_clone_or_a_whole_tensor(quiet_gc):
    big = gt.zeros(2_000_000)
    assert save_warnings({"w": big[:10].clone()}) == []
    assert save_warnings({"w": big}) == []
    assert save_warnings([big[:10], big[10:]]) == []      # together they need it all
    assert save_warnings(gt.zeros(1000)[:1]) == []       # under 1 MiB extra


def test_save_writes_the_whole_storage_like_torch(quiet_gc):
    big = gt.zeros(500_000)
    with pytest.warns(UserWarning, match=r"the saved tensor has shape \(10,\)"):
        buf = io.BytesIO()
        gt.save(big[:10], buf)
    torch = oracle_torch()
    tbuf = io.BytesIO()
    torch.save(torch.zeros(500_000)[:10], tbuf)
    assert len(buf.getvalue()) > 2_000_000 and len(tbuf.getvalue()) > 2_000_000
