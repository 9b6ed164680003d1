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


def _raises_same(fn):
    torch = oracle_torch()
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(theirs.type):
        fn(gt)


@pytest.mark.parametrize("write", [lambda v: v.t().mul_(0), lambda v: v[0:1].tanh_(),
                                   lambda v: v.__setitem__(slice(None, None, 2), 1.0)])
def test_inplace_through_a_view_of_a_leaf_view_is_refused(write):
    """A leaf that is itself a view (reshape, then requires_grad_) passes requires_grad to
    its views: writing through one of them is refused, as a view of a leaf."""
    def f(T):
        w = T.tensor([1., 2., 3.]).reshape(3, 1).requires_grad_()
        write(w)
    _raises_same(f)


@pytest.mark.parametrize("op", ["copy_", "masked_scatter_", "index_fill_", "logical_and_"])
def test_overwriting_a_non_leaf_cuts_its_gradient(op):
    def f(T):
        l = T.tensor([1., 3.], requires_grad=True)
        x = l * 1
        if op == "copy_":
            x.copy_(T.tensor([2., -4.]))
        elif op == "masked_scatter_":
            x.masked_scatter_(T.tensor([True, False]), T.tensor([2., -4.]))
        elif op == "index_fill_":
            x.index_fill_(0, T.tensor([1]), 5.)
        else:
            x.logical_and_(T.tensor([1., 0.]))
        (x * T.tensor([1., 2.])).sum().backward()
        return x.detach(), l.grad
    _same(f)


def test_copy_into_a_view_of_a_non_leaf():
    def f(T):
        l = T.arange(1., 5., requires_grad=True)
        x = l * 2
        x[1:3].copy_(T.tensor([7., 8.]))
        (x * T.arange(4.)).sum().backward()
        return x.detach(), l.grad
    _same(f)


def test_inplace_on_a_view_reaches_the_other_views_of_its_base():
    """x is a view of a non-leaf; an in-place op through x[::2] changes the base: x's own
    history must now read the base's new history."""
    def f(T):
        l = T.arange(1., 7.).reshape(2, 3).requires_grad_()
        x = l.clone().transpose(0, -1)
        x[::2] **= -1.75
        (x * T.arange(6.).reshape(3, 2)).sum().backward()
        return x.detach(), l.grad
    _same(f)


def test_inplace_on_a_base_reaches_its_earlier_views():
    def f(T):
        l = T.arange(1., 5., requires_grad=True)
        b = l * 1
        v = b[1:3]
        b.mul_(T.tensor([2., 3., 4., 5.]))
        (v * T.tensor([1., 10.])).sum().backward()
        return v.detach(), l.grad
    _same(f)


def test_floor_on_a_view_of_a_power():
    """pow saves its input, not its result (as PyTorch): a later in-place op on a view of
    the result does not invalidate the backward."""
    def f(T):
        l = T.tensor([1.5, 2.5], requires_grad=True)
        y = l ** -8
        y[:1].floor_()
        y.sum().backward()
        return l.grad
    _same(f)


@pytest.mark.parametrize("exponent", [0, 2, -1.75, 0.5])
def test_pow_number_exponent_backward(exponent):
    def f(T):
        l = T.tensor([0., 1.5, -2.], requires_grad=True)
        (l ** exponent).sum().backward()
        return l.grad
    _same(f)


def test_number_to_a_tensor_power_backward():
    def f(T):
        l = T.tensor([1., 2.], requires_grad=True)
        (1.5 ** l).sum().backward()
        return l.grad
    _same(f)


@pytest.mark.parametrize("write", [
    lambda T, x: x.eq_(1.5), lambda T, x: x[1:].lt_(T.tensor([0., 5.])),
    lambda T, x: x[1:].logical_or_(T.tensor([0., 5.])), lambda T, x: x.logical_not_(),
    lambda T, x: x.sign_(), lambda T, x: x.logical_and_(T.tensor([1., 0., 1.]))])
def test_non_differentiable_inplace_ops(write):
    """Comparisons in place cut self's history (a zero derivative); logical_*_ are not
    recorded at all, so the old history stays and a leaf may be written."""
    def f(T):
        l = T.tensor([1.5, -2., 3.], requires_grad=True)
        x = l * 1
        write(T, x)
        (x * T.tensor([1., 2., 3.])).sum().backward()
        return x.detach(), l.grad
    _same(f)


@pytest.mark.parametrize("write", [lambda T, l: l.logical_not_(),
                                   lambda T, l: l.logical_and_(T.tensor([1., 0., 1.])),
                                   lambda T, l: l.eq_(1.5), lambda T, l: l.sign_()])
def test_non_differentiable_inplace_ops_on_a_leaf(write):
    torch = oracle_torch()
    try:
        write(torch, torch.tensor([1.5, -2., 3.], requires_grad=True))
    except RuntimeError:
        _raises_same(lambda T: write(T, T.tensor([1.5, -2., 3.], requires_grad=True)))
        return
    _same(lambda T: write(T, T.tensor([1.5, -2., 3.], requires_grad=True)).detach())
