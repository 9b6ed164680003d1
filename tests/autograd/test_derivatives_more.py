"""Derivatives of two-output statistics, nan_to_num/angle, aminmax, conj_physical, random
sampling and in-place fills, cumprod through zeros and einsum diagonals, against torch."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(5)
X = rng.standard_normal((3, 4))


@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True)])
@pytest.mark.parametrize("use", ["both", "first", "second"])
def test_two_output_statistics(name, dim, keepdim, use):
    T = oracle_torch()
    grads, names = [], []
    for L in (gt, T):
        x = L.tensor(X).t().requires_grad_()
        kwargs = {} if dim is None else {"dim": dim, "keepdim": keepdim}
        a, b = getattr(L, name)(x, correction=1, **kwargs)
        names.append(a.grad_fn.name())
        loss = {"both": (a * 2).sum() + (b * 3).sum(), "first": a.sum(),
                "second": b.sum()}[use]
        loss.backward()
        grads.append(x.grad)
    assert names[0] == names[1]
    assert_same(grads[0], grads[1], rtol=1e-10, check_stride=False)


@pytest.mark.parametrize("name", ["nan_to_num", "angle"])
def test_simple_derivatives(name):
    T = oracle_torch()
    data = X.copy()
    data[0, 0], data[1, 1] = np.nan, np.inf
    grads, names = [], []
    for L in (gt, T):
        x = L.tensor(data).requires_grad_()
        y = getattr(L, name)(x)
        names.append(y.grad_fn.name())
        (y * L.tensor(X)).nansum().backward() if name != "nan_to_num" else \
            (y * L.tensor(X)).sum().backward()
        grads.append(x.grad)
    assert names[0] == names[1]
    assert_same(grads[0], grads[1], rtol=1e-12, check_stride=False)


def _first_and_second(L, fn, data, weights):
    """fn's gradient (create_graph=True) and the gradient of its weighted sum."""
    x = L.tensor(data).requires_grad_()
    y = fn(L, x)
    (g,) = L.autograd.grad((y * L.tensor(weights)).sum(), x, create_graph=True)
    (g2,) = L.autograd.grad((g * L.tensor(data)).sum(), x)
    return y.grad_fn.name(), g, g2


def _agree(fn, data, check_name=True):
    T = oracle_torch()
    weights = rng.standard_normal(tuple(fn(gt, gt.tensor(data)).shape))
    (n1, g1, h1), (n2, g2, h2) = (_first_and_second(L, fn, data, weights) for L in (gt, T))
    assert n1 == n2 or not check_name
    assert_same(g1, g2, rtol=1e-10, atol=1e-12, check_stride=False)
    assert_same(h1, h2, rtol=1e-10, atol=1e-12, check_stride=False)


WITH_ZEROS = np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 1.0, 2.0, 3.0, 4.0],
                       [1.0, 2.0, 0.5, 4.0, 0.0], [1.0, 2.0, 3.0, 4.0, 5.0]])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_through_zeros_first_and_second_order(dim):
    _agree(lambda L, x: x.cumprod(dim), WITH_ZEROS)
    _agree(lambda L, x: x.t().cumprod(dim), WITH_ZEROS)


EINSUM = [("ii->i", (3, 3)), ("ii->", (3, 3)), ("iij->j", (3, 3, 2)), ("iji->j", (3, 2, 3)),
          ("...ii->...i", (2, 3, 3)), ("i...i", (3, 2, 3)), ("ij,jj->i", (3, 3))]


@pytest.mark.parametrize("equation,shape", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_repeated_subscripts(equation, shape):
    data = rng.standard_normal(shape)
    if "," in equation:
        _agree(lambda L, x: L.einsum(equation, x, x * x), data)
    else:   # one operand: torch ends with a permute of a diagonal, glasstorch an as_strided
        _agree(lambda L, x: L.einsum(equation, x ** 2), data, check_name=False)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_aminmax_shares_ties_like_torch(dim):
    data = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    T = oracle_torch()
    grads = []
    for L in (gt, T):
        x = L.tensor(data).requires_grad_()
        r = L.aminmax(x) if dim is None else L.aminmax(x, dim=dim, keepdim=dim == 1)
        assert r.min.grad_fn.name() == "AminmaxBackward0"
        (r.min * 2).sum().add((r.max * 3).sum()).backward()
        grads.append(x.grad)
    assert_same(grads[0], grads[1], check_stride=False)


def test_conj_physical_gradient():
    T = oracle_torch()
    data = rng.standard_normal((3,)) + 1j * rng.standard_normal((3,))
    w = rng.standard_normal((3,)) + 1j * rng.standard_normal((3,))
    grads = []
    for L in (gt, T):
        x = L.tensor(data).requires_grad_()
        y = x.conj_physical()
        assert y.grad_fn.name() == "ConjPhysicalBackward0"
        (y.real * L.tensor(w.real) + y.imag * L.tensor(w.imag)).sum().backward()
        grads.append(x.grad)
    assert_same(grads[0], grads[1], rtol=1e-10, check_stride=False)


SAMPLERS = {
    "normal(mean, std)": lambda L, m, s: L.normal(m, s),
    "normal(mean, 2.0)": lambda L, m, s: L.normal(m, 2.0),
    "normal(1.0, std)": lambda L, m, s: L.normal(1.0, s),
    "bernoulli": lambda L, m, s: L.bernoulli(s.sigmoid()),
    "poisson": lambda L, m, s: L.poisson(s.exp()),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sampling_gradients_are_zero_as_in_torch(name):
    T = oracle_torch()
    results = []
    for L in (gt, T):
        m = L.zeros(4, dtype=L.float64, requires_grad=True)
        s = L.ones(4, dtype=L.float64, requires_grad=True)
        y = SAMPLERS[name](L, m, s)
        y.sum().backward()
        results.append((y.grad_fn.name(), m.grad is None, s.grad is None,
                        [0.0 if g is None else float(g.abs().sum()) for g in (m.grad, s.grad)]))
    assert results[0] == results[1]


FILLS = {
    "fill_": lambda t: t.fill_(2), "zero_": lambda t: t.zero_(),
    "slice fill_": lambda t: t[1:].fill_(2), "uniform_": lambda t: t.uniform_(),
    "normal_": lambda t: t.normal_(), "random_(1, 3)": lambda t: t.random_(1, 3),
    "random_(3)": lambda t: t.random_(3), "random_()": lambda t: t.random_(),
    "bernoulli_(0.5)": lambda t: t.bernoulli_(0.5), "exponential_": lambda t: t.exponential_(),
    "slice cauchy_": lambda t: t[:2].cauchy_(), "log_normal_": lambda t: t.log_normal_(),
    "geometric_": lambda t: t.geometric_(0.5),
}


@pytest.mark.parametrize("name", list(FILLS))
def test_inplace_fills_cut_the_old_history(name):
    """Overwritten values pass no gradient back to what they were computed from."""
    T = oracle_torch()
    results = []
    for L in (gt, T):
        a = L.ones(3, dtype=L.float64, requires_grad=True)
        b = a * 2
        FILLS[name](b)
        (b * b.detach()).sum().backward()
        name_ = b.grad_fn.name().replace("ZeroBackward0", "FillBackward2")
        results.append((name_, a.grad.tolist()))
    assert results[0] == results[1]
