"""Gradients the differential campaign (tests/fuzz) found wrong, each checked against
PyTorch on the smallest program that showed it."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy


def _same(fn):
    """fn(T) with T = glasstorch and T = torch: the same values (NaN where NaN)."""
    torch = oracle_torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = fn(gt), fn(torch)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs, strict=True):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("start", [-1, -2, 1])
def test_narrow_negative_start_backward(start):
    def f(T):
        l = T.arange(1., 4., requires_grad=True)
        l.cos().narrow(0, start, 1).sum().backward()
        return l.grad
    _same(f)


@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("op", ["std", "var", "sum", "mean"])
def test_reduction_of_0d_over_dim(op, dim):
    def f(T):
        l = T.tensor(2., requires_grad=True)
        r = getattr(l, op)(dim=dim)
        r.backward()
        return r.detach(), l.grad
    _same(f)


@pytest.mark.parametrize("equation, shape", [("...->", (2, 0, 2)), ("ij->", (0, 3)),
                                             ("i...->", (2, 3))])
def test_einsum_summing_everything_backward(equation, shape):
    def f(T):
        l = T.ones(shape, requires_grad=True)
        r = T.einsum(equation, l)
        r.sum().backward()
        return r.detach(), l.grad
    _same(f)
