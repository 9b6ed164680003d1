"""Dropout (statistics, mask/scale consistency, reproducibility under manual_seed, in-place,
rank checks and warnings) and distances (normalize, cosine_similarity, pairwise_distance,
cdist, pdist) against PyTorch, with gradients at zero distance."""
import math
import warnings

import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as GF
from glasstorch.autograd import gradcheck, gradgradcheck
from oracle import assert_same, oracle_torch

torch = oracle_torch()
TF = torch.nn.functional
rng = np.random.default_rng(11)


def both(a, dtype="float64", requires_grad=False):
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    g = gt.tensor(a, dtype=getattr(gt, dtype), requires_grad=requires_grad)
    return g, t


# ---- native_dropout ------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.0, 0.2, 0.7, 1.0])
def test_native_dropout_mask_and_scale(p):
    gt.manual_seed(0)
    x = gt.rand(200, 50, dtype=gt.float64) + 0.5
    x.requires_grad_()
    out, mask = gt.native_dropout(x, p, True)
    assert out.grad_fn.name() == "NativeDropoutBackward0"
    assert mask.dtype is gt.bool and out.dtype is gt.float64
    m = mask.numpy()
    scale = 0.0 if p == 1 else 1 / (1 - p)
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy() * m * scale)
    assert abs(m.mean() - (1 - p)) < 0.02
    out.backward(gt.ones_like(out))
    np.testing.assert_allclose(x.grad.numpy(), m * scale)


def test_native_dropout_eval_and_layout():
    g, t = both(rng.standard_normal((3, 4)), "float32")
    out, mask = gt.native_dropout(g.t(), 0.4, False)
    tout, tmask = torch.native_dropout(t.t(), 0.4, False)
    assert_same(out, tout)
    assert_same(mask, tmask)
    out, mask = gt.native_dropout(g.t(), 0.4, True)
    assert out.stride() == mask.stride() == tout.stride()
    g, t = both(np.zeros((0, 3)), "float32")
    for a, b in zip(gt.native_dropout(g, 0.5, True), torch.native_dropout(t, 0.5, True)):
        assert_same(a, b)


def test_native_dropout_train_none_trains_and_scales_gradient_by_one():
    """PyTorch trains when train is None, and then backward uses scale 1."""
    gt.manual_seed(1)
    x = gt.ones(1000, requires_grad=True)
    out, mask = gt.native_dropout(x, 0.5, None)
    np.testing.assert_allclose(out.detach().numpy(), mask.numpy() * 2.0)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy() * 1.0)


def test_native_dropout_bad_p():
    g, t = both(np.ones(3), "float32")
    with pytest.raises(RuntimeError) as expected:
        torch.native_dropout(t, 1.5, True)
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in \\[0, 1\\]") as got:
        gt.native_dropout(g, 1.5, True)
    assert str(got.value) == str(expected.value)


# ---- F.dropout family -----------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_statistics_and_gradient(p):
    gt.manual_seed(2)
    x = gt.full((100, 200), 3.0, dtype=gt.float64, requires_grad=True)
    y = GF.dropout(x, p)
    assert y.grad_fn.name() == TF.dropout(torch.ones(2, requires_grad=True), p).grad_fn.name()
    v = y.detach().numpy()
    kept = v != 0
    np.testing.assert_allclose(v[kept], 3.0 / (1 - p))
    assert abs(kept.mean() - (1 - p)) < 0.015
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / (1 - p))


def test_dropout_is_reproducible_under_manual_seed():
    x = gt.ones(1000)
    gt.manual_seed(5)
    a = GF.dropout(x, 0.5)
    b = GF.dropout(x, 0.5)
    gt.manual_seed(5)
    assert bool((GF.dropout(x, 0.5) == a).all())
    assert bool((GF.dropout(x, 0.5) == b).all())
    assert not bool((a == b).all())


def test_dropout_identity_cases_return_input():
    for lib, F in ((gt, GF), (torch, TF)):
        x = lib.ones(3, 4)
        assert F.dropout(x, 0.0) is x
        assert F.dropout(x, 0.5, training=False) is x
        assert F.alpha_dropout(x, 0.5) is x                 # training defaults to False
        assert F.feature_alpha_dropout(x, 0.0, True) is x
        e = lib.ones(0, 3)
        assert F.dropout(e, 0.5) is e


def test_dropout_p_one_gives_zeros_with_gradient():
    g, t = both(rng.standard_normal((3, 4)), requires_grad=True)
    gy, ty = GF.dropout(g, 1.0), TF.dropout(t, 1.0)
    assert_same(gy, ty)
    assert gy.grad_fn.name() == ty.grad_fn.name()
    gy.sum().backward()
    ty.sum().backward()
    assert_same(g.grad, t.grad)


