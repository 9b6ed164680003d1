"""softmax / log_softmax / softmin / gumbel_softmax and scaled_dot_product_attention against
PyTorch: values, dtypes, strides, errors and warnings, gradients (float64, with gradcheck
and double backward)."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import glasstorch as gt
import glasstorch.nn.functional as GF
from oracle import assert_same, oracle_torch, to_torch

rng = np.random.default_rng(7)


def pair(data, dtype="float64", layout="contiguous", requires_grad=False):
    """The same tensor in glasstorch and torch; 'transposed' and 'stepped' are views."""
    oracle_torch()
    if layout == "transposed":
        g = gt.tensor(np.ascontiguousarray(np.swapaxes(data, 0, -1))).to(
            getattr(gt, dtype)).transpose(0, -1)
    elif layout == "stepped":
        wide = np.repeat(data, 2, axis=-1)
        g = gt.tensor(wide).to(getattr(gt, dtype))[..., ::2]
    else:
        g = gt.tensor(data).to(getattr(gt, dtype))
    t = to_torch(g)
    if requires_grad:
        g.requires_grad_()
        t.requires_grad_()
    return g, t


# ---- softmax family --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_values_and_strides(name, layout, dim, kernel_path):
    torch = oracle_torch()
    g, t = pair(rng.standard_normal((3, 4, 5)), "float32", layout)
    assert_same(getattr(GF, name)(g, dim), getattr(torch.nn.functional, name)(t, dim),
                rtol=1e-5, atol=1e-6)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=4), data=st.data())
def test_softmax_any_shape_dim_and_view(shape, data, kernel_path):
    torch = oracle_torch()
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    step = data.draw(st.integers(1, 3))
    base = gt.tensor(rng.standard_normal(shape[:-1] + [shape[-1] * step]))
    g = base[..., ::step]
    if data.draw(st.booleans()) and len(shape) > 1:
        g = g.transpose(0, -1)
    t = to_torch(g)
    assert_same(gt.softmax(g, dim), torch.softmax(t, dim), rtol=1e-12, atol=1e-12)
    assert_same(GF.log_softmax(g, dim), torch.nn.functional.log_softmax(t, dim), rtol=1e-12,
                atol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_softmax_reduced_precision_accumulates_in_float32(dtype, kernel_path):
    torch = oracle_torch()
    g, t = pair(rng.standard_normal((4, 33)) * 4, dtype)
    tol = 1e-2 if dtype != "float64" else 1e-12
    assert_same(gt.softmax(g, 1), torch.softmax(t, 1), rtol=tol, atol=tol)
    assert_same(g.log_softmax(-1), t.log_softmax(-1), rtol=tol, atol=tol)
    assert_same(GF.softmax(g, 1, dtype=gt.float32), torch.nn.functional.softmax(
        t, 1, dtype=torch.float32), rtol=1e-6, atol=1e-6)
    assert_same(g.softmax(0, dtype=gt.float64), t.softmax(0, dtype=torch.float64))


def test_softmax_stable_for_huge_and_infinite_logits(kernel_path):
    torch = oracle_torch()
    data = np.array([[1e4, 1e4 - 1, -1e4], [-np.inf, 0.0, 1.0], [-np.inf] * 3, [3e38, 0, 0]],
                    np.float32)
    g, t = pair(data, "float32")
    # torch only on the finite rows: at ±inf its vectorised exp differs by CPU (a clamped
    # exp can turn the nan of -inf - (-inf) into a number). Every row against the formula
    # exp(x - max) / sum in float64 IEEE arithmetic, as the scalar kernel computes it: an
    # all -inf row is nan.
    finite = [0, 3]
    assert_same(gt.softmax(g[finite], 1), torch.softmax(t[finite], 1))
    assert_same(gt.log_softmax(g[finite], 1), torch.log_softmax(t[finite], 1))
    with np.errstate(invalid="ignore"):
        shifted = data.astype(np.float64) - data.max(1, keepdims=True)
        log_sum = np.log(np.exp(shifted).sum(1, keepdims=True))
    assert_same(gt.softmax(g, 1), np.exp(shifted - log_sum), rtol=1e-6, atol=1e-7)
    assert_same(gt.log_softmax(g, 1), shifted - log_sum, rtol=1e-6, atol=1e-7)
    assert np.isnan(gt.softmax(g, 1)[2].numpy()).all()


def test_softmax_empty_and_scalar(kernel_path):
    torch = oracle_torch()
    for shape in [(2, 0, 3), ()]:
        g, t = pair(rng.standard_normal(shape), "float32")
        assert_same(gt.softmax(g, 0), torch.softmax(t, 0))
        assert_same(gt.log_softmax(g, -1), torch.log_softmax(t, -1))


def test_softmax_errors():
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl.*Long"):
        gt.softmax(gt.tensor([1, 2, 3]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        gt.softmax(gt.tensor([1.0, 2.0]), 2)
    with pytest.raises(RuntimeError, match="half to float conversion is not supported on CPU"):
        gt._softmax(gt.ones(2, dtype=gt.float64), 0, True)


@pytest.mark.parametrize("shape,expected_dim", [((3,), 0), ((3, 4), 1), ((2, 3, 4), 0),
                                                ((2, 3, 4, 5), 1)])
def test_implicit_dim_warns_and_matches_torch(shape, expected_dim):
    torch = oracle_torch()
    g, t = pair(rng.standard_normal(shape), "float32")
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = GF.softmax(g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(out, torch.nn.functional.softmax(t))
    assert_same(out, gt.softmax(g, expected_dim))
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        GF.log_softmax(g)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_gradients_match_torch(name, kernel_path):
    torch = oracle_torch()
    data, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    g, t = pair(data, layout="transposed", requires_grad=True)
    yg, yt = getattr(GF, name)(g, 0), getattr(torch.nn.functional, name)(t, 0)
    assert yg.grad_fn.name() == yt.grad_fn.name()
    (dg,) = gt.autograd.grad(yg, g, gt.tensor(w), create_graph=True)
    (dt,) = torch.autograd.grad(yt, t, torch.tensor(w), create_graph=True)
    assert_same(dg, dt, rtol=1e-10, atol=1e-12, check_stride=False)
    (ddg,) = gt.autograd.grad((dg * dg).sum(), g)
    (ddt,) = torch.autograd.grad((dt * dt).sum(), t)
    assert_same(ddg, ddt, rtol=1e-10, atol=1e-12, check_stride=False)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("n", [64, 1024, 1025, 4096])
def test_softmax_rows_short_and_long_match_torch(name, n, kernel_path):
    """Short rows are summed by einsum, long ones by NumPy's pairwise reduce: both agree
    with PyTorch, forward and backward, in float32 and float64."""
    torch = oracle_torch()
    data, w = rng.standard_normal((9, n)) * 4, rng.standard_normal((9, n))
    for dtype, tol in (("float32", 1e-5), ("float64", 1e-12)):
        g, t = pair(data, dtype, requires_grad=True)
        yg, yt = getattr(GF, name)(g, -1), getattr(torch.nn.functional, name)(t, -1)
        assert_same(yg, yt, rtol=tol, atol=tol)
        (dg,) = gt.autograd.grad(yg, g, gt.tensor(w).to(yg.dtype))
        (dt,) = torch.autograd.grad(yt, t, torch.tensor(w).to(yt.dtype))
        # The gradient holds a sum over the row, whose rounding grows with its length: in
        # float32 over 4096 elements each library is up to about 1e-4 from the exact value.
        assert_same(dg, dt, rtol=tol, atol=tol * max(1, n / 128))


def test_softmax_gradcheck(kernel_path):
    x = gt.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    for fn in (lambda a: gt.softmax(a, 1), lambda a: gt.log_softmax(a, -1),
               lambda a: GF.softmin(a, 0), lambda a: a.softmax(2, dtype=gt.float64)):
        assert gt.autograd.gradcheck(fn, (x,))
        assert gt.autograd.gradgradcheck(fn, (x,))


def test_softmax_dtype_argument_records_the_cast():
    torch = oracle_torch()
    g, t = pair(rng.standard_normal((2, 3)), "float32", requires_grad=True)
    yg = GF.softmax(g, 1, dtype=gt.float64)
    yt = torch.nn.functional.softmax(t, 1, dtype=torch.float64)
    assert yg.dtype == gt.float64
    assert yg.grad_fn.next_functions[0][0].name() == yt.grad_fn.next_functions[0][0].name()


def test_gumbel_softmax():
    logits = gt.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    gt.manual_seed(3)
    soft = GF.gumbel_softmax(logits, tau=0.5)
    gt.manual_seed(3)
    again = GF.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_array_equal(soft.detach().numpy(), again.detach().numpy())
    np.testing.assert_allclose(soft.detach().numpy().sum(1), 1.0, rtol=1e-12)
    gt.manual_seed(3)
    hard = GF.gumbel_softmax(logits, tau=0.5, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(1) == 1).all()
    assert (h.argmax(1) == soft.detach().numpy().argmax(1)).all()
    (g,) = gt.autograd.grad((hard * gt.arange(4.0, dtype=gt.float64)).sum(), logits)
    assert np.abs(g.numpy()).sum() > 0           # straight-through: the soft gradient


# ---- scaled_dot_product_attention ------------------------------------------------------------

def _sdpa_inputs(q_shape, kv_shape, dtype="float64"):
    q, tq = pair(rng.standard_normal(q_shape), dtype, requires_grad=True)
    k, tk = pair(rng.standard_normal(kv_shape), dtype, requires_grad=True)
    v, tv = pair(rng.standard_normal(kv_shape), dtype, requires_grad=True)
    return (q, k, v), (tq, tk, tv)


def _bool_mask(shape):
    m = rng.random(shape) > 0.3
    m[..., 0] = True
    return m


SDPA_CASES = {
    "plain": ((2, 3, 4, 8), (2, 3, 6, 8), {}),
    "causal": ((2, 3, 4, 8), (2, 3, 6, 8), {"is_causal": True}),
    "causal_square": ((1, 2, 5, 4), (1, 2, 5, 4), {"is_causal": True, "scale": 0.3}),
    "bool_mask": ((2, 3, 4, 8), (2, 3, 6, 8), {"attn_mask": ("bool", (4, 6))}),
    "float_mask": ((2, 3, 4, 8), (2, 3, 6, 8), {"attn_mask": ("float", (2, 1, 4, 6))}),
    "gqa": ((1, 4, 3, 8), (1, 2, 5, 8), {"enable_gqa": True}),
    "3d": ((3, 4, 8), (3, 6, 8), {}),
    "broadcast_heads": ((1, 2, 3, 4), (1, 1, 5, 4), {}),
}


@pytest.mark.parametrize("case", list(SDPA_CASES))
def test_sdpa_matches_torch(case):
    torch = oracle_torch()
    q_shape, kv_shape, kw = SDPA_CASES[case]
    gs, ts = _sdpa_inputs(q_shape, kv_shape)
    kg, kt = dict(kw), dict(kw)
    if "attn_mask" in kw:
        kind, shape = kw["attn_mask"]
        data = _bool_mask(shape) if kind == "bool" else rng.standard_normal(shape)
        kg["attn_mask"], kt["attn_mask"] = gt.tensor(data), torch.tensor(data)
    yg = GF.scaled_dot_product_attention(*gs, **kg)
    yt = torch.nn.functional.scaled_dot_product_attention(*ts, **kt)
    assert_same(yg, yt, rtol=1e-10, atol=1e-12, check_stride=False)
    w = rng.standard_normal(tuple(yt.shape))
    dg = gt.autograd.grad(yg, gs, gt.tensor(w))
    dt = torch.autograd.grad(yt, ts, torch.tensor(w))
    for a, b in zip(dg, dt):
        assert_same(a, b, rtol=1e-9, atol=1e-11, check_stride=False)


def test_sdpa_float32_and_noncontiguous():
    torch = oracle_torch()
    data = [rng.standard_normal((2, 5, 3, 4)) for _ in range(3)]
    gs = [gt.tensor(d).float().transpose(1, 2) for d in data]
    ts = [to_torch(x) for x in gs]
    assert_same(GF.scaled_dot_product_attention(*gs),
                torch.nn.functional.scaled_dot_product_attention(*ts),
                rtol=1e-5, atol=1e-6, check_stride=False)


def test_sdpa_fully_masked_rows_are_zero():
    torch = oracle_torch()
    gs, ts = _sdpa_inputs((1, 2, 3, 4), (1, 2, 5, 4))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    for m_g, m_t in [(gt.tensor(mask), torch.tensor(mask)),
                     (gt.tensor(np.where(mask, 0.0, -np.inf)),
                      torch.tensor(np.where(mask, 0.0, -np.inf)))]:
        yg = GF.scaled_dot_product_attention(*gs, attn_mask=m_g)
        yt = torch.nn.functional.scaled_dot_product_attention(*ts, attn_mask=m_t)
        assert_same(yg, yt, rtol=1e-10, atol=1e-12, check_stride=False)
        (dq,) = gt.autograd.grad(yg.sum(), gs[0])
        (dq_t,) = torch.autograd.grad(yt.sum(), ts[0])
        assert_same(dq, dq_t, rtol=1e-9, atol=1e-11, check_stride=False)


def test_sdpa_gradcheck():
    q, k, v = (gt.tensor(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
               for _ in range(3))
    mask = gt.tensor(_bool_mask((3, 3)))
    assert gt.autograd.gradcheck(
        lambda a, b, c: GF.scaled_dot_product_attention(a, b, c, attn_mask=mask), (q, k, v))
    assert gt.autograd.gradcheck(
        lambda a, b, c: GF.scaled_dot_product_attention(a, b, c, is_causal=True), (q, k, v))


def test_sdpa_dropout_is_seeded_and_scaled():
    q, k, v = (gt.tensor(rng.standard_normal((2, 2, 4, 4))) for _ in range(3))
    gt.manual_seed(11)
    a = GF.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    gt.manual_seed(11)
    b = GF.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    plain = GF.scaled_dot_product_attention(q, k, v)
    assert not np.allclose(a.numpy(), plain.numpy())
    ones = gt.ones(1, 1, 2000, 1, dtype=gt.float64)
    out = GF.scaled_dot_product_attention(ones, ones[:, :, :1], ones[:, :, :1], dropout_p=0.25)
    kept = out.numpy().ravel()
    assert set(np.round(np.unique(kept), 12)) <= {0.0, round(1 / 0.75, 12)}
    assert 0.2 < (kept == 0).mean() < 0.3


def test_sdpa_errors():
    torch = oracle_torch()
    q = gt.randn(1, 2, 3, 4)
    cases = [
        ((q, q, q.double()), {}, "to have the same dtype, but got query.dtype: float key.dtype"
                                 ": float and value.dtype: double instead."),
        ((q, q, q), {"attn_mask": gt.zeros(3, 3, dtype=gt.int64)},
         "Expected attn_mask dtype to be bool or float or to match query dtype"),
        ((q, q, q), {"attn_mask": gt.zeros(3, 3, dtype=gt.float64)},
         "but got attn_mask.dtype: double and  query.dtype: float instead."),
        ((gt.randn(1, 4, 3, 4), gt.randn(1, 3, 5, 4), gt.randn(1, 3, 5, 4)),
         {"enable_gqa": True}, "Number of heads in key and value must divide"),
        ((gt.randn(4), gt.randn(3, 4), gt.randn(3, 4)), {}, "at least 2 dimensional"),
    ]
    for args, kw, message in cases:
        with pytest.raises(RuntimeError, match=message):
            GF.scaled_dot_product_attention(*args, **kw)
        with pytest.raises(RuntimeError, match=message):
            torch.nn.functional.scaled_dot_product_attention(
                *(to_torch(a) for a in args),
                **{k: (to_torch(v) if isinstance(v, gt.Tensor) else v) for k, v in kw.items()})


def test_meta_tensors_give_shapes():
    m = gt.empty(2, 3, 4, device="meta")
    assert gt.softmax(m, 1).shape == (2, 3, 4) and gt.softmax(m, 1).device.type == "meta"
    out = GF.scaled_dot_product_attention(m, gt.empty(2, 5, 4, device="meta"),
                                          gt.empty(2, 5, 6, device="meta"), is_causal=True)
    assert out.shape == (2, 3, 6)
