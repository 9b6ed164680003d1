"""Large products on glasstorch's own threads as single-threaded BLAS calls
(backends/cpu/split_gemm.py, native/gemm.c; the path where the own kernel was not built):
the right values on any thread count, every layout the BLAS reads taken as it lies,
everything else refused untouched, and calls from several Python threads at once each
right."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import glasstorch as gt
from glasstorch.backends.cpu import blas_threads, linalg, split_gemm
from glasstorch.backends.cpu.native import function
from oracle import assert_same, oracle_torch
from product_helpers import products_from_python_threads


@pytest.fixture(autouse=True)
def available(monkeypatch):
    # The BLAS path, as on a CPU without AVX-512 (test_own_gemm.py tests the own kernel).
    monkeypatch.setattr(split_gemm, "own_matmul", lambda a, b, o: False)
    if not split_gemm.available():
        pytest.skip("NumPy's BLAS is not the ILP64 OpenBLAS of NumPy's wheels")
    if function("gemm", "gemm_split_f32", "piinnnnpnnpnnpnnnip") is None:
        pytest.skip("the C kernels do not build here")
    before = gt.get_num_threads()
    yield
    gt.set_num_threads(before)


def _split(a, b, threads):
    gt.set_num_threads(threads)
    o = np.full(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]),
                np.nan, a.dtype)
    assert split_gemm.matmul(a, b, o)
    return o


def _laid_out(rng, shape, dtype, transposed, pad):
    """A matrix (or batch) of `shape`, stored row-major or transposed, with `pad` spare
    columns in its leading dimension."""
    rows, cols = shape[-2:]
    stored = (cols, rows) if transposed else (rows, cols)
    full = rng.standard_normal(shape[:-2] + (stored[0], stored[1] + pad)).astype(dtype)
    x = full[..., :stored[1]]
    return np.swapaxes(x, -1, -2) if transposed else x


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 70),
       batch=st.sampled_from([None, 1, 3, 4]), broadcast=st.sampled_from(["", "a", "b"]),
       ta=st.booleans(), tb=st.booleans(), pad=st.integers(0, 3),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_values_on_any_thread_count(m, n, k, batch, broadcast, ta, tb, pad, dtype,
                                             seed):
    rng = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    a = _laid_out(rng, (lead if broadcast != "a" else ()) + (m, k), dtype, ta, pad)
    b = _laid_out(rng, (lead if broadcast != "b" else ()) + (k, n), dtype, tb, pad)
    if a.ndim == 2 and b.ndim == 2 and lead:
        b = _laid_out(rng, lead + (k, n), dtype, tb, pad)
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    scale = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    eps = np.finfo(dtype).eps
    for threads in (2, 3):
        error = np.abs(_split(a, b, threads) - exact)
        assert (error <= 2 * k * eps * scale + 1e-30).all()


def _piecewise(a, b, threads):
    """a @ b cut as gemm.c cuts it (blocks of C's rows, or of its columns when C is wider
    than tall; `threads // gcd(batch, threads)` blocks a product), each block one
    single-threaded BLAS call."""
    batch = a.shape[0] if a.ndim == 3 else 1
    m, n = a.shape[-2], b.shape[-1]
    blocks = threads // math.gcd(batch, threads)
    extent = m if m >= n else n
    per = -(-extent // blocks)
    with blas_threads.one_thread():
        if m >= n:
            parts = [np.matmul(a[..., lo:lo + per, :], b) for lo in range(0, extent, per)]
            return np.concatenate(parts, axis=-2)
        parts = [np.matmul(a, b[..., lo:lo + per]) for lo in range(0, extent, per)]
        return np.concatenate(parts, axis=-1)


@pytest.mark.parametrize("shapes", [((128, 784), (784, 256)), ((300, 64), (64, 100)),
                                    ((8, 50, 64), (8, 64, 70))])
def test_one_blas_call_per_piece(shapes):
    """Each piece is one single-threaded BLAS call on its block: the same bits as those calls
    (whether they equal the unsplit product's depends on the BLAS's kernel for the CPU:
    OpenBLAS's SkylakeX kernels give the same bits for these shapes, its Haswell ones do not)."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    np.testing.assert_array_equal(_split(a, b, 2), _piecewise(a, b, 2))


def _refused(a, b, o):
    before = o.copy()
    assert not split_gemm.matmul(a, b, o)
    np.testing.assert_array_equal(o, before)


def test_refuses_what_it_does_not_take():
    gt.set_num_threads(2)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    o = np.zeros((64, 64), np.float32)
    _refused(a.astype(np.complex64), a.astype(np.complex64), o.astype(np.complex64))
    _refused(a.astype(np.int32), a.astype(np.int32), o.astype(np.int32))
    _refused(a, a.astype(np.float64), o)                        # mixed dtypes
    _refused(a[:, ::2], a[::2], o)                              # neither row- nor column-major
    _refused(a, a, a)                                           # output overlaps an input
    _refused(a[None, None], a, o[None, None])                   # 4-d
    _refused(a, a, np.asfortranarray(o))                        # column-major output
    _refused(a[:0], a, o[:0])                                   # empty
    _refused(a, a, o[:32])                                      # shapes that do not fit
    _refused(a[:, :32], a, o)
    gt.set_num_threads(1)
    _refused(a, a, o)                                           # one thread: np.matmul's


def test_mm_and_linear_use_it_on_two_threads(monkeypatch):
    """Products from ONE_THREAD_MNK multiply-adds go through split_gemm; NumPy's BLAS
    threads are not called."""
    gt.set_num_threads(2)
    calls = []
    real = split_gemm.matmul
    monkeypatch.setattr(split_gemm, "matmul", lambda *args: calls.append(1) or real(*args))
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((128, 256), (256, 96), (96,)))
    assert 128 * 256 * 96 >= linalg.ONE_THREAD_MNK
    got = gt.mm(gt.from_numpy(a), gt.from_numpy(b)).numpy()
    linear = gt.nn.functional.linear(gt.from_numpy(a), gt.from_numpy(np.ascontiguousarray(b.T)),
                                     gt.from_numpy(c)).numpy()
    assert len(calls) == 2
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(linear, a @ b + c, rtol=1e-5, atol=1e-4)


