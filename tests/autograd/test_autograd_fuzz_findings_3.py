"""Autograd differences from PyTorch the third differential campaign (tests/fuzz) found,
each checked against PyTorch on the smallest program that showed it."""
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch


def _outcome(fn, T):
    try:
        return fn(T)
    except Exception as e:      # compared: the class and text of what each raises
        return type(e).__name__, str(e)


def _same(fn):
    torch = oracle_torch()
    assert _outcome(fn, gt) == _outcome(fn, torch)


def test_number_remainder_tensor_has_no_derivative():
    """`2 % t` (remainder.Scalar_Tensor) has no formula in PyTorch: backward says so."""
    def f(T):
        t = T.tensor([1.5, 2.5], requires_grad=True)
        (-1 % t).sum().backward()
    _same(f)
    _same(lambda T: (T.tensor([1.5, 2.5], requires_grad=True) % 2).requires_grad)


def test_integer_view_copied_from_a_tensor_that_requires_grad():
    """An integer tensor cannot join the graph: a view of one written by copy_ from a
    floating tensor that requires grad stays a plain tensor, and so does its base. (PyTorch's
    `x[0] = w` does mark an integer x, a bug the campaign does not generate.)"""
    def f(T):
        x = T.tensor([3, 4], dtype=T.int16).reshape(2, 1)
        x.copy_(T.tensor(1.6, dtype=T.float64, requires_grad=True))
        return x.requires_grad, x._base.requires_grad, x.grad_fn is None, x.tolist()
    _same(f)


def test_inplace_op_on_a_tensor_without_grad_keeps_its_old_value_for_the_formula():
    """x.div_(w) with w requiring grad: w's gradient needs x before the write (PyTorch saves
    the original self); it used to save x itself and fail as modified in place."""
    def f(T):
        x = T.tensor([-6., 2., -3.])
        w = T.tensor([0.5, -2.5, 0.75], requires_grad=True)
        x.div_(w)
        x.mul_(w)
        (x * T.tensor([1., 2., 3.])).sum().backward()
        return w.grad.tolist()
    _same(f)


@pytest.mark.parametrize("write", [
    lambda v, w: v.mul_(w),
    lambda v, w: v.__setitem__(0, w[0, 0]),
    lambda v, w: v.copy_(w),
])
def test_views_made_before_their_base_joins_the_graph_require_grad(write):
    """An in-place write of a value that requires grad through one view makes the base
    require grad; its other views, made before, then require grad too (PyTorch's views read
    their base), and gradients flow through them."""
    def f(T):
        base = T.tensor([1., 2., 3., 4.])
        col, row = base.reshape(2, 2), base.reshape(2, 2).t()[1:]
        w = T.tensor([[0.5, -1.5], [2.0, 3.0]], requires_grad=True)
        write(col, w)
        flags = (base.requires_grad, col.requires_grad, row.requires_grad,
                 type(row.grad_fn).__name__)
        (row * T.tensor([[1., 2.]])).sum().backward()
        return flags, w.grad.tolist()
    _same(f)


def test_a_single_view_written_keeps_the_fast_path(monkeypatch):
    """No other tensor shares the storage: no search for sibling views."""
    import gc
    calls = []
    real = gc.get_referrers
    monkeypatch.setattr(gc, "get_referrers", lambda *a: calls.append(a) or real(*a))
    buf = gt.zeros(3, 2)
    buf[0] = gt.ones(2, requires_grad=True)
    assert buf.requires_grad and not calls


@pytest.mark.parametrize("op", [
    lambda T, a, b: a * b, lambda T, a, b: b * a, lambda T, a, b: a / b,
    lambda T, a, b: T.hypot(a, b), lambda T, a, b: T.hypot(b, a), lambda T, a, b: a % b,
    lambda T, a, b: T.fmod(a, b), lambda T, a, b: T.remainder(a, b)])
def test_an_input_without_grad_changed_in_place_after_use(op):
    """PyTorch saves an argument only for the gradients that read it: b (no grad) may be
    changed in place afterwards when only a's gradient is wanted, unless a's reads b."""
    def f(T):
        a = T.tensor([1.5, -2.5], requires_grad=True)
        b = T.tensor([3., 0.75])
        c = op(T, a, b)
        b.mul_(2)
        try:
            c.sum().backward()
        except RuntimeError as e:
            return str(e)[:60]
        return a.grad.tolist()
    _same(f)
