"""Max, average, adaptive, unpooling and power-average pools against PyTorch: values,
indices, layouts, gradients (first and second order) and errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glasstorch as gt
import glasstorch.nn.functional as GF
from oracle import assert_same, oracle_torch

RNG = np.random.default_rng(4321)


def pair(shape, dtype="float32"):
    torch = oracle_torch()
    a = RNG.standard_normal(shape).astype(dtype)
    return gt.tensor(a), torch.tensor(a)


def same(actual, expected, **kw):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, **kw)
    else:
        assert_same(actual, expected, **kw)


def compare(name, shape, *args, dtype="float32", **kwargs):
    torch = oracle_torch()
    x, tx = pair(shape, dtype)
    same(getattr(GF, name)(x, *args, **kwargs),
         getattr(torch.nn.functional, name)(tx, *args, **kwargs), rtol=1e-5, atol=1e-5)


def grads_match(gt_fn, torch_fn, shape):
    """float64 gradients of sum(f * cos) agree with torch's; the input has distinct values
    so that max pools have one maximum per window."""
    torch = oracle_torch()
    a = RNG.permutation(math.prod(shape)).reshape(shape) / 7.0
    g, t = gt.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    go, to = gt_fn(g), torch_fn(t)
    assert_same(go, to, rtol=1e-10, atol=1e-10)
    w = np.cos(np.arange(to.numel())).reshape(tuple(to.shape))
    (go * gt.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    assert_same(g.grad, t.grad, rtol=1e-10, atol=1e-10, check_stride=False)
    if to.grad_fn.name().startswith("Squeeze"):      # 1-d pools: a 2-d pool, squeezed
        assert go.grad_fn.name().startswith("Squeeze")
    else:
        assert go.grad_fn.name() == to.grad_fn.name()


# ---- max pooling -------------------------------------------------------------------------

MAX_CONFIGS = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),
    (3, 2, 1, 1, True),
    (3, 2, 1, 2, False),
    ((2, 3, 2), (1, 2, 3), (1, 1, 0), (2, 1, 1), True),
]


def _cut(v, nd):
    return v[:nd] if isinstance(v, tuple) else v


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("config", MAX_CONFIGS)
def test_max_pool_values_and_indices(nd, config, kernel_path):
    k, s, p, d, ceil = (_cut(v, nd) for v in config)
    shape = (2, 3) + (9, 8, 7)[:nd]
    compare(f"max_pool{nd}d", shape, k, s, p, d, ceil, True)
    compare(f"max_pool{nd}d", shape[1:], k, s, p, d, ceil, False)     # unbatched


def test_max_pool_special_values_and_dtypes(kernel_path):
    torch = oracle_torch()
    a = np.array([[[[1.0, np.nan, 3.0, -np.inf], [np.nan, 2.0, -np.inf, -np.inf],
                    [0.0, 0.0, 5.0, 5.0], [0.0, 0.0, 5.0, 5.0]]]], dtype=np.float32)
    same(GF.max_pool2d(gt.tensor(a), 2, return_indices=True),
         torch.nn.functional.max_pool2d(torch.tensor(a), 2, return_indices=True))
    same(GF.max_pool2d(gt.tensor(a), 3, 2, 1, return_indices=True),
         torch.nn.functional.max_pool2d(torch.tensor(a), 3, 2, 1, return_indices=True))
    for dtype in ("float16", "bfloat16", "int64", "float64"):
        x = RNG.integers(-50, 50, (2, 3, 6, 5))
        g = gt.tensor(x).to(getattr(gt, dtype))
        t = torch.tensor(x).to(getattr(torch, dtype))
        same(GF.max_pool2d(g, 2, 1, 1, return_indices=True),
             torch.nn.functional.max_pool2d(t, 2, 1, 1, return_indices=True))


def test_pool_layouts(kernel_path):
    torch = oracle_torch()
    F = torch.nn.functional
    x, tx = pair((2, 3, 8, 8))
    xc, txc = x.contiguous(memory_format=gt.channels_last), tx.contiguous(
        memory_format=torch.channels_last)
    same(GF.max_pool2d(xc, 2, return_indices=True), F.max_pool2d(txc, 2, return_indices=True))
    same(GF.avg_pool2d(xc, 3, 2, 1), F.avg_pool2d(txc, 3, 2, 1), rtol=1e-5)
    same(GF.adaptive_avg_pool2d(xc, 3), F.adaptive_avg_pool2d(txc, 3), rtol=1e-5)
    same(GF.adaptive_max_pool2d(xc, 3, True), F.adaptive_max_pool2d(txc, 3, True))
    v, i = GF.max_pool2d(xc, 2, return_indices=True)
    tv, ti = F.max_pool2d(txc, 2, return_indices=True)
    same(GF.max_unpool2d(v, i, 2), F.max_unpool2d(tv, ti, 2))
    x5, tx5 = pair((2, 3, 4, 4, 4))
    cl3, tcl3 = gt.channels_last_3d, torch.channels_last_3d
    x5, tx5 = x5.contiguous(memory_format=cl3), tx5.contiguous(memory_format=tcl3)
    same(GF.max_pool3d(x5, 2), F.max_pool3d(tx5, 2))
    same(GF.avg_pool3d(x5, 2), F.avg_pool3d(tx5, 2), rtol=1e-5)
    same(GF.adaptive_avg_pool3d(x5, 3), F.adaptive_avg_pool3d(tx5, 3), rtol=1e-5)
    # non-contiguous (transposed, stepped) and empty-batch inputs
    y, ty = pair((2, 9, 3, 10))
    y, ty = y.transpose(1, 2)[..., 1::2, ::2], ty.transpose(1, 2)[..., 1::2, ::2]
    same(GF.max_pool2d(y, 2, 1, return_indices=True), F.max_pool2d(ty, 2, 1,
                                                                    return_indices=True))
    same(GF.avg_pool2d(y, 2, 1, 1), F.avg_pool2d(ty, 2, 1, 1), rtol=1e-5)
    e, te = pair((0, 3, 6, 6))
    same(GF.max_pool2d(e, 2, return_indices=True), F.max_pool2d(te, 2, return_indices=True))
    same(GF.avg_pool2d(e, 2), F.avg_pool2d(te, 2))


# ---- average pooling -----------------------------------------------------------------------

AVG_CONFIGS = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (2, None, 0, False, True, None),
    (3, 2, 1, True, True, None),
    (3, 2, 1, True, False, None),
    ((2, 3, 3), (1, 2, 3), (1, 1, 0), False, False, 5),
]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("config", AVG_CONFIGS)
def test_avg_pool_values(nd, config):
    k, s, p, ceil, cip, div = (_cut(v, nd) for v in config)
    shape = (2, 3) + (9, 8, 7)[:nd]
    extra = () if nd == 1 else (div,)
    compare(f"avg_pool{nd}d", shape, k, s, p, ceil, cip, *extra)
    compare(f"avg_pool{nd}d", shape[1:], k, s, p, ceil, cip, *extra)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64"])
def test_avg_pool_dtypes(dtype):
    torch = oracle_torch()
    x = RNG.integers(-50, 50, (2, 3, 7, 6))
    g, t = gt.tensor(x).to(getattr(gt, dtype)), torch.tensor(x).to(getattr(torch, dtype))
    same(GF.avg_pool2d(g, 3, 2, 1, True, False), torch.nn.functional.avg_pool2d(
        t, 3, 2, 1, True, False))
    same(GF.avg_pool2d(g, 2, divisor_override=-3), torch.nn.functional.avg_pool2d(
        t, 2, divisor_override=-3))
    if dtype != "int64":
        same(GF.adaptive_avg_pool2d(g, (3, 4)), torch.nn.functional.adaptive_avg_pool2d(
            t, (3, 4)))


# ---- adaptive pooling ----------------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("size", [1, 3, (4, 5, 2), (9, 8, 7), (5, None, 2)])
def test_adaptive_pools(nd, size):
    if nd == 1 and size is not None and isinstance(size, tuple) and None in size:
        return
    size = size[:nd] if isinstance(size, tuple) else size
    if nd == 1 and isinstance(size, tuple):
        size = size[0]
    shape = (2, 3) + (9, 8, 7)[:nd]
    compare(f"adaptive_avg_pool{nd}d", shape, size)
    compare(f"adaptive_max_pool{nd}d", shape, size, True)
    compare(f"adaptive_max_pool{nd}d", shape[1:], size, False)


def test_adaptive_output_zero_and_one():
    torch = oracle_torch()
    x, tx = pair((2, 3, 5, 4))
    same(GF.adaptive_avg_pool2d(x, (0, 3)), torch.nn.functional.adaptive_avg_pool2d(tx, (0, 3)))
    g = gt.tensor(RNG.standard_normal((2, 3, 5, 4)), requires_grad=True)
    assert GF.adaptive_avg_pool2d(g, 1).grad_fn.name() == "MeanBackward1"


# ---- max unpooling and lp pooling ----------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool(nd, kernel_path):
    torch = oracle_torch()
    F = torch.nn.functional
    shape = (2, 3) + (6, 4, 6)[:nd]
    x, tx = pair(shape)
    v, i = getattr(GF, f"max_pool{nd}d")(x, 2, return_indices=True)
    tv, ti = getattr(F, f"max_pool{nd}d")(tx, 2, return_indices=True)
    unpool, t_unpool = getattr(GF, f"max_unpool{nd}d"), getattr(F, f"max_unpool{nd}d")
    same(unpool(v, i, 2), t_unpool(tv, ti, 2))
    big = tuple(n + 1 for n in shape[2:])
    same(unpool(v, i, 2, output_size=big), t_unpool(tv, ti, 2, output_size=big))
    same(unpool(v, i, 2, output_size=shape), t_unpool(tv, ti, 2, output_size=shape))


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("norm", [2, 1.5, math.inf])
def test_lp_pool(nd, norm):
    torch = oracle_torch()
    x = np.abs(RNG.standard_normal((2, 3) + (6, 5, 4)[:nd])) + 0.1
    args = (norm, 2, 1, True) if nd == 1 else (norm, 2)
    same(getattr(GF, f"lp_pool{nd}d")(gt.tensor(x), *args),
         getattr(torch.nn.functional, f"lp_pool{nd}d")(torch.tensor(x), *args), rtol=1e-10)
    grads_match(lambda t: getattr(GF, f"lp_pool{nd}d")(t, *args),
                lambda t: getattr(torch.nn.functional, f"lp_pool{nd}d")(t, *args),
                (1, 2) + (6, 5, 4)[:nd])


# ---- gradients -----------------------------------------------------------------------------

GRAD_CASES = [
    ("max_pool1d", (3, 2, 1, 1, True)),
    ("max_pool2d", (3, 2, 1, 2, True)),
    ("max_pool2d", ((2, 3), 1, (1, 0), 1, False)),
    ("max_pool3d", (2, (1, 2, 2), 1, 1, True)),
    ("avg_pool1d", (3, 2, 1, True, False)),
    ("avg_pool2d", (3, 2, 1, True, True)),
    ("avg_pool2d", ((2, 3), 1, (1, 0), False, False, 3)),
    ("avg_pool3d", (2, (1, 2, 2), 1, True, False)),
    ("adaptive_avg_pool1d", (4,)),
    ("adaptive_avg_pool2d", ((3, 4),)),
    ("adaptive_avg_pool3d", ((2, 3, 2),)),
    ("adaptive_max_pool1d", (4,)),
    ("adaptive_max_pool2d", ((3, 4),)),
    ("adaptive_max_pool3d", ((2, 3, 2),)),
]


@pytest.mark.parametrize("name,args", GRAD_CASES)
def test_gradients_match_torch(name, args, kernel_path):
    torch = oracle_torch()
    nd = int(name[-2])
    shape = (2, 2) + (7, 6, 5)[:nd]
    grads_match(lambda t: getattr(GF, name)(t, *args),
                lambda t: getattr(torch.nn.functional, name)(t, *args), shape)


@pytest.mark.parametrize("name,args", [GRAD_CASES[i] for i in (1, 5, 9, 12)])
def test_gradcheck_and_double_backward(name, args, kernel_path):
    a = RNG.permutation(60).reshape(1, 2, 6, 5) / 9.0
    x = gt.tensor(a, requires_grad=True)
    fn = getattr(GF, name)
    assert gt.autograd.gradcheck(lambda t: fn(t, *args), (x,))
    assert gt.autograd.gradgradcheck(lambda t: fn(t, *args), (x,))


def test_max_unpool_gradients(kernel_path):
    torch = oracle_torch()
    F = torch.nn.functional
    x, tx = pair((2, 2, 6, 4), "float64")
    _, i = GF.max_pool2d(x, 2, return_indices=True)
    _, ti = F.max_pool2d(tx, 2, return_indices=True)
    grads_match(lambda t: GF.max_unpool2d(t, i, 2), lambda t: F.max_unpool2d(t, ti, 2),
                (2, 2, 3, 2))
    y = gt.tensor(RNG.standard_normal((2, 2, 3, 2)), requires_grad=True)
    assert gt.autograd.gradgradcheck(lambda t: GF.max_unpool2d(t, i, 2) ** 2, (y,))


# ---- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5), 3, padding=2),
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5), 2, stride=0),
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5), 0),
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5), 6),
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5), 2, dilation=0),
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5), 2, padding=-1),
    lambda m, F: F.max_pool2d(m.randn(2, 0, 5, 5), 2),
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5), (2, 2, 2)),
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5), 2, stride=(1, 1, 1)),
    lambda m, F: F.max_pool2d(m.randn(2, 3, 5, 5).bool(), 2),
    lambda m, F: F.max_pool3d(m.randn(2, 3, 5, 5, 5), 2, dilation=0),
    lambda m, F: F.max_pool3d(m.randn(5, 5, 5), 2),
    lambda m, F: F.max_pool1d(m.randn(2, 3, 5), 0),
    lambda m, F: F.max_pool1d(m.randn(2, 3, 5), 2, padding=2),
    lambda m, F: F.max_pool1d(m.randn(2, 3, 5), (2, 2)),
    lambda m, F: F.max_pool1d(m.randn(5), 2),
    lambda m, F: F.max_pool1d(m.randn(2, 3, 5), 6, return_indices=True),
    lambda m, F: F.avg_pool2d(m.randn(2, 3, 5, 5), 3, padding=2),
    lambda m, F: F.avg_pool2d(m.randn(2, 3, 5, 5), 6),
    lambda m, F: F.avg_pool2d(m.randn(2, 3, 5, 5), 2, divisor_override=0),
    lambda m, F: F.avg_pool1d(m.randn(5), 2),
    lambda m, F: F.avg_pool1d(m.randn(2, 3, 5), (2, 2)),
    lambda m, F: F.adaptive_avg_pool2d(m.randn(2, 3, 5, 5), (3, 3, 3)),
    lambda m, F: F.adaptive_avg_pool2d(m.randn(2, 3, 0, 5), (3, 3)),
    lambda m, F: F.adaptive_avg_pool2d(m.randn(5), 2),
    lambda m, F: F.adaptive_avg_pool2d(m.randn(2, 3, 5, 5).long(), 2),
    lambda m, F: F.adaptive_max_pool2d(m.randn(2, 3, 0, 5), (3, 3)),
    lambda m, F: F.adaptive_max_pool2d(m.randn(5), 2),
    lambda m, F: F.adaptive_avg_pool1d(m.randn(5), 2),
    lambda m, F: F.adaptive_avg_pool1d(m.randn(2, 3, 5), (3, 3)),
    lambda m, F: F.max_unpool2d(*F.max_pool2d(m.randn(2, 3, 6, 6), 2, return_indices=True), 2,
                                output_size=(9, 9)),
    lambda m, F: F.max_unpool2d(*F.max_pool2d(m.randn(2, 3, 6, 6), 2, return_indices=True), 2,
                                output_size=(1, 6, 6)),
    # increasing values: every window's maximum is its last element, so index 7 lands
    # outside the 7-long output in both libraries (random inputs could miss it)
    lambda m, F: F.max_unpool1d(*F.max_pool1d(m.arange(48.).reshape(2, 3, 8), 2,
                                              return_indices=True), 1, stride=2),
    lambda m, F: F.max_unpool2d(m.randn(2, 3, 3, 3), m.zeros(2, 3, 3, 3), 2),
    lambda m, F: F.max_unpool2d(m.randn(2, 3, 3, 3), m.zeros(2, 3, 2, 3).long(), 2),
    lambda m, F: F.max_unpool2d(m.randn(3, 3), m.zeros(3, 3).long(), 2),
])
def test_errors_match_torch(call):
    torch = oracle_torch()
    with pytest.raises(Exception) as expected:
        call(torch, torch.nn.functional)
    with pytest.raises(type(expected.value)) as actual:
        call(gt, GF)
    assert str(actual.value) == str(expected.value)


def test_unpool_index_out_of_range():
    with pytest.raises(RuntimeError, match="Found an invalid max index: 40"):
        GF.max_unpool2d(gt.ones(1, 1, 2, 2), gt.full((1, 1, 2, 2), 40), 2)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_pools_match_torch(data):
    """Random 2-d max/avg geometries (ceil_mode, padding, dilation) agree with torch,
    errors included."""
    torch = oracle_torch()
    draw = data.draw
    kernel = [draw(st.integers(1, 4)) for _ in range(2)]
    stride = [draw(st.integers(1, 3)) for _ in range(2)]
    padding = [draw(st.integers(0, 2)) for _ in range(2)]
    dilation = [draw(st.integers(1, 2)) for _ in range(2)]
    ceil_mode, cip = draw(st.booleans()), draw(st.booleans())
    shape = (draw(st.integers(1, 2)), 2) + tuple(draw(st.integers(1, 8)) for _ in range(2))
    a = RNG.permutation(math.prod(shape)).reshape(shape).astype(np.float64)
    calls = [("max_pool2d", (kernel, stride, padding, dilation, ceil_mode, True)),
             ("avg_pool2d", (kernel, stride, padding, ceil_mode, cip))]
    for name, args in calls:
        try:
            expected = getattr(torch.nn.functional, name)(torch.tensor(a), *args)
        except RuntimeError as e:
            with pytest.raises(RuntimeError) as actual:
                getattr(GF, name)(gt.tensor(a), *args)
            assert str(actual.value) == str(e)
            continue
        same(getattr(GF, name)(gt.tensor(a), *args), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda F, t: F.max_pool2d(t, 2), lambda F, t: F.avg_pool2d(t, 2),
    lambda F, t: F.adaptive_max_pool2d(t, 2), lambda F, t: F.adaptive_avg_pool2d(t, 3),
    lambda F, t: F.max_pool3d(t[..., None], (2, 2, 1)),
])
def test_empty_batch_forward_and_backward(fn):
    torch = oracle_torch()
    x, tx = gt.zeros(0, 3, 4, 4, requires_grad=True), torch.zeros(0, 3, 4, 4, requires_grad=True)
    y, ty = fn(GF, x), fn(torch.nn.functional, tx)
    assert_same(y, ty)
    y.sum().backward()
    ty.sum().backward()
    assert_same(x.grad, tx.grad)


def test_max_pool_many_kernel_positions_and_shared_maxima():
    """Kernels of more than 256 positions (a wider offset type), and overlapping windows
    whose maxima coincide: the gradient accumulates at the shared positions, as torch's."""
    torch = oracle_torch()
    x, tx = pair((2, 3, 20, 19))
    same(GF.max_pool2d(x, 17, 2, return_indices=True),
         torch.nn.functional.max_pool2d(tx, 17, 2, return_indices=True))
    a = RNG.integers(-3, 3, (2, 2, 7, 6)).astype(np.float64)
    results = []
    for lib in (gt, torch):
        t = lib.tensor(a, requires_grad=True)
        out = lib.nn.functional.max_pool2d(t, 3, 1, 1)
        (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum() \
            .backward()
        results.append((out, t.grad))
    for g, e in zip(*results):
        assert_same(g, e, rtol=1e-12, atol=1e-12)
