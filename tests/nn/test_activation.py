"""Activation functions (ops/activation.py, nn/functional/activation.py) against PyTorch:
values in every floating dtype, layouts (transposed, stepped, empty, 0-dim), the kink
gradients, grad_fn names, gradcheck away from the kinks, in-place variants and errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glasstorch as gt
import glasstorch.nn.functional as GF
from glasstorch.autograd import gradcheck, gradgradcheck
from native_paths import needs_compiler
from oracle import assert_same, oracle_torch, to_torch

torch = oracle_torch()
TF = torch.nn.functional
rng = np.random.default_rng(7)

# name -> (fn(F, lib, x), kinks: points where the derivative jumps)
ACT = {
    "relu": (lambda F, L, x: F.relu(x), (0.0,)),
    "torch.relu": (lambda F, L, x: L.relu(x), (0.0,)),
    "Tensor.relu": (lambda F, L, x: x.relu(), (0.0,)),
    "relu6": (lambda F, L, x: F.relu6(x), (0.0, 6.0)),
    "leaky_relu": (lambda F, L, x: F.leaky_relu(x, 0.2), (0.0,)),
    "elu": (lambda F, L, x: F.elu(x, 1.3), (0.0,)),
    "selu": (lambda F, L, x: F.selu(x), (0.0,)),
    "torch.selu": (lambda F, L, x: L.selu(x), (0.0,)),
    "celu": (lambda F, L, x: F.celu(x, 0.7), (0.0,)),
    "torch.celu": (lambda F, L, x: L.celu(x, 1.5), (0.0,)),
    "gelu": (lambda F, L, x: F.gelu(x), ()),
    "gelu_tanh": (lambda F, L, x: F.gelu(x, approximate="tanh"), ()),
    "silu": (lambda F, L, x: F.silu(x), ()),
    "mish": (lambda F, L, x: F.mish(x), ()),
    "softplus": (lambda F, L, x: F.softplus(x), ()),
    "softplus_beta": (lambda F, L, x: F.softplus(x, 2.0, 3.0), (1.5,)),
    "softsign": (lambda F, L, x: F.softsign(x), ()),
    "hardtanh": (lambda F, L, x: F.hardtanh(x, -2.0, 1.5), (-2.0, 1.5)),
    "hardsigmoid": (lambda F, L, x: F.hardsigmoid(x), (-3.0, 3.0)),
    "hardswish": (lambda F, L, x: F.hardswish(x), (-3.0, 3.0)),
    "tanhshrink": (lambda F, L, x: F.tanhshrink(x), ()),
    "softshrink": (lambda F, L, x: F.softshrink(x, 0.5), (-0.5, 0.5)),
    "hardshrink": (lambda F, L, x: F.hardshrink(x, 0.5), (-0.5, 0.5)),
    "Tensor.hardshrink": (lambda F, L, x: x.hardshrink(0.3), (-0.3, 0.3)),
    "threshold": (lambda F, L, x: F.threshold(x, 0.5, 2.0), (0.5,)),
    "torch.threshold": (lambda F, L, x: L.threshold(x, -0.5, -3.0), (-0.5,)),
    "logsigmoid": (lambda F, L, x: F.logsigmoid(x), ()),
    "tanh": (lambda F, L, x: F.tanh(x), ()),
    "sigmoid": (lambda F, L, x: F.sigmoid(x), ()),
    "glu": (lambda F, L, x: F.glu(x, 0), ()),
    "glu_last": (lambda F, L, x: F.glu(x), ()),
    "prelu_one": (lambda F, L, x: F.prelu(x, L.full((1,), 0.25, dtype=x.dtype)), (0.0,)),
    "rrelu_eval": (lambda F, L, x: F.rrelu(x, 0.1, 0.3), (0.0,)),
    "torch.rrelu": (lambda F, L, x: L.rrelu(x), (0.0,)),
}


def data(shape=(4, 6), kinks=(), scale=3.0):
    a = rng.standard_normal(shape) * scale
    flat = a.reshape(-1)
    for i, k in enumerate(kinks):       # hit every kink exactly
        if i < flat.size:
            flat[i] = k
    return a


def both(a, dtype="float64", requires_grad=False):
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    g = gt.tensor(a, dtype=getattr(gt, dtype), requires_grad=requires_grad)
    return g, t


TOL = {"float64": 1e-12, "float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(ACT))
def test_values_match_torch(name, dtype):
    fn, kinks = ACT[name]
    g, t = both(data(kinks=kinks), dtype)
    tol = TOL[dtype]
    assert_same(fn(GF, gt, g), fn(TF, torch, t), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(ACT))
def test_layouts(name):
    """Transposed and stepped inputs, empty and (where defined) 0-dim inputs."""
    fn, kinks = ACT[name]
    a = data((8, 8), kinks)
    g, t = both(a, "float32")
    assert_same(fn(GF, gt, g.t()), fn(TF, torch, t.t()), rtol=2e-6, atol=2e-6)
    assert_same(fn(GF, gt, g[::2, 1::2]), fn(TF, torch, t[::2, 1::2]), rtol=2e-6, atol=2e-6)
    g, t = both(np.zeros((0, 4)), "float32")
    assert_same(fn(GF, gt, g), fn(TF, torch, t))
    if not name.startswith("glu"):
        g, t = both(np.array(-0.7), "float32")
        assert_same(fn(GF, gt, g), fn(TF, torch, t))


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=4), data=st.data())
def test_random_layouts(shape, data):
    """Permuted, stepped and offset views: values and strides as torch's (every op here is
    elementwise, so a layout bug shows up whatever the activation)."""
    perm = data.draw(st.permutations(range(len(shape))))
    steps = [data.draw(st.integers(1, 2)) for _ in shape]
    base = rng.standard_normal([n * s + 1 for n, s in zip(shape, steps)])
    g, t = both(base, "float32")
    key = tuple(slice(1, None, s) for s in steps)
    g, t = g[key].permute(perm), t[key].permute(perm)
    name = data.draw(st.sampled_from(sorted(k for k in ACT if not k.startswith("glu"))))
    fn, _ = ACT[name]
    assert_same(fn(GF, gt, g), fn(TF, torch, t), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", sorted(ACT))
def test_gradients_match_torch_including_kinks(name):
    fn, kinks = ACT[name]
    a = data(kinks=kinks)
    g, t = both(a, requires_grad=True)
    gy, ty = fn(GF, gt, g), fn(TF, torch, t)
    assert gy.grad_fn.name() == ty.grad_fn.name()
    w = rng.standard_normal(tuple(ty.shape))
    gy.backward(gt.tensor(w))
    ty.backward(torch.tensor(w))
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(ACT))
def test_gradcheck_away_from_kinks(name):
    fn, kinks = ACT[name]
    a = rng.uniform(0.2, 2.5, (2, 4)) * rng.choice([-1.0, 1.0], (2, 4))
    for k in kinks:                        # stay 0.05 away from every kink
        a = np.where(np.abs(a - k) < 0.05, a + 0.1, a)
    x = gt.tensor(a, requires_grad=True)
    assert gradcheck(lambda x: fn(GF, gt, x), (x,))


@pytest.mark.parametrize("name", ["elu", "celu", "gelu", "gelu_tanh", "silu", "mish",
                                  "softplus", "logsigmoid", "glu", "hardswish"])
def test_double_backward(name):
    fn, kinks = ACT[name]
    a = rng.uniform(0.2, 2.5, (2, 4)) * rng.choice([-1.0, 1.0], (2, 4))
    for k in kinks:
        a = np.where(np.abs(a - k) < 0.05, a + 0.1, a)
    x = gt.tensor(a, requires_grad=True)
    assert gradgradcheck(lambda x: fn(GF, gt, x), (x,))


def test_softplus_threshold_kink_gradient():
    """Above beta * x > threshold softplus is the identity; at the threshold it is not."""
    a = np.array([1.5, 1.5 + 1e-9, -40.0, 40.0])
    g, t = both(a, requires_grad=True)
    GF.softplus(g, 2.0, 3.0).sum().backward()
    TF.softplus(t, 2.0, 3.0).sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-12)


# ---- numerical stability, nan, integer inputs ------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["softplus", "logsigmoid", "silu", "mish", "gelu", "elu",
                                  "selu", "celu", "glu", "tanhshrink", "softsign"])
def test_large_magnitudes(name, dtype, kernel_path):
    fn, _ = ACT[name]
    a = np.array([-1e4, -800.0, -90.0, -30.0, 30.0, 90.0, 800.0, 1e4])
    g, t = both(a, dtype, requires_grad=True)
    gy, ty = fn(GF, gt, g), fn(TF, torch, t)
    assert_same(gy, ty, rtol=1e-6, atol=1e-30)
    gy.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-30)


LOG2 = float(np.log(2.0))
SELU_FLOOR = -1.0507009873554804934193349852946 * 1.6732632423543772848170429916717

# The promise at special points (docs/04-operators.md, "Special values"): each activation is
# its defining formula in IEEE arithmetic, as PyTorch's reference kernels compute it. nan in
# is nan out; limits the formula reaches are exact (gelu(inf) = inf, sigmoid(-inf) = 0); where
# the formula meets inf * 0 or inf / inf the answer is nan, as PyTorch gives on every CPU,
# although the limit exists. Not compared against the installed PyTorch: its vectorised
# kernels differ by CPU (AVX-512's gelu(inf) is nan, AVX2's inf).
# name -> f(inf), f(-inf), f(0)
SPECIAL = {
    "relu": (np.inf, 0.0, 0.0), "relu6": (6.0, 0.0, 0.0),
    "leaky_relu": (np.inf, -np.inf, 0.0), "elu": (np.inf, -1.3, 0.0),
    "selu": (np.inf, SELU_FLOOR, 0.0), "celu": (np.inf, -0.7, 0.0),
    "torch.celu": (np.inf, -1.5, 0.0),
    "gelu": (np.inf, np.nan, 0.0),              # -inf * Phi(-inf) = -inf * 0
    "gelu_tanh": (np.inf, np.nan, 0.0),
    "silu": (np.inf, np.nan, 0.0),              # -inf * sigmoid(-inf) = -inf * 0
    "mish": (np.inf, np.nan, 0.0),
    "hardswish": (np.inf, np.nan, 0.0),         # -inf * relu6(-inf + 3) / 6 = -inf * 0
    "softsign": (np.nan, np.nan, 0.0),          # inf / (1 + inf)
    "softplus": (np.inf, 0.0, LOG2), "softplus_beta": (np.inf, 0.0, LOG2 / 2),
    "hardtanh": (1.5, -2.0, 0.0), "hardsigmoid": (1.0, 0.0, 0.5),
    "tanhshrink": (np.inf, -np.inf, 0.0),
    "softshrink": (np.inf, -np.inf, 0.0), "hardshrink": (np.inf, -np.inf, 0.0),
    "Tensor.hardshrink": (np.inf, -np.inf, 0.0),
    "threshold": (np.inf, 2.0, 2.0), "torch.threshold": (np.inf, -3.0, 0.0),
    "logsigmoid": (0.0, -np.inf, -LOG2), "tanh": (1.0, -1.0, 0.0),
    "sigmoid": (1.0, 0.0, 0.5), "prelu_one": (np.inf, -np.inf, 0.0),
    "rrelu_eval": (np.inf, -np.inf, 0.0), "torch.rrelu": (np.inf, -np.inf, 0.0),
}
SPECIAL.update({k: SPECIAL[k.split(".")[-1]] for k in ("torch.relu", "Tensor.relu",
                                                          "torch.selu")})


def test_special_table_covers_every_elementwise_activation():
    assert set(SPECIAL) == set(ACT) - {"glu", "glu_last"}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_nan_and_inf(name, dtype, kernel_path):
    fn, _ = ACT[name]
    at_inf, at_minus_inf, at_zero = SPECIAL[name]
    points = np.tile([np.nan, np.inf, -np.inf, 0.0, -0.0], 13)   # also past a SIMD width
    expected = np.tile([np.nan, at_inf, at_minus_inf, at_zero, at_zero], 13)
    x = gt.tensor(points, dtype=getattr(gt, dtype))
    assert_same(fn(GF, gt, x), expected.astype(np.float32 if dtype != "float64" else np.float64),
                rtol=TOL[dtype], atol=0)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_inputs_keep_their_dtype(dtype):
    a = np.array([-7, -1, 0, 1, 2, 9]) % (256 if dtype == "uint8" else 1000) - (
        0 if dtype == "uint8" else 3)
    g, t = both(a, dtype)
    assert_same(GF.relu(g), TF.relu(t))
    assert_same(gt.relu(g), torch.relu(t))
    low = 0 if dtype == "uint8" else -2
    assert_same(GF.hardtanh(g, low, 3), TF.hardtanh(t, low, 3))
    assert_same(GF.relu6(g), TF.relu6(t))
    assert_same(GF.threshold(g, 1, 5), TF.threshold(t, 1, 5))


# ---- in-place variants ---------------------------------------------------------------------

INPLACE = {
    "relu": (lambda F, L, x: F.relu(x, inplace=True), lambda F, L, x: F.relu(x)),
    "torch.relu_": (lambda F, L, x: L.relu_(x), lambda F, L, x: L.relu(x)),
    "Tensor.relu_": (lambda F, L, x: x.relu_(), lambda F, L, x: x.relu()),
    "F.relu_": (lambda F, L, x: F.relu_(x), lambda F, L, x: F.relu(x)),
    "relu6": (lambda F, L, x: F.relu6(x, True), lambda F, L, x: F.relu6(x)),
    "hardtanh": (lambda F, L, x: F.hardtanh(x, -1.5, 0.5, True),
                 lambda F, L, x: F.hardtanh(x, -1.5, 0.5)),
    "hardtanh_": (lambda F, L, x: F.hardtanh_(x), lambda F, L, x: F.hardtanh(x)),
    "leaky_relu": (lambda F, L, x: F.leaky_relu(x, 0.3, True),
                   lambda F, L, x: F.leaky_relu(x, 0.3)),
    "leaky_relu_": (lambda F, L, x: F.leaky_relu_(x, 0.3), lambda F, L, x: F.leaky_relu(x, 0.3)),
    "elu": (lambda F, L, x: F.elu(x, 0.5, True), lambda F, L, x: F.elu(x, 0.5)),
    "elu_": (lambda F, L, x: F.elu_(x), lambda F, L, x: F.elu(x)),
    "selu": (lambda F, L, x: F.selu(x, True), lambda F, L, x: F.selu(x)),
    "torch.selu_": (lambda F, L, x: L.selu_(x), lambda F, L, x: L.selu(x)),
    "celu": (lambda F, L, x: F.celu(x, 2.0, True), lambda F, L, x: F.celu(x, 2.0)),
    "torch.celu_": (lambda F, L, x: L.celu_(x), lambda F, L, x: L.celu(x)),
    "threshold": (lambda F, L, x: F.threshold(x, 0.1, 9.0, True),
                  lambda F, L, x: F.threshold(x, 0.1, 9.0)),
    "torch.threshold_": (lambda F, L, x: L.threshold_(x, 0.1, 9.0),
                         lambda F, L, x: L.threshold(x, 0.1, 9.0)),
    "hardsigmoid": (lambda F, L, x: F.hardsigmoid(x, True), lambda F, L, x: F.hardsigmoid(x)),
    "hardswish": (lambda F, L, x: F.hardswish(x, True), lambda F, L, x: F.hardswish(x)),
    "silu": (lambda F, L, x: F.silu(x, True), lambda F, L, x: F.silu(x)),
    "mish": (lambda F, L, x: F.mish(x, True), lambda F, L, x: F.mish(x)),
    "rrelu": (lambda F, L, x: F.rrelu(x, 0.2, 0.4, False, True),
              lambda F, L, x: F.rrelu(x, 0.2, 0.4)),
    "rrelu_": (lambda F, L, x: F.rrelu_(x), lambda F, L, x: F.rrelu(x)),
    "torch.rrelu_": (lambda F, L, x: L.rrelu_(x), lambda F, L, x: L.rrelu(x)),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace(name):
    """Same object returned, values written through a non-contiguous view, version bumped,
    and the gradient through the in-place op (on a non-leaf) equals the functional one's."""
    inplace, functional = INPLACE[name]
    a = data((4, 6), (0.0, 0.1, -1.5, 0.5, -3.0, 3.0))
    g, t = both(a)
    view = g.t()[1::2]
    before = view._version
    assert inplace(GF, gt, view) is view
    assert view._version > before
    ref = t.clone()
    inplace(TF, torch, ref.t()[1::2])
    assert_same(g, ref, rtol=1e-12, atol=1e-12)

    g, t = both(a, requires_grad=True)
    gy = inplace(GF, gt, g * 1.0)
    ty = functional(TF, torch, t * 1.0)
    assert gy.grad_fn.name() == inplace(TF, torch, t * 1.0).grad_fn.name()
    w = rng.standard_normal(a.shape)
    gy.backward(gt.tensor(w))
    ty.backward(torch.tensor(w))
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_inplace_on_leaf_requiring_grad_is_an_error():
    x = gt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        GF.relu(x, inplace=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        GF.elu_(x)


def test_out_arguments_where_torch_has_them():
    g, t = both(np.array([-1.0, 0.0, 2.0]), "float32")
    out = gt.empty(3)
    assert gt.threshold(g, 0.0, 5.0, out=out) is out
    assert_same(out, torch.threshold(t, 0.0, 5.0))
    assert gt.hardshrink(g, 1.5, out=out) is out
    assert_same(out, torch.hardshrink(t, 1.5))
    for lib in (gt, torch):
        for fn in (lib.relu, lib.celu, lib.selu):
            with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
                fn(lib.ones(3), out=lib.empty(3))


# ---- prelu and rrelu -------------------------------------------------------------------------

@pytest.mark.parametrize("shape,wshape", [((2, 3, 4), (3,)), ((2, 3), (3,)), ((5,), (1,)),
                                          ((2, 3, 2, 2), (1,)), ((2, 3), ()), ((), (1,)),
                                          ((4, 3, 2), (3,))])
def test_prelu_matches_torch(shape, wshape):
    a = data(shape, (0.0,))
    w = rng.uniform(-0.5, 0.5, wshape)
    g, t = both(a, requires_grad=True)
    gw, tw = both(w, requires_grad=True)
    gy, ty = GF.prelu(g, gw), TF.prelu(t, tw)
    assert_same(gy, ty, rtol=1e-12)
    assert gy.grad_fn.name() == ty.grad_fn.name()
    assert_same(gt.prelu(g, gw), torch.prelu(t, tw), rtol=1e-12)
    assert_same(g.prelu(gw), t.prelu(tw), rtol=1e-12)
    wgt = rng.standard_normal(ty.shape)
    gy.backward(gt.tensor(wgt))
    ty.backward(torch.tensor(wgt))
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert tuple(gw.grad.shape) == tuple(tw.grad.shape)


def test_prelu_gradcheck():
    x = gt.tensor(rng.uniform(0.2, 2.0, (2, 3, 2)) * rng.choice([-1.0, 1.0], (2, 3, 2)),
                  requires_grad=True)
    w = gt.tensor(rng.uniform(-0.5, 0.5, 3), requires_grad=True)
    assert gradcheck(GF.prelu, (x, w))


def test_rrelu_training_draws_slopes_in_range():
    gt.manual_seed(3)
    x = -gt.rand(20000, dtype=gt.float64) - 0.5
    x.requires_grad_()
    y = GF.rrelu(x, 0.1, 0.3, training=True)
    assert y.grad_fn.name() == "RreluWithNoiseBackward0"
    slopes = (y / x).detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.005 and abs(slopes.std() - 0.2 / np.sqrt(12)) < 0.005
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-12)
    pos = gt.rand(100) + 0.1
    assert_same(GF.rrelu(pos, training=True), to_torch(pos))
    gt.manual_seed(3)
    again = GF.rrelu(-gt.rand(20000, dtype=gt.float64) - 0.5, 0.1, 0.3, training=True)
    np.testing.assert_array_equal(again.numpy(), y.detach().numpy())


