"""Convolution, transposed convolution, unfold and fold against PyTorch: values, layouts,
gradients (first and second order) and errors."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glasstorch as gt
import glasstorch.nn.functional as GF
from oracle import assert_same, oracle_torch, to_torch

RNG = np.random.default_rng(1234)


def pair(shape, dtype="float32"):
    """The same random values as a glasstorch and a torch tensor."""
    torch = oracle_torch()
    a = RNG.standard_normal(shape).astype(dtype)
    return gt.tensor(a), torch.tensor(a)


def grads_match(gt_fn, torch_fn, shapes, atol=1e-10):
    """float64 gradients of sum(f * cos) for every input agree with torch's."""
    torch = oracle_torch()
    arrays = [RNG.standard_normal(s) for s in shapes]
    g_in = [gt.tensor(a, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    g_out, t_out = gt_fn(*g_in), torch_fn(*t_in)
    assert_same(g_out, t_out, rtol=1e-10, atol=atol)
    weights = np.cos(np.arange(t_out.numel())).reshape(tuple(t_out.shape))
    (g_out * gt.tensor(weights)).sum().backward()
    (t_out * torch.tensor(weights)).sum().backward()
    for g, t in zip(g_in, t_in):
        assert_same(g.grad, t.grad, rtol=1e-9, atol=atol, check_stride=False)


# ---- forward values -----------------------------------------------------------------------

CONFIGS = [  # stride, padding, dilation, groups, output_padding (transposed only)
    (1, 0, 1, 1, 0),
    (2, 1, 1, 1, 1),
    (1, 2, 2, 2, 1),
    (3, 1, 2, 3, 2),
    ((2, 1, 3), (0, 1, 2), (1, 2, 1), 1, (1, 0, 2)),
]


def _cut(v, nd):
    return v[:nd] if isinstance(v, tuple) else v


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("config", CONFIGS)
def test_conv_values(nd, config, kernel_path):
    torch = oracle_torch()
    s, p, d, g, _ = (_cut(v, nd) for v in config)
    x, tx = pair((2, 6) + (7, 6, 5)[:nd])
    w, tw = pair((6, 6 // g) + (3, 2, 3)[:nd])
    b, tb = pair((6,))
    out = getattr(gt, f"conv{nd}d")(x, w, b, s, p, d, g)
    assert_same(out, getattr(torch, f"conv{nd}d")(tx, tw, tb, s, p, d, g), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("config", CONFIGS)
def test_conv_transpose_values(nd, config, kernel_path):
    torch = oracle_torch()
    s, p, d, g, op = (_cut(v, nd) for v in config)
    x, tx = pair((2, 6) + (5, 4, 3)[:nd])
    w, tw = pair((6, 6 // g) + (3, 2, 3)[:nd])
    b, tb = pair((6,))
    fn = f"conv_transpose{nd}d"
    assert_same(getattr(GF, fn)(x, w, b, s, p, op, g, d),
                getattr(torch.nn.functional, fn)(tx, tw, tb, s, p, op, g, d),
                rtol=1e-4, atol=1e-4)


def test_convolution_op_and_param_broadcast():
    torch = oracle_torch()
    x, tx = pair((2, 3, 6, 6))
    w, tw = pair((4, 3, 3, 3))
    assert_same(gt.convolution(x, w, None, [2], [1], [1], False, [0], 1),
                torch.convolution(tx, tw, None, [2], [1], [1], False, [0], 1), rtol=1e-4,
                atol=1e-5)


def test_unbatched_noncontiguous_and_empty(kernel_path):
    torch = oracle_torch()
    x, tx = pair((3, 8, 9))
    w, tw = pair((4, 3, 3, 3))
    assert_same(gt.conv2d(x, w, padding=1), torch.conv2d(tx, tw, padding=1), rtol=1e-4,
                atol=1e-5)
    # a transposed, step-sliced, offset input
    x, tx = pair((2, 9, 3, 10))
    xs, txs = x.transpose(1, 2)[:, :, 1::2, ::2], tx.transpose(1, 2)[:, :, 1::2, ::2]
    assert_same(gt.conv2d(xs, w), torch.conv2d(txs, tw), rtol=1e-4, atol=1e-5)
    assert_same(gt.conv2d(x.transpose(1, 2)[:, :, 1::2, ::2], w, stride=2),
                torch.conv2d(txs, tw, stride=2), rtol=1e-4, atol=1e-5)
    # expanded (stride 0) weight
    we, twe = gt.ones(1, 3, 1, 1).expand(4, 3, 3, 3), torch.ones(1, 3, 1, 1).expand(4, 3, 3, 3)
    assert_same(gt.conv2d(xs, we), torch.conv2d(txs, twe), rtol=1e-4, atol=1e-4)
    # an empty batch
    e, te = pair((0, 3, 5, 5))
    assert_same(gt.conv2d(e, w), torch.conv2d(te, tw))
    x1, tx1 = pair((3, 5))
    w1, tw1 = pair((2, 3, 2))
    assert_same(GF.conv_transpose1d(x1, w1.transpose(0, 1).contiguous()),
                torch.nn.functional.conv_transpose1d(tx1, tw1.transpose(0, 1).contiguous()),
                rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kernel,dilation", [(3, 1), (4, 1), (4, 2), ((2, 5), (3, 1))])
def test_padding_strings(kernel, dilation):
    torch = oracle_torch()
    k = kernel if isinstance(kernel, tuple) else (kernel, kernel)
    x, tx = pair((2, 3, 7, 8))
    w, tw = pair((4, 3) + k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.conv2d(tx, tw, padding="same", dilation=dilation)
        actual = gt.conv2d(x, w, padding="same", dilation=dilation)
    assert_same(actual, expected, rtol=1e-4, atol=1e-5)
    assert_same(GF.conv2d(x, w, None, 1, "valid", dilation),
                torch.conv2d(tx, tw, None, 1, "valid", dilation), rtol=1e-4, atol=1e-5)


def test_same_padding_even_kernel_warns_and_differentiates():
    torch = oracle_torch()
    with pytest.warns(UserWarning, match="even kernel lengths"):
        gt.conv1d(gt.ones(1, 1, 5), gt.ones(1, 1, 4), padding="same")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grads_match(lambda x, w: gt.conv1d(x, w, padding="same"),
                    lambda x, w: torch.conv1d(x, w, padding="same"), [(2, 2, 6), (3, 2, 4)])


def test_channels_last_layouts(kernel_path):
    torch = oracle_torch()
    x, tx = pair((2, 3, 8, 8))
    w, tw = pair((4, 3, 3, 3))
    cl, tcl = gt.channels_last, torch.channels_last
    assert_same(gt.conv2d(x.contiguous(memory_format=cl), w),
                torch.conv2d(tx.contiguous(memory_format=tcl), tw), rtol=1e-4, atol=1e-5)
    assert_same(gt.conv2d(x, w.contiguous(memory_format=cl)),
                torch.conv2d(tx, tw.contiguous(memory_format=tcl)), rtol=1e-4, atol=1e-5)
    wt, twt = pair((3, 4, 3, 3))
    assert_same(GF.conv_transpose2d(x.contiguous(memory_format=cl), wt),
                torch.nn.functional.conv_transpose2d(tx.contiguous(memory_format=tcl), twt),
                rtol=1e-4, atol=1e-5)
    x5, tx5 = pair((2, 3, 5, 5, 5))
    w5, tw5 = pair((4, 3, 2, 2, 2))
    assert_same(gt.conv3d(x5.contiguous(memory_format=gt.channels_last_3d), w5),
                torch.conv3d(tx5.contiguous(memory_format=torch.channels_last_3d), tw5),
                rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int64"])
def test_dtypes(dtype, kernel_path):
    torch = oracle_torch()
    x = RNG.integers(-3, 4, (2, 3, 6, 6)).astype(np.float32)
    w = RNG.integers(-3, 4, (4, 3, 3, 3)).astype(np.float32)
    td = getattr(torch, dtype)
    gd = getattr(gt, dtype)
    out = gt.conv2d(gt.tensor(x).to(gd), gt.tensor(w).to(gd), stride=2, padding=1)
    assert_same(out, torch.conv2d(torch.tensor(x).to(td), torch.tensor(w).to(td), stride=2,
                                  padding=1))


def test_meta_device_and_out():
    torch = oracle_torch()
    x = gt.empty(2, 3, 8, 8, device="meta")
    w = gt.empty(6, 1, 3, 3, device="meta")
    out = gt.convolution(x, w, None, [2], [1], [1], False, [0], 3)
    assert out.device.type == "meta" and tuple(out.shape) == (2, 6, 4, 4)
    xa, tx = pair((2, 3, 5, 5))
    wa, tw = pair((2, 3, 3, 3))
    o = gt.empty(2, 2, 3, 3)
    gt.convolution(xa, wa, None, [1], [0], [1], False, [0], 1, out=o)
    assert_same(o, torch.convolution(tx, tw, None, [1], [0], [1], False, [0], 1), rtol=1e-4,
                atol=1e-5)


# ---- gradients ------------------------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("config", CONFIGS[1:4])
def test_conv_gradients_match_torch(nd, transposed, config, kernel_path):
    torch = oracle_torch()
    s, p, d, g, op = config
    sizes = (6, 5)[:nd]
    args = ([s] * nd, [p] * nd, [d] * nd, transposed, [op if transposed else 0] * nd, g)
    grads_match(lambda x, w, b: gt.convolution(x, w, b, *args),
                lambda x, w, b: torch.convolution(x, w, b, *args),
                [(2, 6) + sizes, (6, 6 // g) + (3,) * nd, (6,)])


@pytest.mark.parametrize("transposed", [False, True])
def test_conv_second_order_matches_torch(transposed, kernel_path):
    torch = oracle_torch()
    args = ([2, 1], [1, 0], [1, 2], transposed, [1, 0] if transposed else [0, 0], 2)
    arrays = [RNG.standard_normal(s) for s in [(2, 4, 5, 6), (4, 2, 3, 2), (4,)]]
    results = []
    for lib in (gt, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        y = lib.convolution(x, w, b, *args)
        gy = lib.tensor(np.sin(np.arange(y.numel())).reshape(tuple(y.shape)))
        gx, gw, gb = lib.autograd.grad(y, (x, w, b), gy, create_graph=True)
        (gx ** 2).sum().add((gw ** 3).sum()).backward()
        results.append((x.grad, w.grad))
    for a, e in zip(*results):
        assert_same(a, e, rtol=1e-9, atol=1e-9, check_stride=False)


def test_conv_gradcheck_and_node_names(kernel_path):
    x = gt.randn(1, 2, 5, 4, dtype=gt.float64, requires_grad=True)
    w = gt.randn(4, 1, 3, 2, dtype=gt.float64, requires_grad=True)
    b = gt.randn(4, dtype=gt.float64, requires_grad=True)
    assert gt.autograd.gradcheck(lambda x, w, b: gt.conv2d(x, w, b, 2, 1, (1, 2), 2), (x, w, b))
    assert gt.autograd.gradgradcheck(lambda x, w: GF.conv_transpose2d(x, w, None, 2, 1, 1),
                                     (x[:, :, :3, :3].detach().requires_grad_(),
                                      w.detach()[:2].requires_grad_()))
    assert gt.conv2d(x, w, b, groups=2).grad_fn.name() == "ConvolutionBackward0"
    squeeze = gt.conv2d(x[0], w, groups=2).grad_fn      # unbatched: batched conv, squeezed
    assert squeeze.name().startswith("SqueezeBackward")
    assert squeeze.next_functions[0][0].name() == "ConvolutionBackward0"
    # only the inputs that need a gradient get one
    y = gt.conv2d(x.detach(), w, b, groups=2)
    y.sum().backward()
    assert w.grad is not None and b.grad is not None


# ---- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda m, F: F.conv2d(m.randn(2, 4, 10, 10), m.randn(8, 3, 3, 3)),
    lambda m, F: F.conv2d(m.randn(2, 3, 2, 2), m.randn(8, 3, 3, 3)),
    lambda m, F: F.conv1d(m.randn(2, 3, 2), m.randn(8, 3, 3)),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), stride=2, padding="same"),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), padding="foo"),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), padding=-1),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), stride=0),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), dilation=0),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), groups=0),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), groups=2),
    lambda m, F: F.conv2d(m.randn(2, 4, 5, 5), m.randn(9, 2, 3, 3), groups=2),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(0, 3, 3, 3)),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), m.randn(7)),
    lambda m, F: F.conv2d(m.randn(5, 5), m.randn(8, 3, 3, 3)),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), stride=(1, 1, 1)),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5).double(), m.randn(8, 3, 3, 3)),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5), m.randn(8, 3, 3, 3), m.randn(8).double()),
    lambda m, F: F.conv2d(m.randn(2, 3, 5, 5).long(), m.randn(8, 3, 3, 3)),
    lambda m, F: F.conv_transpose2d(m.randn(2, 3, 5, 5), m.randn(3, 4, 3, 3), output_padding=1),
    lambda m, F: F.conv_transpose1d(m.randn(2, 3, 5), m.randn(3, 4, 3), output_padding=1),
    lambda m, F: F.conv_transpose3d(m.randn(1, 3, 2, 2, 2), m.randn(3, 4, 1, 1, 1), stride=2,
                                    output_padding=2),
    lambda m, F: F.conv_transpose2d(m.randn(2, 4, 5, 5), m.randn(3, 4, 3, 3)),
    lambda m, F: F.conv_transpose2d(m.randn(2, 3, 1, 1).double(), m.randn(3, 4, 3, 3).double(),
                                    padding=2),
    lambda m, F: m.convolution(m.randn(3, 5, 5), m.randn(8, 3, 3, 3), None, [1, 1], [0, 0],
                               [1, 1], False, [0, 0], 1),
    lambda m, F: F.unfold(m.randn(2, 3, 5, 5), 6),
    lambda m, F: F.unfold(m.randn(2, 3, 5, 5), 0),
    lambda m, F: F.unfold(m.randn(2, 3, 5, 5), 2, padding=-1),
    lambda m, F: F.unfold(m.randn(2, 0, 5, 5), 2),
    lambda m, F: F.unfold(m.randn(2, 3, 5, 5), (2, 2, 2)),
    lambda m, F: F.fold(m.randn(2, 12, 15), (5, 5), 2),
    lambda m, F: F.fold(m.randn(2, 13, 16), (5, 5), 2),
    lambda m, F: F.fold(m.randn(2, 3, 12, 4), (5, 5), 2, stride=2),
])
def test_errors_match_torch(call):
    torch = oracle_torch()
    with pytest.raises(Exception) as expected:
        call(torch, torch.nn.functional)
    with pytest.raises(type(expected.value)) as actual:
        call(gt, GF)
    assert str(actual.value) == str(expected.value)


