"""relu and threshold_backward (relu's gradient) kernels on the values where a fast path could
go wrong: NaN of either sign, +-inf, -0.0, subnormals, on every float dtype, on the vector
body and scalar tail of NumPy's loops, on strided, broadcast and in-place operands, and on
arrays large enough to be split across threads. The right answers are PyTorch's kernel
formulas, relu(x) = x < 0 ? 0 : x and threshold_backward(g, x, t) = x <= t ? 0 : g (so
relu(-0.0) is -0.0, relu(NaN) NaN, and a dropped NaN or inf gradient gives +0.0); each
test also checks live torch agrees on them."""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.autograd import gradcheck
from glasstorch.backends.cpu import activation as kernels
from glasstorch.ops.nn.activation import threshold_backward
from oracle import assert_same, oracle_torch, to_numpy, to_torch

torch = oracle_torch()

FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _specials(np_dtype):
    """Special values of a NumPy float dtype (bfloat16's are taken from float32, rounded on
    conversion), both NaN signs, both zeros, the smallest subnormals."""
    info = np.finfo(np_dtype)
    tiny_sub = info.smallest_subnormal
    return np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, tiny_sub, -tiny_sub,
                     info.tiny, -info.tiny, 1.0, -1.0, info.max, -info.max, 0.5, -2.5],
                    np_dtype)


def _values(dtype, n=67):
    """`n` values (67 reaches a SIMD loop and its scalar tail) cycling through the specials,
    as a glasstorch tensor of `dtype`."""
    base = _specials(np.float64 if dtype == "float64" else
                     np.float16 if dtype == "float16" else np.float32)
    a = np.resize(base, n)
    return gt.from_numpy(a).to(getattr(gt, dtype))


def _assert_exact(actual, expected):
    """Same dtype and shape, NaN where expected is NaN (any sign), and elsewhere the same
    values with the same sign of zero."""
    a, e = to_numpy(actual), to_numpy(expected)
    assert str(actual.dtype).replace("torch.", "") == str(expected.dtype).replace("torch.", "")
    assert a.shape == e.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(e))
    ok = ~np.isnan(e)
    np.testing.assert_array_equal(a[ok], e[ok])
    np.testing.assert_array_equal(np.signbit(a[ok]), np.signbit(e[ok]))


def _relu_reference(t):
    x = to_torch(t)
    return torch.where(x < 0, torch.zeros((), dtype=x.dtype), x)


def _threshold_reference(g, x, threshold):
    g, x = to_torch(g), to_torch(x)
    return torch.where(x <= threshold, torch.zeros((), dtype=g.dtype), g)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [67, 600_000])
def test_relu_special_values(dtype, n, kernel_path):
    x = _values(dtype, n)
    expected = _relu_reference(x)
    _assert_exact(gt.relu(x), expected)
    _assert_exact(torch.relu(to_torch(x)), expected)


@pytest.mark.parametrize("dtype", FLOATS)
def test_relu_bitwise_fallback_special_values(dtype, monkeypatch):
    """The exact select relu falls back on (CuPy arrays, a NumPy whose clip drops -0.0)."""
    monkeypatch.setattr(kernels, "_CLIP_KEEPS_NEGATIVE_ZERO", False)
    x = _values(dtype)
    _assert_exact(gt.relu(x), _relu_reference(x))
    _assert_exact(gt.relu(x[::3]), _relu_reference(x[::3]))
    _assert_exact(gt.relu(x[5]), _relu_reference(x[5]))             # 0-dim


@pytest.mark.parametrize("dtype", FLOATS)
def test_relu_strided_layouts_match_torch(dtype):
    a = gt.from_numpy(np.random.default_rng(0).standard_normal((6, 40, 9))).to(
        getattr(gt, dtype))
    for x in (a.transpose(0, 2), a[:, ::3, 1:], a[2, 5, 3], a[:, :0]):
        assert_same(gt.relu(x), torch.relu(to_torch(x)), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_relu_inplace(dtype, kernel_path):
    for make in (lambda: _values(dtype, 2 * 67), lambda: _values(dtype, 2 * 67)[1::2]):
        x = make()
        expected = _relu_reference(x)
        y = gt.relu_(x)
        assert y is x
        _assert_exact(x, expected)
        base = make()
        base_t = to_torch(base).clone()
        torch.relu_(base_t)
        _assert_exact(gt.relu_(base), base_t)


def test_relu_integers_match_torch():
    x = gt.tensor([[-3, 0, 5, -2147483648, 2147483647]], dtype=gt.int32)
    assert_same(gt.relu(x.t()), torch.relu(to_torch(x).t()))
    assert_same(gt.relu(x.to(gt.int8)), torch.relu(to_torch(x).to(torch.int8)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("threshold", [0, 0.5, -1])
def test_threshold_backward_special_values(dtype, threshold):
    v = _values(dtype, 16)
    g, x = (t.contiguous() for t in gt.broadcast_tensors(v[:, None], v[None, :]))
    expected = _threshold_reference(g, x, threshold)
    _assert_exact(threshold_backward(g, x, threshold), expected)
    _assert_exact(torch.ops.aten.threshold_backward(to_torch(g), to_torch(x), threshold),
                  expected)


@pytest.mark.parametrize("dtype", FLOATS)
def test_threshold_backward_large_and_strided(dtype):
    """Arrays split across threads, transposed and broadcast operands."""
    g = _values(dtype, 600_000).reshape(1000, 600)
    x = _values(dtype, 600_001)[1:].reshape(600, 1000).t()
    expected = _threshold_reference(g, x, 0)
    _assert_exact(threshold_backward(g, x, 0), expected)
    row = g[7]                                              # a gradient broadcast (stride 0)
    _assert_exact(threshold_backward(row.expand(1000, 600), x, 0),
                  _threshold_reference(row.expand(1000, 600), x, 0))
    assert_same(threshold_backward(g.t(), x.t(), 0),
                torch.ops.aten.threshold_backward(to_torch(g).t(), to_torch(x).t(), 0),
                rtol=0, atol=0)


def test_threshold_backward_integers_and_mixed_dtypes_match_torch():
    x = gt.tensor([[-3, 0, 5], [2, -1, 7]], dtype=gt.int64).t().contiguous().t()
    g = gt.tensor([[1, 2, 3], [4, 5, 6]], dtype=gt.int64)
    assert_same(threshold_backward(g, x, 0),
                torch.ops.aten.threshold_backward(to_torch(g), to_torch(x), 0))
    gf = gt.tensor([float("nan"), float("inf"), 1.0], dtype=gt.float16)
    xf = gt.tensor([-1.0, 0.0, 2.0], dtype=gt.float32)
    assert_same(threshold_backward(gf, xf, 0),
                torch.ops.aten.threshold_backward(to_torch(gf), to_torch(xf), 0))


def test_relu_gradient_float64_noncontiguous():
    a = np.random.default_rng(3).standard_normal((7, 10))
    a[np.abs(a) < 0.1] = 0.5                                # away from the kink
    x = gt.from_numpy(a).t().requires_grad_()
    assert not x.is_contiguous()
    assert gradcheck(gt.relu, (x,))
    y = gt.relu(x)
    y.backward(gt.full(y.shape, float("inf"), dtype=gt.float64))
    xt = to_torch(x.detach()).requires_grad_()
    torch.relu(xt).backward(torch.full(xt.shape, float("inf"), dtype=torch.float64))
    _assert_exact(x.grad, xt.grad)                          # 0, not NaN, where x < 0
