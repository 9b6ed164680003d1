"""nn.utils: gradient clipping, parameter vectors and parametrizations, against torch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import assert_same, oracle_torch, to_numpy

RNG = np.random.default_rng(0)


def _pair(*shapes, scale=1.0, dtype=np.float32):
    """The same parameters (with grads) in both libraries."""
    torch = oracle_torch()
    gps, tps = [], []
    for shape in shapes:
        w = RNG.standard_normal(shape).astype(dtype)
        g = (RNG.standard_normal(shape) * scale).astype(dtype)
        gp, tp = gt.nn.Parameter(gt.tensor(w)), torch.nn.Parameter(torch.tensor(w))
        gp.grad, tp.grad = gt.tensor(g), torch.tensor(g)
        gps.append(gp)
        tps.append(tp)
    return gps, tps


# ---- clipping -----------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch = oracle_torch()
    empty = () if norm_type in (math.inf, "inf") else ((2, 0),)  # inf: no identity, raises
    gps, tps = _pair((3, 4), (5,), (), *empty)
    no_grad_g = gt.nn.Parameter(gt.ones(2))
    no_grad_t = torch.nn.Parameter(torch.ones(2))
    ours = gt.nn.utils.clip_grad_norm_(gps + [no_grad_g], max_norm, norm_type)
    theirs = torch.nn.utils.clip_grad_norm_(tps + [no_grad_t], max_norm, norm_type)
    assert_same(ours, theirs, rtol=1e-5)
    assert not ours.requires_grad
    for gp, tp in zip(gps, tps):
        assert_same(gp.grad, tp.grad, rtol=1e-5, atol=1e-6)
    assert no_grad_g.grad is None


def test_clip_grad_norm_reference_values_and_single_tensor():
    torch = oracle_torch()
    a, b = gt.nn.Parameter(gt.zeros(3)), gt.nn.Parameter(gt.zeros(4))
    a.grad, b.grad = gt.full((3,), 3.0), gt.full((4,), 4.0)
    total = gt.nn.utils.clip_grad_norm_([a, b], 1.0)
    assert abs(total.item() - math.sqrt(27 + 64)) < 1e-4
    np.testing.assert_allclose(to_numpy(a.grad), 3 / (math.sqrt(91) + 1e-6), rtol=1e-5)
    gps, tps = _pair((4, 4))
    assert_same(gt.nn.utils.clip_grad_norm_(gps[0], 0.1, foreach=True),
                torch.nn.utils.clip_grad_norm_(tps[0], 0.1, foreach=True), rtol=1e-5)
    assert_same(gps[0].grad, tps[0].grad, rtol=1e-5)


def test_clip_grad_norm_inf_of_empty_grad_raises():
    torch = oracle_torch()
    for lib in (gt, torch):
        p = lib.nn.Parameter(lib.ones(0))
        p.grad = lib.ones(0)
        with pytest.raises(RuntimeError, match="norm on an empty tensor because the operation "
                                               "does not have an identity"):
            lib.nn.utils.clip_grad_norm_([p], 1.0, math.inf)


def test_clip_grad_norm_no_grads_and_empty_generator():
    torch = oracle_torch()
    assert_same(gt.nn.utils.clip_grad_norm_([gt.nn.Parameter(gt.ones(2))], 1.0),
                torch.nn.utils.clip_grad_norm_([torch.nn.Parameter(torch.ones(2))], 1.0))
    with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
        gt.nn.utils.clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_norm_nonfinite():
    torch = oracle_torch()
    for lib in (gt, torch):
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.tensor([float("inf"), 1.0])
        with pytest.raises(RuntimeError) as info:
            lib.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
        if lib is gt:
            ours = str(info.value)
        else:
            assert ours == str(info.value)
    gps, tps = _pair((3,))
    gps[0].grad[0] = float("nan")
    tps[0].grad[0] = float("nan")
    assert_same(gt.nn.utils.clip_grad_norm_(gps, 1.0), torch.nn.utils.clip_grad_norm_(tps, 1.0))
    assert_same(gps[0].grad, tps[0].grad)


def test_get_total_norm_and_clip_grads_with_norm():
    torch = oracle_torch()
    gps, tps = _pair((3, 2), (4,), scale=5.0)
    gn = gt.nn.utils.get_total_norm([p.grad for p in gps], 3.0)
    tn = torch.nn.utils.get_total_norm([p.grad for p in tps], 3.0)
    assert_same(gn, tn, rtol=1e-5)
    gt.nn.utils.clip_grads_with_norm_(gps, 2.0, gn)
    torch.nn.utils.clip_grads_with_norm_(tps, 2.0, tn)
    for gp, tp in zip(gps, tps):
        assert_same(gp.grad, tp.grad, rtol=1e-5)
    assert_same(gt.nn.utils.get_total_norm([]), torch.nn.utils.get_total_norm([]))


def test_clip_grad_norm_float64_and_mixed():
    torch = oracle_torch()
    gps, tps = _pair((3,), dtype=np.float64)
    g2, t2 = _pair((2,))
    assert_same(gt.nn.utils.clip_grad_norm_(gps + g2, 0.1),
                torch.nn.utils.clip_grad_norm_(tps + t2, 0.1), rtol=1e-6)
    assert_same(gps[0].grad, tps[0].grad)


def test_clip_grad_norm_deprecated_alias():
    gps, _ = _pair((3,))
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        gt.nn.utils.clip_grad_norm(gps, 1.0)


def test_clip_grad_value_matches_torch():
    torch = oracle_torch()
    gps, tps = _pair((4, 3), (2,), scale=3.0)
    gps.append(gt.nn.Parameter(gt.ones(1)))
    assert gt.nn.utils.clip_grad_value_(gps, 1.5) is None
    torch.nn.utils.clip_grad_value_(tps, 1.5)
    for gp, tp in zip(gps, tps):
        assert_same(gp.grad, tp.grad)
    gps, tps = _pair((5,), scale=3.0)
    gt.nn.utils.clip_grad_value_(gps[0], 1, foreach=False)
    torch.nn.utils.clip_grad_value_(tps[0], 1, foreach=False)
    assert_same(gps[0].grad, tps[0].grad)


# ---- parameter vectors --------------------------------------------------------------------

def test_parameters_to_vector_and_back():
    torch = oracle_torch()
    gps, tps = _pair((2, 3), (4,), ())
    gv = gt.nn.utils.parameters_to_vector(gps)
    tv = torch.nn.utils.parameters_to_vector(tps)
    assert_same(gv.detach(), tv.detach())
    assert gv.requires_grad
    gv.sum().backward()
    new = gt.arange(11, dtype=gt.float32)
    ids = [id(p) for p in gps]
    gt.nn.utils.vector_to_parameters(new, gps)
    torch.nn.utils.vector_to_parameters(torch.arange(11, dtype=torch.float32), tps)
    assert [id(p) for p in gps] == ids
    for gp, tp in zip(gps, tps):
        assert_same(gp.detach(), tp.detach())
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        gt.nn.utils.vector_to_parameters([1.0], gps)


# ---- parametrize --------------------------------------------------------------------------

def _classes(lib):
    nn = lib.nn

    class Symmetric(nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    class Scale(nn.Module):
        def forward(self, x):
            return x * 2

    class Holder(nn.Module):
        def __init__(self, w):
            super().__init__()
            self.weight = nn.Parameter(lib.tensor(w))
            self.register_buffer("buf", lib.tensor(w))

        def forward(self, x):
            return x @ self.weight

    return Symmetric, Scale, Holder


def test_register_parametrization_matches_torch():
    torch = oracle_torch()
    w = RNG.standard_normal((3, 3)).astype(np.float32)
    x = RNG.standard_normal((2, 3)).astype(np.float32)

    def run(lib):
        P = lib.nn.utils.parametrize
        Symmetric, Scale, Holder = _classes(lib)
        m = Holder(w)
        weight = m.weight
        P.register_parametrization(m, "weight", Symmetric())
        P.register_parametrization(m, "weight", Scale(), unsafe=True)
        P.register_parametrization(m, "buf", Scale())
        out = [type(m).__name__, P.type_before_parametrizations(m).__name__,
               P.is_parametrized(m), P.is_parametrized(m, "weight"),
               P.is_parametrized(m, "other"), list(m.state_dict()),
               [n for n, _ in m.named_parameters()],
               m.parametrizations.weight.original is weight, repr(m)]
        y = m(lib.tensor(x))
        y.sum().backward()
        out += [to_numpy(y).round(5).tolist(), to_numpy(weight.grad).round(5).tolist(),
                to_numpy(m.weight).round(5).tolist(), to_numpy(m.buf).round(5).tolist()]
        # assigning needs every right_inverse; Scale has none
        out.append(_err_or(lambda: setattr(m, "weight", lib.eye(3))))
        return out

    ours, theirs = run(gt), run(torch)
    assert ours == theirs
    assert ours[-1] == ("RuntimeError", "parametrization Scale does not implement "
                                        "right_inverse.")


def _err_or(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001  (compared across libraries)
        return type(e).__name__, str(e)


def test_right_inverse_assignment_cached_and_remove():
    torch = oracle_torch()
    w = RNG.standard_normal((3, 3)).astype(np.float32)

    def run(lib):
        P = lib.nn.utils.parametrize
        Symmetric, Scale, Holder = _classes(lib)
        m = Holder(w)
        P.register_parametrization(m, "weight", Symmetric())
        orig = m.parametrizations.weight.original
        m.weight = lib.ones(3, 3) * 4
        out = [to_numpy(orig).tolist(), to_numpy(m.weight).tolist()]
        with P.cached():
            a, b = m.weight, m.weight
            out.append(a is b)
        out.append(m.weight is m.weight)
        P.remove_parametrizations(m, "weight")
        out += [type(m).__name__, list(m.state_dict()), m.weight is orig,
                to_numpy(m.weight).tolist(), isinstance(m.weight, lib.nn.Parameter),
                hasattr(m, "parametrizations")]
        P.register_parametrization(m, "weight", Scale())
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
        out.append(to_numpy(m.weight).tolist())
        out.append(_err_or(lambda: P.remove_parametrizations(m, "weight")))
        out.append(_err_or(lambda: P.register_parametrization(m, "nope", Scale())))
        return out

    ours, theirs = run(gt), run(torch)
    assert ours[:-2] == theirs[:-2]
    assert ours[-2][0] == theirs[-2][0] == "ValueError"
    assert ours[-1][0] == theirs[-1][0] == "ValueError"
    assert "does not have a parametrization on weight" in ours[-2][1]
    assert "does not have a parameter, a buffer, or a parametrized element with name 'nope'" \
        in ours[-1][1]


def test_parametrization_shape_and_dtype_checks():
    torch = oracle_torch()

    def run(lib):
        nn = lib.nn
        P = nn.utils.parametrize

        class Shrink(nn.Module):
            def forward(self, x):
                return x[:1]

        class Cast(nn.Module):
            def forward(self, x):
                return x.double()

        res = []
        for p in (Shrink(), Cast()):
            m = nn.Module()
            m.weight = nn.Parameter(lib.ones(2, 2))
            res.append(_err_or(lambda: P.register_parametrization(m, "weight", p)))
        return res

    assert run(gt) == run(torch)


# ---- weight_norm / spectral_norm ----------------------------------------------------------

def _lin_pair(shape):
    torch = oracle_torch()
    _, _, GH = _classes(gt)
    _, _, TH = _classes(torch)
    w = RNG.standard_normal(shape).astype(np.float32)
    return GH(w), TH(w)


@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), 1), ((3, 4), None),
                                       ((2, 3, 4), 1), ((2, 3, 4), -1), ((5,), 0)])
def test_weight_norm_values_and_grads_match_torch(shape, dim):
    torch = oracle_torch()
    g, t = _lin_pair(shape)
    gt.nn.utils.parametrizations.weight_norm(g, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(t, dim=dim)
    assert list(g.state_dict()) == list(t.state_dict())
    for (gn, gv), (tn, tv) in zip(g.state_dict().items(), t.state_dict().items()):
        assert_same(gv, tv, rtol=1e-5, atol=1e-6)
    assert_same(g.weight.detach(), t.weight.detach(), rtol=1e-5, atol=1e-6)
    up = RNG.standard_normal(shape).astype(np.float32)
    (g.weight * gt.tensor(up)).sum().backward()
    (t.weight * torch.tensor(up)).sum().backward()
    for (gn, gp), (tn, tp) in zip(g.named_parameters(), t.named_parameters()):
        assert gn == tn      # (strides of size-1 dims of a grad are layout noise)
        assert_same(gp.grad, tp.grad, rtol=1e-4, atol=1e-5, check_stride=False)


def test_weight_norm_gradcheck_float64():
    _, _, H = _classes(gt)
    m = H(RNG.standard_normal((3, 4)))
    gt.nn.utils.parametrizations.weight_norm(m)
    g0 = m.parametrizations.weight.original0.detach().clone().requires_grad_()
    v0 = m.parametrizations.weight.original1.detach().clone().requires_grad_()
    wn = m.parametrizations.weight[0]
    assert gt.autograd.gradcheck(lambda g, v: wn(g, v), (g0, v0))


def test_weight_norm_loads_legacy_checkpoint():
    torch = oracle_torch()
    g, t = _lin_pair((3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(t)
    legacy = {k: gt.tensor(to_numpy(v)) for k, v in t.state_dict().items()}
    assert set(legacy) == {"weight_g", "weight_v", "buf"}
    gt.nn.utils.parametrizations.weight_norm(g)
    g.load_state_dict(legacy)
    assert_same(g.weight.detach(), t.weight.detach(), rtol=1e-5)


def test_legacy_weight_norm_matches_torch():
    torch = oracle_torch()
    g, t = _lin_pair((3, 4))
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        gt.nn.utils.weight_norm(g, dim=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(t, dim=1)
    assert list(g.state_dict()) == list(t.state_dict())
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    gy, ty = g(gt.tensor(x)), t(torch.tensor(x))
    assert_same(gy.detach(), ty.detach(), rtol=1e-5)
    gy.sum().backward()
    ty.sum().backward()
    assert_same(g.weight_g.grad, t.weight_g.grad, rtol=1e-4, atol=1e-6)
    assert_same(g.weight_v.grad, t.weight_v.grad, rtol=1e-4, atol=1e-6)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), \
            pytest.warns(FutureWarning):
        gt.nn.utils.weight_norm(g, dim=1)
    gt.nn.utils.remove_weight_norm(g)
    torch.nn.utils.remove_weight_norm(t)
    assert list(g.state_dict()) == list(t.state_dict())
    assert_same(g.weight.detach(), t.weight.detach(), rtol=1e-5)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        gt.nn.utils.remove_weight_norm(g)


@pytest.mark.parametrize("shape,dim", [((4, 3), None), ((2, 3, 4), 1), ((5, 2), -1), ((6,), None)])
def test_spectral_norm_matches_torch(shape, dim):
    torch = oracle_torch()
    g, t = _lin_pair(shape)
    torch.nn.utils.parametrizations.spectral_norm(t, n_power_iterations=2, dim=dim)
    gt.nn.utils.parametrizations.spectral_norm(g, n_power_iterations=2, dim=dim)
    assert list(g.state_dict()) == list(t.state_dict())
    sn_g = g.parametrizations.weight[0]
    sn_t = t.parametrizations.weight[0]
    if len(shape) > 1:       # the random start vectors differ: start from torch's
        with gt.no_grad():
            sn_g._u.copy_(gt.tensor(to_numpy(sn_t._u)))
            sn_g._v.copy_(gt.tensor(to_numpy(sn_t._v)))
    for mode in ("train", "eval"):
        getattr(g, mode)()
        getattr(t, mode)()
        assert_same(g.weight.detach(), t.weight.detach(), rtol=1e-4, atol=1e-5)
    if len(shape) > 1:
        assert_same(sn_g._u, sn_t._u, rtol=1e-4, atol=1e-5)
        g.train()
        for _ in range(30):          # power iteration converges: sigma(weight) -> 1
            w = g.weight
        mat = np.moveaxis(to_numpy(w), sn_g.dim, 0).reshape(shape[sn_g.dim], -1)
        assert abs(np.linalg.svd(mat, compute_uv=False)[0] - 1) < 1e-3
    g.train()
    t.train()
    up = RNG.standard_normal(shape).astype(np.float32)
    (g.weight * gt.tensor(up)).sum().backward()
    (t.weight * torch.tensor(up)).sum().backward()
    assert_same(g.parametrizations.weight.original.grad,
                t.parametrizations.weight.original.grad, rtol=1e-3, atol=1e-4)


def test_spectral_norm_errors():
    torch = oracle_torch()
    g, t = _lin_pair((3, 4))
    for lib, m in ((gt, g), (torch, t)):
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
            lib.nn.utils.parametrizations.spectral_norm(m, "nope")
        with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\] but got 2"):
            lib.nn.utils.parametrizations.spectral_norm(m, dim=2)
        with pytest.raises(ValueError, match="n_power_iterations=0"):
            lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=0)


def _legacy_sn_pair(shape, dim):
    torch = oracle_torch()
    g, t = _lin_pair(shape)
    torch.nn.utils.spectral_norm(t, n_power_iterations=2, dim=dim)
    gt.nn.utils.spectral_norm(g, n_power_iterations=2, dim=dim)
    with gt.no_grad():            # start from torch's random vectors
        g.weight_u.copy_(gt.tensor(to_numpy(t.weight_u)))
        g.weight_v.copy_(gt.tensor(to_numpy(t.weight_v)))
    return g, t


@pytest.mark.parametrize("shape,dim", [((4, 3), None), ((2, 3, 4), 1)])
def test_legacy_spectral_norm_matches_torch(shape, dim):
    torch = oracle_torch()
    g, t = _legacy_sn_pair(shape, dim)
    assert list(g.state_dict()) == list(t.state_dict())
    assert g.state_dict()._metadata == t.state_dict()._metadata
    x = RNG.standard_normal((2, shape[0]) if len(shape) == 2 else
                            (shape[0], 2, shape[1])).astype(np.float32)
    for mode in ("train", "eval", "train"):
        getattr(g, mode)()
        getattr(t, mode)()
        gy, ty = g(gt.tensor(x)), t(torch.tensor(x))   # the pre-hook recomputes the weight
        assert_same(gy.detach(), ty.detach(), rtol=1e-4, atol=1e-5)
        assert_same(g.weight.detach(), t.weight.detach(), rtol=1e-4, atol=1e-5)
        assert_same(g.weight_u, t.weight_u, rtol=1e-4, atol=1e-5)
    up = RNG.standard_normal(shape).astype(np.float32)
    (g.weight * gt.tensor(up)).sum().backward()
    (t.weight * torch.tensor(up)).sum().backward()
    assert_same(g.weight_orig.grad, t.weight_orig.grad, rtol=1e-3, atol=1e-4)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        gt.nn.utils.spectral_norm(g, dim=dim)
    gt.nn.utils.remove_spectral_norm(g)
    torch.nn.utils.remove_spectral_norm(t)
    assert list(g.state_dict()) == list(t.state_dict()) == ["weight", "buf"]
    assert isinstance(g.weight, gt.nn.Parameter)
    assert_same(g.weight.detach(), t.weight.detach(), rtol=1e-4, atol=1e-5)
    assert not g._state_dict_hooks and not g._load_state_dict_pre_hooks
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        gt.nn.utils.remove_spectral_norm(g)


def test_legacy_spectral_norm_state_dict_round_trip_and_version0_upgrade():
    torch = oracle_torch()
    g, t = _legacy_sn_pair((4, 3), None)
    t.eval()
    t(torch.ones(1, 4))
    sd = t.state_dict()
    ours = {k: gt.tensor(to_numpy(v)) for k, v in sd.items()}
    ours = type(g.state_dict())(ours)
    ours._metadata = sd._metadata
    g.load_state_dict(ours)
    g.eval()
    g(gt.ones(1, 4))
    assert_same(g.weight.detach(), t.weight.detach(), rtol=1e-5)
    # a version-0 checkpoint: weight and u stored, v recovered from them
    old = {"weight_orig": sd["weight_orig"], "weight_u": sd["weight_u"],
           "weight": t.weight.detach(), "buf": sd["buf"]}
    t2 = _lin_pair((4, 3))[1]
    torch.nn.utils.spectral_norm(t2)
    t2.load_state_dict(old)
    g2 = _lin_pair((4, 3))[0]
    gt.nn.utils.spectral_norm(g2)
    g2.load_state_dict({k: gt.tensor(to_numpy(v)) for k, v in old.items()})
    assert_same(g2.weight_v, t2.weight_v, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("omap", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_matches_torch(shape, omap, triv):
    torch = oracle_torch()
    w = RNG.standard_normal(shape)
    up = RNG.standard_normal(shape)
    mods = []
    for lib in (gt, torch):
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.tensor(w))
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap, use_trivialization=triv)
        mods.append(m)
    if triv:   # a non-square base is completed with random columns: use torch's
        with gt.no_grad():
            mods[0].parametrizations.weight[0].base.copy_(
                gt.tensor(to_numpy(mods[1].parametrizations.weight[0].base)))
    res = []
    for lib, m in zip((gt, torch), mods):
        y = m.weight
        (y * lib.tensor(up)).sum().backward()
        res.append((list(m.state_dict()), y.detach(), m.parametrizations.weight.original.grad))
    assert res[0][0] == res[1][0]
    assert_same(res[0][1], res[1][1], rtol=1e-6, atol=1e-9, check_stride=False)
    assert_same(res[0][2], res[1][2], rtol=1e-6, atol=1e-9, check_stride=False)
    q = to_numpy(res[0][1])
    q = q if shape[-2] >= shape[-1] else np.swapaxes(q, -1, -2)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(
        np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), atol=1e-10)


@pytest.mark.parametrize("omap", ["matrix_exp", "householder"])
def test_orthogonal_assignment(omap):
    torch = oracle_torch()
    q = np.linalg.qr(RNG.standard_normal((4, 4)))[0]
    res = []
    for lib in (gt, torch):
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.tensor(RNG.standard_normal((4, 4))))
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap)
        m.weight = lib.tensor(q)
        res.append(m.weight.detach())
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
            m.weight = lib.ones(2, 2)
    assert_same(res[0], res[1], atol=1e-10, check_stride=False)
    np.testing.assert_allclose(to_numpy(res[0]), q, atol=1e-10)


def test_orthogonal_errors():
    torch = oracle_torch()
    for lib in (gt, torch):
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.ones(3))
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a "
                                             "tensor of 1 dimensions."):
            lib.nn.utils.parametrizations.orthogonal(m)
        m.weight = lib.nn.Parameter(lib.ones(3, 3))
        with pytest.raises(ValueError, match='orthogonal_map has to be one of'):
            lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map="bad")
        m.c = lib.nn.Parameter(lib.ones(3, 3, dtype=lib.complex64))
        with pytest.raises(ValueError, match="householder parametrization does not support"):
            lib.nn.utils.parametrizations.orthogonal(m, "c", orthogonal_map="householder")