# ---- errors ----------------------------------------------------------------------------------

ERRORS = {
    "gelu_mode": lambda F, L, x: F.gelu(x, approximate="foo"),
    "hardtanh_bounds": lambda F, L, x: F.hardtanh(x, 2.0, 1.0),
    "softshrink_negative": lambda F, L, x: F.softshrink(x, -1.0),
    "celu_zero": lambda F, L, x: F.celu(x, 0.0),
    "glu_odd": lambda F, L, x: F.glu(x, 1),
    "glu_scalar": lambda F, L, x: F.glu(x.sum()),
    "glu_dim": lambda F, L, x: F.glu(x, 3),
    "prelu_count": lambda F, L, x: F.prelu(x, L.ones(2)),
    "prelu_2d_weight": lambda F, L, x: F.prelu(x, L.ones(3, 1)),
    "prelu_scalar_input": lambda F, L, x: F.prelu(x.sum(), L.ones(3)),
    "prelu_1d_input": lambda F, L, x: F.prelu(L.ones(3), L.ones(3)),
    "prelu_dtype": lambda F, L, x: F.prelu(x, L.ones(3, dtype=L.float64)),
    "rrelu_bounds": lambda F, L, x: F.rrelu(x, 0.5, 0.1, training=True),
    "rrelu_bounds_eval": lambda F, L, x: F.rrelu(x, 0.5, 0.1),
    "leaky_int": lambda F, L, x: F.leaky_relu(L.ones(2, dtype=L.int64)),
    "elu_bool": lambda F, L, x: F.elu(L.ones(2, dtype=L.bool)),
    "gelu_int": lambda F, L, x: F.gelu(L.ones(2, dtype=L.int32)),
    "relu_bool": lambda F, L, x: F.relu(L.ones(2, dtype=L.bool)),
    "relu_complex": lambda F, L, x: F.relu(L.ones(2, dtype=L.complex64)),
    "hardtanh_bool": lambda F, L, x: F.hardtanh(L.ones(2, dtype=L.bool)),
    "hardtanh_uint8": lambda F, L, x: F.hardtanh(L.ones(2, dtype=L.uint8)),
    "threshold_bool": lambda F, L, x: F.threshold(L.ones(2, dtype=L.bool), 0, 1),
    "softplus_int": lambda F, L, x: F.softplus(L.ones(2, dtype=L.int64)),
    "glu_bool": lambda F, L, x: F.glu(L.ones(2, dtype=L.bool)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    fn = ERRORS[name]
    g, t = both(np.ones((2, 3)), "float32")
    with pytest.raises(Exception) as expected:
        fn(TF, torch, t)
    with pytest.raises(type(expected.value)) as got:
        fn(GF, gt, g)
    assert str(got.value) == str(expected.value)


def test_module_examples_run():
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module("glasstorch.nn.functional.activation"))
    assert result.attempted >= 1 and result.failed == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_op_matches_torch(dtype, approximate, kernel_path):
    torch = oracle_torch()
    from glasstorch.ops.nn.activation import gelu_backward
    rng = np.random.default_rng(0)
    x = rng.standard_normal((33, 9)) * 4
    x[0, :3] = (np.nan, np.inf, -np.inf)
    g = rng.standard_normal((33, 9))
    tx, tg = (torch.from_numpy(a).to(getattr(torch, dtype)) for a in (x, g))
    gx, gg = (gt.from_numpy(a).to(getattr(gt, dtype)) for a in (x, g))
    # torch on finite inputs only: at nan and ±inf its vectorised erf/exp/tanh differ by CPU.
    # There the derivative's formula Phi(x) + x * phi(x) meets inf * 0: nan, as for gelu(-inf)
    # (docs/04-operators.md, "Special values").
    special = ~torch.isfinite(tx)
    expected = torch.ops.aten.gelu_backward(tg, tx, approximate=approximate)
    expected[special] = float("nan")
    tol = 1e-2 if dtype == "bfloat16" else 2e-5
    assert_same(gelu_backward(gg, gx, approximate=approximate), expected, rtol=tol, atol=tol)
    # transposed and broadcast operands
    expected = torch.ops.aten.gelu_backward(tg.t(), tx.t(), approximate=approximate)
    expected[special.t()] = float("nan")
    assert_same(gelu_backward(gg.t(), gx.t(), approximate=approximate), expected,
                rtol=tol, atol=tol)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        gelu_backward(gg, gx, approximate="fast")


@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_tanh_and_sigmoid_backward_ops_match_torch(name, dtype):
    """PyTorch's one-pass gradients from the forward's output, with broadcasting and special
    values. Compared to an ulp: PyTorch's vectorised tanh_backward may contract 1 - y * y
    into one fused multiply-add, depending on the CPU; glasstorch rounds y * y first."""
    torch = oracle_torch()
    from glasstorch.ops.nn import activation
    rng = np.random.default_rng(1)
    y = np.tanh(rng.standard_normal((17, 9)) * 2)
    y[0, :4] = (np.nan, 1.0, -1.0, 0.0)
    g = rng.standard_normal((17, 9))
    g[1, :3] = (np.nan, np.inf, -np.inf)
    ty, tg = (torch.from_numpy(a).to(getattr(torch, dtype)) for a in (y, g))
    gy, gg = (gt.from_numpy(a).to(getattr(gt, dtype)) for a in (y, g))
    tol = 1e-2 if dtype == "bfloat16" else 4 * np.finfo(dtype).eps
    op = getattr(activation, name)
    assert_same(op(gg, gy), getattr(torch.ops.aten, name)(tg, ty), rtol=tol, atol=tol)
    assert_same(op(gg[:, :1], gy.t()[:1].t()), getattr(torch.ops.aten, name)(tg[:, :1], ty.t()[:1].t()),
                rtol=tol, atol=tol)
    assert_same(op(gg[0], gy), getattr(torch.ops.aten, name)(tg[0], ty), rtol=tol, atol=tol)


@needs_compiler
@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [37, 1 << 20])       # serial, and over the thread threshold
def test_tanh_and_sigmoid_backward_c_kernels_round_as_the_numpy_passes(name, dtype, n):
    """Dense float32/float64 operands take one pass of C (activation.c): the same roundings,
    in the same order, as the NumPy form (g * (1 - y * y); g * (1 - y) * y), bit for bit."""
    from glasstorch.backends.cpu import activation as kernels
    from glasstorch.ops.nn import activation
    rng = np.random.default_rng(n)
    y = np.tanh(rng.standard_normal(n) * 2).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    y[:4], g[4:7] = (np.nan, 1.0, -1.0, 0.0), (np.nan, np.inf, -np.inf)
    numpy_form = {"tanh_backward": kernels.tanh_grad, "sigmoid_backward": kernels.sigmoid_grad}
    got = getattr(activation, name)(gt.from_numpy(g), gt.from_numpy(y)).numpy()
    np.testing.assert_array_equal(got, numpy_form[name](g, y))


