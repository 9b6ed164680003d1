"""gradcheck / gradgradcheck: pass on correct derivatives, fail as PyTorch does on wrong ones."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from oracle import oracle_torch

rng = np.random.default_rng(0)


def leaves(L, *shapes, dtype="float64"):
    return tuple(L.tensor(rng.standard_normal(s), dtype=getattr(L, dtype)).requires_grad_()
                 for s in shapes)


CORRECT = {
    "mul_exp": (lambda a, b: (a * b).exp(), [(2, 3), (2, 3)]),
    "broadcast_sum": (lambda a, b: (a + b).sum(0), [(2, 3), (3,)]),
    "matmul": (lambda a, b: a @ b, [(2, 3), (3, 2)]),
    "views": (lambda a, b: a.t().reshape(-1) * b.view(-1), [(2, 3), (3, 2)]),
    "two_outputs": (lambda a, b: (a.tanh(), (a * b).sum()), [(3,), (3,)]),
    "transposed_input": (lambda a, b: (a.t() * b).sigmoid(), [(3, 2), (2, 3)]),
}


@pytest.mark.parametrize("name", CORRECT)
@pytest.mark.parametrize("fast", [False, True])
def test_correct_functions_pass(name, fast):
    fn, shapes = CORRECT[name]
    assert gt.autograd.gradcheck(fn, leaves(gt, *shapes), fast_mode=fast) is True


@pytest.mark.parametrize("name", ["mul_exp", "matmul", "two_outputs"])
def test_gradgradcheck_passes(name):
    fn, shapes = CORRECT[name]
    assert gt.autograd.gradgradcheck(fn, leaves(gt, *shapes)) is True


def test_input_without_grad_is_not_checked():
    a, = leaves(gt, (3,))
    b = gt.tensor(rng.standard_normal(3))
    assert gt.autograd.gradcheck(lambda x, y: x * y.exp(), (a, b))


def test_inputs_restored_and_versions_untouched():
    a, = leaves(gt, (2, 2))
    before, version = a.detach().clone(), a._version
    gt.autograd.gradcheck(lambda x: x.exp(), a)
    assert np.array_equal(a.detach().numpy(), before.numpy()) and a._version == version


def _wrong(L):
    class Wrong(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x * 3      # should be 2x

    return Wrong


def test_wrong_derivative_message_matches_torch():
    T = oracle_torch()
    data = np.array([1.0, 2.0])
    msgs = []
    for L, err in ((gt, gt.autograd.GradcheckError), (T, RuntimeError)):
        x = L.tensor(data, dtype=L.float64, requires_grad=True)
        with pytest.raises(err) as info:
            L.autograd.gradcheck(_wrong(L).apply, (x,))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    assert msgs[0].startswith("Jacobian mismatch for output 0 with respect to input 0,\n"
                              "numerical:tensor([[2.0000, 0.0000],")


def test_error_class_and_raise_exception_false():
    from glasstorch.autograd.gradcheck import GradcheckError
    assert issubclass(GradcheckError, RuntimeError)
    x, = leaves(gt, (3,))
    assert gt.autograd.gradcheck(_wrong(gt).apply, (x,), raise_exception=False) is False
    assert gt.autograd.gradcheck(_wrong(gt).apply, (x,), fast_mode=True,
                                 raise_exception=False) is False
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gt.autograd.gradcheck(_wrong(gt).apply, (x,), fast_mode=True)


def test_gradgradcheck_catches_wrong_second_derivative():
    class WrongDouble(gt.autograd.Function):
        """First derivative right (2x), but built from x detached: no second derivative."""
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.detach() * 2

    x, = leaves(gt, (2,))
    assert gt.autograd.gradcheck(WrongDouble.apply, (x,))
    with pytest.raises(gt.autograd.GradcheckError, match="Jacobian mismatch for output 0 "
                       "with respect to input 0"):
        gt.autograd.gradgradcheck(WrongDouble.apply, (x,))


def test_no_input_requires_grad():
    T = oracle_torch()
    for L in (gt, T):
        with pytest.raises(ValueError) as info:
            L.autograd.gradcheck(lambda x: x * 2, (L.ones(2, dtype=L.float64),))
        assert str(info.value) == ("gradcheck expects at least one input tensor to require "
                                   "gradient, but none of them have requires_grad=True.")


def test_float32_warns_and_fails_like_torch():
    T = oracle_torch()
    results = []
    for L in (gt, T):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError) as info:
                L.autograd.gradcheck(lambda t: t ** 2, (x,))
        results.append((str(info.value), [str(m.message) for m in w
                                           if "double precision" in str(m.message)]))
    assert results[0] == results[1] and len(results[0][1]) == 1