# ---- unfold / fold ---------------------------------------------------------------------------

FOLD_ARGS = [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1,
                                       stride=(2, 1))]


@pytest.mark.parametrize("args", FOLD_ARGS)
def test_unfold_fold_values(args, kernel_path):
    torch = oracle_torch()
    F = torch.nn.functional
    x, tx = pair((2, 3, 7, 6))
    assert_same(GF.unfold(x, **args), F.unfold(tx, **args))
    assert_same(GF.unfold(x[0], **args), F.unfold(tx[0], **args))
    assert_same(GF.unfold(x.transpose(2, 3), **args), F.unfold(tx.transpose(2, 3), **args))
    cols, tcols = GF.unfold(x, **args), F.unfold(tx, **args)
    assert_same(GF.fold(cols, (7, 6), **args), F.fold(tcols, (7, 6), **args), atol=1e-5)
    assert_same(GF.fold(cols[0], (7, 6), **args), F.fold(tcols[0], (7, 6), **args), atol=1e-5)
    h = gt.tensor(np.arange(-5, 7).reshape(1, 3, 4)).half()
    assert_same(GF.unfold(h, 2), F.unfold(to_torch(h), 2))
    e, te = pair((0, 3, 5, 5))
    assert_same(GF.unfold(e, 2), F.unfold(te, 2))


