"""Matrix products against PyTorch: values, dtypes, shapes, strides, views and error texts,
for every rank combination of matmul, on contiguous, transposed, stepped, offset and
expanded operands, in float32/float64/int64/complex64/float16/bfloat16."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glasstorch as gt
from oracle import assert_same, oracle_torch

NAN = float("nan")
LAYOUTS = ("contiguous", "transposed", "stepped", "offset", "expanded")
DTYPES = ("float32", "float64", "int64", "complex64", "float16", "bfloat16")
# (rtol, atol); float16/bfloat16 results may differ by one rounding step.
TOL = {"float16": (4e-3, 4e-3), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5),
       "float64": (1e-12, 1e-12), "complex64": (1e-5, 1e-5), "complex128": (1e-12, 1e-12)}


@pytest.fixture(autouse=True)
def _torch():
    oracle_torch()


def _data(shape, dtype: str, rng) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return rng.integers(-4, 5, shape).astype(np.int64)
    values = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        return values + 1j * rng.standard_normal(shape)
    return values


def _base_shape(shape, layout):
    if layout == "transposed":
        return shape[::-1]
    if layout == "stepped":
        return shape[:-1] + (2 * shape[-1] + 1,)
    if layout == "offset":
        return (shape[0] + 1,) + shape[1:]
    if layout == "expanded":
        return (1,) + shape[1:]
    return shape


def _view(x, shape, layout):
    if layout == "transposed":
        return x.permute(*range(len(shape) - 1, -1, -1))
    if layout == "stepped":
        return x.as_strided(shape, tuple(x.stride()[:-1]) + (2,), 1)
    if layout == "offset":
        return x.narrow(0, 1, shape[0])
    if layout == "expanded":
        return x.expand(*shape)
    return x


def pair(shape, dtype="float32", layout="contiguous", seed=0, data=None):
    """The same values with the same layout as a glasstorch and a torch tensor."""
    torch = oracle_torch()
    shape = tuple(shape)
    if not shape or (layout == "expanded" and shape[0] == 0):
        layout = "contiguous"
    if data is None:
        data = _data(_base_shape(shape, layout), dtype, np.random.default_rng(seed))
    base = np.asarray(data)
    g = gt.from_numpy(base.copy()).to(getattr(gt, dtype))
    t = torch.from_numpy(base.copy()).to(getattr(torch, dtype))
    return _view(g, shape, layout), _view(t, shape, layout)


def both(fn, *pairs, dtype=None, check_stride=True):
    """fn(lib, *tensors) run on glasstorch and on torch gives the same tensor."""
    torch = oracle_torch()
    g = fn(gt, *(p[0] for p in pairs))
    t = fn(torch, *(p[1] for p in pairs))
    rtol, atol = TOL.get(dtype or str(t.dtype).replace("torch.", ""), (0, 0))
    assert_same(g, t, rtol=rtol, atol=atol, check_stride=check_stride)
    return g, t


def same_error(fn, *pairs):
    """fn raises the same exception type with the same message in both libraries."""
    torch = oracle_torch()
    with pytest.raises(Exception) as te:
        fn(torch, *(p[1] for p in pairs))
    with pytest.raises(Exception) as ge:
        fn(gt, *(p[0] for p in pairs))
    assert type(ge.value).__name__ == type(te.value).__name__, (ge.value, te.value)
    assert str(ge.value) == str(te.value).split("\n")[0]


# ---- matmul: every rank combination ------------------------------------------------------

RANKS = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
         ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
         ((5, 2, 3), (5, 3, 4)), ((2, 1, 3, 4), (5, 4, 6)), ((5, 4, 6), (2, 1, 6, 3)),
         ((2, 1, 3, 4), (4,)), ((4,), (2, 1, 4, 3)), ((1, 2, 3), (4, 3, 2))]


@pytest.mark.parametrize("sa,sb", RANKS)
@pytest.mark.parametrize("la,lb", [("contiguous", "contiguous"), ("transposed", "stepped"),
                                   ("offset", "transposed"), ("expanded", "expanded")])
def test_matmul_rank_combinations(sa, sb, la, lb):
    a, b = pair(sa, layout=la, seed=1), pair(sb, layout=lb, seed=2)
    both(lambda L, x, y: L.matmul(x, y), a, b)
    both(lambda L, x, y: x @ y, a, b)
    both(lambda L, x, y: x.matmul(y), a, b)


def test_matmul_reference_example():
    g = gt.ones(2, 1, 3, 4) @ gt.ones(5, 4, 6)
    assert g.shape == (2, 5, 3, 6) and g.stride() == (90, 18, 6, 1)
    assert_same(g, np.full((2, 5, 3, 6), 4.0, np.float32))


@st.composite
def _matmul_shapes(draw):
    ra, rb = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    n, k, m = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 3))
    nbatch = max(ra, rb) - 2
    batch = [draw(st.integers(1, 3)) for _ in range(max(nbatch, 0))]
    ba = [s if draw(st.booleans()) else 1 for s in batch][len(batch) - max(ra - 2, 0):]
    bb = [s if draw(st.booleans()) else 1 for s in batch][len(batch) - max(rb - 2, 0):]
    sa = tuple(ba) + ((n, k) if ra > 1 else (k,))
    sb = tuple(bb) + ((k, m) if rb > 1 else (k,))
    return sa, sb, draw(st.sampled_from(LAYOUTS)), draw(st.sampled_from(LAYOUTS))


@settings(max_examples=40, deadline=None)
@given(_matmul_shapes(), st.sampled_from(["float32", "float64", "int64"]))
def test_matmul_broadcasting_property(shapes, dtype):
    sa, sb, la, lb = shapes
    a, b = pair(sa, dtype, la, seed=3), pair(sb, dtype, lb, seed=4)
    both(lambda L, x, y: x @ y, a, b)
    both(lambda L, x, y: L.matmul(x, y, out=L.empty(0, dtype=x.dtype)), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3, 4), (4, 5)),
                                   ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4,))])
def test_matmul_dtypes(dtype, sa, sb):
    both(lambda L, x, y: x @ y, pair(sa, dtype, seed=5), pair(sb, dtype, seed=6))


def test_matmul_empty_and_zero_k():
    for sa, sb in [((2, 0), (0, 3)), ((0, 3), (3, 2)), ((0,), (0,)), ((4, 0, 2), (2, 3)),
                   ((3, 0), (0,)), ((2, 2, 0), (2, 0, 5)), ((0, 2, 3), (3, 4))]:
        both(lambda L, x, y: x @ y, pair(sa), pair(sb))
    both(lambda L, x, y: x @ y, pair((2, 0), "int64"), pair((0, 3), "int64"))


def test_matmul_integer_results_are_exact():
    big = np.array([[2**40, 3], [1, 2**41]], np.int64)
    both(lambda L, x, y: x @ y, pair((2, 2), "int64", data=big), pair((2, 2), "int64",
                                                                      data=big.T.copy()))


def test_half_products_accumulate_in_float32():
    row = np.array([[60000.0, 60000.0, -60000.0]])
    for fn in (lambda L, x, y: x @ y.t(), lambda L, x, y: L.mv(x, y[0]),
               lambda L, x, y: L.dot(x[0], y[0]), lambda L, x, y: L.bmm(x[None], y.t()[None])):
        g, _ = both(fn, pair((1, 3), "float16", data=row), pair((1, 3), "float16",
                                                                 data=np.ones((1, 3))))
        assert float(g.reshape(-1)[0] if g.dim() else g) == 60000.0


def test_matmul_operator_with_non_tensors():
    x = gt.ones(2, 3)
    for other in (2, [1.0, 2.0, 3.0]):
        with pytest.raises(TypeError, match="unsupported operand"):
            x @ other
        with pytest.raises(TypeError, match="unsupported operand"):
            other @ x
    with pytest.raises(TypeError, match="unsupported operand"):
        np.ones(2) @ x
    assert not hasattr(gt.Tensor, "__imatmul__")     # `a @= b` rebinds, as in PyTorch
    y = x
    y @= gt.ones(3, 4)
    assert y.shape == (2, 4) and x.shape == (2, 3)


def test_matmul_out_keeps_layout_and_resizes():
    a, b = pair((2, 2, 3)), pair((2, 3, 4))
    both(lambda L, x, y: L.matmul(x, y, out=L.empty(2, 4, 2).mT), a, b)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        both(lambda L, x, y: L.matmul(x, y, out=L.empty(3)), a, b)
    assert any("was resized" in str(x.message) for x in w)
    out = gt.empty(2, 2, 4)
    r = gt.matmul(a[0], b[0], out=out)
    assert r is out and out._version == 1


def test_out_may_alias_an_input():
    x = gt.from_numpy(np.random.default_rng(7).standard_normal((3, 3)))
    ref = x.numpy() @ x.numpy()
    gt.mm(x, x, out=x)
    assert_same(x, ref, rtol=1e-12, atol=1e-12)
    y = gt.from_numpy(np.random.default_rng(8).standard_normal((3, 3)))
    ref = 2 * y.numpy() + 3 * (y.numpy() @ y.numpy())
    gt.addmm(y, y, y, beta=2, alpha=3, out=y)
    assert_same(y, ref, rtol=1e-12, atol=1e-12)


# ---- mm / bmm / mv / dot / vdot / inner / outer --------------------------------------------

PRODUCTS = {
    "mm": ((lambda L, x, y: L.mm(x, y)), (2, 3), (3, 4)),
    "bmm": ((lambda L, x, y: L.bmm(x, y)), (2, 2, 3), (2, 3, 4)),
    "mv": ((lambda L, x, y: L.mv(x, y)), (2, 3), (3,)),
    "dot": ((lambda L, x, y: L.dot(x, y)), (5,), (5,)),
    "vdot": ((lambda L, x, y: L.vdot(x, y)), (5,), (5,)),
    "inner": ((lambda L, x, y: L.inner(x, y)), (2, 3, 4), (5, 4)),
    "outer": ((lambda L, x, y: L.outer(x, y)), (3,), (4,)),
    "ger": ((lambda L, x, y: L.ger(x, y)), (3,), (4,)),
    "tensordot": ((lambda L, x, y: L.tensordot(x, y, ([0, 2], [2, 0]))), (3, 2, 4),
                  (4, 5, 3)),
}


def test_product_methods():
    for fn, sa, sb in [((lambda L, x, y: x.mm(y)), (2, 3), (3, 4)),
                       ((lambda L, x, y: x.bmm(y)), (2, 2, 3), (2, 3, 4)),
                       ((lambda L, x, y: x.mv(y)), (2, 3), (3,)),
                       ((lambda L, x, y: x.dot(y)), (5,), (5,)),
                       ((lambda L, x, y: x.vdot(y)), (5,), (5,)),
                       ((lambda L, x, y: x.outer(y)), (3,), (4,)),
                       ((lambda L, x, y: x.ger(y)), (3,), (4,)),
                       ((lambda L, x, y: x.inner(y)), (3,), (3,)),
                       ((lambda L, x, y: x.__rmatmul__(y)), (3, 4), (2, 3))]:
        both(fn, pair(sa, seed=1), pair(sb, seed=2))
    for op, (s, a, b) in ADD_OPS.items():
        both(lambda L, x, y, z: getattr(x, op)(y, z, beta=2, alpha=0.5), pair(s), pair(a),
             pair(b))


@pytest.mark.parametrize("op", PRODUCTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_products_dtypes(op, dtype):
    fn, sa, sb = PRODUCTS[op]
    both(fn, pair(sa, dtype, seed=8), pair(sb, dtype, seed=9))


@pytest.mark.parametrize("op", PRODUCTS)
@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_products_layouts(op, layout):
    fn, sa, sb = PRODUCTS[op]
    both(fn, pair(sa, "float64", layout, seed=10), pair(sb, "float64", layout, seed=11))


@pytest.mark.parametrize("op", ["mm", "bmm", "mv", "dot", "inner", "outer", "tensordot"])
def test_products_out(op):
    fn, sa, sb = PRODUCTS[op]
    a, b = pair(sa, "float32", seed=12), pair(sb, "float32", seed=13)
    t = fn(oracle_torch(), a[1], b[1])
    args = {"mm": "(x, y", "bmm": "(x, y", "mv": "(x, y", "dot": "(x, y", "inner": "(x, y",
            "outer": "(x, y", "tensordot": "(x, y, ([0, 2], [2, 0])"}[op]
    call = eval(f"lambda L, x, y: L.{op}{args}, out=L.empty({tuple(t.shape)}))")
    both(call, a, b)


def test_vdot_conjugates_first_argument():
    both(lambda L, x, y: L.vdot(x, y), pair((4,), "complex128", seed=14),
         pair((4,), "complex128", seed=15))
    both(lambda L, x, y: L.dot(x, y), pair((4,), "complex128", seed=14),
         pair((4,), "complex128", seed=15))


def test_inner_with_zero_dim_operand_promotes():
    both(lambda L, x, y: L.inner(x, y), pair((), "int64", data=3), pair((2, 4), "float32"))
    both(lambda L, x, y: L.inner(x, y), pair((), "float64", data=2.0), pair((), "float32",
                                                                           data=1.5))
    both(lambda L, x, y: L.inner(x, y, out=L.empty(0, dtype=L.float64)),
         pair((), "int64", data=2), pair((4,), "float32"))


def test_outer_promotes_and_bool():
    both(lambda L, x, y: L.outer(x, y), pair((3,), "int64"), pair((2,), "float64"))
    both(lambda L, x, y: L.outer(x, y), pair((3,), "bool"), pair((2,), "bool", seed=1))
    both(lambda L, x, y: L.outer(x, y, out=L.empty(3, 2, dtype=L.float64)),
         pair((3,), "float32"), pair((2,), "float32"))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32"])
def test_small_integer_products_wrap_like_torch(dtype):
    data = np.full((2, 3), 100)
    both(lambda L, x, y: x @ y.t(), pair((2, 3), dtype, data=data), pair((2, 3), dtype,
                                                                        data=data))


# ---- addmm / addmv / addr / addbmm / baddbmm ----------------------------------------------

ADD_OPS = {
    "addmm": ((2, 4), (2, 3), (3, 4)),
    "addmv": ((2,), (2, 3), (3,)),
    "addr": ((2, 3), (2,), (3,)),
    "addbmm": ((2, 4), (5, 2, 3), (5, 3, 4)),
    "baddbmm": ((5, 2, 4), (5, 2, 3), (5, 3, 4)),
}


def _call(op, **kw):
    return lambda L, s, a, b: getattr(L, op)(s, a, b, **kw)


@pytest.mark.parametrize("op", ADD_OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalars", [{}, {"beta": 2, "alpha": 3}, {"beta": 0}, {"alpha": 0}])
def test_add_products(op, dtype, scalars):
    s, a, b = ADD_OPS[op]
    if dtype.startswith(("float", "bfloat", "complex")) and scalars:
        scalars = {k: v * 0.5 for k, v in scalars.items()}
    args = [pair(s, dtype, seed=16), pair(a, dtype, seed=17), pair(b, dtype, seed=18)]
    both(_call(op, **scalars), *args)
    both(lambda L, x, y, z: getattr(x.clone(), op + "_")(y, z, **scalars), *args)


@pytest.mark.parametrize("op", ADD_OPS)
@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_add_products_layouts(op, layout):
    s, a, b = ADD_OPS[op]
    args = [pair(s, "float64", layout, 19), pair(a, "float64", layout, 20),
            pair(b, "float64", layout, 21)]
    both(_call(op, beta=0.5, alpha=-2), *args)


@pytest.mark.parametrize("op", ADD_OPS)
def test_add_products_broadcast_input_and_out(op):
    s, a, b = ADD_OPS[op]
    for small in ((), s[-1:], (1,) * len(s)):
        args = [pair(small, seed=22), pair(a, seed=23), pair(b, seed=24)]
        both(_call(op, beta=2), *args)
    args = [pair(s, seed=25), pair(a, seed=26), pair(b, seed=27)]
    out_shape = s if op != "addbmm" else (2, 4)
    both(lambda L, x, y, z: getattr(L, op)(x, y, z, out=L.empty(out_shape[::-1]).t()
                                           if len(out_shape) == 2 else L.empty(out_shape)),
         *args)


@pytest.mark.parametrize("op", ["addmm", "addmv", "addr", "addbmm", "baddbmm"])
def test_beta_zero_ignores_nan_input(op):
    s, a, b = ADD_OPS[op]
    args = [pair(s, data=np.full(s, NAN)), pair(a, seed=28), pair(b, seed=29)]
    g, _ = both(_call(op, beta=0), *args)
    assert not np.isnan(g.numpy()).any()


def test_alpha_zero_ignores_nan_product_in_blas_ops():
    for op in ("addmm", "addmv", "addbmm"):
        s, a, b = ADD_OPS[op]
        both(_call(op, alpha=0), pair(s), pair(a, data=np.full(a, NAN)), pair(b))
    s, a, b = (1, 8, 8), (1, 8, 8), (1, 8, 8)
    both(_call("baddbmm", alpha=0), pair(s), pair(a, data=np.full(a, NAN)), pair(b))


def test_integer_scalars_truncate_like_torch():
    args = [pair((2, 2), "int64", seed=30), pair((2, 2), "int64", seed=31),
            pair((2, 2), "int64", seed=32)]
    for kw in ({"alpha": 0.5}, {"beta": 1.5, "alpha": -1.5}, {"alpha": True}):
        both(_call("addmm", **kw), *args)
        both(_call("baddbmm", **kw), *[(g[None], t[None]) for g, t in args])
    both(_call("addmm", alpha=-1), *[pair((2, 2), "uint8", seed=i) for i in (33, 34, 35)])


def test_addr_bool_and_promotion():
    args = [pair((2, 3), "bool", seed=36), pair((2,), "bool", seed=37),
            pair((3,), "bool", seed=38)]
    for kw in ({}, {"beta": 0}, {"alpha": False}, {"beta": True, "alpha": 2}):
        both(_call("addr", **kw), *args)
    both(_call("addr"), pair((2, 3), "float32"), pair((2,), "float64"), pair((3,), "int64"))
    both(_call("addr", beta=2, alpha=3), pair((), "float64"), pair((2,), "float32"),
         pair((3,), "float32"))
    both(lambda L, s, a, b: s.clone().addr_(a, b), pair((2, 3), "float32"),
         pair((2,), "float64"), pair((3,), "float64"))


def test_addbmm_empty_batch_and_zero_k():
    both(_call("addbmm", beta=3), pair((2, 4)), pair((0, 2, 3)), pair((0, 3, 4)))
    both(_call("addmm", beta=2), pair((2, 2)), pair((2, 0)), pair((0, 2)))
    both(_call("addmv", beta=0), pair((2,), data=np.full(2, NAN)), pair((2, 0)), pair((0,)))
    both(_call("baddbmm"), pair((3, 2, 2)), pair((3, 2, 0)), pair((3, 0, 2)))


def test_inplace_bumps_version_and_returns_self():
    x = gt.zeros(2, 4)
    r = x.addmm_(gt.ones(2, 3), gt.ones(3, 4), alpha=2)
    assert r is x and x._version == 1
    assert_same(x, np.full((2, 4), 6.0, np.float32))


# ---- error texts ---------------------------------------------------------------------------

def _f(*shape, dtype="float32"):
    return shape, dtype


ERRORS = [
    ("mm f32 f64", lambda L, a, b: L.mm(a, b), _f(2, 3), _f(3, 4, dtype="float64")),
    ("mm long float", lambda L, a, b: L.mm(a, b), _f(2, 3, dtype="int64"), _f(3, 4)),
    ("mm shapes", lambda L, a, b: L.mm(a, b), _f(2, 3), _f(4, 5)),
    ("mm shapes before dtype", lambda L, a, b: L.mm(a, b), _f(2, 3), _f(4, 5, dtype="float64")),
    ("mm 1d", lambda L, a, b: L.mm(a, b), _f(3), _f(3, 4)),
    ("mm 1d mat2", lambda L, a, b: L.mm(a, b), _f(2, 3), _f(3)),
    ("mm bool", lambda L, a, b: L.mm(a, b), _f(2, 3, dtype="bool"), _f(3, 4, dtype="bool")),
    ("mm number", lambda L, a, b: L.mm(a, 2), _f(2, 3), _f(3)),
    ("mm out dtype", lambda L, a, b: L.mm(a, b, out=L.empty(2, 4, dtype=L.float64)),
     _f(2, 3), _f(3, 4)),
    ("mm out long", lambda L, a, b: L.mm(a, b, out=L.empty(2, 4, dtype=L.long)),
     _f(2, 3), _f(3, 4)),
    ("matmul 0d", lambda L, a, b: L.matmul(a, b), _f(), _f(2, 2)),
    ("matmul 0d right", lambda L, a, b: L.matmul(a, b), _f(2, 2), _f()),
    ("matmul f64 2d", lambda L, a, b: a @ b, _f(2, 3), _f(3, 4, dtype="float64")),
    ("matmul f64 1d1d", lambda L, a, b: a @ b, _f(3), _f(3, dtype="float64")),
    ("matmul f64 2d1d", lambda L, a, b: a @ b, _f(2, 3), _f(3, dtype="float64")),
    ("matmul f64 1d2d", lambda L, a, b: a @ b, _f(3), _f(3, 2, dtype="float64")),
    ("matmul f64 3d3d", lambda L, a, b: a @ b, _f(2, 2, 3), _f(2, 3, 2, dtype="float64")),
    ("matmul f64 3d2d", lambda L, a, b: a @ b, _f(2, 2, 3), _f(3, 2, dtype="float64")),
    ("matmul f64 2d3d", lambda L, a, b: a @ b, _f(2, 3), _f(2, 3, 2, dtype="float64")),
    ("matmul f64 3d1d", lambda L, a, b: a @ b, _f(2, 2, 3), _f(3, dtype="float64")),
    ("matmul f64 1d3d", lambda L, a, b: a @ b, _f(3), _f(2, 3, 2, dtype="float64")),
    ("matmul 1d1d size", lambda L, a, b: a @ b, _f(3), _f(4)),
    ("matmul 2d1d size", lambda L, a, b: a @ b, _f(2, 3), _f(4)),
    ("matmul 1d2d size", lambda L, a, b: a @ b, _f(3), _f(4, 2)),
    ("matmul 3d3d size", lambda L, a, b: a @ b, _f(2, 2, 3), _f(2, 4, 2)),
    ("matmul batch", lambda L, a, b: a @ b, _f(2, 2, 3), _f(3, 3, 2)),
    ("matmul 3d2d size", lambda L, a, b: a @ b, _f(2, 2, 3), _f(4, 2)),
    ("matmul 3dT2d size", lambda L, a, b: a.transpose(0, 1) @ b, _f(2, 2, 3), _f(4, 2)),
    ("matmul 2d3d size", lambda L, a, b: a @ b, _f(2, 3), _f(2, 4, 2)),
    ("matmul 3d1d size", lambda L, a, b: a @ b, _f(2, 2, 3), _f(4)),
    ("matmul 1d3d size", lambda L, a, b: a @ b, _f(3), _f(2, 4, 2)),
    ("matmul 4d3d size", lambda L, a, b: a @ b, _f(2, 1, 3, 4), _f(5, 5, 6)),
    ("matmul bool", lambda L, a, b: a @ b, _f(2, 3, dtype="bool"), _f(3, dtype="bool")),
    ("matmul number", lambda L, a, b: L.matmul(a, 2), _f(2, 3), _f(3)),
    ("matmul out 1d", lambda L, a, b: L.matmul(a, b, out=L.empty((), dtype=L.float64)),
     _f(3), _f(3)),
    ("matmul out mv", lambda L, a, b: L.matmul(a, b, out=L.empty(2, dtype=L.float64)),
     _f(2, 3), _f(3)),
    ("matmul out 3d", lambda L, a, b: L.matmul(a, b, out=L.empty(2, 2, 4, dtype=L.float64)),
     _f(2, 2, 3), _f(2, 3, 4)),
    ("bmm f16", lambda L, a, b: L.bmm(a, b), _f(2, 2, 3), _f(2, 3, 2, dtype="float16")),
    ("bmm f16 first", lambda L, a, b: L.bmm(a, b), _f(2, 2, 3, dtype="float16"),
     _f(2, 3, 2)),
    ("bmm sizes", lambda L, a, b: L.bmm(a, b), _f(2, 2, 3), _f(2, 4, 2)),
    ("bmm batch", lambda L, a, b: L.bmm(a, b), _f(2, 2, 3), _f(3, 3, 2)),
    ("bmm 2d", lambda L, a, b: L.bmm(a, b), _f(2, 3), _f(3, 2)),
    ("bmm 2d batch2", lambda L, a, b: L.bmm(a, b), _f(2, 2, 3), _f(3, 2)),
    ("bmm bool", lambda L, a, b: L.bmm(a, b), _f(2, 2, 3, dtype="bool"),
     _f(2, 3, 2, dtype="bool")),
    ("bmm out", lambda L, a, b: L.bmm(a, b, out=L.empty(2, 2, 2, dtype=L.float64)),
     _f(2, 2, 3), _f(2, 3, 2)),
    ("mv dtype", lambda L, a, b: L.mv(a, b), _f(2, 3), _f(3, dtype="float64")),
    ("mv dtype mat", lambda L, a, b: L.mv(a, b), _f(2, 3, dtype="float64"), _f(3)),
    ("mv size", lambda L, a, b: L.mv(a, b), _f(2, 3), _f(4)),
    ("mv 1d", lambda L, a, b: L.mv(a, b), _f(3), _f(3)),
    ("mv 2d vec", lambda L, a, b: L.mv(a, b), _f(2, 3), _f(3, 1)),
    ("mv out", lambda L, a, b: L.mv(a, b, out=L.empty(2, dtype=L.float64)), _f(2, 3), _f(3)),
    ("dot dtype", lambda L, a, b: L.dot(a, b), _f(3), _f(3, dtype="float64")),
    ("dot size", lambda L, a, b: L.dot(a, b), _f(3), _f(4)),
    ("dot dtype before size", lambda L, a, b: L.dot(a, b), _f(3), _f(4, dtype="float64")),
    ("dot 2d", lambda L, a, b: L.dot(a, b), _f(3, 1), _f(3)),
    ("dot bool", lambda L, a, b: L.dot(a, b), _f(3, dtype="bool"), _f(3, dtype="bool")),
    ("dot out", lambda L, a, b: L.dot(a, b, out=L.empty((), dtype=L.float64)), _f(3), _f(3)),
    ("vdot dtype", lambda L, a, b: L.vdot(a, b), _f(3, dtype="int64"), _f(3)),
    ("vdot 2d", lambda L, a, b: L.vdot(a, b), _f(3), _f(3, 1)),
    ("inner dtype", lambda L, a, b: L.inner(a, b), _f(3), _f(3, dtype="float64")),
    ("inner shape", lambda L, a, b: L.inner(a, b), _f(2, 3), _f(4)),
    ("inner bool", lambda L, a, b: L.inner(a, b), _f(3, dtype="bool"), _f(3, dtype="bool")),
    ("inner bool 2d", lambda L, a, b: L.inner(a, b), _f(2, 3, dtype="bool"),
     _f(2, 3, dtype="bool")),
    ("inner out", lambda L, a, b: L.inner(a, b, out=L.empty(0, dtype=L.float64)), _f(2, 3),
     _f(4, 3)),
    ("inner 0d out", lambda L, a, b: L.inner(a, b, out=L.empty(0, dtype=L.long)), _f(),
     _f(3)),
    ("outer 2d", lambda L, a, b: L.outer(a, b), _f(3, 1), _f(2)),
    ("outer 0d", lambda L, a, b: L.outer(a, b), _f(), _f(2)),
    ("ger 2d vec2", lambda L, a, b: L.ger(a, b), _f(3), _f(2, 1)),
    ("outer out long", lambda L, a, b: L.outer(a, b, out=L.empty(3, 2, dtype=L.long)),
     _f(3), _f(2)),
    ("addmm self dtype", lambda L, s, a, b: L.addmm(s, a, b), _f(2, 4, dtype="float64"),
     _f(2, 3), _f(3, 4)),
    ("addmm mat1 dtype", lambda L, s, a, b: L.addmm(s, a, b), _f(2, 4),
     _f(2, 3, dtype="float64"), _f(3, 4)),
    ("addmm mat2 dtype", lambda L, s, a, b: L.addmm(s, a, b), _f(2, 4), _f(2, 3),
     _f(3, 4, dtype="float64")),
    ("addmm shapes", lambda L, s, a, b: L.addmm(s, a, b), _f(2, 4), _f(2, 3), _f(2, 4)),
    ("addmm dims", lambda L, s, a, b: L.addmm(s, a, b), _f(2, 4), _f(2, 3, 1), _f(3, 4)),
    ("addmm dims mat2", lambda L, s, a, b: L.addmm(s, a, b), _f(2, 4), _f(2, 3), _f(3)),
    ("addmm broadcast", lambda L, s, a, b: L.addmm(s, a, b), _f(3), _f(2, 3), _f(3, 4)),
    ("addmm bool", lambda L, s, a, b: L.addmm(s, a, b), _f(2, 4, dtype="bool"),
     _f(2, 3, dtype="bool"), _f(3, 4, dtype="bool")),
    ("addmm_ shape", lambda L, s, a, b: s.addmm_(a, b), _f(1, 4), _f(2, 3), _f(3, 4)),
    ("addmm_ 0d", lambda L, s, a, b: s.addmm_(a, b), _f(), _f(2, 3), _f(3, 4)),
    ("addmm_ expanded", lambda L, s, a, b: s.expand(2, 4).addmm_(a, b), _f(4), _f(2, 3),
     _f(3, 4)),
    ("addmm out dtype", lambda L, s, a, b: L.addmm(s, a, b, out=L.empty(2, 4, dtype=L.double)),
     _f(2, 4), _f(2, 3), _f(3, 4)),
    ("addmm complex alpha", lambda L, s, a, b: L.addmm(s, a, b, alpha=1j), _f(2, 4), _f(2, 3),
     _f(3, 4)),
    ("addmm alpha overflow", lambda L, s, a, b: L.addmm(s, a, b, alpha=1e300), _f(2, 4),
     _f(2, 3), _f(3, 4)),
    ("addmm alpha overflow f16", lambda L, s, a, b: L.addmm(s, a, b, alpha=1e300),
     _f(2, 4, dtype="float16"), _f(2, 3, dtype="float16"), _f(3, 4, dtype="float16")),
    ("addmm alpha nan int", lambda L, s, a, b: L.addmm(s, a, b, alpha=NAN),
     _f(2, 4, dtype="int64"), _f(2, 3, dtype="int64"), _f(3, 4, dtype="int64")),
    ("addmm beta overflow int8", lambda L, s, a, b: L.addmm(s, a, b, beta=300),
     _f(2, 4, dtype="int8"), _f(2, 3, dtype="int8"), _f(3, 4, dtype="int8")),
    ("addmm alpha uint8", lambda L, s, a, b: L.addmm(s, a, b, alpha=-300),
     _f(2, 4, dtype="uint8"), _f(2, 3, dtype="uint8"), _f(3, 4, dtype="uint8")),
    ("addmm alpha int32", lambda L, s, a, b: L.addmm(s, a, b, alpha=2**40),
     _f(2, 4, dtype="int32"), _f(2, 3, dtype="int32"), _f(3, 4, dtype="int32")),
    ("addmm alpha complex64", lambda L, s, a, b: L.addmm(s, a, b, alpha=1e300),
     _f(2, 4, dtype="complex64"), _f(2, 3, dtype="complex64"), _f(3, 4, dtype="complex64")),
    ("addmm mat number", lambda L, s, a, b: L.addmm(s, 2, b), _f(2, 4), _f(2, 3), _f(3, 4)),
    ("addmm self number", lambda L, s, a, b: L.addmm(2, a, b), _f(2, 4), _f(2, 3), _f(3, 4)),
    ("addmv dtypes", lambda L, s, a, b: L.addmv(s, a, b), _f(2, dtype="float64"), _f(2, 3),
     _f(3)),
    ("addmv dtypes vec", lambda L, s, a, b: L.addmv(s, a, b), _f(2), _f(2, 3),
     _f(3, dtype="float64")),
    ("addmv dims", lambda L, s, a, b: L.addmv(s, a, b), _f(2), _f(2, 3, 1), _f(3)),
    ("addmv input dims", lambda L, s, a, b: L.addmv(s, a, b), _f(2, 1), _f(2, 3), _f(3)),
    ("addmv size", lambda L, s, a, b: L.addmv(s, a, b), _f(3), _f(2, 3), _f(3)),
    ("addmv 0d size", lambda L, s, a, b: L.addmv(s, a, b), _f(), _f(2, 3), _f(4)),
    ("addmv_ shape", lambda L, s, a, b: s.addmv_(a, b), _f(1), _f(2, 3), _f(3)),
    ("addmv out", lambda L, s, a, b: L.addmv(s, a, b, out=L.empty(2, dtype=L.double)), _f(2),
     _f(2, 3), _f(3)),
    ("addr vec1 dims", lambda L, s, a, b: L.addr(s, a, b), _f(2, 3), _f(2, 1), _f(3)),
    ("addr vec2 dims", lambda L, s, a, b: L.addr(s, a, b), _f(2, 3), _f(2), _f()),
    ("addr broadcast", lambda L, s, a, b: L.addr(s, a, b), _f(2, 4), _f(2), _f(3)),
    ("addr float beta int", lambda L, s, a, b: L.addr(s, a, b, beta=0.5, alpha=0.5),
     _f(2, 3, dtype="int64"), _f(2, dtype="int64"), _f(3, dtype="int64")),
    ("addr bool alpha float", lambda L, s, a, b: L.addr(s, a, b, alpha=2.0),
     _f(2, 3, dtype="bool"), _f(2, dtype="bool"), _f(3, dtype="bool")),
    ("addr boolean beta", lambda L, s, a, b: L.addr(s, a, b, beta=False), _f(2, 3), _f(2),
     _f(3)),
    ("addr half overflow", lambda L, s, a, b: L.addr(s, a, b, alpha=1e10),
     _f(2, 3, dtype="float16"), _f(2, dtype="float16"), _f(3, dtype="float16")),
    ("addr complex alpha", lambda L, s, a, b: L.addr(s, a, b, alpha=1j), _f(2, 3), _f(2),
     _f(3)),
    ("addr uint8 overflow", lambda L, s, a, b: L.addr(s, a, b, alpha=1000),
     _f(2, 3, dtype="uint8"), _f(2, dtype="uint8"), _f(3, dtype="uint8")),
    ("addr_ size", lambda L, s, a, b: s.addr_(a, b), _f(1, 3), _f(2), _f(3)),
    ("addr_ 0d", lambda L, s, a, b: s.addr_(a, b), _f(), _f(2), _f(3)),
    ("addr_ long", lambda L, s, a, b: s.addr_(a, b), _f(2, 3, dtype="int64"), _f(2), _f(3)),
    ("addr out long", lambda L, s, a, b: L.addr(s, a, b, out=L.empty(2, 3, dtype=L.long)),
     _f(2, 3), _f(2), _f(3)),
    ("addbmm batch", lambda L, s, a, b: L.addbmm(s, a, b), _f(2, 4), _f(5, 2, 3),
     _f(4, 3, 4)),
    ("addbmm sizes", lambda L, s, a, b: L.addbmm(s, a, b), _f(2, 4), _f(5, 2, 3),
     _f(5, 4, 4)),
    ("addbmm broadcast", lambda L, s, a, b: L.addbmm(s, a, b), _f(3, 4), _f(5, 2, 3),
     _f(5, 3, 4)),
    ("addbmm dims", lambda L, s, a, b: L.addbmm(s, a, b), _f(2, 4), _f(5, 2, 3), _f(3, 4)),
    ("addbmm self dtype", lambda L, s, a, b: L.addbmm(s, a, b), _f(2, 4, dtype="float64"),
     _f(5, 2, 3), _f(5, 3, 4)),
    ("addbmm batch1 dtype", lambda L, s, a, b: L.addbmm(s, a, b), _f(2, 4),
     _f(5, 2, 3, dtype="float64"), _f(5, 3, 4)),
    ("addbmm out", lambda L, s, a, b: L.addbmm(s, a, b, out=L.empty(2, 4, dtype=L.double)),
     _f(2, 4), _f(5, 2, 3), _f(5, 3, 4)),
    ("addbmm bool", lambda L, s, a, b: L.addbmm(s, a, b), _f(2, 4, dtype="bool"),
     _f(5, 2, 3, dtype="bool"), _f(5, 3, 4, dtype="bool")),
    ("baddbmm input dtype", lambda L, s, a, b: L.baddbmm(s, a, b),
     _f(5, 2, 4, dtype="float64"), _f(5, 2, 3), _f(5, 3, 4)),
    ("baddbmm batch1 dtype", lambda L, s, a, b: L.baddbmm(s, a, b), _f(5, 2, 4),
     _f(5, 2, 3, dtype="int64"), _f(5, 3, 4)),
    ("baddbmm batch2 dtype", lambda L, s, a, b: L.baddbmm(s, a, b), _f(5, 2, 4),
     _f(5, 2, 3), _f(5, 3, 4, dtype="float64")),
    ("baddbmm sizes", lambda L, s, a, b: L.baddbmm(s, a, b), _f(5, 2, 4), _f(5, 2, 3),
     _f(4, 3, 4)),
    ("baddbmm broadcast", lambda L, s, a, b: L.baddbmm(s, a, b), _f(3, 4), _f(5, 2, 3),
     _f(5, 3, 4)),
    ("baddbmm dims", lambda L, s, a, b: L.baddbmm(s, a, b), _f(2, 4), _f(2, 3), _f(5, 3, 4)),
    ("baddbmm bool", lambda L, s, a, b: L.baddbmm(s, a, b), _f(5, 2, 4, dtype="bool"),
     _f(5, 2, 3, dtype="bool"), _f(5, 3, 4, dtype="bool")),
    ("baddbmm_ shape", lambda L, s, a, b: s.baddbmm_(a, b), _f(1, 2, 4), _f(2, 2, 3),
     _f(2, 3, 4)),
    ("baddbmm out", lambda L, s, a, b: L.baddbmm(s, a, b, out=L.empty(5, 2, 4,
                                                                       dtype=L.double)),
     _f(5, 2, 4), _f(5, 2, 3), _f(5, 3, 4)),
    ("tensordot dtype", lambda L, a, b: L.tensordot(a, b, 1), _f(3, 3),
     _f(3, 3, dtype="float64")),
    ("tensordot sizes", lambda L, a, b: L.tensordot(a, b, ([1], [0])), _f(2, 3), _f(4, 5)),
    ("tensordot lengths", lambda L, a, b: L.tensordot(a, b, ([1], [0, 1])), _f(2, 3),
     _f(3, 5)),
    ("tensordot repeated", lambda L, a, b: L.tensordot(a, b, ([1, 1], [0, 1])), _f(3, 3),
     _f(3, 3)),
    ("tensordot out of range", lambda L, a, b: L.tensordot(a, b, ([2], [0])), _f(3, 3),
     _f(3, 3)),
    ("tensordot negative", lambda L, a, b: L.tensordot(a, b, -1), _f(2, 3), _f(4, 5)),
    ("tensordot too many", lambda L, a, b: L.tensordot(a, b, 3), _f(2, 3), _f(3, 5)),
    ("tensordot float", lambda L, a, b: L.tensordot(a, b, 1.0), _f(2, 3), _f(3, 5)),
    ("tensordot three lists", lambda L, a, b: L.tensordot(a, b, ([1], [0], [1])), _f(3, 3),
     _f(3, 3)),
    ("tensordot int pair", lambda L, a, b: L.tensordot(a, b, [1, 0]), _f(3, 3), _f(3, 3)),
    ("tensordot bool", lambda L, a, b: L.tensordot(a, b, 1), _f(2, 3, dtype="bool"),
     _f(3, 2, dtype="bool")),
    ("tensordot out", lambda L, a, b: L.tensordot(a, b, 1, out=L.empty(2, 4,
                                                                       dtype=L.float64)),
     _f(2, 3), _f(3, 4)),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_error_texts(case):
    _, fn, *specs = case
    same_error(fn, *(pair(shape, dtype) for shape, dtype in specs))


def test_failed_out_call_leaves_out_untouched():
    out = gt.zeros(3)
    with pytest.raises(RuntimeError):
        gt.mm(gt.ones(2, 3), gt.ones(4, 5), out=out)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype bool"):
        gt.mm(gt.ones(2, 3, dtype=gt.bool), gt.ones(3, 4, dtype=gt.bool), out=out)
    flags = gt.zeros(3, dtype=gt.bool)
    with pytest.raises(NotImplementedError):
        gt.mm(gt.ones(2, 3, dtype=gt.bool), gt.ones(3, 4, dtype=gt.bool), out=flags)
    assert out.shape == flags.shape == (3,) and out._version == flags._version == 0


# ---- einsum --------------------------------------------------------------------------------

EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,jk->ki", [(2, 3), (3, 4)]), ("ij,jk->ikj", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij", [(2, 3)]),
    ("ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ijk->ki", [(2, 3, 4)]), ("iij->j", [(2, 2, 3)]),
    ("iji->j", [(2, 3, 2)]), ("iij->ij", [(2, 2, 3)]), ("i,j", [(2,), (3,)]),
    ("i,j->ji", [(2,), (3,)]), ("i,i", [(3,), (3,)]), ("i,i->i", [(3,), (3,)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]), ("bij,bjk", [(5, 2, 3), (5, 3, 4)]),
    ("bij,bjk->bik", [(1, 2, 3), (5, 3, 4)]), ("...ij,...jk", [(5, 2, 3), (5, 3, 4)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (1, 3, 4)]), ("...i,...i", [(2, 3, 4), (3, 4)]),
    ("...i,...i->...", [(1, 3), (4, 3)]), ("i...->...", [(2, 3, 4)]), ("i...", [(2, 3, 4)]),
    ("...->", [(2, 3)]), ("...ii->...i", [(2, 3, 3)]), ("ij,ij->", [(2, 3), (2, 3)]),
    ("ij,ji->ij", [(2, 3), (3, 2)]), ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("i,j,k->kji", [(2,), (3,), (4,)]), ("ij,jk,kl->li", [(2, 3), (3, 4), (4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("ij,ij->ij", [(2, 1), (2, 3)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]), ("Ij,jK", [(2, 3), (3, 4)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]), ("ij,jk", [(2, 0), (0, 4)]),
    ("ij,jk", [(0, 3), (3, 4)]), ("", [()]), (",", [(), ()]), ("i,->i", [(3,), ()]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]), ("abc,cd,db->a", [(2, 3, 4), (4, 5), (5, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_einsum_equations(eq, shapes, layout):
    ops = [pair(s, "float64", layout, seed=40 + i) for i, s in enumerate(shapes)]
    g, t = both(lambda L, *xs: L.einsum(eq, *xs), *ops)
    g_view = any(g.untyped_storage() is x[0].untyped_storage() for x in ops)
    t_view = any(t.untyped_storage().data_ptr() == x[1].untyped_storage().data_ptr()
                 for x in ops)
    assert g_view == t_view, "a view of an input in one library, a copy in the other"


@pytest.mark.parametrize("eq,shapes", [("ij,jk", [(2, 3), (3, 4)]), ("ij->", [(2, 3)]),
                                       ("i,i->i", [(3,), (3,)]), ("ij->ji", [(2, 3)]),
                                       ("ij,k->k", [(2, 3), (4,)]), ("ij,j->j", [(2, 3), (3,)]),
                                       ("bij,bjk", [(2, 2, 3), (2, 3, 4)])])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "bfloat16", "complex64",
                                   "bool"])
def test_einsum_dtypes(eq, shapes, dtype):
    ops = [pair(s, dtype, seed=50 + i) for i, s in enumerate(shapes)]
    fn = lambda L, *xs: L.einsum(eq, *xs)  # noqa: E731
    if dtype == "bool" and eq in ("ij,jk", "bij,bjk"):
        same_error(fn, *ops)
    else:
        both(fn, *ops)


def test_einsum_view_shares_storage():
    x = gt.ones(3, 3)
    d = gt.einsum("ii->i", x)
    assert d._base is x and d.stride() == (4,)
    assert d.untyped_storage() is x.untyped_storage()


def test_einsum_argument_forms():
    a, b = pair((2, 3), seed=60), pair((3, 4), seed=61)
    both(lambda L, x, y: L.einsum("ij,jk", [x, y]), a, b)
    both(lambda L, x, y: L.einsum("ij,jk", (x, y)), a, b)
    both(lambda L, x, y: L.einsum(x, [0, 1], y, [1, 2], [0, 2]), a, b)
    both(lambda L, x, y: L.einsum(x, [0, 1], y, [1, 2]), a, b)
    both(lambda L, x: L.einsum(x, [..., 0], [0]), a)
    both(lambda L, x: L.einsum(x, [0, 26]), a)


def test_einsum_contraction_path():
    ops = [pair((2, 3), seed=62), pair((3, 4), seed=63), pair((4, 5), seed=64)]
    torch = oracle_torch()
    g = gt.ops.aten.einsum("ij,jk,kl", [o[0] for o in ops], path=[1, 2, 0, 1])
    t = torch._VF.einsum("ij,jk,kl", [o[1] for o in ops], path=[1, 2, 0, 1])
    assert_same(g, t, rtol=1e-5, atol=1e-5)


@st.composite
def _einsum_cases(draw):
    """Random equations over a few labels: repeated labels, broadcast size-1 dims, implicit
    and explicit outputs, one to three operands of mixed layouts and dtypes."""
    sizes = {c: draw(st.sampled_from([1, 2, 3])) for c in "abcd"}
    subs = [draw(st.text("abcd", max_size=4)) for _ in range(draw(st.integers(1, 3)))]
    labels = sorted(set("".join(subs)))
    eq = ",".join(subs)
    if draw(st.booleans()):
        eq += "->" + "".join(draw(st.permutations(labels))[:draw(st.integers(0, len(labels)))])
    ops = [pair(tuple(sizes[c] for c in sub), draw(st.sampled_from(["float64", "int32",
                                                                  "bool"])),
                draw(st.sampled_from(LAYOUTS)), seed=i) for i, sub in enumerate(subs)]
    return eq, ops


@settings(max_examples=40, deadline=None)
@given(_einsum_cases())
def test_einsum_random_equations(case):
    eq, ops = case
    fn = lambda L, *xs: L.einsum(eq, *xs)  # noqa: E731
    try:
        fn(oracle_torch(), *(o[1] for o in ops))
    except Exception:
        same_error(fn, *ops)
    else:
        both(fn, *ops)


@st.composite
def _matmul_calls(draw):
    """Operands of any rank, sometimes with mismatched sizes or dtypes, sometimes out=."""
    ra, rb = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    k = draw(st.integers(1, 3))
    batch = lambda r: tuple(draw(st.integers(1, 3)) for _ in range(r))  # noqa: E731
    sa = batch(ra - 1) + (k,) if ra else ()
    kb = k if draw(st.integers(0, 4)) else k + 1
    sb = (batch(rb - 2) + (kb, draw(st.integers(1, 3))) if rb >= 2 else (kb,) * rb)
    dtypes = ["float32", "float64"]
    a = pair(sa, draw(st.sampled_from(dtypes)), draw(st.sampled_from(LAYOUTS)), seed=1)
    b = pair(sb, draw(st.sampled_from(dtypes)), draw(st.sampled_from(LAYOUTS)), seed=2)
    out = draw(st.sampled_from([None, "float32", "float64"]))
    return a, b, out


@settings(max_examples=40, deadline=None)
@given(_matmul_calls())
def test_matmul_errors_property(call):
    a, b, out = call
    def fn(L, x, y):
        if out is None:
            return L.matmul(x, y)
        return L.matmul(x, y, out=L.empty(0, dtype=getattr(L, out)))
    try:
        fn(oracle_torch(), a[1], b[1])
    except Exception:
        same_error(fn, a, b)
    else:
        both(fn, a, b)


def test_docstring_examples_run():
    import doctest

    from glasstorch.ops.linalg import products as linalg
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(linalg, globs={"glasstorch": gt}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries >= 3


EINSUM_ERRORS = [
    ("ij,jk", [(2, 3)]), ("ij,jk", [(2, 3), (3, 4, 5)]), ("ij,jk", [(2, 3), (4, 4)]),
    ("i1,jk", [(2, 3), (4, 4)]), ("ij->ii", [(2, 3)]), ("ij->k", [(2, 3)]),
    ("ii", [(2, 3)]), ("...i...", [(2, 3, 4)]), ("...i,...i", [(2, 3, 4), (5, 4)]),
    ("ij->j->i", [(2, 3)]), ("..i", [(2, 3)]), ("i->..", [(2,)]), ("...i->......", [(2,)]),
    ("i", [(2,), (2,)]), ("ij...", [(2,)]), ("ij->i1", [(2, 2)]), ("i,i->", [(2,), (3,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_ERRORS, ids=[e for e, _ in EINSUM_ERRORS])
def test_einsum_errors(eq, shapes):
    same_error(lambda L, *xs: L.einsum(eq, *xs), *[pair(s) for s in shapes])


def test_einsum_argument_errors():
    a = pair((2,))
    same_error(lambda L, x: L.einsum("i"), a)
    same_error(lambda L, x: L.einsum(3, x), a)
    same_error(lambda L, x: L.einsum("i", [1, 2]), a)
    same_error(lambda L, x: L.einsum(x, [52]), a)
    same_error(lambda L, x: L.einsum("ij,jk", x, x.double()), a)
    same_error(lambda L, x: L.einsum("i,i", x, x.long()), a)
    torch = oracle_torch()
    for path in ([1, 2], [1, 1, 0, 1], [0, 5, 0, 1]):
        with pytest.raises(RuntimeError) as te:
            torch._VF.einsum("ij,jk,kl", [torch.ones(2, 3), torch.ones(3, 4),
                                         torch.ones(4, 5)], path=path)
        with pytest.raises(RuntimeError) as ge:
            gt.ops.aten.einsum("ij,jk,kl", [gt.ones(2, 3), gt.ones(3, 4), gt.ones(4, 5)],
                               path=path)
        assert str(ge.value) == str(te.value)


# ---- tensordot -------------------------------------------------------------------------------

@pytest.mark.parametrize("dims", [0, 1, 2, ([1, 2], [1, 0]), ([-2, -1], [1, 0]),
                                  ((1,), (1,)), [[2], [0]], "tensor0", "tensor1",
                                  "tensor_lists"])
def test_tensordot_dims_forms(dims):
    def fn(L, x, y):
        d = dims
        if d == "tensor0":
            d = L.tensor(1)
        elif d == "tensor1":
            d = L.tensor([1])
        elif d == "tensor_lists":
            d = L.tensor([[2], [0]])
        elif d == 2:
            y = y.permute(1, 0, 2)
        return L.tensordot(x, y, d)
    both(fn, pair((2, 3, 4), "float64", seed=70), pair((4, 3, 5), "float64", seed=71))


def test_tensordot_broadcast_size_one_and_scalar():
    both(lambda L, x, y: L.tensordot(x, y, ([1], [0])), pair((2, 1)), pair((3, 4)))
    both(lambda L, x, y: L.tensordot(x, y, 0), pair((), data=2.0), pair((3, 4)))
    both(lambda L, x, y: L.tensordot(x, y, 1), pair((2, 3), "int32"), pair((3, 4), "int32"))


# ---- Meta device -----------------------------------------------------------------------------

META_CASES = [
    lambda L, m: L.matmul(m(2, 1, 3, 4), m(5, 4, 6)), lambda L, m: m(3) @ m(3),
    lambda L, m: m(3) @ m(5, 3, 4), lambda L, m: L.mm(m(2, 3), m(3, 4)),
    lambda L, m: L.bmm(m(2, 2, 3), m(2, 3, 4)), lambda L, m: L.mv(m(2, 3), m(3)),
    lambda L, m: L.dot(m(3), m(3)), lambda L, m: L.addmm(m(4), m(2, 3), m(3, 4)),
    lambda L, m: L.addr(m(3, 2).t(), m(2), m(3)), lambda L, m: L.baddbmm(m(4), m(5, 2, 3),
                                                                         m(5, 3, 4)),
    lambda L, m: L.addbmm(m(2, 4), m(5, 2, 3), m(5, 3, 4)),
    lambda L, m: L.tensordot(m(2, 3, 4), m(4, 3, 5), ([1, 2], [1, 0])),
    lambda L, m: L.einsum("ij,jk->ikj", m(2, 3), m(3, 4)),
    lambda L, m: L.einsum("...i,...i", m(2, 3, 4), m(3, 4)),
    lambda L, m: L.einsum("ij->", m(2, 3)), lambda L, m: L.inner(m(2, 3), m(4, 3)),
    lambda L, m: L.outer(m(2), m(3)), lambda L, m: L.matmul(m(2, 3), m(3, 4), out=m(0)),
]


@pytest.mark.parametrize("case", range(len(META_CASES)))
def test_meta_device_shapes(case):
    torch = oracle_torch()
    fn = META_CASES[case]
    g = fn(gt, lambda *s: gt.empty(*s, device="meta"))
    t = fn(torch, lambda *s: torch.zeros(*s))     # the CPU result's layout is the reference
    assert g.device.type == "meta"
    assert tuple(g.shape) == tuple(t.shape) and g.stride() == t.stride()
    assert str(g.dtype) == str(t.dtype)


def test_meta_device_errors():
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        gt.mm(gt.empty(2, 3, device="meta"), gt.empty(4, 5, device="meta"))
    with pytest.raises(RuntimeError, match="subscript j has size 4"):
        gt.einsum("ij,jk", gt.empty(2, 3, device="meta"), gt.empty(4, 5, device="meta"))