def test_dropout_layout_and_dtypes():
    g, t = both(rng.standard_normal((4, 6)), "float32")
    assert GF.dropout(g.t(), 0.5).stride() == TF.dropout(t.t(), 0.5).stride()
    for name in ("float16", "bfloat16"):
        x = gt.ones(1000, dtype=getattr(gt, name))
        y = GF.dropout(x, 0.5)
        assert y.dtype is x.dtype
        assert set(np.unique(y.float().numpy())) <= {0.0, 2.0}


def test_dropout_inplace():
    gt.manual_seed(3)
    x = gt.ones(6, 100)
    view = x[::2]
    assert GF.dropout(view, 0.5, inplace=True) is view
    v = x.numpy()
    assert set(np.unique(v[::2])) == {0.0, 2.0}
    assert (v[1::2] == 1).all()
    assert x._version > 0
    leaf = gt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        GF.dropout(leaf, 0.5, inplace=True)
    w = gt.ones(500, dtype=gt.float64, requires_grad=True)
    y = GF.dropout(w * 2, 0.25, inplace=True)
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(w.grad.numpy(), kept * 2 / 0.75)


# (function, batched); dropout2d takes a 3-D input as (N, C, L), so it has no unbatched form
@pytest.mark.parametrize("fn,batched", [("dropout1d", True), ("dropout1d", False),
                                        ("dropout2d", True), ("dropout3d", True),
                                        ("dropout3d", False)])
def test_channel_dropout_zeroes_whole_channels(fn, batched):
    spatial = {"dropout1d": 1, "dropout2d": 2, "dropout3d": 3}[fn]
    shape = (8, 40) + (3,) * spatial
    if not batched:
        shape = shape[1:]
    gt.manual_seed(4)
    x = gt.ones(shape, dtype=gt.float64, requires_grad=True)
    y = getattr(GF, fn)(x, 0.3)
    assert tuple(y.shape) == shape
    v = y.detach().numpy().reshape(shape[:len(shape) - spatial] + (-1,))
    assert (v.min(-1) == v.max(-1)).all()         # one draw per channel
    assert set(np.unique(v)) == {0.0, 1 / 0.7}
    assert abs((v[..., 0] != 0).mean() - 0.7) < 0.1
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())
    inplace_input = gt.ones(shape)
    assert getattr(GF, fn)(inplace_input, 0.3, inplace=True) is inplace_input
    w = inplace_input.numpy().reshape(v.shape)
    assert (w.min(-1) == w.max(-1)).all() and set(np.unique(w)) <= {0.0, np.float32(1 / 0.7)}


def test_alpha_dropout_keeps_mean_and_variance():
    gt.manual_seed(6)
    x = gt.randn(400, 500, dtype=gt.float64, requires_grad=True)
    y = GF.alpha_dropout(x, 0.2, training=True)
    t = TF.alpha_dropout(torch.ones(2, requires_grad=True), 0.2, True)
    assert y.grad_fn.name() == t.grad_fn.name()
    v = y.detach().numpy()
    assert abs(v.mean()) < 0.01 and abs(v.std() - 1) < 0.01
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha * alpha * 0.2 + 1) * 0.8)
    dropped = np.isclose(v, -alpha * a + alpha * a * 0.2)
    assert abs(dropped.mean() - 0.2) < 0.01
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(dropped, 0.0, a))
    assert_same(GF.alpha_dropout(gt.ones(3), 1.0, True), TF.alpha_dropout(torch.ones(3), 1.0, True))


def test_feature_alpha_dropout_is_per_channel():
    gt.manual_seed(7)
    y = GF.feature_alpha_dropout(gt.zeros(4, 50, 6), 0.5, training=True).numpy()
    assert (y.min(-1) == y.max(-1)).all() and len(np.unique(y)) == 2


DROPOUT_ERRORS = {
    "dropout_high": lambda F, L: F.dropout(L.ones(3), 1.5),
    "dropout_negative": lambda F, L: F.dropout(L.ones(3), -0.1),
    "alpha_high": lambda F, L: F.alpha_dropout(L.ones(3), 1.5),
    "feature_alpha_high": lambda F, L: F.feature_alpha_dropout(L.ones(3), 1.5),
    "dropout1d_rank": lambda F, L: F.dropout1d(L.ones(1, 2, 3, 4)),
    "dropout2d_rank1": lambda F, L: F.dropout2d(L.ones(3)),
    "torch.dropout_high": lambda F, L: L.dropout(L.ones(3), 1.5, True),
    "torch.feature_dropout_1d": lambda F, L: L.feature_dropout(L.ones(3), 0.5, True),
    "dropout_int": lambda F, L: F.dropout(L.ones(3, dtype=L.int64), 0.5),
}


