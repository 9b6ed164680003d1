"""Gradients of complex functions follow PyTorch's convention (the conjugate Wirtinger
derivative: grad * conj(df/dz) for holomorphic f), checked against torch on |f(z)|^2."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(11)


def _complex(*shape):
    return 0.5 * rng.standard_normal(shape) + 0.5j * rng.standard_normal(shape)


A, B = _complex(3, 3), _complex(3, 3)

UNARY = ("exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square reciprocal sin cos tan asin "
         "acos atan sinh cosh tanh asinh acosh atanh sigmoid").split()

BINARY = {
    "mul": lambda L, a, b: a * b, "div": lambda L, a, b: a / b, "pow": lambda L, a, b: a ** b,
    "pow_scalar": lambda L, a, b: a ** 3, "mul_complex_scalar": lambda L, a, b: a * (2 - 1j),
    "mm": lambda L, a, b: a.mm(b), "matmul_vector": lambda L, a, b: a @ b[0],
    "bmm": lambda L, a, b: a.unsqueeze(0).bmm(b.unsqueeze(0)),
    "mv": lambda L, a, b: a.mv(b[1]), "dot": lambda L, a, b: a[0].dot(b[1]),
    "outer": lambda L, a, b: L.outer(a[0], b[1]),
    "einsum": lambda L, a, b: L.einsum("ij,jk->ik", a, b),
    "tensordot": lambda L, a, b: L.tensordot(a, b, 1),
    "addmm": lambda L, a, b: L.addmm(a, a, b, beta=0.5 + 1j, alpha=2 - 1j),
    "mixed_real": lambda L, a, b: a * b.real,
}


def _grads(L, fn, *datas):
    xs = [L.tensor(d).requires_grad_() for d in datas]
    y = fn(L, *xs)
    return L.autograd.grad((y.abs() ** 2).sum(), xs, allow_unused=True)


@pytest.mark.parametrize("name", UNARY)
def test_unary_complex_gradients_match_torch(name):
    T = oracle_torch()
    fn = lambda L, a: getattr(L, name)(a)  # noqa: E731
    (ours,), (theirs,) = _grads(gt, fn, A), _grads(T, fn, A)
    assert_same(ours, theirs, rtol=1e-9, atol=1e-12, check_stride=False)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_complex_gradients_match_torch(name):
    T = oracle_torch()
    ours, theirs = _grads(gt, BINARY[name], A, B), _grads(T, BINARY[name], A, B)
    for g, t in zip(ours, theirs):
        assert (g is None) == (t is None)
        if g is not None:
            assert_same(g, t, rtol=1e-9, atol=1e-12, check_stride=False)


def test_real_gradients_unchanged_by_the_convention():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    (x * x.exp()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (1 + np.array([1.0, 2.0])) * np.exp([1, 2]))
