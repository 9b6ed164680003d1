"""Reductions and scans against PyTorch: values, dtypes, shapes, strides and errors, on
contiguous, transposed, stepped, offset, expanded, empty and 0-dim inputs."""
from __future__ import annotations

import inspect
import itertools
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glasstorch as gt
from oracle import assert_same, oracle_torch

INF, NAN = float("inf"), float("nan")
LAYOUTS = ("contiguous", "transposed", "stepped", "offset", "expanded")
TOL = {"float16": (2e-3, 1e-3), "bfloat16": (2e-2, 1e-2), "float32": (2e-5, 1e-5),
       "float64": (1e-10, 1e-12), "complex64": (2e-5, 1e-5), "complex128": (1e-10, 1e-12)}


@pytest.fixture
def T():
    return oracle_torch()


def _data(shape, dtype: str, seed: int) -> np.ndarray:
    """Small exactly representable values (quarters for floats), so sums agree exactly."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "uint8":
        return rng.integers(0, 6, shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(np.int64)
    values = rng.integers(-8, 9, shape) / 4
    if dtype.startswith("complex"):
        return values + 1j * rng.integers(-8, 9, shape) / 4
    return values


def _base_shape(shape, layout):
    if layout == "transposed":
        return shape[::-1]
    if layout == "stepped":
        return shape[:-1] + (2 * shape[-1],)
    if layout == "offset":
        return (shape[0] + 1,) + shape[1:]
    if layout == "expanded":
        return (1,) + shape[1:]
    return shape


def _view(x, shape, layout):
    n = len(shape)
    if layout == "transposed":
        return x.permute(*range(n - 1, -1, -1))
    if layout == "stepped":
        return x.as_strided(shape, tuple(x.stride()[:-1]) + (2,))
    if layout == "offset":
        return x.narrow(0, 1, shape[0])
    if layout == "expanded":
        return x.expand(*shape)
    return x


def pair(shape, dtype="float32", layout="contiguous", seed=0, data=None):
    """The same values with the same layout as a glasstorch and a torch tensor."""
    torch = oracle_torch()
    shape = tuple(shape)
    if not shape:
        layout = "contiguous"
    base = np.asarray(_data(_base_shape(shape, layout), dtype, seed) if data is None else data)
    g = gt.from_numpy(base).to(getattr(gt, dtype))
    t = torch.from_numpy(base).to(getattr(torch, dtype))
    return _view(g, shape, layout), _view(t, shape, layout)


def same(g, t, dtype="float32"):
    """Compare results (tensors or tuples of tensors) with the tolerance of the looser of
    the input dtype and the result dtype."""
    if not isinstance(t, tuple):
        g, t = (g,), (t,)
    assert isinstance(g, tuple) and len(g) == len(t)
    for a, b in zip(g, t):
        rtol, atol = max(TOL.get(dtype, (0, 0)), TOL.get(str(b.dtype)[6:], (0, 0)))
        assert_same(a, b, rtol=rtol, atol=atol)


def outcome(fn, lib):
    try:
        return fn(lib), None
    except Exception as e:         # noqa: BLE001 - the exception is the outcome compared
        return None, e


def check(fn, dtype="float32", message=True, more_overloads=False):
    """Run fn(gt) and fn(torch): same results, or the same exception type (and message).

    more_overloads: torch's argument parser may refuse a call glasstorch accepts (its
    single signature covers torch's overloads, e.g. prod(x, None)).
    """
    torch = oracle_torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, terr = outcome(fn, torch)
        actual, gerr = outcome(fn, gt)
    if terr is not None:
        if more_overloads and isinstance(terr, TypeError) and gerr is None:
            return
        assert gerr is not None, f"torch raised {terr!r}, glasstorch returned {actual!r}"
        assert type(gerr) is type(terr), (gerr, terr)
        if message and not isinstance(terr, TypeError):   # TypeErrors: torch's arg parser
            assert str(gerr) == str(terr)
        return
    if gerr is not None:
        raise gerr
    same(actual, expected, dtype)


# ---- every dim and keepdim on 3-d inputs, every layout ---------------------------------

DIMS = (None, 0, 1, 2, -1, -3, (0, 1), (1, 2), (2, 0), (0, 1, 2), (-1, 0), ())

MULTI_DIM = {
    "sum": lambda m, x, d, k: m.sum(x, d, keepdim=k),
    "nansum": lambda m, x, d, k: m.nansum(x, d, keepdim=k),
    "mean": lambda m, x, d, k: m.mean(x, d, keepdim=k),
    "nanmean": lambda m, x, d, k: m.nanmean(x, d, keepdim=k),
    "amax": lambda m, x, d, k: m.amax(x, () if d is None else d, keepdim=k),
    "amin": lambda m, x, d, k: x.amin(() if d is None else d, k),
    "logsumexp": lambda m, x, d, k: m.logsumexp(x, d or tuple(range(x.dim())), keepdim=k),
    "var": lambda m, x, d, k: m.var(x, d, keepdim=k),
    "std": lambda m, x, d, k: x.std(d, keepdim=k, correction=0),
    "var_mean": lambda m, x, d, k: m.var_mean(x, d, keepdim=k),
    "std_mean": lambda m, x, d, k: m.std_mean(x, d, keepdim=k, correction=2),
    "norm": lambda m, x, d, k: m.norm(x, 2, d, k),
    "norm1": lambda m, x, d, k: x.norm(1, d, k),
    "norm_inf": lambda m, x, d, k: m.norm(x, INF, d, k),
    "norm3": lambda m, x, d, k: m.norm(x, 3, d, keepdim=k),
    "all": lambda m, x, d, k: m.all(x, d, keepdim=k),
    "any": lambda m, x, d, k: x.any(d, keepdim=k),
    "count_nonzero": lambda m, x, d, k: m.count_nonzero(x, d),
}

SINGLE_DIM = {
    "prod": lambda m, x, d, k: m.prod(x, d, keepdim=k),
    "max": lambda m, x, d, k: m.max(x) if d is None else tuple(m.max(x, d, keepdim=k)),
    "min": lambda m, x, d, k: x.min() if d is None else tuple(x.min(d, k)),
    "argmax": lambda m, x, d, k: m.argmax(x, d, keepdim=k),
    "argmin": lambda m, x, d, k: x.argmin(d, k),
    "aminmax": lambda m, x, d, k: tuple(m.aminmax(x, dim=d, keepdim=k)),
    "cumsum": lambda m, x, d, k: m.cumsum(x, d),
    "cumprod": lambda m, x, d, k: x.cumprod(d),
    "logcumsumexp": lambda m, x, d, k: m.logcumsumexp(x, d),
}


def _run_all_dims(fn, shape, dtype, layout, dims):
    g, t = pair(shape, dtype, layout)
    for d, k in itertools.product(dims, (False, True)):
        check(lambda m: fn(m, g if m is gt else t, d, k), dtype, more_overloads=True)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(MULTI_DIM))
def test_multi_dim_reductions_every_dim(name, layout, kernel_path):
    _run_all_dims(MULTI_DIM[name], (2, 3, 4), "float32", layout, DIMS)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(SINGLE_DIM))
def test_single_dim_reductions_every_dim(name, layout):
    _run_all_dims(SINGLE_DIM[name], (2, 3, 4), "float32", layout, (None, 0, 1, 2, -1, -2, -3))


@pytest.mark.parametrize("name", sorted(MULTI_DIM) + sorted(SINGLE_DIM))
def test_empty_inputs(name, kernel_path):
    fn = {**MULTI_DIM, **SINGLE_DIM}[name]
    for shape in ((0, 3, 2), (2, 0, 3)):
        _run_all_dims(fn, shape, "float32", "contiguous", (None, 0, 1, -1, (0, 2), ()))


@pytest.mark.parametrize("name", sorted(MULTI_DIM) + sorted(SINGLE_DIM))
def test_zero_dim_inputs(name):
    fn = {**MULTI_DIM, **SINGLE_DIM}[name]
    _run_all_dims(fn, (), "float32", "contiguous", (None, 0, -1, 1, -2, (0,), ()))


# ---- dtypes ----------------------------------------------------------------------------

DTYPES = ("bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128")

DTYPE_OPS = {
    "sum": lambda m, x: m.sum(x, 1),
    "sum_all": lambda m, x: x.sum(),
    "nansum": lambda m, x: m.nansum(x, 0),
    "mean": lambda m, x: m.mean(x, (0, 1)),
    "nanmean": lambda m, x: x.nanmean(1),
    "prod": lambda m, x: m.prod(x, 1),
    "prod_all": lambda m, x: x.prod(),
    "max_all": lambda m, x: m.max(x),
    "max": lambda m, x: tuple(m.max(x, 1)),
    "min": lambda m, x: tuple(x.min(0)),
    "amax": lambda m, x: m.amax(x, 1),
    "amin": lambda m, x: m.amin(x),
    "aminmax": lambda m, x: tuple(m.aminmax(x)),
    "argmax": lambda m, x: m.argmax(x, 1),
    "argmin": lambda m, x: x.argmin(),
    "var": lambda m, x: m.var(x, 1),
    "std": lambda m, x: m.std(x),
    "var_mean": lambda m, x: m.var_mean(x, 0),
    "logsumexp": lambda m, x: m.logsumexp(x, 1),
    "norm": lambda m, x: m.norm(x),
    "norm_inf": lambda m, x: m.norm(x, INF, 1),
    "all": lambda m, x: m.all(x, 1),
    "any": lambda m, x: x.any(),
    "count_nonzero": lambda m, x: m.count_nonzero(x, 0),
    "cumsum": lambda m, x: m.cumsum(x, 1),
    "cumprod": lambda m, x: x.cumprod(0),
    "logcumsumexp": lambda m, x: m.logcumsumexp(x, 1),
}


@pytest.mark.parametrize("name", sorted(DTYPE_OPS))
def test_dtypes_and_dtype_errors(name):
    for dtype in DTYPES:
        g, t = pair((3, 4), dtype, "transposed" if dtype != "bool" else "stepped", seed=3)
        # torch's messages for some unsupported dtypes name its CPU kernels; compare types
        check(lambda m: DTYPE_OPS[name](m, g if m is gt else t), dtype, message=False)


@pytest.mark.parametrize("op", ["sum", "nansum", "prod", "cumsum", "cumprod", "mean",
                                "nanmean"])
def test_dtype_argument_casts_before_reducing(op):
    for src, dst in itertools.product(("bool", "int32", "float32", "float64"),
                                      ("int32", "int64", "float16", "float32", "float64")):
        data = _data((5, 3), src, 4) * (1.37 if src.startswith("float") else 1)
        g, t = pair((3, 5), src, "transposed", data=data)

        def fn(m, op=op, dst=dst):
            dim = 1 if op in ("prod", "cumsum", "cumprod") else (1,)
            return getattr(m, op)(g if m is gt else t, dim, dtype=getattr(m, dst))
        check(fn, dst)


def test_float16_and_bfloat16_accumulate_in_float32():
    torch = oracle_torch()
    for name in ("float16", "bfloat16"):
        g = gt.full((3000,), 0.1, dtype=getattr(gt, name))
        t = torch.full((3000,), 0.1, dtype=getattr(torch, name))
        assert_same(g.sum(), t.sum())
        assert_same(g.mean(), t.mean())
        assert_same(g.cumsum(0), t.cumsum(0), rtol=1e-2)


def test_integer_sums_and_products_wrap_like_torch():
    check(lambda m: m.full((40,), 3).prod())
    check(lambda m: m.full((3,), 2 ** 30, dtype=m.int32).sum(dtype=m.int32))
    check(lambda m: m.tensor([200, 100], dtype=m.uint8).sum())
    check(lambda m: m.tensor([200, 100], dtype=m.uint8).sum(dtype=m.uint8))


# ---- NaN, infinities, ties -------------------------------------------------------------

NAN_DATA = [[1.0, NAN, 3.0, NAN], [2.0, 2.0, 1.0, 1.0], [-INF, 0.0, INF, 5.0]]


@pytest.mark.parametrize("fn", [
    lambda m, x: x.max(), lambda m, x: x.min(), lambda m, x: tuple(x.max(1)),
    lambda m, x: tuple(x.min(1)), lambda m, x: x.argmax(1), lambda m, x: x.argmin(1),
    lambda m, x: x.argmax(), lambda m, x: x.amax(1), lambda m, x: x.amin(0),
    lambda m, x: tuple(m.aminmax(x, dim=1)), lambda m, x: x.nansum(1),
    lambda m, x: x.nanmean(1), lambda m, x: x.sum(1), lambda m, x: x.logsumexp(1),
    lambda m, x: x.logcumsumexp(1), lambda m, x: x.cumsum(1), lambda m, x: x.norm(INF, 1),
    lambda m, x: x.count_nonzero(1), lambda m, x: x.all(1), lambda m, x: x.var(1),
])
def test_nan_and_inf_like_torch(fn, kernel_path):
    g, t = pair((3, 4), data=NAN_DATA)
    check(lambda m: fn(m, g if m is gt else t))


def test_ties_give_the_first_index():
    for data in ([1, 3, 3, 0, 0], [2.0, 2.0, 2.0], [[0, 1, 1], [5, 5, 0]]):
        check(lambda m: tuple(m.tensor(data).max(-1)))
        check(lambda m: tuple(m.tensor(data).min(-1)))
        check(lambda m: m.tensor(data).argmax())
        check(lambda m: m.tensor(data).argmin(-1, keepdim=True))


def test_logsumexp_and_logcumsumexp_are_stable():
    check(lambda m: m.tensor([1000.0, 1000.0, -1000.0]).logsumexp(0))
    check(lambda m: m.tensor([[INF, 1.0], [-INF, -INF], [INF, -INF]]).logsumexp(1))
    check(lambda m: m.tensor([-INF, 1.0, INF, 2.0, NAN]).logcumsumexp(0))
    check(lambda m: m.tensor([1000.0, 1000.0, -INF]).logcumsumexp(0))
    check(lambda m: m.tensor([1 + 1j, 2 - 1j, -1 + 0.5j]).logsumexp(0), "complex64")
    check(lambda m: m.tensor([1 + 1j, 2 - 1j, -1 + 0.5j]).logcumsumexp(0), "complex64")


@pytest.mark.parametrize("p", [2, 1, INF, -INF, 0, 3, 0.5, -1, -2.5, "fro", None])
def test_norm_orders(p):
    g, t = pair((3, 4), "float32", "stepped", seed=5)
    check(lambda m: (g if m is gt else t).norm(p))
    check(lambda m: m.norm(g if m is gt else t, p, 0, True))
    gc, tc = pair((2, 3), "complex64", "transposed", seed=6)
    check(lambda m: m.norm(gc if m is gt else tc, p, -1), "complex64")


def test_norm_dtype_argument_and_errors():
    g, t = pair((3, 4), "float16", seed=7)
    check(lambda m: m.norm(g if m is gt else t, dtype=m.float64), "float64")
    check(lambda m: m.norm(g if m is gt else t), "float16")
    check(lambda m: m.tensor([1.0], dtype=m.float64).norm(dtype=m.float32))
    check(lambda m: m.tensor([1.0]).norm(dtype=m.complex64))
    check(lambda m: m.tensor([1.0]).norm(dtype=m.int64))
    check(lambda m: m.tensor([1 + 1j]).norm(dtype=m.float64))
    check(lambda m: m.tensor([1 + 1j]).norm(dtype=m.complex128), "float64")
    check(lambda m: m.tensor([1, 2]).norm())
    check(lambda m: m.ones(2, 3).norm("abc"))
    check(lambda m: m.ones(2, 2, 2).norm("fro", (0, 1, 2)))
    check(lambda m: m.empty(0).norm(-1))
    check(lambda m: m.empty(0).norm(INF))
    check(lambda m: m.empty(0, 3).norm(-INF, 0))
    check(lambda m: m.empty(0, 3).norm(INF, 1))
    check(lambda m: m.empty(0, 3).norm(0))


# ---- var / std arguments ---------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda m, x: m.var(x, True), lambda m, x: m.var(x, False), lambda m, x: x.var(0, False),
    lambda m, x: m.var(x, 0, False, True), lambda m, x: m.var(x, 1, keepdim=True),
    lambda m, x: m.var(x, unbiased=False), lambda m, x: m.std(x, dim=1, unbiased=False),
    lambda m, x: m.var(x, 1, correction=2), lambda m, x: m.std(x, 1, correction=0.5),
    lambda m, x: m.var(x, 1, correction=-1), lambda m, x: x.std(True),
    lambda m, x: m.std_mean(x, False), lambda m, x: m.var_mean(x, dim=None, correction=0),
    lambda m, x: m.var_mean(x, 1, keepdim=True), lambda m, x: m.var(x, 1, correction=5),
])
def test_var_std_signatures(call):
    g, t = pair((2, 3), "float32", "transposed", seed=8)
    check(lambda m: call(m, g if m is gt else t))


def test_var_warns_when_degrees_of_freedom_are_not_positive():
    with pytest.warns(UserWarning, match=r"^var\(\): degrees of freedom is <= 0"):
        gt.ones(1).var()
    with pytest.warns(UserWarning, match=r"^std_mean\(\): degrees of freedom is <= 0"):
        gt.std_mean(gt.ones(3, 2), 1, correction=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gt.ones(3, 2).var(1)


def test_var_warning_points_at_the_caller():
    with pytest.warns(UserWarning) as record:
        gt.tensor([1.0]).std()
    assert record[0].filename == __file__


# ---- errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda m: m.empty(0, 3).max(), lambda m: m.empty(0, 3).min(),
    lambda m: m.empty(0, 3).max(0), lambda m: m.empty(0, 3).max(-2),
    lambda m: m.empty(0, 3).amax(), lambda m: m.empty(0, 3).amax(0),
    lambda m: m.empty(0, 3).amin((-2, 1)), lambda m: m.empty(0, 3).argmax(),
    lambda m: m.empty(0, 3).argmin(0), lambda m: m.empty(0, 3).aminmax(),
    lambda m: m.aminmax(m.empty(0, 3), dim=0),
    lambda m: m.ones(2, 3).sum(2), lambda m: m.ones(2, 3).sum(-3),
    lambda m: m.ones(2, 3).sum((0, 0)), lambda m: m.ones(2, 2, 2).sum((0, 2, 2)),
    lambda m: m.ones(2, 2, 2).sum((0, -1, 2)), lambda m: m.tensor(1.0).sum(2),
    lambda m: m.ones(2, 3).max(2), lambda m: m.ones(2, 3).cumsum(2),
    lambda m: m.tensor(1.0).argmax(1),
    lambda m: m.tensor([0, 1, 2]).mean(), lambda m: m.tensor([0, 1]).mean(0, dtype=m.int64),
    lambda m: m.ones(3).mean(dtype=m.int32), lambda m: m.tensor([True]).mean(),
    lambda m: m.tensor([0, 1, 2]).nanmean(), lambda m: m.ones(3).nanmean(dtype=m.int64),
    lambda m: m.tensor([0, 1, 2]).var(), lambda m: m.tensor([True]).std(0),
    lambda m: m.tensor([1 + 1j]).max(0), lambda m: m.tensor([1 + 1j]).argmax(),
    lambda m: m.tensor([True, False]).argmax(),
    lambda m: m.tensor([0, 1, 2]).norm(),
])
def test_error_messages_match_torch(fn):
    check(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1 + 1j]).max(), lambda m: m.tensor([1 + 1j]).amax(),
    lambda m: m.tensor([1 + 1j]).aminmax(), lambda m: m.tensor([1 + 1j]).nansum(),
    lambda m: m.tensor([0, 1, 2]).logcumsumexp(0), lambda m: m.tensor([True]).logcumsumexp(0),
    lambda m: m.ones(2, 3).prod((0, 1)), lambda m: m.ones(2, 3).sum(1.0),
    lambda m: m.ones(2, 3).max(1.0), lambda m: m.ones(2).sum("a"),
    lambda m: m.sum(None), lambda m: m.max([1.0]),
])
def test_error_types_match_torch(fn):
    check(fn, message=False)


# ---- out= ------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda m, x, o: m.sum(x, 0, out=o(3, m.float64)),
    lambda m, x, o: m.sum(x, 0, out=o(3, m.float16)),
    lambda m, x, o: m.sum(x, 0, dtype=m.float64, out=o(3, m.float64)),
    lambda m, x, o: m.sum(x.to(m.int32), 1, out=o(2, m.float32)),
    lambda m, x, o: m.sum(x.to(m.int64), 0, out=o(3, m.int32)),
    lambda m, x, o: m.sum(x, (0, 1), keepdim=True, out=o(0)),
    lambda m, x, o: m.mean(x, 0, out=o(3, m.float64)),
    lambda m, x, o: m.prod(x.to(m.int64), 0, out=o(3, m.int32)),
    lambda m, x, o: m.amax(x, 1, out=o(2)),
    lambda m, x, o: m.var(x, 0, out=o(3, m.float64)),
    lambda m, x, o: m.std(x, 0, False, True, out=o(0)),
    lambda m, x, o: m.logsumexp(x, 0, out=o(3, m.float64)),
    lambda m, x, o: m.norm(x, dim=0, out=o(3)),
    lambda m, x, o: m.all(x, 0, out=o(3, m.bool)),
    lambda m, x, o: m.any(x, 0, out=o(3, m.uint8)),
    lambda m, x, o: m.argmax(x, 1, out=o(2, m.int64)),
    lambda m, x, o: m.max(x, out=o(0)),
    lambda m, x, o: m.cumsum(x, 0, out=o(2, 3, dtype=m.float64)),
    lambda m, x, o: m.cumsum(x.to(m.int64), 1, out=o(2, 3, dtype=m.float32)),
    lambda m, x, o: m.cumprod(x, 1, out=o(0)),
    lambda m, x, o: m.logcumsumexp(x, 1, out=o(2, 3)),
    lambda m, x, o: m.nansum(x, 1, out=o(2, m.float64)),
])
def test_out_argument(fn):
    def run(m):
        g, t = pair((2, 3), "float32", "transposed", seed=9)
        x = g if m is gt else t
        made = []

        def o(*shape, dtype=None):
            if shape and not isinstance(shape[-1], int):
                shape, dtype = shape[:-1], shape[-1]
            made.append(m.empty(*shape, dtype=dtype))
            return made[-1]
        result = fn(m, x, o)
        assert result is made[0]
        return result
    check(run)


def test_out_dtype_mismatches_raise():
    x = gt.ones(2, 3)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        gt.sum(x, 0, dtype=gt.float64, out=gt.empty(3))
    for fn in (lambda: gt.amax(x, 0, out=gt.empty(3, dtype=gt.float64)),
               lambda: gt.argmax(x, 0, out=gt.empty(3, dtype=gt.int32)),
               lambda: gt.max(x, 0, out=(gt.empty(3, dtype=gt.float64),
                                         gt.empty(3, dtype=gt.int64))),
               lambda: gt.mean(x, 0, out=gt.empty(3, dtype=gt.int64)),
               lambda: gt.logcumsumexp(x, 0, out=gt.empty(2, 3, dtype=gt.float64)),
               lambda: gt.norm(x, dim=0, out=gt.empty(3, dtype=gt.float64)),
               lambda: gt.all(x, 0, out=gt.empty(3))):
        with pytest.raises(RuntimeError):
            fn()


def test_sum_of_floats_into_an_integer_out_casts_first():
    # As PyTorch: the floats are cast to the out dtype, then summed (0 + 0 + 1)
    out = gt.sum(gt.tensor([0.5, 0.7, 1.5]), 0, out=gt.empty((), dtype=gt.int64))
    assert out.item() == 1 and out.dtype is gt.int64


def test_multi_output_out_returns_out_named_tuples():
    torch = oracle_torch()
    g, t = pair((2, 3), "float32", "offset", seed=10)
    for name in ("max", "min"):
        gv, gi = gt.empty(0), gt.empty(0, dtype=gt.int64)
        r = getattr(gt, name)(g, 1, out=[gv, gi])
        e = getattr(torch, name)(t, 1, out=(torch.empty(0), torch.empty(0, dtype=torch.long)))
        assert type(r).__name__ == type(e).__name__ == f"{name}_out"
        assert r.values is gv and r.indices is gi
        same(tuple(r), tuple(e))
    r = gt.aminmax(g, dim=0, out=(gt.empty(3), gt.empty(3)))
    e = torch.aminmax(t, dim=0, out=(torch.empty(3), torch.empty(3)))
    assert type(r).__name__ == type(e).__name__ == "aminmax_out"
    same(tuple(r), tuple(e))
    with pytest.raises(TypeError):
        gt.max(g, 1, out=gt.empty(0))


# ---- in-place scans --------------------------------------------------------------------

def test_cumsum_and_cumprod_in_place():
    for dtype in ("int32", "int64", "float16", "float32"):
        def fn(m, dtype=dtype):
            x = m.tensor([[1, 2, 3, 4], [1, 2, 1, 2], [3, 1, 2, 1]]).to(getattr(m, dtype)).t()
            y = x.cumsum_(1)
            assert y is x
            return x.cumprod_(0)
        check(fn, dtype)
    x = gt.ones(3)
    version = x._version
    x.cumsum_(0)
    assert x._version == version + 1
    with pytest.raises(RuntimeError):
        gt.tensor([1, 2, 3]).cumsum_(0, dtype=gt.float32)
    with pytest.raises(RuntimeError):
        gt.ones(3, 1).expand(3, 4).cumsum_(1)


# ---- max(a, b) and the overloaded signatures -------------------------------------------

def test_binary_max_and_min_delegate_to_maximum_and_minimum():
    if not hasattr(gt, "maximum"):
        pytest.skip("glasstorch.maximum is not implemented yet")
    g, t = pair((2, 3), seed=11)
    h, u = pair((3,), seed=12)
    check(lambda m: m.max(g if m is gt else t, h if m is gt else u))
    check(lambda m: (g if m is gt else t).min(h if m is gt else u))
    check(lambda m: m.max(g if m is gt else t, h if m is gt else u, out=m.empty(2, 3)))


def test_max_without_dim_refuses_keepdim():
    with pytest.raises(TypeError):
        gt.ones(2, 3).max(keepdim=True)


def test_signatures_are_pytorch_like():
    params = {name: list(inspect.signature(getattr(gt, name)).parameters)
              for name in ("sum", "mean", "max", "var", "norm", "cumsum", "aminmax",
                           "logsumexp", "argmax", "all", "count_nonzero")}
    assert params["sum"] == ["input", "dim", "keepdim", "dtype", "out"]
    assert params["mean"] == ["input", "dim", "keepdim", "dtype", "out"]
    assert params["max"] == ["input", "dim", "keepdim", "out"]
    assert params["var"] == ["input", "dim", "unbiased", "keepdim", "correction", "out"]
    assert params["norm"] == ["input", "p", "dim", "keepdim", "out", "dtype"]
    assert params["cumsum"] == ["input", "dim", "dtype", "out"]
    assert params["aminmax"] == ["input", "dim", "keepdim", "out"]
    assert params["logsumexp"] == ["input", "dim", "keepdim", "out"]
    assert params["argmax"] == ["input", "dim", "keepdim", "out"]
    assert params["all"] == ["input", "dim", "keepdim", "out"]
    assert params["count_nonzero"] == ["input", "dim"]
    assert list(inspect.signature(gt.Tensor.norm).parameters) == ["self", "p", "dim",
                                                                   "keepdim", "dtype"]
    assert gt.Tensor.sum.__doc__ and gt.max.__doc__ and gt.norm.__doc__


def test_docstring_examples_run():
    import doctest
    runner = doctest.DocTestRunner()
    for fn in (gt.max, gt.sum):
        for test in doctest.DocTestFinder().find(fn, globs={"glasstorch": gt}):
            runner.run(test)
    assert runner.tries >= 2 and runner.failures == 0


# ---- all / any on bool and uint8 -------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float32", "complex64"])
def test_all_any_dtypes(dtype):
    g, t = pair((3, 4), dtype, "expanded", seed=13)
    for d in (None, 0, 1, (0, 1), ()):
        check(lambda m: m.all(g if m is gt else t, d), dtype)
        check(lambda m: (g if m is gt else t).any(d, keepdim=True), dtype)
    check(lambda m: (g if m is gt else t).all(), dtype)


# ---- return types ----------------------------------------------------------------------

def test_return_types_behave_like_torch_structseqs():
    torch = oracle_torch()
    g = gt.tensor([[1.0, 5.0], [7.0, 2.0]]).max(1)
    t = torch.tensor([[1.0, 5.0], [7.0, 2.0]]).max(1)
    assert isinstance(g, tuple) and isinstance(g, gt.return_types.max)
    assert g.values is g[0] and g.indices is g[1]
    assert repr(g) == repr(t)
    assert g.n_fields == t.n_fields == 2
    values, indices = g
    same(values, t.values)
    restored = pickle.loads(pickle.dumps(gt.return_types.max((1, 2))))
    assert type(restored) is gt.return_types.max and restored == (1, 2)
    assert restored.indices == 2
    with pytest.raises(AttributeError):
        g.values = None
    with pytest.raises(TypeError, match="2-sequence"):
        gt.return_types.max((1,))
    assert type(g[:1]) is tuple
    for name in ("sort", "topk", "kthvalue", "mode", "median", "cummax", "linalg_svd",
                 "slogdet", "aminmax_out"):
        ours, theirs = getattr(gt.return_types, name), getattr(torch.return_types, name)
        assert repr(ours(range(ours.n_fields))) == repr(theirs(range(theirs.n_fields)))


# ---- the Meta device -------------------------------------------------------------------

META_CALLS = [
    lambda m, x: x.sum(), lambda m, x: x.sum((0, 2), keepdim=True),
    lambda m, x: x.mean(1, dtype=m.float64), lambda m, x: x.prod(2),
    lambda m, x: tuple(x.max(1)), lambda m, x: x.max(), lambda m, x: x.amin((0, 1)),
    lambda m, x: tuple(m.aminmax(x, dim=-1, keepdim=True)), lambda m, x: x.argmax(),
    lambda m, x: x.argmin(0, True), lambda m, x: x.var(1), lambda m, x: m.std_mean(x, 0),
    lambda m, x: x.logsumexp(1), lambda m, x: x.norm(dim=(0, 1)),
    lambda m, x: x.all(0), lambda m, x: x.to(m.uint8).any(1),
    lambda m, x: x.count_nonzero(), lambda m, x: x.cumsum(1),
    lambda m, x: x.to(m.int32).cumprod(0), lambda m, x: x.logcumsumexp(2),
    lambda m, x: x.nansum(0), lambda m, x: x.nanmean(),
]


@pytest.mark.parametrize("fn", META_CALLS)
def test_meta_device_shapes_dtypes_strides(fn):
    torch = oracle_torch()
    g = gt.empty(2, 3, 4, device="meta").permute(2, 0, 1)
    t = torch.empty(2, 3, 4, device="meta").permute(2, 0, 1)
    r, e = fn(gt, g), fn(torch, t)
    for a, b in zip(r if isinstance(r, tuple) else (r,), e if isinstance(e, tuple) else (e,)):
        assert a.device.type == "meta"
        assert (tuple(a.shape), a.stride(), str(a.dtype)) == (tuple(b.shape), b.stride(),
                                                             str(b.dtype))


def test_meta_device_raises_the_same_errors():
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        gt.empty(0, 3, device="meta").max()
    with pytest.raises(IndexError, match="Dimension out of range"):
        gt.empty(2, 3, device="meta").sum(5)


# ---- property tests --------------------------------------------------------------------

@st.composite
def shapes_and_dims(draw):
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=4)))
    n = len(shape)
    dims = draw(st.one_of(st.none(), st.lists(st.integers(-max(n, 1), max(n, 1) - 1),
                                              max_size=max(n, 1), unique=True).map(tuple)))
    one = draw(st.integers(-max(n, 1), max(n, 1) - 1))
    layout = draw(st.sampled_from(LAYOUTS))
    dtype = draw(st.sampled_from(("float32", "float64", "int64", "float16")))
    return shape, dims, one, draw(st.booleans()), layout, dtype


@settings(max_examples=40, deadline=None)
@given(shapes_and_dims())
def test_property_reductions_match_torch(case):
    shape, dims, one, keepdim, layout, dtype = case
    if 0 in shape and layout == "expanded":
        layout = "contiguous"
    g, t = pair(shape, dtype, layout, seed=len(shape))

    def on(m):
        return g if m is gt else t
    check(lambda m: m.sum(on(m), dims, keepdim=keepdim), dtype)
    check(lambda m: on(m).amax(() if dims is None else dims, keepdim), dtype)
    check(lambda m: m.all(on(m), dims, keepdim=keepdim), dtype)
    check(lambda m: m.count_nonzero(on(m), dims), dtype)
    check(lambda m: tuple(m.max(on(m), one, keepdim)), dtype)
    check(lambda m: m.argmin(on(m), one, keepdim), dtype)
    check(lambda m: m.cumsum(on(m), one), dtype)
    if dtype != "int64":
        check(lambda m: m.mean(on(m), dims, keepdim=keepdim), dtype)
        check(lambda m: m.var(on(m), dims, keepdim=keepdim), dtype)
        check(lambda m: m.logsumexp(on(m), dims or tuple(range(len(shape))), keepdim), dtype)
        check(lambda m: m.norm(on(m), 2, dims, keepdim), dtype)


@pytest.mark.parametrize("dims,keepdim", [([0], True), ([0], False), ((1, 0), False),
                                          ((-3, -2), True), ([0, 1], False)])
def test_leading_dims_sum_fast_path_matches_torch(dims, keepdim, kernel_path):
    """sum over a float tensor's leading dims (a bias's gradient) takes a fast path in front
    of the meta function; shapes, strides and values are PyTorch's, on both kernel paths,
    and the general path's errors and other layouts are untouched."""
    torch = oracle_torch()
    x = np.random.default_rng(4).standard_normal((40, 3, 33)).astype(np.float32)
    assert_same(gt.from_numpy(x).sum(dims, keepdim), torch.from_numpy(x).sum(dims, keepdim),
                rtol=1e-5, atol=1e-5)
    t = gt.from_numpy(x).transpose(0, 1)                  # not contiguous: the general path
    assert_same(t.sum(dims, keepdim), torch.from_numpy(x).transpose(0, 1).sum(dims, keepdim),
                rtol=1e-5, atol=1e-5)
    with gt.inference_mode():
        assert_same(gt.from_numpy(x).sum(dims, keepdim),
                    torch.from_numpy(x).sum(dims, keepdim), rtol=1e-5, atol=1e-5)
    for bad in ([0, 0], [3], [0, 1, 2, 5]):
        with pytest.raises((IndexError, RuntimeError)) as ours:
            gt.from_numpy(x).sum(bad)
        with pytest.raises((IndexError, RuntimeError)) as theirs:
            torch.from_numpy(x).sum(bad)
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
