"""The C sums of backends/cpu/native/reduction.c against float64 and NumPy references and
PyTorch: a float tensor's total (faithfully rounded, the same on any thread count) and its
sums over leading dims (NumPy's bit for bit), NaN and inf, empty and one-element inputs, and
the layouts and dtypes that fall back to NumPy."""
from __future__ import annotations

import math

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cpu import reduction
from native_paths import needs_compiler, spy_kernels, threaded_kernels
from oracle import assert_same, oracle_torch, to_torch


@pytest.fixture
def small_sums(monkeypatch):
    """The C sums taken from one element on (but for sum()'s own fast path for small float
    totals, ops/reduction: the tests sum such ones with a dim)."""
    monkeypatch.setattr(reduction, "_NATIVE_TOTAL_MIN", 0)
    monkeypatch.setattr(reduction, "_NATIVE_SUM_MIN", 0)


def _samples(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"uniform": rng.random(n, dtype=np.float32),
            "normal": rng.standard_normal(n, dtype=np.float32),
            "lognormal": rng.lognormal(0, 3, n).astype(np.float32)}


@needs_compiler
def test_totals_use_the_c_kernel(monkeypatch, small_sums):
    calls = spy_kernels(monkeypatch, "reduction")
    x = gt.randn(64, 8)
    gt.ones(1 << 19).sum(), x.double().sum((0, 1)), x.mean(), x.sum((1, 0))
    gt.sum(x, (0, 1), keepdim=True)
    assert calls == ["total_f32", "total_f64", "total_f32", "total_f32", "total_f32"]
    calls.clear()
    x.t().sum((0, 1)), x[:, ::2].mean(), x.half().sum((0, 1)), x.sum((0, 1), dtype=gt.float64)
    gt.arange(600, dtype=gt.int32).sum(0), x.cfloat().sum((0, 1))
    assert calls == []                       # not contiguous, or not float32/float64


@needs_compiler
@pytest.mark.parametrize("n", [1, 7, 511, 512, 513, 512 * 64 * 3 + 100, 1_000_003])
def test_totals_are_accurate_and_the_same_on_any_thread_count(n, monkeypatch, small_sums):
    """Off the exact sum by half an ulp of the result and the float32 roundings in the
    vector lanes (8 elements a lane: 7 roundings, each at most 2^-24 of the lane's
    magnitude), the same bits on 1, 2 and 3 threads; float64 totals close to exact."""
    for name, x in _samples(n, seed=n).items():
        x64 = x.astype(np.float64)
        exact, scale = math.fsum(x64), np.abs(x64).sum()
        results = []
        for threads in (1, 2, 3):
            with threaded_kernels(monkeypatch, threads):
                results.append(gt.from_numpy(x).sum(0).numpy())
        ours = results[0]
        assert ours.dtype == np.float32 and ours.shape == ()
        ulp = np.spacing(np.float32(max(abs(exact), abs(float(ours)))))
        assert abs(float(ours) - exact) <= ulp / 2 + 7 * 2.0 ** -24 * scale, name
        assert all(r.tobytes() == ours.tobytes() for r in results), name
        assert abs(float(gt.from_numpy(x64).sum(0)) - exact) <= 1e-13 * scale, name


@needs_compiler
def test_cancelling_totals_err_less_than_the_numpy_paths(small_sums, monkeypatch):
    """On 1M-element float32 sums that cancel, where float32 rounding shows, the C total
    errs less on average than the NumPy path's _float32_total and pairwise sum."""
    errors = {"c": [], "rows": [], "pairwise": []}
    for seed in range(4):
        rng = np.random.default_rng(seed)
        for x in (rng.standard_normal(1_000_003, dtype=np.float32),
                  (rng.lognormal(0, 3, 1_000_003) - 20).astype(np.float32)):
            exact = math.fsum(x.astype(np.float64))
            errors["c"].append(abs(float(gt.from_numpy(x).sum(0)) - exact))
            errors["rows"].append(abs(float(np.float32(reduction._float32_total(x))) - exact))
            errors["pairwise"].append(abs(float(np.add.reduce(x)) - exact))
    mean = {k: np.mean(v) for k, v in errors.items()}
    assert mean["c"] < mean["rows"] and mean["c"] < mean["pairwise"], mean


@needs_compiler
@pytest.mark.parametrize("n", [0, 1, 5, 600])
def test_tiny_totals_are_exact(n, monkeypatch, small_sums):
    x = np.random.default_rng(n).integers(-8, 9, n).astype(np.float32) / 4
    calls = spy_kernels(monkeypatch, "reduction")
    got = gt.from_numpy(x).sum(0).numpy()
    assert got == x.astype(np.float64).sum()
    zeros = gt.from_numpy(np.full(n, -0.0, np.float32)).sum(0).numpy()
    assert zeros == 0 and not np.signbit(zeros)            # torch's +0 (its identity)
    assert calls == ["total_f32"] * 2