@pytest.mark.parametrize("name", sorted(DROPOUT_ERRORS))
def test_dropout_errors_match_torch(name):
    fn = DROPOUT_ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as expected:
            fn(TF, torch)
        with pytest.raises(type(expected.value)) as got:
            fn(GF, gt)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("fn,shape", [("dropout2d", (2, 3)), ("dropout2d", (2, 3, 4)),
                                      ("dropout2d", (1, 2, 3, 4, 5)), ("dropout3d", (2, 3)),
                                      ("dropout3d", (2, 3, 4, 5))])
def test_channel_dropout_rank_warnings(fn, shape):
    def messages(F, L):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            getattr(F, fn)(L.ones(shape), 0.5)
        return [str(w.message) for w in caught]
    assert messages(GF, gt) == messages(TF, torch)


# ---- normalize, cosine_similarity, pairwise_distance -----------------------------------------

def _with_zero_rows(shape):
    a = rng.standard_normal(shape)
    a.reshape(-1, shape[-1])[0] = 0
    return a


DIST = {
    "normalize": (lambda F, L, x, y: F.normalize(x), True),
    "normalize_p1_dim0": (lambda F, L, x, y: F.normalize(x, 1.0, 0), True),
    "normalize_p3_last": (lambda F, L, x, y: F.normalize(x, 3, -1, eps=1e-3), True),
    "cosine": (lambda F, L, x, y: F.cosine_similarity(x, y), True),
    "cosine_dim0_eps": (lambda F, L, x, y: F.cosine_similarity(x, y, 0, 0.5), True),
    "cosine_broadcast": (lambda F, L, x, y: F.cosine_similarity(x, y[:1], -1), True),
    "torch.cosine": (lambda F, L, x, y: L.cosine_similarity(x, y, dim=-1), True),
    "pairwise": (lambda F, L, x, y: F.pairwise_distance(x, y), False),
    "pairwise_p1_keepdim": (lambda F, L, x, y: F.pairwise_distance(x, y, 1.0, keepdim=True),
                            False),
    "pairwise_p3_eps0": (lambda F, L, x, y: F.pairwise_distance(x, y, 3.0, 0.0), False),
    "pairwise_broadcast": (lambda F, L, x, y: F.pairwise_distance(x, y[0]), False),
    "torch.pairwise": (lambda F, L, x, y: L.pairwise_distance(x, y, 1.5), False),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(DIST))
def test_distances_values(name, dtype):
    fn, _ = DIST[name]
    a, b = _with_zero_rows((4, 5)), rng.standard_normal((4, 5))
    b[1] = a[1]
    (g1, t1), (g2, t2) = both(a, dtype), both(b, dtype)
    tol = {"float64": 1e-12, "float32": 2e-6, "float16": 4e-3, "bfloat16": 3e-2}[dtype]
    assert_same(fn(GF, gt, g1, g2), fn(TF, torch, t1, t2), rtol=tol, atol=tol)
    assert_same(fn(GF, gt, g1.t(), g2.t()), fn(TF, torch, t1.t(), t2.t()), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(DIST))
def test_distances_gradients_including_zero_norms(name):
    fn, same_node = DIST[name]
    a, b = _with_zero_rows((3, 4, 5)), rng.standard_normal((3, 4, 5))
    b[0, 1] = a[0, 1]                               # a zero difference
    (g1, t1), (g2, t2) = both(a, requires_grad=True), both(b, requires_grad=True)
    gy, ty = fn(GF, gt, g1, g2), fn(TF, torch, t1, t2)
    if same_node:
        assert gy.grad_fn.name() == ty.grad_fn.name()
    w = rng.standard_normal(tuple(ty.shape))
    gy.backward(gt.tensor(w))
    ty.backward(torch.tensor(w))
    for g, t in ((g1, t1), (g2, t2)):
        if t.grad is None:
            assert g.grad is None
        else:
            np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["normalize", "cosine", "pairwise", "pairwise_p3_eps0"])
def test_distances_gradcheck(name):
    fn, _ = DIST[name]
    x = gt.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    y = gt.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda x, y: fn(GF, gt, x, y), (x, y))


def test_normalize_out_and_empty():
    g, t = both(rng.standard_normal((3, 4)), "float32")
    out = gt.empty(3, 4)
    assert GF.normalize(g, out=out) is out
    assert_same(out, TF.normalize(t))
    g, t = both(np.zeros((0, 4)), "float32")
    assert_same(GF.normalize(g), TF.normalize(t))