@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward"])
def test_tanh_and_sigmoid_backward_ops_gradcheck_on_strided_inputs(name):
    """The backward ops' own derivatives, in float64, on transposed and stepped inputs."""
    from glasstorch.ops.nn import activation
    rng = np.random.default_rng(6)
    g = gt.tensor(rng.standard_normal((5, 4))).t().requires_grad_()
    y = gt.tensor(np.tanh(rng.standard_normal((4, 10))))[:, ::2].requires_grad_()
    assert not g.is_contiguous() and not y.is_contiguous()
    assert gradcheck(getattr(activation, name), (g, y))
    assert gradgradcheck(getattr(activation, name), (g, y))


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
def test_tanh_and_sigmoid_double_backward(fn):
    """Their gradients are the backward ops, which record their own derivatives (PyTorch's
    node names); gradgradcheck holds."""
    torch = oracle_torch()
    x = gt.tensor(np.random.default_rng(2).standard_normal(6), requires_grad=True)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    y, ty = getattr(x, fn)(), getattr(tx, fn)()
    (g,) = gt.autograd.grad(y.sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), tx, create_graph=True)
    assert (y.grad_fn.name(), g.grad_fn.name()) == (ty.grad_fn.name(), tg.grad_fn.name())
    assert_same(gt.autograd.grad(g.sum(), x)[0], torch.autograd.grad(tg.sum(), tx)[0],
                rtol=1e-12, atol=1e-12)
    assert gt.autograd.gradgradcheck(lambda t: getattr(t, fn)(), (x,))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_threshold_backward_op_matches_torch(kernel_path, dtype):
    torch = oracle_torch()
    from glasstorch.ops.nn.activation import threshold_backward
    x = np.array([[-1.0, 0.0, 0.5, np.nan, 0.1, -np.inf], [2.0, -0.0, 1e-8, 3.0, np.inf, 0.2]],
                 dtype)
    g = np.array([[1.0, 2.0, np.nan, 4.0, -0.0, 9.0], [5.0, np.nan, 7.0, 8.0, -3.0, np.inf]],
                 dtype)
    for thr in (0, 0.5, 0.1, -1):
        got = threshold_backward(gt.from_numpy(g), gt.from_numpy(x), thr)
        want = torch.ops.aten.threshold_backward(torch.from_numpy(g), torch.from_numpy(x), thr)
        assert_same(got, want)
        assert np.array_equal(np.signbit(got.numpy()), np.signbit(want.numpy()))
    # a gradient broadcast against its input (stride 0)
    gb = gt.ones(6, dtype=getattr(gt, dtype)).expand(2, 6)
    assert_same(threshold_backward(gb, gt.from_numpy(x), 0),
                torch.ops.aten.threshold_backward(
                    torch.ones(6, dtype=getattr(torch, dtype)).expand(2, 6),
                    torch.from_numpy(x), 0))


