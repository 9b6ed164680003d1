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


# ---- advanced-index writes, double backward, refused writes ------------------------------

def setitem_values_requiring_grad(L, a):
    b = a * 2
    b[L.tensor([1, 0]), L.tensor([2, 2])] = a[0, :2] ** 2
    return b


def masked_setitem(L, a):
    b = a * 2
    b[b > 1.0] = a.sum()
    return b


def mul_on_slice_by_its_input(L, a):
    b = a * 1
    b[:, 1:].mul_(a[:, 1:])
    return b


def mul_then_exp_on_disjoint_views(L, a):
    b = a * 1
    b[1, ::2].mul_(a[1, ::2])
    b[0].exp_()              # saves its output: the last write, so the output stays valid
    return b


DOUBLE = [setitem_values_requiring_grad, masked_setitem, mul_on_slice_by_its_input,
          mul_then_exp_on_disjoint_views,
          lambda L, a: (a ** 3)[L.tensor([1, 0, 1])],
          lambda L, a: (a ** 3).select(1, 2),
          lambda L, a: (a ** 3)[:, ::2],
          lambda L, a: (a ** 3).diagonal(),
          lambda L, a: (a ** 3).unfold(1, 2, 1),
          lambda L, a: (a ** 3).as_strided((2, 2), (1, 2), 1)]


@pytest.mark.parametrize("case", DOUBLE, ids=lambda c: c.__name__ if c.__name__ != "<lambda>"
                         else f"view{DOUBLE.index(c)}")
def test_double_backward_through_writes_and_views_matches_torch(case):
    """The first gradient (create_graph=True) and the gradient of its weighted sum."""
    T = oracle_torch()
    results = []
    for L in (gt, T):
        a = L.tensor(W).requires_grad_()
        out = case(L, a)
        weights = L.tensor(rng.standard_normal(tuple(out.shape)) if L is gt else results[0][2])
        (g,) = L.autograd.grad((out ** 2 * weights).sum(), a, create_graph=True)
        (g2,) = L.autograd.grad((g * L.tensor(W)).sum(), a)
        results.append((g, g2, weights.numpy()))
    (gg, gg2, _), (tg, tg2, _) = results
    assert_same(gg, tg, rtol=1e-10, check_stride=False)
    assert_same(gg2, tg2, rtol=1e-10, check_stride=False)


def _outcome(L, fn):
    try:
        fn(L)
    except RuntimeError as e:
        return str(e)[:40]
    return "ok"


WRITES = {
    "split output, base requires grad": lambda L: L.arange(4.0, requires_grad=True).clone()
    .split(2)[1].mul_(2),
    "unbind output": lambda L: L.ones(2, 2, requires_grad=True).clone().unbind(0)[0].add_(1),
    "split output, base without grad": lambda L: L.arange(4.0).split(2)[0].mul_(2),
    "split output written under no_grad": lambda L: _under_no_grad(
        L, lambda: L.arange(4.0, requires_grad=True).clone().split(2)[0].mul_(2)),
    "view made under no_grad": lambda L: _view_under_no_grad(L).mul_(2),
    "view of such a view": lambda L: _view_under_no_grad(L)[1:].mul_(2),
}


def _under_no_grad(L, fn):
    with L.no_grad():
        return fn()


def _view_under_no_grad(L):
    b = L.arange(4.0, requires_grad=True).clone()
    with L.no_grad():
        return b[:3]


@pytest.mark.parametrize("name", list(WRITES))
def test_refused_writes_through_views_match_torch(name):
    T = oracle_torch()
    ours, theirs = _outcome(gt, WRITES[name]), _outcome(T, WRITES[name])
    assert (ours == "ok") == (theirs == "ok"), (ours, theirs)
    if ours != "ok" and "view of such" not in name:
        assert ours[:30] == theirs[:30]


def test_refused_write_leaves_the_tensor_unchanged():
    b = gt.arange(4.0, requires_grad=True).clone()
    part = b.split(2)[1]
    with pytest.raises(RuntimeError, match="Output 1 of Split is a view"):
        part.mul_(10)
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0] and b._version == 0
