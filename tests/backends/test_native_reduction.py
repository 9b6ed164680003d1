"""The C sums of backends/cpu/native/reduction.c against NumPy and PyTorch: a float
tensor's sums over leading dims (NumPy's bit for bit, on any thread count), into out= or
not, and the layouts and dtypes that fall back to NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cpu import reduction
from native_paths import needs_compiler, spy_kernels, threaded_kernels
from oracle import assert_same, oracle_torch, to_torch


@pytest.fixture
def small_sums(monkeypatch):
    """The C sums taken from one element on."""
    monkeypatch.setattr(reduction, "_NATIVE_SUM_MIN", 0)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "3d"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sums_and_means_as_torch_on_both_paths(layout, dtype, small_sums, kernel_path):
    oracle_torch()
    base = gt.from_numpy(np.random.default_rng(3).standard_normal((66, 40)).astype(dtype))
    x = {"contiguous": base, "transposed": base.t(), "stepped": base[:, ::2],
         "3d": base.view(6, 11, 40)}[layout]
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