@needs_compiler
def test_threshold_backward_c_kernel_is_used_and_thread_independent(monkeypatch):
    """ReLU's gradient goes through native/activation.c for dense float tensors (spied),
    gives the NumPy path's values on 1 and 3 threads, and leaves other dtypes to NumPy."""
    from glasstorch.backends.cpu import native
    from glasstorch.ops.nn.activation import threshold_backward
    from native_paths import spy_kernels, threaded_kernels
    rng = np.random.default_rng(3)
    x, g = (gt.from_numpy(rng.standard_normal((37, 41)).astype(np.float32)) for _ in range(2))
    monkeypatch.setattr(native, "ENABLED", False)
    want = threshold_backward(g, x, 0.25).numpy()
    calls = spy_kernels(monkeypatch, "activation")
    with threaded_kernels(monkeypatch, 3):
        assert np.array_equal(threshold_backward(g, x, 0.25).numpy(), want)
    assert np.array_equal(threshold_backward(g, x, 0.25).numpy(), want)
    assert calls == ["threshold_backward_f32"] * 2
    threshold_backward(g.to(gt.float16), x.to(gt.float16), 0)
    threshold_backward(g.to(gt.int32), x.to(gt.int32), 0)
    assert calls == ["threshold_backward_f32"] * 2


@needs_compiler
def test_relu_c_kernel_is_used_and_thread_independent(monkeypatch):
    """relu of a dense float tensor (in place too) goes through native/activation.c's clamp
    (spied), gives the NumPy path's values on 1 and 3 threads, and leaves other dtypes and
    strided tensors to NumPy."""
    from glasstorch.backends.cpu import native
    from native_paths import spy_kernels, threaded_kernels
    x = gt.from_numpy(np.random.default_rng(4).standard_normal((37, 41)).astype(np.float32))
    x[0, :3] = gt.tensor([-0.0, float("nan"), -float("inf")])
    monkeypatch.setattr(native, "ENABLED", False)
    want = gt.relu(x).numpy()
    calls = spy_kernels(monkeypatch, "activation")
    with threaded_kernels(monkeypatch, 3):
        got = gt.relu(x).numpy()
    assert np.array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)
    y = x.double()
    y.relu_()
    np.testing.assert_array_equal(y.numpy(), want.astype(np.float64))
    assert calls == ["clamp_f32", "clamp_f64"]
    gt.relu(x.to(gt.bfloat16))
    gt.relu(x.to(gt.int32))
    gt.relu(x.t())
    assert calls == ["clamp_f32", "clamp_f64"]


