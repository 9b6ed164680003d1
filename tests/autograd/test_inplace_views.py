"""In-place ops through views of tensors in a graph (PyTorch's CopySlices), against torch."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(3)
W = rng.standard_normal((2, 3))


def setitem_constant(L, a):
    b = a * 1
    b[0] = 5
    return b


def setitem_tensor_into_constant(L, a):
    z = L.zeros(2, 3, dtype=a.dtype)
    z[1] = a[0] * 3
    return z


def inplace_through_transposed_view(L, a):
    b = a * 2
    b.t()[1].mul_(a[0, 0])
    return b


def fill_and_add_on_slices(L, a):
    b = a * a
    b[:, 0].fill_(7)
    b[:, 1:].add_(a[:, :2] * 10)
    return b


CASES = [setitem_constant, setitem_tensor_into_constant, inplace_through_transposed_view,
         fill_and_add_on_slices]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_gradients_through_inplace_views_match_torch(case):
    T = oracle_torch()
    ga = gt.tensor(W).requires_grad_()
    ta = T.tensor(W).requires_grad_()
    gout, tout = case(gt, ga), case(T, ta)
    assert_same(gout, tout, rtol=1e-12, check_stride=False)
    assert gout.grad_fn.name() == tout.grad_fn.name()
    weights = rng.standard_normal((2, 3))
    (gout * gt.tensor(weights)).sum().backward()
    (tout * T.tensor(weights)).sum().backward()
    assert_same(ga.grad, ta.grad, rtol=1e-10, check_stride=False)


def test_modifying_a_saved_output_through_a_view_is_caught():
    a = gt.tensor(W).requires_grad_()
    b = a.exp()                 # ExpBackward0 saves its output
    b[:, 0].fill_(7)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: "
                                           r"\[torch.DoubleTensor \[2, 3\]\], which is "
                                           r"output 0 of Exp, is at version 1"):
        b.sum().backward()


def test_views_of_leaves_still_refuse_inplace():
    a = gt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        a[0] = 2
