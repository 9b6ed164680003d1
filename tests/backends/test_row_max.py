"""loss.row_max, the rows' max that (log_)softmax subtracts: np.maximum.reduceat over
contiguous 2-D blocks, reduce otherwise; both must give NumPy's max exactly."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as GF
from glasstorch.backends.cpu.loss import row_max
from oracle import assert_same, oracle_torch, to_torch


@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (3, 1), (1, 9), (7, 65), (16, 4096)])
def test_matches_numpy_max(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    if x.size > 4:
        x.flat[1] = np.nan
        x.flat[3] = np.inf
        x[-1] = -np.inf
    want = np.max(x, axis=1, keepdims=True) if x.size else np.empty((shape[0], 1), x.dtype)
    got = row_max(x)
    assert got.shape == want.shape and got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)


def test_strided_and_3d_blocks_take_reduce():
    x = np.random.default_rng(1).standard_normal((6, 10))
    np.testing.assert_array_equal(row_max(x[:, ::2]), x[:, ::2].max(1, keepdims=True))
    y = np.random.default_rng(2).standard_normal((4, 6, 3))
    np.testing.assert_array_equal(row_max(y), y.max(1, keepdims=True))


def test_log_softmax_and_cross_entropy_on_short_rows_match_torch():
    torch = oracle_torch()
    a = np.random.default_rng(3).standard_normal((1024, 65)).astype(np.float32) * 4
    a[5] = -np.inf
    a[7, 3] = np.nan
    x = gt.from_numpy(a)
    assert_same(GF.log_softmax(x, -1), torch.log_softmax(to_torch(x), -1))
    assert_same(GF.softmax(x, -1), torch.softmax(to_torch(x), -1))
    t = np.random.default_rng(4).integers(0, 65, 1024)
    ok = gt.from_numpy(a[8:].copy())
    assert_same(GF.cross_entropy(ok, gt.from_numpy(t[8:])),
                torch.nn.functional.cross_entropy(to_torch(ok), torch.from_numpy(t[8:])))
