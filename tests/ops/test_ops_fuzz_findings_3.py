"""Differences from PyTorch the third differential campaign (tests/fuzz) found in operators,
each checked against PyTorch on the smallest program that showed it."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy


def _both(fn):
    """fn(T) for T = glasstorch and T = torch, with the warnings each raised."""
    torch = oracle_torch()
    results = []
    for T in (gt, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(T)
        results.append((out, [str(w.message).split(" (Triggered")[0] for w in caught]))
    return results


def _same_values(a, b):
    assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fill", [
    lambda x, T: x.masked_fill_(T.tensor([[True, False, False], [False, False, True]]), 7),
    lambda x, T: x.masked_fill_(T.tensor([True, False, False]), T.tensor(7.)),
    lambda x, T: x.index_fill_(1, T.tensor([1]), 7),
    lambda x, T: x.index_fill_(0, T.tensor([1]), T.tensor(7.)),
])
def test_masked_and_index_fill_on_an_expanded_tensor_warn_and_write(fill):
    """PyTorch deprecates these on expanded tensors (a warning) but still writes the memory
    every selected element refers to; other in-place ops refuse."""
    def f(T):
        base = T.tensor([1., 2., 3.])
        fill(base.expand(2, 3), T)
        return base
    (ours, our_warnings), (theirs, their_warnings) = _both(f)
    _same_values(ours, theirs)
    assert our_warnings == their_warnings


def test_other_inplace_ops_on_an_expanded_tensor_still_refuse():
    with pytest.raises(RuntimeError, match="more than one element of the written-to"):
        gt.tensor([1., 2.]).expand(3, 2).add_(1)
