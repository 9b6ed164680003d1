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


def _scale_by(L, c, conjugate_in_backward):
    """z * c with a backward that is right (g * conj(c)) or forgets the conjugate."""
    class Scale(L.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            return z * c

        @staticmethod
        def backward(ctx, g):
            return g * (c.conjugate() if conjugate_in_backward else c)
    return Scale.apply


@pytest.mark.parametrize("fast_mode", [False, True])
def test_complex_gradients_are_checked_as_real_jacobians(fast_mode):
    # a backward missing its conjugate fails in both libraries; the right one passes
    T = oracle_torch()
    for L in (gt, T):
        z = L.tensor([1 + 2j, -0.5 + 0.25j], dtype=L.complex128, requires_grad=True)
        c = 0.5 - 1.5j
        assert L.autograd.gradcheck(_scale_by(L, c, True), (z,), fast_mode=fast_mode)
        assert not L.autograd.gradcheck(_scale_by(L, c, False), (z,), fast_mode=fast_mode,
                                        raise_exception=False)
        # complex -> real and real -> complex
        assert L.autograd.gradcheck(lambda v: v.abs() * v.angle(), (z,), fast_mode=fast_mode)
        x = L.tensor([0.3, 1.7], dtype=L.float64, requires_grad=True)
        assert L.autograd.gradcheck(lambda a: L.polar(a, a * 2), (x,), fast_mode=fast_mode)


def test_check_forward_ad_compares_jvps_with_finite_differences():
    z = gt.tensor([1 + 2j, -0.5 + 0.25j, 2 - 1j], dtype=gt.complex128, requires_grad=True)
    x = gt.tensor([0.3, 1.7, 0.9], dtype=gt.float64, requires_grad=True)
    for fn, arg in [(lambda v: (v * 2).exp().cumprod(0), z), (lambda v: v.abs(), z),
                    (lambda a: gt.polar(a, a * 2), x), (lambda a: a.sin().cumsum(0), x)]:
        assert gt.autograd.gradcheck(fn, (arg,), check_forward_ad=True)


def test_check_forward_ad_fails_on_a_wrong_tangent_rule(monkeypatch):
    x = gt.tensor([0.3, 1.7, 0.9], dtype=gt.float64, requires_grad=True)
    op = gt.ops.aten.sin.default._op
    monkeypatch.setitem(op.info, "jvp", lambda primals, tangents, result: tangents[0] * 2)
    with pytest.raises(gt.autograd.GradcheckError, match="forward mode"):
        gt.autograd.gradcheck(lambda a: a.sin(), (x,), check_forward_ad=True)
    assert gt.autograd.gradcheck(lambda a: a.sin(), (x,))       # backward is untouched
