"""The C kernels of the CNN step (backends/cpu/native/pooling.c, convolution.c) against the
NumPy code they replace and against PyTorch: that they are used, give the same values and
indices bit for bit (odd geometry, NaN, ties, -inf, empty batches), threaded or not, and
that inputs they do not take fall back. The operators' own PyTorch-oracle tests run on both
paths through the `kernel_path` fixture."""
from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cpu import native
from oracle import assert_same, oracle_torch
from native_paths import both_paths, needs_compiler, spy_kernels, threaded_kernels

aten = gt.ops.aten


def _awkward(shape, dtype, seed=0):
    """Few distinct values (ties), NaNs and -infs, so that every rule of the window's
    maximum and index matters."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, shape).astype(dtype)
    a[rng.random(shape) < 0.05] = np.nan
    a[rng.random(shape) < 0.1] = -np.inf
    return a


def _pool(x, k, s, p, d, ceil):
    return [t.numpy() for t in aten.max_pool2d_with_indices(x, k, s, p, d, ceil)]


# kernel, stride, padding, dilation, ceil_mode: windows inside, overlapping, padded, dilated,
# hanging off the end (ceil_mode), 1x1, and a dilation that skips the padding
POOL_CONFIGS = [
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (1, 1), (1, 1), (1, 1), False),
    ((3, 2), (2, 1), (1, 1), (2, 1), True),
    ((2, 3), (3, 2), (1, 0), (1, 2), True),
    ((1, 1), (1, 1), (0, 0), (1, 1), False),
    ((1, 1), (2, 3), (0, 0), (1, 1), True),
    ((4, 4), (3, 3), (2, 2), (3, 3), True),
    ((5, 1), (1, 1), (2, 0), (1, 1), False),
]


@needs_compiler
def test_max_pool_uses_the_c_kernels(monkeypatch):
    calls = spy_kernels(monkeypatch)
    x = gt.randn(2, 3, 8, 8, requires_grad=True)
    y = gt.nn.functional.max_pool2d(x, 2)
    y.sum().backward()
    gt.nn.functional.max_pool2d(x.detach().double(), 3, 2, 1)
    gt.nn.functional.max_pool1d(gt.randn(2, 3, 9), 3)            # a 2-d pool of height 1
    gt.nn.functional.max_pool2d(x.detach().transpose(2, 3), 2)   # not C-contiguous: NumPy
    gt.nn.functional.max_pool2d(gt.ones(2, 3, 8, 8, dtype=gt.int64), 2)     # int64: NumPy
    gt.nn.functional.max_pool3d(gt.randn(2, 2, 4, 4, 4), 2)     # 3-d: NumPy
    assert calls == ["max_pool2d_f32", "max_pool_backward_f32", "max_pool2d_f64",
                     "max_pool2d_f32"]


@needs_compiler
@pytest.mark.parametrize("config", POOL_CONFIGS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_agrees_with_numpy_and_torch(config, dtype, monkeypatch):
    torch = oracle_torch()
    a = _awkward((2, 3, 11, 9), dtype)
    c, n = both_paths(lambda: _pool(gt.from_numpy(a), *config), monkeypatch)
    np.testing.assert_array_equal(c[0], n[0])
    np.testing.assert_array_equal(c[1], n[1])
    tv, ti = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(a), *config)
    np.testing.assert_array_equal(c[0], tv.numpy())
    np.testing.assert_array_equal(c[1], ti.numpy())


@needs_compiler
def test_max_pool_special_windows_match_torch(monkeypatch):
    """A NaN anywhere in a window wins (the last one), ties keep the first position, a
    window of -inf keeps its first position inside the plane, padding or not."""
    torch = oracle_torch()
    monkeypatch.setattr(native, "ENABLED", True)
    a = np.full((1, 1, 5, 6), -np.inf, np.float32)
    a[0, 0, 0, :2] = [np.nan, 1.0]          # NaN first in its window
    a[0, 0, 1, 2:4] = [np.nan, np.nan]      # two NaNs: the last wins
    a[0, 0, 2:4, 4:6] = 7.0                 # four ties
    a[0, 0, 4, 0] = np.nan                  # NaN in a window hanging off the end
    for config in [((2, 2), (2, 2), (0, 0), (1, 1), True),
                   ((3, 3), (2, 2), (1, 1), (1, 1), True),
                   ((2, 2), (1, 1), (1, 1), (2, 2), False)]:
        v, i = _pool(gt.from_numpy(a), *config)
        tv, ti = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(a), *config)
        np.testing.assert_array_equal(v, tv.numpy())
        np.testing.assert_array_equal(i, ti.numpy())


@needs_compiler
def test_max_pool_empty_batch_and_half(monkeypatch):
    torch = oracle_torch()
    monkeypatch.setattr(native, "ENABLED", True)
    e = gt.zeros(0, 3, 6, 6)
    v, i = aten.max_pool2d_with_indices(e, [2, 2], [2, 2])
    assert v.shape == i.shape == (0, 3, 3, 3)
    g = aten.max_pool2d_with_indices_backward(v, e, [2, 2], [2, 2], [0, 0], [1, 1], False, i)
    assert g.shape == (0, 3, 6, 6)
    a = _awkward((2, 2, 7, 7), np.float16)    # float16: pooled in float32 by the C kernel
    x, tx = gt.from_numpy(a), torch.from_numpy(a)
    for ours, theirs in zip(aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1]),
                            torch.ops.aten.max_pool2d_with_indices(tx, [3, 3], [2, 2], [1, 1])):
        assert_same(ours, theirs)


@needs_compiler
@pytest.mark.parametrize("config", POOL_CONFIGS[:4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_backward_agrees_with_numpy_and_torch(config, dtype, monkeypatch):
    """Overlapping windows send several gradients to one position: they add in output
    order on both paths (the same bits)."""
    torch = oracle_torch()
    a = _awkward((2, 3, 11, 9), dtype, seed=1)
    _, idx = aten.max_pool2d_with_indices(gt.from_numpy(a), *config)
    g = np.random.default_rng(2).standard_normal(tuple(idx.shape)).astype(dtype)
    args = (gt.from_numpy(g), gt.from_numpy(a), *config, idx)
    c, n = both_paths(lambda: aten.max_pool2d_with_indices_backward(*args).numpy(),
                       monkeypatch)
    np.testing.assert_array_equal(c, n)
    t = torch.ops.aten.max_pool2d_with_indices_backward(
        torch.from_numpy(g), torch.from_numpy(a), *config, torch.from_numpy(idx.numpy()))
    np.testing.assert_allclose(c, t.numpy(), rtol=1e-6 if dtype == np.float32 else 1e-14)


@needs_compiler
def test_max_pool_backward_with_an_index_outside_the_plane_runs_numpy(monkeypatch):
    """The C kernel checks every index and leaves one outside its plane to the NumPy
    path, whatever that does with it."""
    x = gt.randn(1, 2, 4, 4)
    _, idx = aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
    bad = idx.clone()
    bad[0, 1, 0, 0] = 16
    g = gt.randn(1, 2, 2, 2)
    args = (g, x, [2, 2], [2, 2], [0, 0], [1, 1], False)

    def run():
        try:
            return aten.max_pool2d_with_indices_backward(*args, bad).numpy()
        except Exception as e:          # noqa: BLE001 - the two paths' errors compared
            return type(e)
    c, n = both_paths(run, monkeypatch)
    if isinstance(n, np.ndarray):
        np.testing.assert_array_equal(c, n)
    else:
        assert c is n


@needs_compiler
def test_adaptive_max_pool_backward_uses_the_scatter_kernel(monkeypatch):
    torch = oracle_torch()
    calls = spy_kernels(monkeypatch)
    a = np.random.default_rng(3).standard_normal((2, 3, 7, 5))
    x, tx = gt.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    gt.nn.functional.adaptive_max_pool2d(x, (3, 2)).sum().backward()
    torch.nn.functional.adaptive_max_pool2d(tx, (3, 2)).sum().backward()
    assert "max_pool_backward_f64" in calls
    assert_same(x.grad, tx.grad)


@needs_compiler
def test_max_pool_results_do_not_depend_on_threads(monkeypatch):
    monkeypatch.setattr(native, "ENABLED", True)
    a = _awkward((4, 5, 13, 12), np.float32, seed=4)
    config = POOL_CONFIGS[2]
    serial = _pool(gt.from_numpy(a), *config)
    g = gt.from_numpy(np.random.default_rng(5).standard_normal(serial[0].shape)
                      .astype(np.float32))
    args = (g, gt.from_numpy(a), *config, gt.from_numpy(serial[1]))
    grad = aten.max_pool2d_with_indices_backward(*args).numpy()
    with threaded_kernels(monkeypatch):
        assert native.threads(a.size) == 3
        for want, got in zip(serial, _pool(gt.from_numpy(a), *config)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(aten.max_pool2d_with_indices_backward(*args).numpy(),
                                      grad)


@pytest.mark.parametrize("enabled", [True, False])
def test_max_pool_gradcheck_float64(enabled, monkeypatch):
    monkeypatch.setattr(native, "ENABLED", enabled)
    a = np.random.default_rng(6).permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) / 11.0
    x = gt.tensor(a, requires_grad=True)
    for k, s, p, d, ceil in POOL_CONFIGS[:4]:
        assert gt.autograd.gradcheck(
            lambda t: gt.nn.functional.max_pool2d(t, k, s, p, d, ceil), (x,))


# ---- im2col / col2im ---------------------------------------------------------------------

# input (N, C, H, W), kernel, stride, padding, dilation: same-size 3x3, rows of 8/16/32 or
# longer (the fixed-width copies), strides (the element loop), dilation, 1x1, no padding
CONV_CASES = [
    ((3, 4, 14, 14), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((2, 3, 7, 5), (2, 3), (1, 1), (1, 0), (2, 1)),
    ((2, 2, 9, 30), (3, 2), (2, 1), (0, 2), (1, 3)),
    ((2, 3, 11, 40), (3, 3), (1, 1), (2, 1), (1, 1)),
    ((1, 2, 9, 8), (3, 3), (2, 3), (1, 1), (1, 1)),
    ((2, 5, 6, 6), (1, 1), (1, 1), (0, 0), (1, 1)),
    ((2, 2, 5, 9), (5, 4), (1, 2), (0, 0), (1, 2)),
]


def _special(shape, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    flat[::17] = -0.0
    flat[5::53] = np.inf
    flat[7::61] = np.nan
    return a


@needs_compiler
def test_convolution_uses_the_c_kernels(monkeypatch):
    calls = spy_kernels(monkeypatch)
    x = gt.randn(4, 3, 10, 10, requires_grad=True)
    w = gt.randn(5, 3, 3, 3, requires_grad=True)
    gt.nn.functional.conv2d(x, w, padding=1).sum().backward()
    gt.nn.functional.fold(gt.nn.functional.unfold(x.detach().double(), 2), (10, 10), 2)
    gt.nn.functional.conv1d(gt.randn(2, 3, 9), gt.randn(4, 3, 3))        # 1-d: NumPy
    assert {"im2col_f32", "col2im_f32", "im2col_f64", "col2im_f64"} <= set(calls)
    assert all(name.endswith(("f32", "f64")) for name in calls)


@needs_compiler
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["sample", "first"])
def test_columns_and_col2im_agree_with_numpy(case, dtype, order, monkeypatch):
    """The same columns, and the same col2im sums bit for bit (kernel offsets added in the
    same order from +0.0), with -0.0, inf and NaN among the values."""
    from glasstorch.backends.cpu import convolution as conv
    shape, k, s, p, d = case
    x = _special(shape, dtype, 0)
    out = conv._blocks(shape[2:], k, d, p, s)
    c, n = both_paths(lambda: conv.columns(x, k, s, d, p, out, order), monkeypatch)
    np.testing.assert_array_equal(c, n)
    cols = _special((shape[0], shape[1]) + tuple(k) + out, dtype, 1)
    if order == "first":         # batch-major, as a (g, rows, B*L) matmul result is viewed
        cols = np.moveaxis(np.ascontiguousarray(np.moveaxis(cols, 0, 3)), 3, 0)

    def col2im():
        res = np.full(shape, 7, dtype)
        if not conv.col2im_native(res, cols, k, s, p, d):
            res.fill(0)
            conv.col2im_into(res, cols, k, s, p, d)
        return res
    c, n = both_paths(col2im, monkeypatch)
    np.testing.assert_array_equal(c, n)
    np.testing.assert_array_equal(np.signbit(c), np.signbit(n))


@needs_compiler
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_and_unfold_fold_agree_with_numpy_and_torch(case, monkeypatch):
    """unfold and fold give the NumPy path's bits; the convolution's gradients may sum in
    another order (the C path lays the batch out first, not last) and match torch's."""
    torch = oracle_torch()
    shape, k, s, p, d = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((3, shape[1]) + k)
    args = (list(s), list(p), list(d), False, [0, 0], 1)
    y = torch.convolution(torch.tensor(x), torch.tensor(w), None, *args)
    gy = rng.standard_normal(tuple(y.shape))

    def run():
        xt, wt = gt.tensor(x, requires_grad=True), gt.tensor(w, requires_grad=True)
        out = gt.convolution(xt, wt, None, *args)
        out.backward(gt.tensor(gy))
        cols = gt.nn.functional.unfold(xt.detach(), k, d, p, s)
        back = gt.nn.functional.fold(cols, shape[2:], k, d, p, s)
        return [t.detach().numpy() for t in (out, xt.grad, wt.grad, cols, back)]
    c, n = both_paths(run, monkeypatch)
    for a, b in zip(c[3:], n[3:]):      # unfold, fold: the same bits
        np.testing.assert_array_equal(a, b)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    torch.convolution(tx, tw, None, *args).backward(torch.tensor(gy))
    tcols = torch.nn.functional.unfold(torch.tensor(x), k, d, p, s)
    expected = [y, tx.grad, tw.grad, tcols,
                torch.nn.functional.fold(tcols, shape[2:], k, d, p, s)]
    for a, e in zip(c, expected):
        np.testing.assert_allclose(a, e.detach().numpy(), rtol=1e-10, atol=1e-10)


