"""glasstorch's own matrix-product kernel (native/gemm.c's gemm_own_*, AVX-512 CPUs):
values within a float64 reference's rounding bound for any shape, strides and batch (up to
two batch dims, broadcasting as np.matmul); the
same bits on any thread count; NaN and infinity as IEEE arithmetic gives them; layouts it
does not take refused untouched; and the products (and gradients) of mm, linear and bmm
through it equal to PyTorch's."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import glasstorch as gt
from glasstorch.backends.cpu import linalg, split_gemm
from oracle import assert_same, oracle_torch
from product_helpers import products_from_python_threads


@pytest.fixture(autouse=True)
def available():
    if not split_gemm.own_kernel_available():
        pytest.skip("the own product kernel is built only for CPUs with AVX-512")
    before = gt.get_num_threads()
    yield
    gt.set_num_threads(before)


@pytest.fixture
def own_calls(monkeypatch) -> list:
    """The calls of split_gemm.own_matmul in the test (one entry each)."""
    calls = []
    real = split_gemm.own_matmul
    monkeypatch.setattr(split_gemm, "own_matmul", lambda *args: calls.append(1) or real(*args))
    return calls


def _panel(dtype) -> int:
    """The kernel's panel width: the narrowest C rows it takes."""
    return 128 // np.dtype(dtype).itemsize


def _own(a, b, threads):
    gt.set_num_threads(threads)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    o = np.full(shape, np.nan, a.dtype)
    assert split_gemm.own_matmul(a, b, o)
    return o


def _laid_out(rng, shape, dtype, layout):
    """A matrix (or batch) of `shape` stored row-major, transposed, with a padded leading
    dimension, every other element, or reversed."""
    rows, cols = shape[-2:]
    lead = shape[:-2]
    if layout == "transposed":
        return np.swapaxes(rng.standard_normal(lead + (cols, rows)).astype(dtype), -1, -2)
    if layout == "padded":
        return rng.standard_normal(lead + (rows, cols + 3)).astype(dtype)[..., :cols]
    if layout == "strided":
        return rng.standard_normal(lead + (2 * rows, 3 * cols)).astype(dtype)[..., ::2, ::3]
    if layout == "reversed":
        return rng.standard_normal(shape).astype(dtype)[..., ::-1, ::-1]
    return rng.standard_normal(shape).astype(dtype)


LAYOUTS = ["row", "transposed", "padded", "strided", "reversed"]


def _within_rounding(got, a, b):
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    scale = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    eps = np.finfo(a.dtype).eps
    assert (np.abs(got - exact) <= a.shape[-1] * eps * scale + 1e-30).all()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 40), extra=st.integers(0, 70), k=st.integers(1, 300),
       batch=st.sampled_from([None, 1, 3]), broadcast=st.sampled_from(["", "a", "b"]),
       la=st.sampled_from(LAYOUTS), lb=st.sampled_from(LAYOUTS),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_values_and_bits_on_any_thread_count(m, extra, k, batch, broadcast, la, lb, dtype,
                                             seed):
    """k up to 300 crosses the kernel's 256-long stretches of k; m and n its 8-row and
    32- (float64: 16-) column tiles, from one tile wide (narrower rows stay with BLAS)."""
    n = _panel(dtype) + extra
    rng = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    a = _laid_out(rng, (lead if broadcast != "a" else ()) + (m, k), dtype, la)
    b = _laid_out(rng, (lead if broadcast != "b" else ()) + (k, n), dtype, lb)
    one = _own(a, b, 1)
    _within_rounding(one, a, b)
    for threads in (2, 3):
        np.testing.assert_array_equal(_own(a, b, threads), one)


