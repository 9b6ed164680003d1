"""glasstorch.special against torch.special: values over wide ranges (large, small and
edge arguments), dtypes (integers promote to the default float, float16/bfloat16 round from
float32), layouts, out=, errors and gradients."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

torch = oracle_torch()

NAN, INF = float("nan"), float("inf")
RNG = np.random.default_rng(0)
# Wide-range arguments: uniform, log-spaced tiny and huge, both signs, and edge values.
WIDE = np.concatenate([
    RNG.uniform(-40, 40, 400), RNG.uniform(-3, 3, 400),
    10.0 ** RNG.uniform(-300, 3, 200), -(10.0 ** RNG.uniform(-300, 3, 200)),
    [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, 29.99, 30.0, 30.01, 700.0, 720.0, -26.0, -27.0]])
PROB = np.concatenate([RNG.uniform(0, 1, 400), 10.0 ** RNG.uniform(-320, 0, 200),
                       1 - 10.0 ** RNG.uniform(-16, 0, 100), [0.0, 1.0, 0.5, -0.1, 1.1, NAN]])
POSITIVE = np.concatenate([10.0 ** RNG.uniform(-10, 4, 300), [0.0, INF, NAN, 1.0, 2.0]])

UNARY = [("i0", WIDE), ("i0e", WIDE), ("i1", WIDE), ("i1e", WIDE), ("erfcx", WIDE),
         ("ndtr", WIDE), ("log_ndtr", WIDE), ("ndtri", PROB), ("entr", WIDE),
         ("sinc", WIDE), ("expit", WIDE), ("logit", PROB), ("erf", WIDE), ("erfc", WIDE),
         ("erfinv", 2 * PROB - 1), ("exp2", WIDE), ("expm1", WIDE), ("log1p", WIDE),
         ("gammaln", WIDE), ("digamma", WIDE), ("psi", POSITIVE), ("round", WIDE)]


def _gt(a, dtype=gt.float64):
    return gt.tensor(a, dtype=dtype)


def _torch(a, dtype=torch.float64):
    return torch.tensor(a, dtype=dtype)


@pytest.mark.parametrize("name, x", UNARY, ids=[u[0] for u in UNARY])
def test_unary_float64_wide_range(name, x):
    g = getattr(gt.special, name)(_gt(x))
    t = getattr(torch.special, name)(_torch(x))
    assert_same(g, t, rtol=1e-10, atol=0)


@pytest.mark.parametrize("name, x", UNARY, ids=[u[0] for u in UNARY])
def test_unary_float32_and_layouts(name, x):
    # float32 results are rounded from float64 here; PyTorch computes in float32, so values
    # next to a root or after cancellation (ndtr's 1 + erf) may differ by an ulp of the inputs
    x = x[: len(x) // 2 * 2].reshape(2, -1)
    g = getattr(gt.special, name)(_gt(x, gt.float32).t())
    t = getattr(torch.special, name)(_torch(x, torch.float32).t())
    assert_same(g, t, rtol=1e-5, atol=1e-6)
    g = getattr(gt.special, name)(_gt(x, gt.float32)[:, ::3])
    t = getattr(torch.special, name)(_torch(x, torch.float32)[:, ::3])
    assert_same(g, t, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", [u[0] for u in UNARY if u[0] != "round"])
def test_integer_and_bool_inputs_promote(name):
    a = np.array([[0, 1, -2], [3, 7, -5]])
    assert_same(getattr(gt.special, name)(gt.tensor(a)),
                getattr(torch.special, name)(torch.tensor(a)), rtol=1e-6, atol=1e-7)
    assert_same(getattr(gt.special, name)(gt.tensor(a > 0)),
                getattr(torch.special, name)(torch.tensor(a > 0)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "erfcx", "entr", "sinc", "ndtr",
                                  "ndtri", "log_ndtr", "erf", "expit"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_precision(name, dtype):
    x = np.array([0.0, 0.25, -0.75, 1.5, 3.0, -6.0])
    if name == "ndtri":
        x = np.abs(x) / 8
    t_in = _torch(x, getattr(torch, dtype))
    try:
        t = getattr(torch.special, name)(t_in)
    except (RuntimeError, NotImplementedError) as e:
        with pytest.raises(type(e), match="not implemented"):
            getattr(gt.special, name)(_gt(x, getattr(gt, dtype)))
        return
    g = getattr(gt.special, name)(_gt(x, getattr(gt, dtype)))
    assert_same(g, t, rtol=1e-2, atol=1e-3)


def test_empty_and_zero_dim():
    for name in ("i0e", "i1", "erfcx", "ndtri", "log_ndtr", "entr", "sinc"):
        assert_same(getattr(gt.special, name)(gt.empty(0, 3)),
                    getattr(torch.special, name)(torch.empty(0, 3)))
        assert_same(getattr(gt.special, name)(gt.tensor(0.25)),
                    getattr(torch.special, name)(torch.tensor(0.25)))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, 11])
def test_polygamma_wide_range(n):
    x = WIDE[np.abs(WIDE) < 500]
    assert_same(gt.special.polygamma(n, _gt(x)), torch.special.polygamma(n, _torch(x)),
                rtol=1e-9, atol=0)


def test_multigammaln():
    x = np.abs(WIDE[np.isfinite(WIDE)]) + 2
    for p in (1, 2, 5):
        assert_same(gt.special.multigammaln(_gt(x), p), torch.special.multigammaln(_torch(x), p),
                    rtol=1e-10)


BINARY = [
    ("xlog1py", "a, b"), ("xlog1py", "a, 2.5"), ("xlog1py", "3, b"), ("xlogy", "a, b.abs()"),
    ("xlog1py", "a * 0, L.tensor([-1.0, NAN, 0.0, -2.0]).repeat(25)"),
    ("zeta", "a.abs() + 1, b.abs()"), ("zeta", "3.0, b"), ("zeta", "a.abs() + 1, 0.5"),
    ("zeta", "L.tensor([1.0, 0.5, 2.0, 3.0, 2.5, 4.0]), "
             "L.tensor([1.0, 1.0, 0.0, -2.0, -1.5, -1.5])"),
    ("zeta", "L.tensor([2.0, 3.0]), L.tensor([1e9, 1e-9])"),
    ("xlog1py", "a.long(), b.long().abs()"),
]


@pytest.mark.parametrize("name, args", BINARY)
def test_binary(name, args):
    x, y = RNG.standard_normal(100) * 5, RNG.standard_normal(100) * 5
    res = []
    for L, conv in ((gt, _gt), (torch, _torch)):
        env = {"L": L, "a": conv(x), "b": conv(y), "NAN": NAN}
        res.append(eval(f"L.special.{name}({args})", env))
    assert_same(*res, rtol=1e-10, atol=1e-300)


def test_logsumexp_round_and_softmax():
    x = RNG.standard_normal((3, 4))
    assert_same(gt.special.logsumexp(_gt(x), 1), torch.special.logsumexp(_torch(x), 1))
    assert_same(gt.special.logsumexp(_gt(x), (0, 1), keepdim=True),
                torch.special.logsumexp(_torch(x), (0, 1), keepdim=True))
    assert_same(gt.special.round(_gt(x * 10)), torch.special.round(_torch(x * 10)))
    if not hasattr(gt, "softmax") or not hasattr(gt, "log_softmax"):
        pytest.skip("glasstorch.softmax is not there yet")
    for name in ("softmax", "log_softmax"):
        assert_same(getattr(gt.special, name)(_gt(x), 1),
                    getattr(torch.special, name)(_torch(x), 1))
        assert_same(getattr(gt.special, name)(_gt(x, gt.float32), 0, dtype=gt.float64),
                    getattr(torch.special, name)(_torch(x, torch.float32), 0,
                                                 dtype=torch.float64))


def test_out_variants():
    x = [0.1, 0.5, 2.0]
    for L, conv in ((gt, _gt), (torch, _torch)):
        for call in ("L.special.i0e(a, out=out)", "L.special.ndtr(a, out=out)",
                     "L.special.xlog1py(a, a, out=out)", "L.special.ndtri(a * 0.1, out=out)",
                     "L.special.erfcx(a, out=out)", "L.special.polygamma(2, a, out=out)",
                     "L.special.expit(a, out=out)", "L.special.zeta(a + 1, a, out=out)"):
            out = L.empty(0, dtype=L.float64)
            assert eval(call, {"L": L, "a": conv(x), "out": out}) is out
            assert tuple(out.shape) == (3,)


ERRORS = ["L.special.i0e(L.tensor([1j]))", "L.special.erfcx(L.tensor([1j]))",
          "L.special.ndtri(L.tensor([0.5], dtype=L.bfloat16))",
          "L.special.polygamma(-1, L.tensor([1.0]))", "L.special.multigammaln(L.ones(2), 0)",
          "L.special.zeta(L.ones(2, dtype=L.float16), L.ones(2, dtype=L.float16))"]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors(expr):
    with pytest.raises(Exception) as expected:
        eval(expr, {"L": torch})
    with pytest.raises(type(expected.value)) as actual:
        eval(expr, {"L": gt})
    assert str(actual.value) == str(expected.value)


GRADS = [
    ("lambda S, a: S.i0e(a * 3)", None), ("lambda S, a: S.i1(a * 3)", None),
    ("lambda S, a: S.i1e(a * 3)", None), ("lambda S, a: S.erfcx(a * 2)", None),
    ("lambda S, a: S.ndtri(a.sigmoid())", None), ("lambda S, a: S.log_ndtr(a * 4)", None),
    ("lambda S, a: S.entr(a.abs() + 0.1)", None), ("lambda S, a: S.ndtr(a)", "MulBackward"),
    ("lambda S, a: S.xlog1py(a, a.abs())", None), ("lambda S, a: S.xlog1py(2.0, a.abs())", None),
    ("lambda S, a: S.xlog1py(a, 3.0)", None), ("lambda S, a: S.zeta(2.5, a.abs() + 0.5)", None),
    ("lambda S, a: S.polygamma(2, a.abs() + 0.3)", None),
    ("lambda S, a: S.multigammaln(a.abs() + 3, 3)", None), ("lambda S, a: S.sinc(a)", None),
    ("lambda S, a: S.i0(a)", None), ("lambda S, a: S.psi(a.abs() + 0.2)", None),
]


@pytest.mark.parametrize("fn, node", GRADS)
def test_gradients(fn, node):
    f = eval(fn)
    x = np.random.default_rng(3).standard_normal((2, 3))
    x[0, 0] = 0.0 if "i1" in fn or "sinc" in fn else x[0, 0]
    a = gt.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    ra, rb = f(gt.special, a), f(torch.special, b)
    if node is None:
        assert ra.grad_fn.name() == rb.grad_fn.name()
    w = np.random.default_rng(4).standard_normal((2, 3))
    (ra * gt.tensor(w)).sum().backward()
    (rb * torch.tensor(w)).sum().backward()
    assert_same(a.grad, b.grad, rtol=1e-9, atol=1e-12)
    assert gt.autograd.gradcheck(lambda t: f(gt.special, t), (gt.tensor(x, requires_grad=True),))


def test_zeta_has_no_derivative_in_s():
    s = gt.tensor([2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for 'zeta' is not implemented"):
        gt.special.zeta(s, gt.tensor([1.0, 2.0])).sum().backward()


def test_every_torch_special_function_we_list_exists():
    for name in gt.special.__all__:
        assert hasattr(torch.special, name)
        assert callable(getattr(gt.special, name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gt.special.expit is gt.sigmoid and gt.special.gammaln is gt.lgamma


NO_GRAD = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "spherical_bessel_j0",
           "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]


@pytest.mark.parametrize("name", NO_GRAD)
def test_bessel_functions_without_derivatives(name):
    x = WIDE[np.abs(WIDE) < 1e6]
    g = getattr(gt.special, name)(_gt(x))
    t = getattr(torch.special, name)(_torch(x))
    # PyTorch's J0/J1/Y0/Y1 are off by up to ~9e-7 between 2 and 10, and its Ai by up to
    # ~3e-6; these are accurate to ~1e-14 (checked against mpmath below)
    tol = {"rtol": 1e-13, "atol": 0}
    if name.startswith("bessel") or name == "airy_ai":
        tol = {"rtol": 1e-6, "atol": 5e-6}
        x = x[np.abs(x) < 1e3]          # a phase of x**1.5 is only as exact as its rounding
    assert_same(g, t, **tol)
    for d in ("int64", "bool"):
        assert_same(getattr(gt.special, name)(gt.ones(3, dtype=getattr(gt, d))),
                    getattr(torch.special, name)(torch.ones(3, dtype=getattr(torch, d))))
    a = gt.tensor([0.5, 2.0], requires_grad=True)
    r = getattr(gt.special, name)(a)
    assert not r.requires_grad and r.grad_fn is None
    assert not getattr(torch.special, name)(torch.tensor([0.5], requires_grad=True)).requires_grad
    out = gt.empty(0)
    assert getattr(gt.special, name)(gt.tensor([1.0, 2.0]), out=out) is out
    for expr in (f"L.special.{name}(L.ones(2, dtype=L.float16))",
                 f"L.special.{name}(L.ones(2, dtype=L.complex64))"):
        test_errors(expr)


@pytest.mark.parametrize("order", [0, 1])
def test_bessel_k_against_mpmath(order):
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([RNG.uniform(0, 40, 40), 10.0 ** RNG.uniform(-300, 2.8, 16),
                        [1.999, 2.0, 2.001, 29.99, 30.0, 30.01]])
    exact = [mpmath.besselk(order, mpmath.mpf(v)) for v in x]
    ref = np.array([float(k) for k in exact])
    scaled = np.array([float(k * mpmath.exp(v)) for k, v in zip(exact, x)])
    got = getattr(gt.special, f"modified_bessel_k{order}")(_gt(x))
    np.testing.assert_allclose(np.array(got.tolist()), ref, rtol=1e-14, atol=1e-300)
    got = getattr(gt.special, f"scaled_modified_bessel_k{order}")(_gt(x))
    np.testing.assert_allclose(np.array(got.tolist()), scaled, rtol=1e-14)


def test_airy_ai_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([RNG.uniform(-30, 30, 80), RNG.uniform(-10, 3, 60),
                        [-8.7, -8.70001, 2.1, 2.10001, 0.0, 50.0, 100.0, 103.0]])
    ref = np.array([float(mpmath.airyai(mpmath.mpf(v))) for v in x])
    got = np.array(gt.special.airy_ai(_gt(x)).tolist())
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("kind", ["j", "y"])
@pytest.mark.parametrize("order", [0, 1])
def test_bessel_j_y_against_mpmath(kind, order):
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([RNG.uniform(-60, 60, 200), RNG.uniform(-6, 6, 100),
                        10.0 ** RNG.uniform(-300, 3, 60), [4.999, 5.0, 24.999, 25.0]])
    x = np.abs(x) if kind == "y" else x
    fn = mpmath.besselj if kind == "j" else mpmath.bessely
    ref = np.array([float(fn(order, mpmath.mpf(v))) for v in x])
    got = getattr(gt.special, f"bessel_{kind}{order}")(_gt(x))
    np.testing.assert_allclose(np.array(got.tolist()), ref, rtol=1e-10, atol=2e-15)


def _gamma_args():
    rng = np.random.default_rng(5)
    a = np.concatenate([10.0 ** rng.uniform(-5, 3, 500), rng.uniform(0, 30, 500),
                        10.0 ** rng.uniform(3, 5, 50),
                        [0.0, 0.0, 1.0, 1.0, INF, INF, 2.0, NAN, -1.0, 3.0, 0.0, INF]])
    x = np.concatenate([10.0 ** rng.uniform(-5, 3, 500), rng.uniform(0, 30, 500),
                        a[1000:1050] * (1 + rng.uniform(-0.05, 0.05, 50)),
                        [0.0, 1.0, 0.0, INF, 1.0, INF, -1.0, 1.0, 1.0, NAN, INF, 0.0]])
    return a, x


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma(name):
    a, x = _gamma_args()
    g = getattr(gt.special, name)(_gt(a), _gt(x))
    t = getattr(torch.special, name)(_torch(a), _torch(x))
    # PyTorch flushes results below ~1e-300 to 0 and its large-a expansion is good to ~2e-9
    assert_same(g, t, rtol=1e-8, atol=1e-300)
    top = getattr(gt, "igamma" if name == "gammainc" else "igammac")
    assert_same(top(_gt(a, gt.float32)[::2], _gt(x, gt.float32)[::2]),
                getattr(torch, "igamma" if name == "gammainc" else "igammac")(
                    _torch(a, torch.float32)[::2], _torch(x, torch.float32)[::2]),
                rtol=1e-5, atol=1e-6)      # PyTorch computes 1 - P in float32


def test_incomplete_gamma_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    a = np.array([0.5, 20.05, 22.3, 150.0, 2000.0, 1e-3, 7.0])
    x = np.array([0.3, 14.1, 27.9, 149.0, 2030.0, 700.0, 1e-4])
    p = np.array([float(mpmath.gammainc(u, 0, v, regularized=True)) for u, v in zip(a, x)])
    q = np.array([float(mpmath.gammainc(u, v, mpmath.inf, regularized=True))
                  for u, v in zip(a, x)])
    np.testing.assert_allclose(np.array(gt.igamma(_gt(a), _gt(x)).tolist()), p, rtol=1e-12)
    np.testing.assert_allclose(np.array(gt.igammac(_gt(a), _gt(x)).tolist()), q, rtol=1e-12)


def test_incomplete_gamma_variants_and_errors():
    for L in (gt, torch):
        a, x = L.tensor([1.0, 2.5]), L.tensor([[0.5], [3.0]])
        assert tuple(L.igamma(a, x).shape) == (2, 2)
        out = L.empty(0)
        assert L.special.gammaincc(a, x[0], out=out) is out
        b = a.clone()
        assert b.igamma_(a) is b
        h = L.igamma(a.half(), a.half())
        assert h.dtype == L.float16
    assert_same(gt.tensor([1.0, 2.5]).igammac(gt.tensor([0.5, 0.5])),
                torch.tensor([1.0, 2.5]).igammac(torch.tensor([0.5, 0.5])))
    for expr in ("L.igamma(L.tensor([1, 2]), L.tensor([1, 2]))", "L.igamma(L.ones(2), 2.0)",
                 "L.igammac(L.tensor([1j]), L.tensor([1j]))"):
        test_errors(expr)


@pytest.mark.parametrize("name, node", [("igamma", "IgammaBackward0"),
                                        ("igammac", "IgammacBackward0")])
def test_incomplete_gamma_gradients(name, node):
    a = np.array([[0.5, 2.0, 7.5], [1.0, 30.0, 3.0]])
    x = np.array([[0.3, 2.5, 6.0], [4.0, 28.0, 0.1]])
    g = gt.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    rg, rt = getattr(gt, name)(gt.tensor(a), g), getattr(torch, name)(torch.tensor(a), t)
    assert rg.grad_fn.name() == rt.grad_fn.name() == node
    rg.sum().backward()
    rt.sum().backward()
    assert_same(g.grad, t.grad, rtol=1e-10)
    assert gt.autograd.gradcheck(lambda v: getattr(gt, name)(gt.tensor(a), v),
                                 (gt.tensor(x, requires_grad=True),))
    s = gt.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for 'igamma: input' is not implemented"):
        getattr(gt, name)(s, gt.tensor(x)).sum().backward()


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials(name):
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(-1, 1, 120), rng.uniform(-3, 3, 120), rng.uniform(0, 1, 60),
                        [0.0, 1.0, -1.0, 0.5, INF, -INF, 2.0, -2.0]])
    n = np.concatenate([rng.integers(-2, 40, 300), [3, 10, 11, 9, 3, 4, 50, 51]]) + 0.0
    n[:20] += 0.7                       # fractional degrees are truncated
    f, tf = getattr(gt.special, name), getattr(torch.special, name)
    assert_same(f(_gt(x), _gt(n)), tf(_torch(x), _torch(n)), rtol=1e-9, atol=1e-12)
    # float32 (PyTorch runs the recurrence in float32), an integer degree tensor, a Python
    # number for either argument
    assert_same(f(_gt(x[:240], gt.float32), gt.tensor(n[:240]).long()),
                tf(_torch(x[:240], torch.float32), torch.tensor(n[:240]).long()),
                rtol=1e-4, atol=1e-4)
    assert_same(f(_gt(x), 7), tf(_torch(x), 7), rtol=1e-9, atol=1e-12)
    assert_same(f(0.25, gt.tensor([0, 1, 5, 12])), tf(0.25, torch.tensor([0, 1, 5, 12])),
                rtol=1e-6, atol=1e-7)
    assert_same(f(gt.tensor([[1, 2], [0, 3]]), 3), tf(torch.tensor([[1, 2], [0, 3]]), 3))
    assert np.isnan(f(gt.tensor([NAN]), 3).item())
    r = f(gt.tensor([0.5], requires_grad=True), 3)
    assert not r.requires_grad
    out = gt.empty(0)
    assert f(gt.tensor([0.5, 0.1]), 4, out=out) is out and tuple(out.shape) == (2,)
    test_errors(f"L.special.{name}(L.ones(2, dtype=L.float16), 3)")


def test_second_derivatives():
    x = gt.tensor([0.3, 1.7, -2.2], dtype=gt.float64, requires_grad=True)
    S = gt.special
    for fn in (S.i0e, S.i1, S.i1e, S.erfcx, S.log_ndtr, lambda t: S.ndtri(t.sigmoid()),
               lambda t: S.xlog1py(t, t.abs()), lambda t: S.entr(t.abs()),
               lambda t: gt.igamma(gt.tensor([1.0, 2.0, 3.0], dtype=gt.float64), t.abs() + 0.1)):
        assert gt.autograd.gradgradcheck(fn, (x,))