def test_gelu_and_relu_second_order_gradients_match_torch():
    torch = oracle_torch()
    x = np.random.default_rng(1).standard_normal(12) * 2
    for approximate in ("none", "tanh"):
        gx = gt.from_numpy(x).requires_grad_()
        tx = torch.from_numpy(x).requires_grad_()
        (g1,) = gt.autograd.grad(gt.nn.functional.gelu(gx, approximate=approximate).pow(2).sum(),
                                 gx, create_graph=True)
        (t1,) = torch.autograd.grad(torch.nn.functional.gelu(tx, approximate=approximate)
                                    .pow(2).sum(), tx, create_graph=True)
        assert g1.grad_fn.name() == t1.grad_fn.name()
        g1.pow(2).sum().backward()
        t1.pow(2).sum().backward()
        assert_same(gx.grad, tx.grad, rtol=1e-10, atol=1e-12)
    gx = gt.from_numpy(x).requires_grad_()
    tx = torch.from_numpy(x).requires_grad_()
    (g1,) = gt.autograd.grad(gt.relu(gx).pow(2).sum(), gx, create_graph=True)
    (t1,) = torch.autograd.grad(torch.relu(tx).pow(2).sum(), tx, create_graph=True)
    g1.sum().backward()
    t1.sum().backward()
    assert_same(gx.grad, tx.grad)


