"""torch._amp_foreach_non_finite_check_and_unscale_ and torch._amp_update_scale_ against
PyTorch: values written in place, found_inf, the growth tracker, and the argument errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import glasstorch as gt
from oracle import oracle_torch


def _both(fn):
    """fn(lib) for glasstorch and torch: (result or (error type, message)) each."""
    torch = oracle_torch()
    out = []
    for lib in (gt, torch):
        try:
            out.append(("ok", fn(lib)))
        except Exception as e:          # the same error type and text are expected
            out.append((type(e).__name__, str(e)))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("bad", [None, math.inf, -math.inf, math.nan])
def test_unscale_matches_torch(dtype, bad):
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(5) * 1000, rng.standard_normal((2, 3)), np.zeros(0)]
    if bad is not None:
        values[1][1, 2] = bad

    def run(lib):
        grads = [lib.tensor(v.copy(), dtype=getattr(lib, dtype)) for v in values]
        found = lib.zeros(1)
        lib._amp_foreach_non_finite_check_and_unscale_(grads, found, lib.tensor(1 / 3))
        return [g.float().tolist() for g in grads], found.tolist()
    (kind_g, got), (kind_t, want) = _both(run)
    assert kind_g == kind_t == "ok"
    assert got[1] == want[1] == [0.0 if bad is None else 1.0]
    for g, w in zip(got[0], want[0]):
        np.testing.assert_array_equal(np.array(g), np.array(w))


@pytest.mark.parametrize("found,tracker,interval,scale", [
    (0.0, 0, 3, 4.0), (0.0, 2, 3, 4.0), (1.0, 2, 3, 4.0), (0.0, 1, 2, 3e38),
    (1.0, 0, 1, 1e-30), (0.0, 0, 1, 65536.0)])
def test_update_scale_matches_torch(found, tracker, interval, scale):
    def run(lib):
        s = lib.tensor([scale])
        t = lib.tensor([tracker], dtype=lib.int32)
        r = lib._amp_update_scale_(s, t, lib.tensor([found]), 2.0, 0.5, interval)
        return r is s, s.tolist(), t.tolist()
    (kind_g, got), (kind_t, want) = _both(run)
    assert kind_g == kind_t == "ok" and got == want


@pytest.mark.parametrize("case", [
    lambda L: L._amp_foreach_non_finite_check_and_unscale_(
        [L.ones(2)], L.zeros(1, dtype=L.float64), L.tensor(0.5)),
    lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2)], L.zeros(2),
                                                          L.tensor(0.5)),
    lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2)], L.zeros(1),
                                                          L.tensor([0.5, 1.0])),
    lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2)], L.zeros(1),
                                                          L.tensor(1, dtype=L.int32)),
    lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2, dtype=L.int64)],
                                                          L.zeros(1), L.tensor(0.5)),
    lambda L: L._amp_update_scale_(L.tensor([4.0]), L.tensor([1]), L.zeros(1), 2.0, 0.5, 2),
    lambda L: L._amp_update_scale_(L.tensor([4.0, 1.0]), L.tensor([1], dtype=L.int32),
                                   L.zeros(1), 2.0, 0.5, 2),
])
def test_errors_match_torch(case):
    got, want = _both(case)
    assert got == want and got[0] != "ok"


def test_meta_tensors_are_checked_and_kept():
    scale, found = gt.empty(1, device="meta"), gt.empty(1, device="meta")
    tracker = gt.empty(1, dtype=gt.int32, device="meta")
    assert gt._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 3) is scale
    grads = [gt.empty(3, device="meta")]
    assert gt._amp_foreach_non_finite_check_and_unscale_(grads, found,
                                                          gt.empty((), device="meta")) is None
    with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor"):
        gt._amp_update_scale_(scale, gt.empty(1, device="meta"), found, 2.0, 0.5, 3)
