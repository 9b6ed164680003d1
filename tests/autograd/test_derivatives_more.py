"""Derivatives of two-output statistics and of nan_to_num/angle, against torch."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(5)
X = rng.standard_normal((3, 4))


@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True)])
@pytest.mark.parametrize("use", ["both", "first", "second"])
def test_two_output_statistics(name, dim, keepdim, use):
    T = oracle_torch()
    grads, names = [], []
    for L in (gt, T):
        x = L.tensor(X).t().requires_grad_()
        kwargs = {} if dim is None else {"dim": dim, "keepdim": keepdim}
        a, b = getattr(L, name)(x, correction=1, **kwargs)
        names.append(a.grad_fn.name())
        loss = {"both": (a * 2).sum() + (b * 3).sum(), "first": a.sum(),
                "second": b.sum()}[use]
        loss.backward()
        grads.append(x.grad)
    assert names[0] == names[1]
    assert_same(grads[0], grads[1], rtol=1e-10, check_stride=False)


@pytest.mark.parametrize("name", ["nan_to_num", "angle"])
def test_simple_derivatives(name):
    T = oracle_torch()
    data = X.copy()
    data[0, 0], data[1, 1] = np.nan, np.inf
    grads, names = [], []
    for L in (gt, T):
        x = L.tensor(data).requires_grad_()
        y = getattr(L, name)(x)
        names.append(y.grad_fn.name())
        (y * L.tensor(X)).nansum().backward() if name != "nan_to_num" else \
            (y * L.tensor(X)).sum().backward()
        grads.append(x.grad)
    assert names[0] == names[1]
    assert_same(grads[0], grads[1], rtol=1e-12, check_stride=False)