@pytest.mark.parametrize("args", FOLD_ARGS)
def test_unfold_fold_gradients(args, kernel_path):
    torch = oracle_torch()
    F = torch.nn.functional
    grads_match(lambda x: GF.unfold(x, **args), lambda x: F.unfold(x, **args), [(2, 2, 6, 5)])
    n_cols = F.unfold(torch.zeros(1, 2, 6, 5), **args).shape
    grads_match(lambda c: GF.fold(c, (6, 5), **args), lambda c: F.fold(c, (6, 5), **args),
                [(2,) + tuple(n_cols[1:])])
    x = gt.randn(1, 2, 5, 4, dtype=gt.float64, requires_grad=True)
    assert gt.autograd.gradgradcheck(lambda t: GF.fold(GF.unfold(t, **args) ** 2, (5, 4),
                                                       **args), (x,))
    assert GF.unfold(x, 2).grad_fn.name() == "Im2ColBackward0"
    assert GF.fold(GF.unfold(x, 2), (5, 4), 2).grad_fn.name() == "Col2ImBackward0"


@pytest.mark.parametrize("transposed", [False, True])
def test_complex_values_and_gradients(transposed):
    torch = oracle_torch()
    F = torch.nn.functional

    def cplx(shape):
        return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
    arrays = [cplx((1, 2, 5, 5)), cplx((2, 3, 3, 3) if transposed else (3, 2, 3, 3)), cplx(3)]
    results = []
    for lib, fn in ((gt, GF), (torch, F)):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        y = fn.conv_transpose2d(x, w, b, 2, 1, 1) if transposed else fn.conv2d(x, w, b, 2, 1)
        (y.abs() ** 2).sum().backward()
        results.append((y, x.grad, w.grad, b.grad))
    for a, e in zip(*results):
        assert_same(a, e, rtol=1e-10, atol=1e-10, check_stride=False)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_convolutions_match_torch(data):
    """Random 2-d geometries (with groups, dilation, transposition) agree with torch."""
    torch = oracle_torch()
    draw = data.draw
    transposed = draw(st.booleans())
    groups = draw(st.integers(1, 3))
    stride = [draw(st.integers(1, 3)) for _ in range(2)]
    dilation = [draw(st.integers(1, 2)) for _ in range(2)]
    kernel = [draw(st.integers(1, 3)) for _ in range(2)]
    padding = [draw(st.integers(0, 2)) for _ in range(2)]
    sizes = [draw(st.integers(1, 7)) for _ in range(2)]
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    if transposed:
        output_padding = [draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation)]
        w_shape = (c_in, c_out // groups)
    else:
        output_padding = [0, 0]
        w_shape = (c_out, c_in // groups)
    x, tx = pair((draw(st.integers(1, 2)), c_in) + tuple(sizes), "float64")
    w, tw = pair(w_shape + tuple(kernel), "float64")
    args = (stride, padding, dilation, transposed, output_padding, groups)
    try:
        expected = torch.convolution(tx, tw, None, *args)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as actual:
            gt.convolution(x, w, None, *args)
        assert str(actual.value) == str(e)
        return
    assert_same(gt.convolution(x, w, None, *args), expected, rtol=1e-10, atol=1e-10)


# ---- convolution_backward and the blocked kernels -------------------------------------------

BACKWARD_CASES = [  # input shape, weight shape, stride, padding, dilation, transposed, out_pad, g
    ((3, 4, 7, 6), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), False, (0, 0), 2),
    ((2, 4, 5, 5), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1), True, (1, 0), 1),
    ((2, 6, 4, 5), (6, 1, 2, 3), (1, 2), (0, 1), (2, 1), True, (1, 1), 3),
    ((3, 2, 9), (5, 2, 4), (3,), (2,), (1,), False, (0,), 1),
]