def test_python_threads_at_once():
    """Calls from several Python threads at once: one runs on the pool, the others on
    their own threads; each gets its own product."""
    gt.set_num_threads(2)
    for a, b, got in products_from_python_threads(split_gemm.matmul):
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)


def test_back_to_back_products_on_changing_thread_counts():
    """Hundreds of jobs in a row, the team's size changing between them: helpers that come
    late to one job never take a piece of the next."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal((48, 40)).astype(np.float32)
    want = a @ b
    for i in range(300):
        got = _split(a, b, 2 + i % 3)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products_and_gradients_against_torch(dtype, monkeypatch):
    """mm, matmul of a transposed weight, bmm and addmm on two threads, where every product
    (the gradients' too) is split: values, dtypes and strides as PyTorch's."""
    torch = oracle_torch()
    gt.set_num_threads(2)
    calls = []
    real = split_gemm.matmul
    monkeypatch.setattr(split_gemm, "matmul", lambda *args: calls.append(1) or real(*args))
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(dtype)
              for s in ((128, 256), (96, 256), (6, 64, 48), (6, 48, 80), (96,))]
    ours = [gt.from_numpy(a.copy()).requires_grad_() for a in arrays]
    theirs = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    tol = 1e-5 if dtype == "float32" else 1e-12

    def run(T, x, w, p, q, c):
        outs = [T.mm(x, w.t()), x @ w.t(), T.bmm(p, q), T.addmm(c, x, w.t())]
        sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
        return outs
    got, want = run(gt, *ours), run(torch, *theirs)
    assert calls
    for g, w in zip(got, want):
        assert_same(g, w, rtol=tol, atol=tol * 100)
    for g, w in zip(ours, theirs):
        assert_same(g.grad, w.grad, rtol=tol, atol=tol * 100)