def test_gelu_float32_erf_tail_and_gradient_match_torch(monkeypatch, kernel_path):
    """float32 exact GELU evaluates erf by PyTorch's vectorised approximation, sharing one exp
    between erf and the density in the gradient: values and gradients agree with torch's
    across the range, tails included, on the whole-array and the blocked (threaded) paths."""
    torch = oracle_torch()
    from glasstorch.backends.cpu import parallel
    from glasstorch.ops.nn.activation import gelu_backward
    x = np.concatenate([np.linspace(-12, 12, 4801), [0.0, -0.0, 1e-30, -1e-30]])
    x = x.astype(np.float32)
    g = np.random.default_rng(3).standard_normal(x.size).astype(np.float32)
    tx, tg = torch.from_numpy(x), torch.from_numpy(g)
    want_y = torch.nn.functional.gelu(tx)
    want_dx = torch.ops.aten.gelu_backward(tg, tx)
    for grain in (parallel.GRAIN, 1):
        monkeypatch.setattr(parallel, "GRAIN", grain)
        monkeypatch.setattr(parallel, "BLOCK", 1000 if grain == 1 else parallel.BLOCK)
        gx, gg = gt.from_numpy(x), gt.from_numpy(g)
        assert_same(GF.gelu(gx), want_y, rtol=1e-6, atol=1e-6)
        assert_same(gelu_backward(gg, gx), want_dx, rtol=2e-6, atol=2e-6)
        # a strided view and a broadcast gradient
        assert_same(gelu_backward(gt.ones(1).expand(x.size)[::3], gx[::3]),
                    torch.ops.aten.gelu_backward(torch.ones(1).expand(x.size)[::3], tx[::3]),
                    rtol=2e-6, atol=2e-6)