@pytest.mark.parametrize("case", BACKWARD_CASES)
@pytest.mark.parametrize("mask", [(True, True, True), (True, False, False), (False, True, True)])
def test_convolution_backward_op_matches_torch(case, mask, kernel_path):
    """aten::convolution_backward: every requested gradient, None for the others."""
    torch = oracle_torch()
    xs, ws, s, p, d, transposed, op, g = case
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    y = torch.convolution(torch.tensor(x), torch.tensor(w), None, s, p, d, transposed, op, g)
    gy = RNG.standard_normal(tuple(y.shape))
    bias = [y.shape[1]]
    expected = torch.ops.aten.convolution_backward(torch.tensor(gy), torch.tensor(x),
                                                   torch.tensor(w), bias, s, p, d,
                                                   transposed, op, g, list(mask))
    got = gt.ops.nn.convolution.convolution_backward(gt.tensor(gy), gt.tensor(x), gt.tensor(w),
                                                  bias, s, p, d, transposed, op, g, mask)
    for a, e in zip(got, expected):
        assert (a is None) == (e is None)
        if e is not None:
            assert_same(a, e, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("transposed", [False, True])
def test_blocked_batches_match_torch(monkeypatch, transposed, kernel_path):
    """Batches split into blocks of one sample give the same values and gradients."""
    torch = oracle_torch()
    monkeypatch.setattr(gt.backends.cpu.convolution, "_BLOCK_BYTES", 1)
    args = ([2, 1], [1, 1], [1, 2], transposed, [1, 0] if transposed else [0, 0], 2)
    grads_match(lambda x, w, b: gt.convolution(x, w, b, *args),
                lambda x, w, b: torch.convolution(x, w, b, *args),
                [(5, 4, 6, 7), (4, 2, 3, 2), (4,)])
    x, tx = pair((3, 4, 6, 5))
    w, tw = pair((4, 2, 3, 3))
    assert_same(gt.convolution(x, w, None, *args), torch.convolution(tx, tw, None, *args),
                rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("order", ["first", "last", "sample"])
@pytest.mark.parametrize("case", BACKWARD_CASES + [
    ((2, 3, 4, 3, 3), (4, 3, 2, 3, 2), (1, 2, 1), (1, 0, 1), (2, 1, 1), False, (0, 0, 0), 1),
    ((3, 6, 4, 4), (6, 2, 3, 3), (1, 1), (1, 1), (1, 1), True, (0, 0), 3)])
def test_every_position_layout_matches_torch(monkeypatch, case, order, kernel_path):
    """Each layout of the (positions x batch) axis, forced (the forward and transposed
    convolutions have no batch-last one, the latter no per-sample one), gives torch's values
    and gradients, on non-contiguous inputs (x channels-last, w strided)."""
    torch = oracle_torch()
    conv = gt.backends.cpu.convolution
    monkeypatch.setattr(conv, "batch_last_pays", lambda *a: order == "last")
    monkeypatch.setattr(conv, "backward_layout", lambda *a: order)
    monkeypatch.setattr(conv, "forward_layout", lambda *a: "first" if order == "last" else order)
    xs, ws, s, p, d, transposed, op, g = case
    args = (list(s), list(p), list(d), transposed, list(op), g)
    a = RNG.standard_normal((xs[0],) + xs[2:] + (xs[1],))
    x = gt.tensor(a, requires_grad=True).movedim(-1, 1)
    tx = torch.tensor(a, requires_grad=True).movedim(-1, 1)
    wa = RNG.standard_normal(ws[:-1] + (2 * ws[-1],))       # w: every other element
    w = gt.tensor(wa, requires_grad=True)[..., ::2]
    tw = torch.tensor(wa, requires_grad=True)[..., ::2]
    y, ty = gt.convolution(x, w, None, *args), torch.convolution(tx, tw, None, *args)
    assert_same(y, ty, rtol=1e-10, atol=1e-10, check_stride=False)
    gy = RNG.standard_normal(tuple(ty.shape))
    got = gt.autograd.grad(y, (x, w), gt.tensor(gy))
    expected = torch.autograd.grad(ty, (tx, tw), torch.tensor(gy))
    for a_, e in zip(got, expected):
        assert_same(a_, e, rtol=1e-10, atol=1e-10, check_stride=False)
    xc, wc = x.detach().requires_grad_(), w.detach().requires_grad_()
    assert not xc.is_contiguous() and not wc.is_contiguous()
    assert gt.autograd.gradcheck(lambda x, w: gt.convolution(x, w, None, *args), (xc, wc))


@pytest.mark.parametrize("transposed", [False, True])
def test_second_order_with_bias_gradcheck(transposed, kernel_path):
    """Double backward through convolution_backward, the bias gradient included."""
    x = gt.randn(2, 4, 5, 6, dtype=gt.float64, requires_grad=True)
    w = gt.randn(4, 2, 2, 3, dtype=gt.float64, requires_grad=True)
    b = gt.randn(4, dtype=gt.float64, requires_grad=True)     # 4 outputs either way
    args = ((2, 1), (1, 0), (1, 2), transposed, (1, 0) if transposed else (0, 0), 2)
    assert gt.autograd.gradgradcheck(lambda x, w, b: gt.convolution(x, w, b, *args),
                                     (x, w, b))
    gy = gt.randn(*gt.convolution(x, w, b, *args).shape, dtype=gt.float64)
    grads = gt.autograd.grad(gt.convolution(x, w, b, *args), (x, w, b), gy,
                             create_graph=True)
    assert grads[0].grad_fn.name() == "ConvolutionBackwardBackward0"


def test_half_precision_gradients_match_torch(kernel_path):
    torch = oracle_torch()
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in [(2, 3, 6, 6), (4, 3, 3, 3)]]
    results = []
    for lib in (gt, torch):
        x, w = (lib.tensor(a).to(lib.bfloat16).requires_grad_() for a in arrays)
        lib.nn.functional.conv2d(x, w, padding=1).sum().backward()
        results.append((x.grad, w.grad))
    for a, e in zip(*results):
        assert_same(a, e, rtol=2e-2, atol=5e-2, check_stride=False)


@pytest.mark.parametrize("transposed", [False, True])
def test_complex_second_order_matches_torch(transposed):
    torch = oracle_torch()
    shapes = [(1, 2, 5, 5), (2, 3, 3, 3) if transposed else (3, 2, 3, 3), (3,)]
    arrays = [RNG.standard_normal(s) + 1j * RNG.standard_normal(s) for s in shapes]
    results = []
    for lib in (gt, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        F = lib.nn.functional
        y = F.conv_transpose2d(x, w, b, 2, 1, 1) if transposed else F.conv2d(x, w, b, 2, 1)
        c = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)) * (1 + 0.5j))
        grads = lib.autograd.grad((y * c).real.sum() + (y * y).real.sum(), (x, w, b),
                                  create_graph=True)
        sum((t * t).real.sum() + (t * (0.3 - 1j)).real.sum() for t in grads).backward()
        results.append((x.grad, w.grad, b.grad))
    for a, e in zip(*results):
        assert_same(a, e, rtol=1e-9, atol=1e-9, check_stride=False)


