"""Autograd differences from PyTorch the third differential campaign (tests/fuzz) found,
each checked against PyTorch on the smallest program that showed it."""
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