@needs_compiler
def test_conv_empty_batch_and_a_window_outside_the_padded_image(monkeypatch):
    from glasstorch.backends.cpu import convolution as conv
    monkeypatch.setattr(native, "ENABLED", True)
    torch = oracle_torch()
    x, w = gt.zeros(0, 3, 6, 6, requires_grad=True), gt.randn(4, 3, 3, 3, requires_grad=True)
    y = gt.nn.functional.conv2d(x, w, padding=1)
    y.sum().backward()
    assert y.shape == (0, 4, 6, 6) and x.grad.shape == x.shape
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((4, 3, 3, 3), np.float32))
    assert tuple(torch.nn.functional.conv2d(torch.zeros(0, 3, 6, 6), torch.zeros(4, 3, 3, 3),
                                            padding=1).shape) == y.shape
    # columns the image cannot hold: the C kernels refuse them
    cols = np.zeros((1, 1, 3, 3, 5, 5), np.float32)
    assert not conv.col2im_native(np.zeros((1, 1, 4, 4), np.float32), cols, (3, 3), (1, 1),
                                  (1, 1), (1, 1))


@needs_compiler
def test_im2col_and_col2im_do_not_depend_on_threads(monkeypatch):
    """Planes split over threads, each with its own bordered plane: the same bits. (The
    convolution's weight gradient sums its batch blocks, whose count follows the threads.)"""
    from glasstorch.backends.cpu import convolution as conv
    monkeypatch.setattr(native, "ENABLED", True)
    x = _special((6, 5, 14, 14), np.float32, 8)
    cols = _special((6, 5, 3, 3, 14, 14), np.float32, 9)

    def run():
        res = np.empty(x.shape, np.float32)
        assert conv.col2im_native(res, cols, (3, 3), (1, 1), (1, 1), (1, 1))
        t = gt.from_numpy(x)
        return [conv.columns(x, (3, 3), (1, 1), (1, 1), (1, 1), (14, 14), "first"), res,
                gt.nn.functional.unfold(t, 3, padding=1).numpy(),
                gt.nn.functional.fold(gt.nn.functional.unfold(t, 3, padding=1), (14, 14), 3,
                                      padding=1).numpy()]
    serial = run()
    with threaded_kernels(monkeypatch):
        assert native.threads(10_000) == 3
        for want, got in zip(serial, run()):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("enabled", [True, False])
def test_conv_unfold_fold_gradcheck_float64(enabled, monkeypatch):
    monkeypatch.setattr(native, "ENABLED", enabled)
    rng = np.random.default_rng(9)
    x = gt.tensor(rng.standard_normal((2, 2, 6, 5)), requires_grad=True)
    w = gt.tensor(rng.standard_normal((3, 2, 3, 2)), requires_grad=True)
    assert gt.autograd.gradcheck(
        lambda x, w: gt.nn.functional.conv2d(x, w, None, (2, 1), (1, 1), (1, 2)), (x, w))
    assert gt.autograd.gradcheck(
        lambda x: gt.nn.functional.fold(gt.nn.functional.unfold(x, (2, 3), 1, 1), (6, 5),
                                        (2, 3), 1, 1), (x,))