@pytest.mark.parametrize("order", ["first", "last", "sample"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "float16"])
def test_columns_row_copies_match_element_copies(monkeypatch, order, dtype, kernel_path):
    """columns() copying whole rows as void elements (copy_rows) gives the element-wise
    copy's values, for contiguous and strided inputs, unit and larger strides, 1-3 dims."""
    conv = gt.backends.cpu.convolution
    cases = [((4, 3, 9, 7), (3, 2), (1, 1), (1, 2), (1, 0)),
             ((2, 2, 8, 9), (2, 3), (2, 1), (1, 2), (0, 2)),
             ((2, 3, 6, 6), (3, 3), (1, 2), (1, 1), (1, 1)),
             ((3, 2, 10), (3,), (1,), (2,), (1,)),
             ((2, 2, 5, 6, 7), (2, 2, 3), (1, 2, 1), (1, 1, 1), (1, 0, 1))]
    for shape, k, s, d, p in cases:
        a = RNG.standard_normal(shape).astype(dtype)
        out = tuple((n + 2 * pi - di * (ki - 1) - 1) // si + 1
                    for n, ki, si, di, pi in zip(shape[2:], k, s, d, p))
        for x in (a, np.asfortranarray(a), a[:, ::-1]):
            got = conv.columns(x, k, s, d, p, out, order)
            with monkeypatch.context() as m:
                m.setattr(conv, "copy_rows",
                          lambda cols, base, win, perm: np.copyto(cols, win.transpose(perm)))
                expected = conv.columns(x, k, s, d, p, out, order)
            assert got.shape == expected.shape
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int16", "bool"])
def test_pad_array_matches_numpy_pad(dtype):
    """pad_array (rows copied as void elements where contiguous) equals np.pad, for
    contiguous and strided inputs and an empty one."""
    pad_array = gt.backends.cpu.convolution.pad_array
    a = (RNG.standard_normal((3, 4, 5, 6)) * 3).astype(dtype)
    cases = ((a, (1, 2)), (a, (0, 3)), (a[:, :, ::2], (2, 1)), (a.transpose(0, 1, 3, 2), (1, 1)),
             (a[..., :1], (1, 0, 2)), (a[:0], (1, 1)))
    for x, padding in cases:
        widths = [(0, 0)] * (x.ndim - len(padding)) + [(p, p) for p in padding]
        np.testing.assert_array_equal(pad_array(x, padding, 7),
                                      np.pad(x, widths, constant_values=7))


