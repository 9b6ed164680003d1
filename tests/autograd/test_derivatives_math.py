"""Derivative formulas of the math ops (ops/derivatives_math.py) against PyTorch: first-order
gradients on float64 inputs (contiguous, transposed and broadcast), grad_fn names, and double
backward for a representative set."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import oracle_torch

rng = np.random.default_rng(1234)
SHAPE = (3, 4)


# ---- input domains (NumPy arrays of SHAPE) -----------------------------------------------

def normal(shape=SHAPE):
    return rng.standard_normal(shape)


def unit(shape=SHAPE):
    return rng.uniform(-0.9, 0.9, shape)


def pos(shape=SHAPE):
    return rng.uniform(0.2, 2.0, shape)


def above1(shape=SHAPE):
    return rng.uniform(1.2, 3.0, shape)


def prob(shape=SHAPE):
    return rng.uniform(0.05, 0.95, shape)


def nonzero(shape=SHAPE):
    return rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def leaf(lib, data, layout):
    """A float64 leaf requiring grad; 'transposed' stores data.T and views it back."""
    if layout == "transposed":
        return lib.tensor(np.ascontiguousarray(data.T)).t().requires_grad_()
    return lib.tensor(data).requires_grad_()


def run(lib, fn, datas, layouts, gout, create_graph=False):
    xs = [leaf(lib, d, lay) for d, lay in zip(datas, layouts)]
    y = fn(lib, *xs)
    g = lib.autograd.grad(y, xs, lib.tensor(gout), create_graph=create_graph,
                          allow_unused=True)
    return xs, y, g


def compare(fn, datas, layouts=None, double=False):
    """Gradients of fn(lib, *inputs) (weighted by a random upstream gradient) agree with
    PyTorch's, as do the output's grad_fn name and, with double=True, the gradient of a
    weighted sum of the first-order gradients."""
    T = oracle_torch()
    layouts = layouts or ["contiguous"] * len(datas)
    y_shape = fn(T, *[T.tensor(d) for d in datas]).shape
    gout = rng.standard_normal(tuple(y_shape))
    gx, gy, gg = run(gt, fn, datas, layouts, gout, create_graph=double)
    tx, ty, tg = run(T, fn, datas, layouts, gout, create_graph=double)
    assert gy.grad_fn.name() == ty.grad_fn.name()
    for a, b in zip(gg, tg):
        if b is None:                  # an input that only feeds a comparison
            assert a is None
            continue
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9,
                                   atol=1e-11)
    if double:
        weights = [rng.standard_normal(d.shape) for d in datas]
        g2 = gt.autograd.grad(sum((a * gt.tensor(w)).sum() for a, w in zip(gg, weights)
                                  if a is not None), gx, allow_unused=True)
        t2 = T.autograd.grad(sum((a * T.tensor(w)).sum() for a, w in zip(tg, weights)
                                 if a is not None), tx, allow_unused=True)
        for a, b in zip(g2, t2):
            if b is None:
                assert a is None or not np.any(a.detach().numpy())
            else:
                np.testing.assert_allclose(a.detach().numpy(), b.numpy(), rtol=1e-9,
                                           atol=1e-11)


# ---- unary pointwise ---------------------------------------------------------------------

UNARY = {
    "exp2": (lambda L, x: L.exp2(x), normal),
    "expm1": (lambda L, x: x.expm1(), normal),
    "log2": (lambda L, x: x.log2(), pos),
    "log10": (lambda L, x: L.log10(x), pos),
    "log1p": (lambda L, x: x.log1p(), pos),
    "rsqrt": (lambda L, x: x.rsqrt(), pos),
    "square": (lambda L, x: L.square(x), normal),
    "reciprocal": (lambda L, x: x.reciprocal(), nonzero),
    "sin": (lambda L, x: x.sin(), normal),
    "cos": (lambda L, x: L.cos(x), normal),
    "tan": (lambda L, x: x.tan(), unit),
    "asin": (lambda L, x: x.asin(), unit),
    "acos": (lambda L, x: L.acos(x), unit),
    "atan": (lambda L, x: x.atan(), normal),
    "sinh": (lambda L, x: x.sinh(), normal),
    "cosh": (lambda L, x: x.cosh(), normal),
    "asinh": (lambda L, x: x.asinh(), normal),
    "acosh": (lambda L, x: x.acosh(), above1),
    "atanh": (lambda L, x: x.atanh(), unit),
    "logit": (lambda L, x: x.logit(), prob),
    "logit_eps": (lambda L, x: L.logit(x, eps=0.3), prob),
    "erf": (lambda L, x: x.erf(), normal),
    "erfc": (lambda L, x: L.erfc(x), normal),
    "erfinv": (lambda L, x: x.erfinv(), unit),
    "lgamma": (lambda L, x: x.lgamma(), pos),
    "floor": (lambda L, x: x.floor(), normal),
    "ceil": (lambda L, x: x.ceil(), normal),
    "round": (lambda L, x: x.round(), normal),
    "round_decimals": (lambda L, x: L.round(x, decimals=2), normal),
    "trunc": (lambda L, x: x.trunc(), normal),
    "frac": (lambda L, x: x.frac(), normal),
    "sign": (lambda L, x: x.sign(), normal),
    "clamp_scalars": (lambda L, x: x.clamp(-0.5, 0.5), normal),
    "clamp_min_only": (lambda L, x: L.clamp(x, min=-0.2), normal),
    "clamp_max_only": (lambda L, x: L.clip(x, max=0.3), normal),
    "clamp_min_scalar": (lambda L, x: L.clamp_min(x, 0.1), normal),
    "clamp_max_scalar": (lambda L, x: L.clamp_max(x, 0.1), normal),
    "xlogy_scalar_other": (lambda L, x: L.xlogy(x, 2.5), normal),
    "xlogy_scalar_self": (lambda L, x: L.xlogy(2.5, x), pos),
    "copysign_scalar": (lambda L, x: L.copysign(x, -1.0), normal),
    "remainder_scalar": (lambda L, x: L.remainder(x, 0.7), normal),
    "fmod_scalar": (lambda L, x: L.fmod(x, 0.7), normal),
    "float_power_scalar": (lambda L, x: L.float_power(x, 2.5), pos),
    "float_power_scalar_self": (lambda L, x: L.float_power(1.7, x), normal),
    "lerp_scalar_weight": (lambda L, x: L.lerp(x, x * 2 + 1, 0.3), normal),
    "where_scalar": (lambda L, x: L.where(x > 0, x, 0.0), normal),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, layout):
    fn, domain = UNARY[name]
    compare(fn, [domain()], [layout])


# ---- binary and ternary pointwise --------------------------------------------------------

def with_ties(a, b):
    """b (same shape as a) made equal to a in every third place: exercises the tie rule."""
    b = b.copy()
    b.flat[::3] = a.flat[::3]
    return b


BINARY = {
    "maximum": (lambda L, a, b: L.maximum(a, b), normal, normal),
    "minimum": (lambda L, a, b: a.minimum(b), normal, normal),
    "fmax": (lambda L, a, b: L.fmax(a, b), normal, normal),
    "fmin": (lambda L, a, b: L.fmin(a, b), normal, normal),
    "atan2": (lambda L, a, b: L.atan2(a, b), normal, nonzero),
    "hypot": (lambda L, a, b: L.hypot(a, b), nonzero, nonzero),
    "xlogy": (lambda L, a, b: L.xlogy(a, b), normal, pos),
    "copysign": (lambda L, a, b: L.copysign(a, b), nonzero, nonzero),
    "remainder": (lambda L, a, b: L.remainder(a, b), normal, nonzero),
    "fmod": (lambda L, a, b: L.fmod(a, b), normal, nonzero),
    "float_power": (lambda L, a, b: L.float_power(a, b), pos, normal),
    "clamp_min_tensor": (lambda L, a, b: L.clamp_min(a, b), normal, normal),
    "clamp_max_tensor": (lambda L, a, b: L.clamp_max(a, b), normal, normal),
    "clamp_tensor_min": (lambda L, a, b: L.clamp(a, min=b), normal, normal),
    "clamp_tensor_max": (lambda L, a, b: L.clamp(a, max=b), normal, normal),
}


@pytest.mark.parametrize("case", ["same", "broadcast", "transposed"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, case):
    fn, da, db = BINARY[name]
    a = da()
    b = db((4,)) if case == "broadcast" else db()
    compare(fn, [a, b], ["transposed" if case == "transposed" else "contiguous"] * 2)


def test_maximum_minimum_ties_share_the_gradient():
    a = normal()
    b = with_ties(a, normal())
    for fn in (lambda L, x, y: L.maximum(x, y), lambda L, x, y: L.minimum(x, y)):
        compare(fn, [a, b])


def test_fmax_fmin_with_nan():
    a, b = normal(), normal()
    a[0, 0] = b[1, 1] = np.nan
    for fn in (lambda L, x, y: L.fmax(x, y), lambda L, x, y: L.fmin(x, y)):
        compare(fn, [a, b])


TERNARY = {
    "clamp_tensors": (lambda L, x, lo, hi: L.clamp(x, lo, hi), normal, normal, normal),
    "lerp": (lambda L, x, e, w: L.lerp(x, e, w), normal, normal, prob),
    "addcmul": (lambda L, x, p, q: L.addcmul(x, p, q, value=0.5), normal, normal, normal),
    "addcdiv": (lambda L, x, p, q: L.addcdiv(x, p, q, value=-2), normal, normal, nonzero),
    "where": (lambda L, c, x, y: L.where(c > 0, x, y), normal, normal, normal),
}


@pytest.mark.parametrize("case", ["same", "broadcast", "transposed"])
@pytest.mark.parametrize("name", sorted(TERNARY))
def test_ternary(name, case):
    fn, d0, d1, d2 = TERNARY[name]
    datas = [d0(), d1((4,)) if case == "broadcast" else d1(),
             d2((3, 1)) if case == "broadcast" else d2()]
    compare(fn, datas, ["transposed" if case == "transposed" else "contiguous"] * 3)


def test_clamp_with_min_above_max_gives_max_the_gradient():
    x, lo, hi = normal(), normal(), normal()
    lo[0] = hi[0] + 0.5
    compare(lambda L, a, b, c: L.clamp(a, b, c), [x, lo, hi])


# ---- reductions --------------------------------------------------------------------------

def ties():
    return np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 0.5], [-4.0, 5.0, -5.0, 5.0]])


def zeros_in_rows():
    x = nonzero()
    x[0, 1] = 0.0                      # one zero in row 0
    x[1, 0] = x[1, 3] = 0.0            # two zeros in row 1
    return x


REDUCTIONS = {
    "prod": (lambda L, x: x.prod(), nonzero),
    "prod_dim": (lambda L, x: x.prod(1), nonzero),
    "prod_dim_keepdim": (lambda L, x: L.prod(x, 0, keepdim=True), nonzero),
    "prod_zeros": (lambda L, x: x.prod(1), zeros_in_rows),
    "prod_one_zero": (lambda L, x: x[0].prod(), zeros_in_rows),
    "prod_two_zeros": (lambda L, x: x[1].prod(), zeros_in_rows),
    "amax": (lambda L, x: x.amax(), normal),
    "amax_dim": (lambda L, x: x.amax(1), normal),
    "amax_ties": (lambda L, x: L.amax(x, (0, 1)), ties),
    "amax_ties_dim": (lambda L, x: x.amax(1, keepdim=True), ties),
    "amin_ties": (lambda L, x: x.amin(0), ties),
    "max_all": (lambda L, x: x.max(), normal),
    "max_all_ties": (lambda L, x: x.max(), ties),
    "min_all_ties": (lambda L, x: L.min(x), lambda: -ties()),
    "max_dim": (lambda L, x: x.max(1)[0], normal),
    "max_dim_keepdim_ties": (lambda L, x: L.max(x, 1, keepdim=True).values, ties),
    "min_dim": (lambda L, x: x.min(0).values, normal),
    "min_dim_neg": (lambda L, x: x.min(-1)[0], ties),
    "var": (lambda L, x: x.var(), normal),
    "var_dim": (lambda L, x: x.var(1), normal),
    "var_correction": (lambda L, x: L.var(x, 0, correction=0, keepdim=True), normal),
    "std": (lambda L, x: x.std(), normal),
    "std_dim": (lambda L, x: L.std(x, (0, 1), correction=2), normal),
    "std_dim_keepdim": (lambda L, x: x.std(1, keepdim=True), normal),
    "logsumexp": (lambda L, x: x.logsumexp(1), normal),
    "logsumexp_all": (lambda L, x: L.logsumexp(x, (0, 1), keepdim=True), normal),
    "norm": (lambda L, x: x.norm(), normal),
    "norm2_dim": (lambda L, x: L.norm(x, 2, dim=1), normal),
    "norm1": (lambda L, x: x.norm(1), normal),
    "norm1_dim": (lambda L, x: x.norm(1, dim=0, keepdim=True), normal),
    "norm_inf": (lambda L, x: x.norm(float("inf")), normal),
    "norm_inf_dim_ties": (lambda L, x: x.norm(float("inf"), dim=1), ties),
    "norm_neg_inf": (lambda L, x: x.norm(float("-inf"), dim=0), normal),
    "norm3": (lambda L, x: x.norm(3, dim=1), normal),
    "norm0": (lambda L, x: x.norm(0), normal),
    "cumsum": (lambda L, x: x.cumsum(1), normal),
    "cumsum_dim0": (lambda L, x: L.cumsum(x, 0), normal),
    "cumprod": (lambda L, x: x.cumprod(1), nonzero),
    "cumprod_dim0": (lambda L, x: L.cumprod(x, -2), nonzero),
    "nansum": (lambda L, x: x.nansum(), normal),
    "nansum_dim": (lambda L, x: L.nansum(x, 1), normal),
    "nanmean": (lambda L, x: x.nanmean(), normal),
    "nanmean_dim": (lambda L, x: L.nanmean(x, 0, keepdim=True), normal),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, layout):
    fn, domain = REDUCTIONS[name]
    compare(fn, [domain()], [layout])


@pytest.mark.parametrize("fn", [lambda L, x: x.nansum(1), lambda L, x: x.nanmean(),
                                lambda L, x: L.nanmean(x, 1)])
def test_nan_reductions_skip_nans(fn):
    x = normal()
    x[0, 2] = x[2, 0] = np.nan
    compare(fn, [x])


# ---- double backward ---------------------------------------------------------------------

DOUBLE = [
    (lambda L, x: x.sin(), [normal]),
    (lambda L, x: x.asin(), [unit]),
    (lambda L, x: x.rsqrt(), [pos]),
    (lambda L, x: x.erf(), [normal]),
    (lambda L, a, b: L.atan2(a, b), [normal, nonzero]),
    (lambda L, a, b: L.hypot(a, b), [nonzero, nonzero]),
    (lambda L, a, b: L.xlogy(a, b), [normal, pos]),
    (lambda L, x, p, q: L.addcdiv(x, p, q), [normal, normal, nonzero]),
    (lambda L, x, e, w: L.lerp(x, e, w), [normal, normal, prob]),
    (lambda L, x: x.prod(1), [nonzero]),
    (lambda L, x: x.var(1), [normal]),
    (lambda L, x: x.std(), [normal]),
    (lambda L, x: x.logsumexp(0), [normal]),
    (lambda L, x: x.norm(dim=1), [normal]),
    (lambda L, x: x.cumprod(1), [nonzero]),
    (lambda L, x: L.float_power(x, 2.5), [pos]),
]


@pytest.mark.parametrize("index", range(len(DOUBLE)))
def test_double_backward(index):
    fn, domains = DOUBLE[index]
    compare(fn, [d() for d in domains], double=True)


def test_grad_fn_names_of_scalar_and_tensor_overloads():
    """Overload-dependent names: ClampBackward0/1, PowBackward0/1/2, LerpBackward0/1..."""
    T = oracle_torch()
    data, other = normal(), pos()
    cases = [lambda L, x, o: L.clamp(x, o), lambda L, x, o: L.clamp(x, 0.1, 0.4),
             lambda L, x, o: L.float_power(x, o), lambda L, x, o: L.float_power(x, 2),
             lambda L, x, o: L.lerp(x, o, o), lambda L, x, o: L.lerp(x, o, 0.5),
             lambda L, x, o: L.remainder(x, o), lambda L, x, o: L.fmod(x, 1.5),
             lambda L, x, o: L.copysign(x, o), lambda L, x, o: L.xlogy(x, 3.0),
             lambda L, x, o: x.max(), lambda L, x, o: x.max(0)[0], lambda L, x, o: x.prod(0),
             lambda L, x, o: x.square()]
    for fn in cases:
        g = fn(gt, gt.tensor(data).requires_grad_(), gt.tensor(other))
        t = fn(T, T.tensor(data).requires_grad_(), T.tensor(other))
        assert g.grad_fn.name() == t.grad_fn.name()
