"""Misc math ops against PyTorch: cummax/cummin, logaddexp(2), heaviside, isclose/allclose/
equal, trace, renorm, kron, diff, sinc, i0, polygamma, mvlgamma (values, dtypes, strides,
errors, out=, gradients), and the derivatives of digamma and logcumsumexp."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

torch = oracle_torch()

NAN, INF = float("nan"), float("inf")


def env(L):
    x = L.tensor(np.array([[1.0, 3.0, 2.0, 5.0], [0.0, -1.0, 4.0, 4.0], [2.5, NAN, 1.0, 7.0]],
                          dtype=np.float32))
    r = L.tensor(np.random.default_rng(0).standard_normal((3, 4)))
    return {"L": L, "x": x, "r": r, "INF": INF, "i": L.tensor([[3, 1, 4], [1, 5, 9]]),
            "b": L.tensor([True, False, True]), "s": L.tensor(2.5),
            "h": L.tensor([1.0, -2.0, 0.5], dtype=L.float16),
            "bf": L.tensor([1.0, -2.0, 0.5], dtype=L.bfloat16),
            "inf": L.tensor([INF, -INF, INF, NAN, 1.0]), "np": np}


def both(expr):
    out = []
    for L in (gt, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(eval(expr, env(L)))
    return out


def check(g, t, **tol):
    if isinstance(t, torch.Tensor):
        assert_same(g, t, **tol)
        return
    if isinstance(t, (bool, int, float)):
        assert g == t and type(g) is type(t)
        return
    assert type(g).__name__ == type(t).__name__ and len(g) == len(t)
    for a, b in zip(g, t):
        check(a, b, **tol)


def same_error(expr):
    with pytest.raises(Exception) as expected:
        eval(expr, env(torch))
    with pytest.raises(type(expected.value)) as actual:
        eval(expr, env(gt))
    assert str(actual.value) == str(expected.value)


CASES = [
    # cummax / cummin: nan propagates, ties take the latest index, layout follows the input
    "L.cummax(x, 1)", "L.cummax(x, 0)", "L.cummin(x, -1)", "x.cummin(0)", "L.cummax(x.t(), 1)",
    "L.cummax(x[:, ::2], 1)", "L.cummax(i, 1)", "L.cummin(b, 0)", "L.cummax(s, 0)",
    "L.cummin(L.empty(0, 3), 1)", "L.cummax(h, 0)", "L.cummin(bf, 0)",
    "L.cummax(x.expand(2, 3, 4), 0)",
    # logaddexp / logaddexp2
    "L.logaddexp(r, r.t().t() * 2)", "L.logaddexp(x, x)", "L.logaddexp2(r, r[0])",
    "L.logaddexp(x, r)", "L.logaddexp(r.t(), s)", "L.logaddexp(h, h)", "L.logaddexp2(bf, bf)",
    "L.logaddexp(r * 800, r * -800)", "L.logaddexp(L.empty(0), L.empty(0))",
    "L.logaddexp(L.tensor([1 + 1j, INF, -INF, 1000 + 3j, -2j]), "
    "L.tensor([2 - 1j, INF, -INF, 1000 - 2j, 5 + 1j]))",
    # heaviside
    "L.heaviside(x, s.float())", "L.heaviside(x, x)", "L.heaviside(i, L.tensor(7))",
    "x.heaviside(L.tensor(0.5))",
    # isclose / allclose / equal
    "L.isclose(x, x)", "L.isclose(x, x, equal_nan=True)", "L.isclose(r, r + 1e-6)",
    "L.isclose(r, r + 1e-3, rtol=0.1)", "L.isclose(r, r + 1e-3, atol=0.01, rtol=0)",
    "L.isclose(i, i + 1)", "L.isclose(i, i + 1, atol=1)", "L.isclose(inf, inf)",
    "L.isclose(b, b)", "L.isclose(h, h + 0.001)", "L.isclose(x, x[0])",
    "L.allclose(r, r + 1e-9)", "L.allclose(x, x)", "L.allclose(x, x, equal_nan=True)",
    "r.allclose(r + 1)",
    "L.equal(x, x)", "L.equal(r, r.clone())", "L.equal(r, r[:2])", "L.equal(i, i.double())",
    "L.equal(r, r + 1)", "L.equal(L.empty(0), L.empty(0))",
    # trace
    "L.trace(r)", "L.trace(x)", "L.trace(i)", "L.trace(r.t())", "L.trace(L.empty(0, 3))",
    "L.trace(h.reshape(3, 1))", "r[:, ::2].trace()",
    # renorm
    "L.renorm(r, 2, 0, 1.0)", "L.renorm(r, 1, 1, 0.5)", "L.renorm(r, 3.5, 1, 0.5)",
    "L.renorm(r, float('inf'), 0, 0.5)", "L.renorm(r.t(), 2, 0, 1)", "L.renorm(r, 2, 0, 100)",
    "L.renorm(r.float(), 0.5, -1, 0.1)", "L.renorm(r.reshape(3, 2, 2), 2, 1, 1)",
    # kron
    "L.kron(r, x)", "L.kron(i, r[0])", "L.kron(r[0], i)", "L.kron(r.t(), s)",
    "L.kron(r.reshape(3, 2, 2), i)", "L.kron(b, b)",
    # diff
    "L.diff(r)", "L.diff(r, 2, 0)", "L.diff(r, 0)", "L.diff(r, 5)", "L.diff(b)", "L.diff(i, 1, 0)",
    "L.diff(r, prepend=r[:, :1], append=r)", "L.diff(r, 1, 0, prepend=r[:1], append=r)",
    "L.diff(r.t(), 1, 0)", "L.diff(L.empty(0))",
    # sinc, i0
    "L.sinc(r * 3)", "L.sinc(L.tensor([0.0, 1.0, -2.0, 0.5, 1e-20]))", "L.sinc(i)", "L.sinc(h)",
    "L.i0(r * 10)", "L.i0(i)", "L.i0(h)", "L.i0(r.t())", "L.i0(L.tensor([0.0, 50.0, -700.0]))",
    # polygamma, mvlgamma
    "L.polygamma(0, r)", "L.polygamma(1, r)", "L.polygamma(2, r)", "L.polygamma(3, r.t())",
    "L.polygamma(1, i)", "L.polygamma(2, h)", "r.polygamma(4)",
    "L.polygamma(2, L.tensor([0.0, -1.0, -2.5, 1e-8, 1e6]))",
    "L.mvlgamma(r.abs() + 2, 3)", "L.mvlgamma(r, 2)", "L.mvlgamma(i, 2)", "r.exp().mvlgamma(1)",
    # complex inputs
    "L.sinc(L.tensor([1 + 1j, 0j, -2.5j]))", "L.trace(L.tensor([[1 + 1j, 2], [3, 4j]]))",
    "L.renorm(L.tensor([[1 + 1j, 2], [3, 4j]]), 2, 0, 1)", "L.diff(L.tensor([1 + 1j, 2, 3j]))",
    "L.isclose(L.tensor([1 + 1j, 2]), L.tensor([1 + 1j, 2 + 1e-9j]))",
    # clamp with number bounds
    "L.clamp_min(x, 0.5)", "L.clamp_max(i, 2)", "L.clamp_min(i, 1.5)",
]


@pytest.mark.parametrize("expr", CASES)
def test_matches_torch(expr):
    g, t = both(expr)
    check(g, t, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_at_infinities_and_nan(name):
    """Against NumPy's IEEE answer, not torch's: its vectorised exp/log1p at ±inf and nan
    depend on the CPU."""
    a = np.array([INF, -INF, INF, NAN, 1.0], np.float32)
    for b in (a[::-1].copy(), a):
        got = getattr(gt, name)(gt.tensor(a), gt.tensor(b))
        with np.errstate(invalid="ignore"):
            expected = getattr(np, name)(a.astype(np.float64), b.astype(np.float64))
        assert got.dtype is gt.float32
        assert_same(got, expected, rtol=1e-6, atol=0)


ERRORS = [
    "L.cummax(x, 2)", "L.cummax(L.tensor([1j]), 0)",
    "L.logaddexp(i, i)", "L.logaddexp(x, 2.0)", "L.heaviside(x, r)", "L.heaviside(x, 0.5)",
    "L.isclose(x, r)", "L.isclose(x, x, rtol=-1)", "L.isclose(x, x, atol=-1)",
    "L.isclose(x, 2.0)", "L.allclose(x, r)",
    "L.trace(x[0])", "L.trace(x.reshape(2, 3, 2))", "L.trace(b.reshape(3, 1))",
    "L.renorm(x[0], 2, 0, 1)", "L.renorm(x, -1, 0, 1)", "L.renorm(x, 2, 0, -1)",
    "L.renorm(x, 2, 2, 1)",
    "L.diff(s)", "L.diff(r, -1)", "L.diff(r, prepend=r[0])",
    "L.polygamma(-1, r)", "L.mvlgamma(r, 0)", "L.logaddexp2(L.tensor([1j]), L.tensor([1j]))",
    "L.polygamma(1, L.tensor([1j]))", "L.polygamma(2, L.tensor([1j]))",
    "L.polygamma(0, L.tensor([1j]))", "L.i0(L.tensor([1j]))", "L.mvlgamma(L.tensor([1j]), 1)",
    "L.heaviside(L.tensor([1j]), L.tensor([1j]))",
]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors_match_torch(expr):
    same_error(expr)


def test_out_and_inplace_variants():
    for L in (gt, torch):
        r = L.tensor([[0.5, -1.0], [2.0, 3.0]])
        values, indices = L.empty(0), L.empty(0, dtype=L.int64)
        res = L.cummax(r, 1, out=(values, indices))
        assert res.values is values and res.indices is indices
        assert type(res).__name__ == "cummax_out"
        assert values.tolist() == [[0.5, 0.5], [2.0, 3.0]] and indices.tolist() == [[0, 0], [0, 1]]
        out = L.empty(0)
        L.logaddexp(r, r, out=out)
        np.testing.assert_allclose(np.array(out.tolist()), np.array(r.tolist()) + np.log(2),
                                   rtol=1e-6)
        for call in ("L.polygamma(1, r, out=out)", "L.mvlgamma(r + 3, 2, out=out)",
                     "L.sinc(r, out=out)", "L.i0(r, out=out)", "L.kron(r, r, out=out)",
                     "L.diff(r, out=out)", "L.renorm(r, 2, 0, 1, out=out)"):
            out = L.empty(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert eval(call) is out
    g, t = gt.tensor([0.5, 2.0]), torch.tensor([0.5, 2.0])
    for name, args in (("polygamma_", (2,)), ("sinc_", ()), ("i0_", ()), ("mvlgamma_", (1,)),
                       ("heaviside_", (gt.tensor(0.5),))):
        a, b = g.clone(), t.clone()
        assert getattr(a, name)(*args) is a
        getattr(b, name)(*(torch.tensor(0.5) if name == "heaviside_" else x for x in args))
        assert_same(a, b)
    a, b = g.reshape(2, 1).clone(), t.reshape(2, 1).clone()
    a.renorm_(2, 0, 1.0)
    b.renorm_(2, 0, 1.0)
    assert_same(a, b)


def test_large_input_cummax_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 20, (50, 200))
    values, indices = gt.cummax(gt.tensor(a), 1)
    t = torch.cummax(torch.tensor(a), 1)
    assert_same(values, t.values)
    assert_same(indices, t.indices)


GRADS = [
    ("lambda L, a: L.cummax(a, 1)[0]", (3, 4)),
    ("lambda L, a: L.cummin(a.t(), 1).values", (3, 4)),
    ("lambda L, a: L.cummax(a, 0)[0]", (5,)),
    ("lambda L, a: L.logaddexp(a, a[0] * 2)", (3, 4)),
    ("lambda L, a: L.logaddexp2(a.t(), a.t() * -1.5)", (3, 4)),
    ("lambda L, a: L.trace(a)", (3, 4)),
    ("lambda L, a: L.trace(a.t())", (4, 2)),
    ("lambda L, a: L.renorm(a, 2, 0, 1.0)", (3, 4)),
    ("lambda L, a: L.renorm(a, 1, 1, 0.7)", (3, 4)),
    ("lambda L, a: L.renorm(a, 3, 1, 0.7)", (3, 4)),
    ("lambda L, a: L.renorm(a, float('inf'), 1, 0.7)", (3, 4)),
    ("lambda L, a: L.kron(a, a[:2, :1])", (3, 4)),
    ("lambda L, a: L.diff(a, 2, 0, prepend=a[:1] * 2)", (3, 4)),
    ("lambda L, a: L.sinc(a * 2)", (3, 4)),
    ("lambda L, a: L.i0(a * 3)", (3, 4)),
    ("lambda L, a: L.polygamma(1, a.abs() + 0.2)", (3, 4)),
    ("lambda L, a: L.polygamma(3, a * 4)", (3, 4)),
    ("lambda L, a: L.mvlgamma(a.abs() + 2, 4)", (3, 4)),
    ("lambda L, a: L.digamma(a * 3)", (3, 4)),
    ("lambda L, a: L.logcumsumexp(a * 5, 1)", (3, 4)),
    ("lambda L, a: L.logcumsumexp(a, 0)", (6,)),
]


@pytest.mark.parametrize("fn, shape", GRADS)
def test_gradients(fn, shape):
    f = eval(fn)
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape)
    a = gt.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    ra, rb = f(gt, a), f(torch, b)
    assert ra.grad_fn.name() == rb.grad_fn.name() or rb.grad_fn.name() == "UnsafeViewBackward0"
    w = rng.standard_normal(tuple(rb.shape))
    (ra * gt.tensor(w)).sum().backward()
    (rb * torch.tensor(w)).sum().backward()
    assert_same(a.grad, b.grad, rtol=1e-9, atol=1e-10)
    assert gt.autograd.gradcheck(lambda t: f(gt, t), (gt.tensor(x, requires_grad=True),))


def test_second_derivatives():
    x = gt.tensor([0.3, 1.7, 2.2], dtype=gt.float64, requires_grad=True)
    for fn in (lambda t: gt.logaddexp(t, t * t), lambda t: gt.polygamma(1, t),
               lambda t: gt.digamma(t), lambda t: gt.sinc(t), lambda t: gt.i0(t)):
        assert gt.autograd.gradgradcheck(fn, (x,))


def test_heaviside_has_no_derivative():
    x = torch.tensor([1.0, 0.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        torch.heaviside(x, torch.tensor(0.5)).sum().backward()
    g = gt.tensor([1.0, 0.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        gt.heaviside(g, gt.tensor(0.5)).sum().backward()