@needs_compiler
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_totals_carry_nan_and_inf_like_torch(dtype, small_sums, monkeypatch):
    torch = oracle_torch()
    spy_kernels(monkeypatch)
    for n in (3, 1500):
        for special in ([math.nan], [math.inf], [-math.inf], [math.inf, -math.inf],
                        [3e38] * 2, [math.nan, math.inf]):
            x = np.random.default_rng(n).standard_normal(n)
            x[np.arange(len(special)) * (n // len(special))] = special
            g = gt.from_numpy(x.astype(dtype))
            assert_same(g.sum(0), to_torch(g).sum(0), rtol=1e-6)
            assert_same(g.mean(), to_torch(g).mean(), rtol=1e-6)
    assert float(gt.full((1500,), 3e38).sum(0)) == math.inf   # float32 overflow, as torch's
    assert torch.full((1500,), 3e38).sum(0).item() == math.inf


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "3d", "offset"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sums_and_means_as_torch_on_both_paths(layout, dtype, small_sums, kernel_path):
    oracle_torch()
    base = gt.from_numpy(np.random.default_rng(3).standard_normal((66, 40)).astype(dtype))
    x = {"contiguous": base, "transposed": base.t(), "stepped": base[:, ::2],
         "3d": base.view(6, 11, 40),
         "offset": base.view(-1)[1:2601].view(65, 40)}[layout]   # data not 64-byte aligned
    t = to_torch(x)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for dims in (None, (0,), (0, 1), (1, 0), (-1,), (1,)):
        for keepdim in (False, True):
            if dims is None:
                assert_same(x.sum(), t.sum(), rtol=rtol)
                assert_same(x.mean(), t.mean(), rtol=rtol)
                continue
            assert_same(x.sum(dims, keepdim), t.sum(dims, keepdim), rtol=rtol)
            assert_same(x.mean(dims, keepdim), t.mean(dims, keepdim), rtol=rtol)


@needs_compiler
@pytest.mark.parametrize("shape", [(704, 48), (704, 144), (64, 11, 192), (300, 7),
                                   (40, 130), (3, 70), (0, 20), (5, 0)])
def test_sums_over_leading_dims_into_out_are_numpys(shape, small_sums, monkeypatch):
    """Straight into out= (keepdim or not), NumPy's bit for bit, on any thread count; into
    an out= that is not contiguous through a buffer; into a float64 out= by NumPy."""
    rng = np.random.default_rng(len(shape))
    a = (rng.standard_normal(shape) * rng.lognormal(0, 3, shape)).astype(np.float32)
    dims = list(range(len(shape) - 1))
    want = np.add.reduce(a, axis=tuple(dims), keepdims=True)
    kept = want.shape[len(dims):]
    x = gt.from_numpy(a)
    calls = spy_kernels(monkeypatch, "reduction")
    for keepdim in (True, False):
        out = gt.full(want.shape if keepdim else kept, 7.0)
        assert gt.sum(x, dims, keepdim=keepdim, out=out) is out
        assert np.array_equal(out.numpy().reshape(want.shape), want)
    with threaded_kernels(monkeypatch, 3):
        assert np.array_equal(x.sum(dims, keepdim=True).numpy(), want)
    strided = gt.full((want.size, 2), 7.0)[:, 0]
    gt.sum(x, dims, out=strided.unflatten(0, kept))
    assert np.array_equal(strided.numpy(), want.reshape(-1))
    assert calls == ["sum_rows_f32"] * (4 if want.size > 1 else 0)
    calls.clear()
    doubled = gt.full(kept, 7.0, dtype=gt.float64)
    gt.sum(x, dims, out=doubled)
    assert calls == [] and np.array_equal(
        doubled.numpy(), np.add.reduce(a, axis=tuple(dims), dtype=np.float64))


@needs_compiler
def test_a_sum_into_its_own_input_is_right(small_sums, monkeypatch):
    """out= over the input's first row: summed into a buffer, then written (straight into
    out, the last chunk of 64 columns, 6 to 69, would read row 0's first results)."""
    a = np.random.default_rng(0).standard_normal((50, 70)).astype(np.float32)
    want = np.add.reduce(a, axis=0)
    x = gt.from_numpy(a.copy())
    calls = spy_kernels(monkeypatch, "reduction")
    gt.sum(x, 0, out=x[0])
    assert calls == ["sum_rows_f32"] and np.array_equal(x[0].numpy(), want)


@needs_compiler
@pytest.mark.parametrize("shape", [(1000, 1), (50, 20, 1)])
def test_one_column_left_is_summed_pairwise_as_numpy(shape, small_sums, monkeypatch):
    a = np.random.default_rng(1).lognormal(0, 3, shape).astype(np.float32)
    calls = spy_kernels(monkeypatch, "reduction")
    dims = tuple(range(len(shape) - 1))
    got = gt.from_numpy(a).sum(dims).numpy()
    assert calls == [] and np.array_equal(got, np.add.reduce(a, axis=dims))


@needs_compiler
def test_a_column_of_negative_zeros_sums_to_positive_zero(monkeypatch):
    """NumPy and PyTorch start a sum from +0.0; the C column sums end with + 0.0 to agree."""
    calls = spy_kernels(monkeypatch, "reduction")
    x = gt.full((64, 40), -0.0)
    assert not np.signbit(x.sum(0).numpy()).any() and calls
