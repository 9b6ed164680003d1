"""The foreach ops (torch._foreach_*) against PyTorch and against glasstorch's own per-tensor
ops: values, dtypes (promotion), shapes, the in-place variants, errors, version counters,
autograd, and gradient clipping through them."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from oracle import assert_same, oracle_torch, outcomes

torch = oracle_torch()

_RNG = np.random.default_rng(5)
# mixed shapes and dtypes in one list, one non-contiguous (a transpose), one 0-dim
_SHAPES = [(3, 4), (5,), (4, 3), ()]
_DTYPES = [np.float32, np.float64, np.float32, np.float32]


def _arrays(low=0.5, high=2.0, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, s).astype(d) for s, d in zip(_SHAPES, _DTYPES)]


def _lists(L, seed=0, low=0.5, high=2.0, dtypes=None):
    out = []
    for i, a in enumerate(_arrays(low, high, seed)):
        if dtypes is not None:
            a = a.astype(dtypes[i])
        t = L.tensor(a)
        out.append(t.t().contiguous().t() if i == 0 else t)    # (3, 4) with strides (1, 3)
    return out


def env(L):
    return {"L": L, "a": _lists(L, 0), "b": _lists(L, 1), "c": _lists(L, 2),
            "ints": [L.tensor([1, 2, 3]), L.tensor([[4, 5]], dtype=L.int32)],
            "half": [L.tensor([1.0, 2.0], dtype=L.float16)],
            "s": L.tensor(1.5), "s64": L.tensor(0.25, dtype=L.float64),
            "v": L.tensor([0.5, 1.5, 2.0, -1.0]),
            "inf": math.inf}


def run(expr, L):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = env(L)
        return eval(expr, e), e


def compare(expr, rtol=1e-6, atol=1e-6):
    (got, genv), (want, tenv) = run(expr, gt), run(expr, torch)
    if want is None or isinstance(want, list) and expr.split("(")[0].endswith("_"):
        got, want = genv["a"], tenv["a"]          # in place: the mutated list
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w, rtol=rtol, atol=atol)


UNARY = ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
         "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
         "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"]
CALLS = (
    [f"L._foreach_{op}(a, 0.75)" for op in BINARY]
    + [f"L._foreach_{op}(a, b)" for op in BINARY]
    + [f"L._foreach_{op}(a, [0.5, 2, -1.5, 3.0])" for op in BINARY]
    + [f"L._foreach_{op}(a, s)" for op in ("add", "mul", "div")]
    + ["L._foreach_add(a, b, alpha=-0.5)", "L._foreach_sub(a, b, alpha=2)",
       "L._foreach_add(a, s, alpha=3)", "L._foreach_mul(a, s64)", "L._foreach_sub(a, s)",
       "L._foreach_pow(2.0, a)", "L._foreach_pow(a, 2)",
       "L._foreach_add(ints, 1.5)", "L._foreach_mul(ints, 2)", "L._foreach_div(ints, 2)",
       "L._foreach_add(ints, s64)", "L._foreach_mul(half, s64)", "L._foreach_add(ints, [s64, s])",
       "L._foreach_add(a, [1, 2.5, True, 2])", "L._foreach_clamp_min(ints, 1.5)",
       "L._foreach_maximum(ints, 2)", "L._foreach_minimum(ints, [2.5, 7])",
       "L._foreach_clamp_max(ints, [L.tensor([2.5, 1, 0]), L.tensor([[1, 9]])])",
       "L._foreach_mul(half, [L.tensor([2.0, 3.0])])", "L._foreach_div(ints, s64)",
       "L._foreach_mul(ints, s64)", "L._foreach_add(half, s64)"]
    + [f"L._foreach_{op}(a, b, c{w})" for op in ("addcmul", "addcdiv")
       for w in ("", ", 0.5", ", [0.5, 1, -2, 3]", ", v")]
    + ["L._foreach_lerp(a, b, 0.3)", "L._foreach_lerp(a, b, c)",
       "L._foreach_lerp(a, b, [0.1, 0.5, 0.9, 2.0])"]
    + [f"L._foreach_{op}(a)" for op in UNARY]
    + ["L._foreach_abs(ints)", "L._foreach_sqrt(ints)", "L._foreach_neg(ints)"]
    + [f"L._foreach_norm(a, {o})" for o in ("2", "1", "inf", "3", "0", "-inf")]
    + ["L._foreach_norm(a)", "L._foreach_norm(a, dtype=L.float64)", "L._foreach_norm(half)"]
    + ["L._foreach_max(a)", "L._foreach_max(ints)", "L._foreach_max(half)"]
)


@pytest.mark.parametrize("expr", CALLS)
def test_out_of_place_matches_torch(expr):
    compare(expr)


NO_IN_PLACE = ("norm", "_foreach_max(", "pow(2.0", "ints", "half")


@pytest.mark.parametrize("expr", [c.replace("(", "_(", 1) for c in CALLS
                                  if not any(s in c for s in NO_IN_PLACE)])
def test_in_place_matches_torch(expr):
    compare(expr)


def test_copy_and_zero_in_place():
    compare("L._foreach_copy_(a, [x.to(L.float64) for x in b])")
    compare("L._foreach_copy_(a, [L.tensor(2.0), L.tensor(3.0), b[2], c[3]])")
    compare("L._foreach_zero_(a)")


ERRORS = [
    "L._foreach_add(a, b[:2])", "L._foreach_add(a, [1.0])", "L._foreach_add([], 1)",
    "L._foreach_norm([])", "L._foreach_mul(a, v)", "L._foreach_addcmul(a, b, c[:1])",
    "L._foreach_addcmul(a, b, c, [1.0])", "L._foreach_lerp(a, b[:3], 0.5)",
    "L._foreach_add_(ints, 1.5)", "L._foreach_sqrt_(ints)", "L._foreach_norm(ints)",
    "L._foreach_max([L.ones(0)])",
    "L._foreach_norm(a, dtype=L.float16)", "L._foreach_copy_(a, b[:1])",
    "L._foreach_mul(a, [b[0], b[0], b[0], b[0]])", "L._foreach_add(a, 'x')",
    "L._foreach_add(a[0], 1)", "L._foreach_add_(ints, [1, 2.5])",
    "L._foreach_add(a, 1.0, alpha=2)",
]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors_match_torch(expr):
    got, want = outcomes(lambda L: run(expr, L)[0])
    assert isinstance(got, tuple) and isinstance(want, tuple) and got[0] == want[0], (got, want)
    if want[0] == "RuntimeError":                   # TypeErrors list overloads differently
        assert got[1] == want[1]


# ---- against glasstorch's per-tensor ops (the fast paths agree bit for bit) -----------

def _float_lists(seed, dtype=np.float32, n=5):
    rng = np.random.default_rng(seed)
    shapes = [(7, 3), (11,), (2, 3, 4), (1,), (300,)][:n]
    return [gt.tensor(rng.standard_normal(s).astype(dtype)) for s in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op,alpha", [("add", 1), ("add", -0.5), ("sub", 2), ("mul", None),
                                      ("div", None)])
def test_fast_paths_equal_the_per_tensor_ops(dtype, op, alpha):
    a, b = _float_lists(1, dtype), _float_lists(2, dtype)
    s = gt.tensor(0.3, dtype=gt.float32)
    kw = {} if alpha is None else {"alpha": alpha}
    per = getattr(gt, op)
    cases = [(b, lambda x, y: per(x, y, **kw)), (0.7, lambda x, y: per(x, y)),
             ([0.5, 2, -1.5, 3.0, 1e-3], None)]
    if op != "sub":
        cases.append((s, lambda x, y: per(x, y.item(), **({} if alpha is None else kw))))
    for other, ref in cases:
        fkw = kw if isinstance(other, list) and other and isinstance(other[0], gt.Tensor) or \
            isinstance(other, gt.Tensor) else {}
        got = getattr(gt, f"_foreach_{op}")(a, other, **fkw)
        if ref is None:
            want = [per(x, y) for x, y in zip(a, other)]
        elif isinstance(other, list):
            want = [ref(x, y) for x, y in zip(a, other)]
        else:
            want = [ref(x, other) for x in a]
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and np.array_equal(g.numpy(), w.numpy())
        inplace = [x.clone() for x in a]
        getattr(gt, f"_foreach_{op}_")(inplace, other, **fkw)
        for g, w in zip(inplace, want):
            assert np.array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", [2, 1, math.inf, 3])
def test_norm_equals_vector_norm(dtype, order):
    a = _float_lists(3, dtype) + [gt.randn(6, 5).t()]
    for g, t in zip(gt._foreach_norm(a, order), a):
        w = gt.linalg.vector_norm(t, order)
        assert g.dtype == w.dtype and g.shape == w.shape and g.item() == w.item()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_norms_by_the_c_kernel_equal_vector_norm(dtype, monkeypatch):
    """Contiguous float tensors' 2-norms come from native/norm.c where it builds (spied),
    with vector_norm's bits: long tensors (the pairwise sum's halving), huge and tiny
    values, inf and nan; a transposed tensor takes the NumPy kernel."""
    from glasstorch.backends.cpu import native
    from native_paths import spy_kernels
    built = native.function("norm", "norm2_f32", "npp") is not None
    rng = np.random.default_rng(5)
    big = rng.standard_normal(100_003) * 1e17
    a = [gt.tensor(x.astype(dtype)) for x in (
        big, rng.standard_normal((129, 7)), np.array([3e-30, 4e-30, 1e-45]),
        np.array([1.0, np.inf, 2.0]), np.array([np.nan, 1.0]), rng.standard_normal(8))]
    a.append(gt.tensor(rng.standard_normal((6, 5)).astype(dtype)).t())
    monkeypatch.setattr(native, "ENABLED", False)      # vector_norm's NumPy kernel
    want = [gt.linalg.vector_norm(t) for t in a]
    calls = spy_kernels(monkeypatch, "norm")
    for g, w in zip(gt._foreach_norm(a), want):
        assert g.dtype == w.dtype and np.array_equal(g.numpy(), w.numpy(), equal_nan=True)
    if built:
        assert calls == ["norm2_" + ("f32" if dtype == np.float32 else "f64")] * 6
        calls.clear()
        for t, w in zip(a, want):                      # and x.norm() / vector_norm itself
            assert np.array_equal(t.norm().numpy(), w.numpy(), equal_nan=True)
        assert len(calls) == 6


# ---- in place: aliasing, version counters, grad ------------------------------------------

def test_in_place_bumps_each_version_once_per_occurrence():
    x, y = gt.ones(3), gt.ones(2)
    vx, vy = x._version, y._version
    gt._foreach_add_([x, y, x], 1.0)
    assert x._version - vx == 2 and y._version - vy == 1
    assert np.array_equal(x.numpy(), [3.0, 3, 3])
    base = gt.zeros(4)
    view = base[1:3]
    gt._foreach_mul_([view], gt.tensor(2.0))
    assert base._version == view._version


def test_in_place_self_as_other_and_views():
    x = gt.arange(6.0)
    gt._foreach_add_([x], [x], alpha=2)
    assert np.array_equal(x.numpy(), 3 * np.arange(6.0))
    y = gt.arange(6.0).reshape(2, 3).t()               # non-contiguous self
    gt._foreach_mul_([y], 2.0)
    assert np.array_equal(y.numpy(), 2 * np.arange(6.0).reshape(2, 3).T)
    expanded = gt.ones(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        gt._foreach_add_([expanded], 1.0)


def test_aten_overloads_return_lists_and_none():
    a = [gt.ones(2)]
    assert isinstance(gt.ops.aten._foreach_add.Scalar(a, 1), list)
    assert gt.ops.aten._foreach_add_.Scalar(a, 1) is None
    assert isinstance(gt._foreach_add(a, 1), tuple) and isinstance(gt._foreach_add_(a, 1), list)
    assert np.array_equal(a[0].numpy(), [3.0, 3.0])


def test_schemas_are_torchs():
    mine = [n for n in dir(gt) if n.startswith("_foreach_")]
    assert len(mine) >= 40
    for name in mine:
        packet = getattr(gt.ops.aten, name)
        for overload in packet.overloads():
            assert str(getattr(packet, overload)._schema) == \
                str(getattr(getattr(torch.ops.aten, name), overload)._schema)


def test_differentiable_out_of_place():
    def grads(L):
        xs = [L.tensor([1.0, 2.0], requires_grad=True), L.tensor([[3.0]], requires_grad=True)]
        ys = [L.tensor([0.5, -1.0], requires_grad=True), L.tensor([[2.0]], requires_grad=True)]
        out = L._foreach_add(xs, ys, alpha=2)
        out = L._foreach_mul(out, xs)
        out = L._foreach_lerp(out, ys, 0.25)
        n = L._foreach_norm(out)
        sum(x.sum() for x in n).backward()
        return [t.grad for t in xs + ys]
    for g, w in zip(grads(gt), grads(torch)):
        assert_same(g, w, rtol=1e-5)


def test_in_place_on_leaves_that_require_grad():
    got, want = outcomes(lambda L: L._foreach_mul_([L.ones(2, requires_grad=True)], 2.0))
    assert got == want
    x = gt.ones(2, requires_grad=True)
    with gt.no_grad():
        gt._foreach_add_([x], 1.0)                       # optimizers' and EMA's path
    assert np.array_equal(x.detach().numpy(), [2.0, 2.0]) and x.grad_fn is None


def test_under_a_dispatch_mode_and_fake_tensors():
    from glasstorch._subclasses.fake_tensor import FakeTensorMode
    from oracle import op_log
    xs = [gt.ones(2), gt.ones(3, dtype=gt.float64)]
    with op_log() as log:
        gt._foreach_add_(xs, 1.0)
    assert log.seen == ["aten._foreach_add_.Scalar"]
    with FakeTensorMode():
        fake = [gt.ones(2), gt.ones(3, dtype=gt.float64)]
        out = gt._foreach_lerp(fake, fake, 0.5)
    assert [(tuple(o.shape), o.dtype) for o in out] == [((2,), gt.float32), ((3,), gt.float64)]


def test_meta_tensors():
    a = [gt.empty(2, 3, device="meta"), gt.empty(4, device="meta", dtype=gt.float64)]
    out = gt._foreach_add(a, [gt.empty(2, 3, device="meta"), gt.empty(4, device="meta")])
    assert [o.shape for o in out] == [(2, 3), (4,)] and out[1].dtype == gt.float64
    assert [n.shape for n in gt._foreach_norm(a)] == [(), ()]
    gt._foreach_mul_(a, 2.0)


# ---- property test over list lengths, shapes and dtypes ------------------------------

_DT = ["float32", "float64", "int64", "int32", "bool"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 3), max_size=3), st.sampled_from(_DT)),
                min_size=1, max_size=5),
       st.sampled_from([2, 0.5, -1.25]), st.integers(0, 2**31))
def test_binary_ops_on_random_lists(items, scalar, seed):
    rng = np.random.default_rng(seed)
    arrays = [(rng.uniform(-3, 3, shape) * 4).astype(d) for shape, d in items]
    others = [(rng.uniform(-3, 3, shape) * 4).astype(d) for shape, d in reversed(items)]
    others = [o.reshape(a.shape) if o.size == a.size else np.ones(a.shape, o.dtype)
              for a, o in zip(arrays, others)]
    for op in ("add", "mul", "maximum"):
        for other in ("scalar", "list"):
            def call(L):
                xs = [L.tensor(a) for a in arrays]
                arg = scalar if other == "scalar" else [L.tensor(o) for o in others]
                return getattr(L, f"_foreach_{op}")(xs, arg)
            got, want = outcomes(call)
            if isinstance(want, tuple) and isinstance(want[0], str):
                assert got[0] == want[0], (got, want)
                continue
            for g, w in zip(got, want):
                assert_same(g, w, check_stride=False)


# ---- gradient clipping ---------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_foreach_and_per_tensor_agree(norm_type):
    def clipped(L, foreach):
        rng = np.random.default_rng(9)
        ps = [L.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
              for s in [(5, 3), (7,), (2, 2, 2)]]
        for p in ps:
            p.grad = L.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        kw = {} if foreach == "default" else {"foreach": foreach}
        total = L.nn.utils.clip_grad_norm_(ps, 0.5, norm_type, **kw)
        return total, [p.grad for p in ps]
    want_total, want = clipped(torch, "default")
    results = [clipped(gt, f) for f in ("default", True, False)]
    for total, grads in results:
        assert_same(total, want_total, rtol=1e-6)
        for g, w in zip(grads, want):
            assert_same(g, w, rtol=1e-6)
    for total, grads in results[1:]:
        assert total.item() == results[0][0].item()
        assert all(np.array_equal(g.numpy(), h.numpy()) for g, h in zip(grads, results[0][1]))


@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_norm_nonfinite(foreach):
    p = gt.ones(3, requires_grad=True)
    p.grad = gt.tensor([1.0, math.inf, 2.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        gt.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True, foreach=foreach)
    assert gt.nn.utils.get_total_norm([], foreach=foreach).item() == 0.0


@pytest.mark.parametrize("call", [
    lambda xs, ys, zs: gt._foreach_add(xs, ys, alpha=-0.5),
    lambda xs, ys, zs: gt._foreach_addcmul(xs, ys, zs, 0.3),
    lambda xs, ys, zs: gt._foreach_addcdiv(xs, ys, [z + 3 for z in zs], [0.5, 2.0]),
    lambda xs, ys, zs: gt._foreach_lerp(xs, ys, zs),
    lambda xs, ys, zs: gt._foreach_exp(xs),
    lambda xs, ys, zs: gt._foreach_pow(xs, 3),
    lambda xs, ys, zs: gt._foreach_norm(xs),
    lambda xs, ys, zs: gt._foreach_maximum(xs, ys),
])
def test_gradcheck_float64_non_contiguous(call):
    """The out-of-place ops under autograd (the per-tensor ops' formulas), on transposed and
    stepped float64 inputs."""
    rng = np.random.default_rng(7)

    def leaves():
        a = gt.tensor(rng.standard_normal((3, 4)), dtype=gt.float64).t()
        b = gt.tensor(rng.standard_normal(10), dtype=gt.float64)[::2]
        return [a.detach().requires_grad_(), b.detach().requires_grad_()]
    xs, ys, zs = leaves(), leaves(), leaves()
    assert not xs[0].is_contiguous() and not xs[1].is_contiguous()

    def fn(*flat):
        return tuple(call(list(flat[0:2]), list(flat[2:4]), list(flat[4:6])))
    assert gt.autograd.gradcheck(fn, tuple(xs + ys + zs))