def test_cosine_similarity_integer_inputs_and_errors():
    g, t = both(np.arange(6).reshape(2, 3), "int64")
    assert_same(GF.cosine_similarity(g, g.float()), TF.cosine_similarity(t, t.float()))
    for fn in (lambda F, L: F.cosine_similarity(L.ones(2, 3, dtype=L.int64),
                                                L.ones(2, 3, dtype=L.int64)),
               lambda F, L: F.cosine_similarity(L.ones(2, 3), L.ones(2, 4)),
               lambda F, L: F.pairwise_distance(L.ones(2, 3), L.ones(2, 4)),
               lambda F, L: F.normalize(L.ones(2, 3, dtype=L.int64))):
        with pytest.raises(RuntimeError) as expected:
            fn(TF, torch)
        with pytest.raises(RuntimeError) as got:
            fn(GF, gt)
        assert str(got.value) == str(expected.value)


# ---- cdist and pdist --------------------------------------------------------------------------

P_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]
MODES = ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
         "donot_use_mm_for_euclid_dist"]


def _rows_with_ties(shape1, shape2):
    a, b = rng.standard_normal(shape1), rng.standard_normal(shape2)
    first = a.reshape((-1,) + a.shape[-2:])[0]
    b[..., 0, :] = first[0]                     # a zero distance
    b[..., 1, 0] = first[1, 0]                  # a zero difference in one column
    return a, b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("p", P_VALUES)
def test_cdist_matches_torch_with_gradients(p, mode):
    a, b = _rows_with_ties((2, 5, 3), (1, 4, 3))
    (g1, t1), (g2, t2) = both(a, requires_grad=True), both(b, requires_grad=True)
    gy, ty = gt.cdist(g1, g2, p, mode), torch.cdist(t1, t2, p, mode)
    # The matrix-product path computes |x|^2 + |y|^2 - 2 x.y: at a zero distance the
    # cancellation leaves a residue of ~1e-16 whose square root (~1e-8) depends on the BLAS's
    # summation order, and so does the gradient there; the direct paths agree to rounding.
    mm = p == 2.0 and mode == "use_mm_for_euclid_dist"
    tol, grad_tol = (1e-7, 1e-6) if mm else (1e-10, 1e-9)
    assert_same(gy, ty, rtol=tol, atol=tol)
    assert gy.grad_fn.name() == ty.grad_fn.name()
    w = rng.standard_normal(tuple(ty.shape))
    gy.backward(gt.tensor(w))
    ty.backward(torch.tensor(w))
    np.testing.assert_allclose(g1.grad.numpy(), t1.grad.numpy(), rtol=grad_tol, atol=grad_tol)
    np.testing.assert_allclose(g2.grad.numpy(), t2.grad.numpy(), rtol=grad_tol, atol=grad_tol)


@pytest.mark.parametrize("shapes", [((30, 4), (7, 4)), ((3, 30, 4), (7, 4)),
                                    ((2, 1, 6, 3), (4, 27, 3))])
def test_cdist_matrix_product_path_for_large_inputs(shapes):
    a, b = _rows_with_ties(*shapes)
    (g1, t1), (g2, t2) = both(a, requires_grad=True), both(b, requires_grad=True)
    gy, ty = gt.cdist(g1, g2), torch.cdist(t1, t2)
    assert_same(gy, ty, rtol=1e-9, atol=1e-7)
    assert gy.grad_fn.name() == ty.grad_fn.name() == "ViewBackward0"
    w = rng.standard_normal(tuple(ty.shape))
    gy.backward(gt.tensor(w))
    ty.backward(torch.tensor(w))
    np.testing.assert_allclose(g1.grad.numpy(), t1.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g2.grad.numpy(), t2.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0])
def test_cdist_gradcheck(p):
    x = gt.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    y = gt.tensor(rng.standard_normal((4, 4)), requires_grad=True)
    assert gradcheck(lambda x, y: gt.cdist(x, y, p), (x, y))
    assert gradcheck(lambda x, y: gt.cdist(x, y, p, "use_mm_for_euclid_dist"), (x, y))


def test_cdist_pdist_double_backward():
    """PyTorch has no double backward for cdist/pdist; glasstorch's formulas are written in
    differentiable ops, so second derivatives are checked numerically."""
    x = gt.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    y = gt.tensor(rng.standard_normal((2, 4)), requires_grad=True)
    assert gradgradcheck(lambda x, y: gt.cdist(x, y, 1.5), (x, y))
    assert gradgradcheck(lambda x, y: gt.cdist(x, y, 2.0, "use_mm_for_euclid_dist"), (x, y))
    assert gradgradcheck(lambda x: gt.pdist(x, 3.0), (x,))