def test_backward_ops_gradcheck_on_non_contiguous_float64(kernel_path):
    """gelu_backward, threshold_backward and the softmax backward ops, differentiated
    through their own derivatives (double backward of the activations), on transposed
    float64 inputs."""
    from glasstorch.ops.nn.activation import gelu_backward, threshold_backward
    from glasstorch.ops.nn.loss import _log_softmax_backward_data, _softmax_backward_data
    g = gt.randn(5, 4, dtype=gt.float64).t().requires_grad_()
    x = (gt.randn(5, 4, dtype=gt.float64) * 2).t().requires_grad_()
    assert not g.is_contiguous() and not x.is_contiguous()
    for approximate in ("none", "tanh"):
        assert gradcheck(lambda a, b: gelu_backward(a, b, approximate=approximate), (g, x))
    x_away = (x.detach() + 0.5 * x.detach().sign()).requires_grad_()   # off the kink
    assert gradcheck(lambda a, b: threshold_backward(a, b, 0.0), (g, x_away))
    y = gt.softmax(x.detach(), 1).requires_grad_()
    assert gradcheck(lambda a, b: _softmax_backward_data(a, b, 1, gt.float64), (g, y))
    ly = gt.log_softmax(x.detach(), 1).requires_grad_()
    assert gradcheck(lambda a, b: _log_softmax_backward_data(a, b, 1, gt.float64), (g, ly))


@pytest.mark.parametrize("name", ["relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_blocked_kernels_write_outputs_directly(name, dtype):
    """Tensors of several kernel blocks (contiguous and a transposed view), whose formula
    writes the output block itself in the compute dtype (float16 goes through a float32
    temporary): forward and the fused backward match PyTorch's."""
    fn = ACT[name][0]
    a = rng.standard_normal((3, 70000)) * 3
    w = rng.standard_normal((3, 70000))
    tol = 1e-5 if dtype == "float32" else 2e-3
    for view in (lambda v: v, lambda v: v.t().contiguous().t()):
        g = view(gt.tensor(a).to(getattr(gt, dtype))).requires_grad_()
        t = view(torch.tensor(a).to(getattr(torch, dtype))).requires_grad_()
        yg, yt = fn(GF, gt, g), fn(TF, torch, t)
        assert_same(yg, yt, rtol=tol, atol=tol)
        yg.backward(gt.tensor(w).to(yg.dtype))
        yt.backward(torch.tensor(w).to(yt.dtype))
        assert_same(g.grad, t.grad, rtol=tol, atol=tol)
