"""Wrong answers the differential campaign (tests/fuzz) found in operators, each checked
against PyTorch on the smallest program that showed it."""
import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy


def _same(fn):
    """Run fn(T) with T = glasstorch and T = torch; compare values, dtypes and shapes."""
    torch = oracle_torch()
    ours, theirs = fn(gt), fn(torch)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs, strict=True):
        assert str(a.dtype) == str(b.dtype)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("step", [2, 4, 8])
def test_neg_inplace_on_strided_view(dtype, step):
    def f(T):
        x = T.arange(16).to(getattr(T, dtype))
        x[::step].neg_()
        return x
    _same(f)


def test_neg_inplace_on_diagonal():
    def f(T):
        y = T.arange(9.).reshape(3, 3)
        y.diagonal().neg_()
        return y
    _same(f)
