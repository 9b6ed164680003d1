"""nn.init: exact gains and fans against torch, distributions by their statistics."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy

init = gt.nn.init


@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",),
                                  ("relu",), ("leaky_relu",), ("leaky_relu", 0.2),
                                  ("leaky_relu", 1), ("selu",)])
def test_calculate_gain_matches_torch(args):
    torch = oracle_torch()
    assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


@pytest.mark.parametrize("args", [("bogus",), ("leaky_relu", True), ("leaky_relu", "x")])
def test_calculate_gain_errors(args):
    torch = oracle_torch()
    with pytest.raises(ValueError) as ours:
        init.calculate_gain(*args)
    with pytest.raises(ValueError) as theirs:
        torch.nn.init.calculate_gain(*args)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("shape", [(3, 5), (4, 2, 3), (8, 3, 3, 3), (2, 6, 1, 2, 2), (0, 4),
                                   (5,), ()])
def test_fan_in_fan_out_match_torch(shape):
    torch = oracle_torch()
    ours = theirs = None
    try:
        theirs = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    except ValueError as e:
        theirs = str(e)
    try:
        ours = init._calculate_fan_in_and_fan_out(gt.empty(shape))
    except ValueError as e:
        ours = str(e)
    assert ours == theirs
    if len(shape) >= 2:
        for mode in ("fan_in", "fan_out", "FAN_IN"):
            assert init._calculate_correct_fan(gt.empty(shape), mode) == \
                torch.nn.init._calculate_correct_fan(torch.empty(shape), mode)
        with pytest.raises(ValueError, match=r"Mode bad not supported, please use one of "
                                             r"\['fan_in', 'fan_out'\]"):
            init._calculate_correct_fan(gt.empty(shape), "bad")


def _stats(t):
    a = to_numpy(t).astype(np.float64).ravel()
    return a.mean(), a.std(), a.min(), a.max()


SHAPE = (300, 200, 2)    # fan_in 400, fan_out 600


@pytest.mark.parametrize("name,kwargs,dist", [
    ("uniform_", dict(a=-2.0, b=3.0), ("u", -2.0, 3.0)),
    ("normal_", dict(mean=1.5, std=0.5), ("n", 1.5, 0.5)),
    ("xavier_uniform_", dict(gain=2.0),
     ("u", -2.0 * math.sqrt(6 / 1000), 2.0 * math.sqrt(6 / 1000))),
    ("xavier_normal_", dict(gain=0.5), ("n", 0.0, 0.5 * math.sqrt(2 / 1000))),
    ("kaiming_uniform_", dict(a=math.sqrt(5)), ("u", -1 / 20, 1 / 20)),
    ("kaiming_uniform_", dict(mode="fan_out", nonlinearity="relu"),
     ("u", -math.sqrt(6 / 600), math.sqrt(6 / 600))),
    ("kaiming_normal_", dict(nonlinearity="relu"), ("n", 0.0, math.sqrt(2 / 400))),
    ("kaiming_normal_", dict(a=0.2, mode="fan_out"),
     ("n", 0.0, math.sqrt(2 / 1.04) / math.sqrt(600))),
])
def test_random_inits_have_torchs_distribution(name, kwargs, dist):
    torch = oracle_torch()
    g = gt.Generator().manual_seed(0)
    t = gt.empty(SHAPE, requires_grad=True)
    out = getattr(init, name)(t, generator=g, **kwargs)
    assert out is t and t.grad_fn is None and t.requires_grad
    ref = getattr(torch.nn.init, name)(torch.empty(SHAPE), **kwargs)
    mean, std, lo, hi = _stats(t)
    rmean, rstd, rlo, rhi = _stats(ref)
    kind, p, q = dist
    if kind == "u":
        # the bounds as float32 holds them (torch's unseeded draw once hit -0.05 rounded)
        p32, q32 = min(p, float(np.float32(p))), max(q, float(np.float32(q)))
        assert p32 <= lo and hi <= q32 and p32 <= rlo and rhi <= q32
        assert abs(mean - (p + q) / 2) < 0.02 * (q - p)
        assert abs(std - (q - p) / math.sqrt(12)) < 0.02 * (q - p)
    else:
        assert abs(mean - p) < 0.02 * q and abs(std - q) < 0.02 * q
    assert abs(std - rstd) < 0.03 * rstd + 1e-12
    # the generator argument drives the draw
    again = getattr(init, name)(gt.empty(SHAPE), generator=gt.Generator().manual_seed(0),
                                **kwargs)
    assert np.array_equal(to_numpy(again), to_numpy(t))


def test_trunc_normal_statistics_and_bounds():
    torch = oracle_torch()
    t = init.trunc_normal_(gt.empty(100000), mean=0.5, std=1.0, a=-1.0, b=1.5)
    ref = torch.nn.init.trunc_normal_(torch.empty(100000), mean=0.5, std=1.0, a=-1.0, b=1.5)
    mean, std, lo, hi = _stats(t)
    rmean, rstd, _, _ = _stats(ref)
    assert -1.0 <= lo and hi <= 1.5
    assert abs(mean - rmean) < 0.01 and abs(std - rstd) < 0.01
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(gt.empty(3), mean=10.0)


def test_constant_ones_zeros_eye_match_torch():
    torch = oracle_torch()
    for name, args in [("constant_", (2.5,)), ("ones_", ()), ("zeros_", ()), ("eye_", ())]:
        for shape in [(3, 4), (4, 2)]:
            ours = getattr(init, name)(gt.empty(shape, requires_grad=True), *args)
            theirs = getattr(torch.nn.init, name)(torch.empty(shape, requires_grad=True), *args)
            assert np.array_equal(to_numpy(ours), to_numpy(theirs))
            assert ours.requires_grad and ours.grad_fn is None
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(gt.empty(2, 2, 2))


@pytest.mark.parametrize("shape,groups", [((4, 3, 3), 1), ((6, 2, 3, 5), 2),
                                          ((2, 4, 3, 3, 3), 1), ((3, 3, 2, 2), 3)])
def test_dirac_matches_torch(shape, groups):
    torch = oracle_torch()
    ours = init.dirac_(gt.empty(shape), groups)
    theirs = torch.nn.init.dirac_(torch.empty(shape), groups)
    assert np.array_equal(to_numpy(ours), to_numpy(theirs))


def test_dirac_errors():
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(gt.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(gt.empty(3, 2, 2), groups=2)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 3), (6, 6)])
def test_orthogonal(shape):
    t = init.orthogonal_(gt.empty(shape), gain=2.0)
    m = to_numpy(t).reshape(shape[0], -1) / 2.0
    rows, cols = m.shape
    gram = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(gt.empty(3))


def test_sparse():
    t = init.sparse_(gt.empty(10, 300), sparsity=0.25, std=0.5,
                     generator=gt.Generator().manual_seed(1))
    a = to_numpy(t)
    assert ((a == 0).sum(axis=0) == 3).all()       # ceil(0.25 * 10) zeros per column
    nz = a[a != 0]
    assert abs(nz.std() - 0.5) < 0.03
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(gt.empty(3), 0.5)


def test_zero_element_kaiming_warns():
    torch = oracle_torch()
    for lib in (gt, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.nn.init.kaiming_uniform_(lib.empty(0, 3))
            lib.nn.init.kaiming_normal_(lib.empty(0, 3))
        assert [str(x.message) for x in w] == ["Initializing zero-element tensors is a no-op"] * 2


@pytest.mark.parametrize("old", ["uniform", "normal", "constant", "eye", "dirac",
                                 "xavier_uniform", "xavier_normal", "kaiming_uniform",
                                 "kaiming_normal", "orthogonal", "sparse"])
def test_deprecated_aliases_warn_like_torch(old):
    torch = oracle_torch()
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(old, ())
    shape = (2, 2, 3) if old == "dirac" else (3, 4)
    messages = []
    for lib in (gt, torch):
        t = lib.empty(shape)
        with pytest.warns(FutureWarning) as rec:
            assert getattr(lib.nn.init, old)(t, *args) is t
        messages.append([str(r.message) for r in rec])
    assert messages[0] == messages[1]