@pytest.mark.parametrize("transposed", [False, True])
def test_blocks_shared_by_the_pool_match_torch(monkeypatch, transposed, kernel_path):
    """Blocks of one sample spread over two pool threads (BLAS on one thread in each) give
    torch's values and gradients, and leave BLAS's thread count as it was."""
    from glasstorch.backends.cpu import blas_threads, parallel
    torch = oracle_torch()
    conv = gt.backends.cpu.convolution
    monkeypatch.setattr(conv, "_BLOCK_BYTES", 1)
    monkeypatch.setattr(conv, "ONE_THREAD_MNK", 0)
    calls = []
    real = parallel.parallel_tasks
    monkeypatch.setattr(parallel, "parallel_tasks",
                        lambda n, fn, work: calls.append(n) or real(n, fn, work))
    before = gt.get_num_threads()
    gt.set_num_threads(2)
    try:
        args = ([2, 1], [1, 1], [1, 2], transposed, [1, 0] if transposed else [0, 0], 2)
        grads_match(lambda x, w, b: gt.convolution(x, w, b, *args),
                    lambda x, w, b: torch.convolution(x, w, b, *args),
                    [(5, 4, 6, 7), (4, 2, 3, 2), (4,)])
        assert calls and all(n >= 2 for n in calls)
        if blas_threads.get_blas_threads() is not None:
            assert blas_threads.get_blas_threads() == 2
    finally:
        gt.set_num_threads(before)