def test_cdist_float32_and_layouts():
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((5, 6))
    (g1, t1), (g2, t2) = both(a, "float32"), both(b, "float32")
    tol = 2e-6
    for p in (1.0, 2.0):
        assert_same(gt.cdist(g1, g2, p), torch.cdist(t1, t2, p), rtol=tol, atol=tol)
        assert_same(gt.cdist(g1[::2], g2.t().t()[1:], p), torch.cdist(t1[::2], t2[1:], p),
                    rtol=tol, atol=tol)


@pytest.mark.parametrize("shapes", [((0, 3), (4, 3)), ((2, 3), (0, 3)), ((2, 0), (3, 0)),
                                    ((0, 2, 3), (2, 3))])
def test_cdist_empty(shapes):
    (g1, t1), (g2, t2) = both(np.zeros(shapes[0]), "float32"), both(np.zeros(shapes[1]),
                                                                     "float32")
    assert_same(gt.cdist(g1, g2), torch.cdist(t1, t2))


@pytest.mark.parametrize("p", P_VALUES)
def test_pdist_matches_torch_with_gradients(p):
    a = rng.standard_normal((6, 3))
    a[4] = a[1]
    a[5, 0] = a[0, 0]
    g, t = both(a, requires_grad=True)
    gy, ty = GF.pdist(g, p), TF.pdist(t, p)
    assert_same(gy, ty, rtol=1e-10, atol=1e-12)
    assert gy.grad_fn.name() == ty.grad_fn.name()
    assert_same(gt.pdist(g.detach(), p), torch.pdist(t.detach(), p), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(ty.shape))
    gy.backward(gt.tensor(w))
    ty.backward(torch.tensor(w))
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_pdist_gradcheck_layouts_and_small_inputs():
    x = gt.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    assert gradcheck(lambda x: gt.pdist(x, 1.5), (x,))
    g, t = both(rng.standard_normal((3, 5)), "float32")
    assert_same(GF.pdist(g.t()), TF.pdist(t.t()), rtol=2e-6)
    for shape in ((1, 3), (0, 3), (3, 0)):
        g, t = both(np.zeros(shape), "float32")
        assert_same(GF.pdist(g), TF.pdist(t))


CDIST_ERRORS = {
    "cdist_1d": lambda L, F: L.cdist(L.ones(3), L.ones(3)),
    "cdist_columns": lambda L, F: L.cdist(L.ones(3, 2), L.ones(3, 4)),
    "cdist_negative_p": lambda L, F: L.cdist(L.ones(3, 2), L.ones(3, 2), p=-1),
    "cdist_mode": lambda L, F: L.cdist(L.ones(3, 2), L.ones(3, 2), compute_mode="foo"),
    "cdist_int": lambda L, F: L.cdist(L.ones(3, 2, dtype=L.int64), L.ones(3, 2)),
    "cdist_dtypes": lambda L, F: L.cdist(L.ones(3, 2), L.ones(3, 2, dtype=L.float64)),
    "cdist_batch": lambda L, F: L.cdist(L.ones(2, 3, 2), L.ones(3, 3, 2)),
    "cdist_half": lambda L, F: L.cdist(L.ones(3, 2, dtype=L.float16), L.ones(3, 2,
                                                                          dtype=L.float16)),
    "cdist_bfloat16": lambda L, F: L.cdist(L.ones(3, 2, dtype=L.bfloat16),
                                           L.ones(3, 2, dtype=L.bfloat16)),
    "pdist_half": lambda L, F: F.pdist(L.ones(3, 2, dtype=L.float16)),
    "pdist_3d": lambda L, F: F.pdist(L.ones(2, 3, 4)),
    "pdist_negative_p": lambda L, F: F.pdist(L.ones(2, 3), -1),
    "pdist_int": lambda L, F: F.pdist(L.ones(2, 3, dtype=L.int64)),
}


@pytest.mark.parametrize("name", sorted(CDIST_ERRORS))
def test_cdist_pdist_errors_match_torch(name):
    fn = CDIST_ERRORS[name]
    with pytest.raises(Exception) as expected:
        fn(torch, TF)
    with pytest.raises(type(expected.value)) as got:
        fn(gt, GF)
    assert str(got.value) == str(expected.value)


def test_module_examples_run():
    import doctest
    import importlib
    for name in ("dropout", "distance"):     # F.dropout is the function: import the module
        result = doctest.testmod(importlib.import_module(f"glasstorch.nn.functional.{name}"))
        assert result.attempted >= 1 and result.failed == 0