@pytest.mark.parametrize("a_shape, b_shape", [((8, 4, 32, 16), (8, 4, 16, 32)),
                                              ((8, 1, 32, 16), (1, 4, 16, 32)),
                                              ((3, 4, 20, 16), (16, 40)),
                                              ((1, 32, 144), (16, 1, 144, 196)),
                                              ((20, 16), (3, 4, 16, 40)),
                                              ((3, 1, 5, 7), (1, 4, 7, 40))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_batch_dims_broadcast_as_numpy(a_shape, b_shape, dtype):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    one = _own(a, b, 1)
    _within_rounding(one, a, b)
    np.testing.assert_array_equal(_own(a, b, 2), one)


def test_attention_heads_views():
    """Query and key as the heads views attention makes (B, H, T, hs over (B, T, H, hs)),
    into an output whose batch dims are not dense."""
    rng = np.random.default_rng(4)
    q = rng.standard_normal((8, 32, 4, 16)).astype(np.float32).transpose(0, 2, 1, 3)
    k = rng.standard_normal((8, 32, 4, 16)).astype(np.float32).transpose(0, 2, 1, 3)
    gt.set_num_threads(2)
    o = np.empty((8, 32, 4, 32), np.float32).transpose(0, 2, 1, 3)
    assert split_gemm.own_matmul(q, k.swapaxes(-1, -2), o)
    _within_rounding(o, q, k.swapaxes(-1, -2))
    np.testing.assert_array_equal(o, _own(q, k.swapaxes(-1, -2), 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", [(1, 1, 32), (300, 600, 70), (70, 300, 2100),
                                     (5, 1000, 33), (3, 5, 4200), (129, 257, 33)])
def test_large_and_ragged_shapes(dtype, m, k, n):
    """Past the kernel's blocks: 144 rows, 256 of k, 2048 columns."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    got = _own(a, b, 2)
    _within_rounding(got, a, b)
    np.testing.assert_array_equal(got, _own(a, b, 1))


def test_nan_and_infinity():
    """inf * 0 is NaN, inf + -inf is NaN, NaN stays, as in the BLAS's products."""
    a = np.ones((20, 40), np.float32)
    b = np.ones((40, 36), np.float32)
    a[0, 3] = np.inf
    b[3, 0] = 0.0                  # inf * 0 at (0, 0)
    a[1, 5] = np.inf
    a[1, 6] = -np.inf              # inf - inf at row 1
    a[2, 7] = np.nan
    b[9, 35] = np.inf              # +inf in column 35
    got = _own(a, b, 2)
    with np.errstate(invalid="ignore"):
        want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[0, 0]) and np.isnan(got[1]).all() and np.isnan(got[2]).all()
    assert got[5, 35] == np.inf


def _refused(a, b, o):
    before = o.copy()
    assert not split_gemm.own_matmul(a, b, o)
    np.testing.assert_array_equal(o, before)


def test_refuses_what_it_does_not_take():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    o = np.zeros((64, 64), np.float32)
    _refused(a.astype(np.complex64), a.astype(np.complex64), o.astype(np.complex64))
    _refused(a.astype(np.int32), a.astype(np.int32), o.astype(np.int32))
    _refused(a.astype(np.float16), a.astype(np.float16), o.astype(np.float16))
    _refused(a, a.astype(np.float64), o)                        # mixed dtypes
    _refused(a, a, a)                                           # output overlaps an input
    _refused(a, a, np.asfortranarray(o))                        # column-major output
    _refused(a[:, :0], a[:0], o)                                # k == 0: np.matmul's zeros
    _refused(a, a, o[:32])                                      # shapes that do not fit
    _refused(a[:, :32], a, o)
    _refused(a, a[:, :31], o[:, :31])                           # rows narrower than a panel
    _refused(a.astype(np.float64), a[:, :15].astype(np.float64), o[:, :15].astype(np.float64))
    _refused(a[None].repeat(2, 0), a[None].repeat(3, 0), o[None].repeat(3, 0))
    _refused(a[None, None, None], a, o[None, None, None])       # 5-d


def test_zero_inner_size_gives_zeros_through_blas_matmul():
    a, b = np.ones((600, 0), np.float32), np.ones((0, 900), np.float32)
    o = np.full((600, 900), np.nan, np.float32)
    linalg.blas_matmul(a, b, o)
    assert (o == 0).all()


def test_python_threads_at_once():
    """Calls from several Python threads at once: each gets its own product, the bits of
    one thread's."""
    gt.set_num_threads(2)
    for a, b, got in products_from_python_threads(split_gemm.own_matmul):
        np.testing.assert_array_equal(got, _own(a, b, 1))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products_and_gradients_against_torch(dtype, own_calls):
    """mm, linear, bmm and addmm from OWN_KERNEL_MNK multiply-adds, forward and backward,
    go through the own kernel: values, dtypes and strides as PyTorch's."""
    torch = oracle_torch()
    gt.set_num_threads(2)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(dtype)
              for s in ((128, 256), (96, 256), (6, 64, 48), (6, 48, 80), (96,))]
    assert 128 * 256 * 96 >= linalg.OWN_KERNEL_MNK
    ours = [gt.from_numpy(a.copy()).requires_grad_() for a in arrays]
    theirs = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    tol = 1e-5 if dtype == "float32" else 1e-12

    def run(T, x, w, p, q, c):
        outs = [T.mm(x, w.t()), T.nn.functional.linear(x, w, c), T.bmm(p, q),
                T.addmm(c, x, w.t())]
        sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
        return outs
    got, want = run(gt, *ours), run(torch, *theirs)
    assert len(own_calls) >= 9   # mm, linear, addmm and their two gradients each
    for g, w in zip(got, want):
        assert_same(g, w, rtol=tol, atol=tol * 100)
    for g, w in zip(ours, theirs):
        assert_same(g.grad, w.grad, rtol=tol, atol=tol * 100)


def test_convolution_products_take_it(own_calls):
    """conv2d's forward and both gradients multiply their columns on the own kernel, and
    give PyTorch's values."""
    torch = oracle_torch()
    gt.set_num_threads(2)
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(np.float32)
               for s in ((16, 8, 20, 20), (32, 8, 3, 3), (32,)))
    ours = [gt.from_numpy(v.copy()).requires_grad_() for v in (x, w, b)]
    theirs = [torch.from_numpy(v.copy()).requires_grad_() for v in (x, w, b)]
    y = gt.nn.functional.conv2d(*ours, padding=1)
    want = torch.nn.functional.conv2d(*theirs, padding=1)
    y.square().sum().backward()
    want.square().sum().backward()
    assert len(own_calls) >= 3
    assert_same(y, want, rtol=1e-4, atol=1e-4)
    for g, t in zip(ours, theirs):
        assert_same(g.grad, t.grad, rtol=1e-4, atol=1e-3)
