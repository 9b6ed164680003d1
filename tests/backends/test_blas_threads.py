"""BLAS's thread count around glasstorch's products: one thread inside `one_thread` and for
mid-sized products, the configured count restored after. (Large products run on
glasstorch's own threads: test_split_gemm.py.)"""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cpu import blas_threads, linalg, split_gemm


@pytest.fixture
def two_threads():
    if blas_threads.get_blas_threads() is None:
        pytest.skip("NumPy's BLAS library was not found among the loaded libraries")
    before = gt.get_num_threads()
    gt.set_num_threads(2)
    yield
    gt.set_num_threads(before)


def test_one_thread_sets_one_and_restores(two_threads):
    with blas_threads.one_thread():
        assert blas_threads.get_blas_threads() == 1
    assert blas_threads.get_blas_threads() == 2


def test_one_thread_restores_after_an_error(two_threads):
    with pytest.raises(ValueError):
        with blas_threads.one_thread():
            raise ValueError
    assert blas_threads.get_blas_threads() == 2


@pytest.mark.parametrize("m,k,n,expected", [
    (4, 4, 4, 2),                 # tiny: BLAS is on one thread anyway, the count untouched
    (64, 1568, 10, 1),            # mid-sized: one BLAS thread
])
def test_products_by_size(two_threads, monkeypatch, m, k, n, expected):
    """blas_matmul runs products under ONE_THREAD_MNK multiply-adds (and from 2^19) with one
    BLAS thread; mm and addmm give NumPy's values either way."""
    seen = []
    real = np.matmul
    # The BLAS path, as on a CPU without AVX-512 (where the own kernel takes these products).
    monkeypatch.setattr(split_gemm, "own_matmul", lambda a, b, o: False)

    def spy(*args, **kwargs):
        seen.append(blas_threads.get_blas_threads())
        return real(*args, **kwargs)
    monkeypatch.setattr(linalg.np, "matmul", spy)
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (n,)))
    got = gt.mm(gt.from_numpy(a), gt.from_numpy(b)).numpy()
    got_add = gt.addmm(gt.from_numpy(c), gt.from_numpy(a), gt.from_numpy(b)).numpy()
    monkeypatch.undo()
    assert seen == [expected, expected]
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got_add, a @ b + c, rtol=1e-5, atol=1e-4)
    assert blas_threads.get_blas_threads() == 2
