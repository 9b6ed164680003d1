"""bfloat16 kernels that round where PyTorch's CPU kernels round: interpolation weights,
batch norm statistics and steps, and the slow transposed convolution's columns and sums.

Each expected value comes from a model of PyTorch's arithmetic written here in NumPy (float32
steps, rounded to bfloat16 by ml_dtypes where PyTorch stores or computes in bfloat16), so the
tests need no PyTorch and do not depend on its CPU vector path; where torch is installed its
results are compared with the model too. Found by the op-db walk's bfloat16 samples
(tests/ops/test_op_db.py).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import glasstorch as gt

F32 = np.float32


def r(x):
    """One rounding to bfloat16 (to nearest even), kept as float32."""
    return np.asarray(x, F32).astype(ml_dtypes.bfloat16).astype(F32)


def _bf16(a) -> gt.Tensor:
    return gt.from_numpy(np.asarray(a, F32)).to(gt.bfloat16)


def _values(t) -> np.ndarray:
    return t.detach().float().numpy()


def _torch():
    return pytest.importorskip("torch")


# ---- interpolation ------------------------------------------------------------------------

def _linear_taps(n_in, n_out, align_corners, rounding):
    """Source indices and weights of one axis (PyTorch's area_pixel_compute_source_index and
    guard_index_and_lambda in float32). rounding "lambda1": lambda1 stored in bfloat16 and
    lambda0 = 1 - that, stored too (HelperInterpLinear); "none": float weights."""
    if n_in == n_out:
        i = np.arange(n_out)
        return i, i, np.ones(n_out, F32), np.zeros(n_out, F32)
    j = np.arange(n_out, dtype=F32)
    if align_corners:
        src = (F32(n_in - 1) / F32(n_out - 1)) * j
    else:
        src = np.maximum((F32(n_in) / F32(n_out)) * (j + F32(0.5)) - F32(0.5), F32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = i0 + (i0 < n_in - 1)
    lam1 = np.clip(src - i0.astype(F32), 0, 1).astype(F32)
    if rounding == "none":
        return i0, i1, F32(1) - lam1, lam1
    lam1 = r(lam1)
    return i0, i1, r(F32(1) - lam1), lam1


def _interpolate_model(x, size, align_corners, rounding):
    """Separable float32 interpolation, innermost axis first, rounded once at the end."""
    a = np.asarray(x, F32)
    for k in reversed(range(len(size))):
        axis = a.ndim - len(size) + k
        i0, i1, w0, w1 = _linear_taps(a.shape[axis], size[k], align_corners, rounding)
        shape = [1] * a.ndim
        shape[axis] = -1
        a = (np.take(a, i0, axis) * w0.reshape(shape)
             + np.take(a, i1, axis) * w1.reshape(shape)).astype(F32)
    return r(a)


_MODES = {1: "linear", 2: "bilinear", 3: "trilinear"}


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_interpolation_weights_round_as_pytorch(nd, align_corners):
    """linear and trilinear store lambda1 in bfloat16 and take lambda0 = 1 - that, rounded
    again; bilinear keeps float weights."""
    rng = np.random.default_rng(nd)
    rounding = "none" if nd == 2 else "lambda1"
    for _ in range(4):
        x = r(rng.standard_normal((2, 3) + tuple(rng.integers(2, 6, nd))) * 5)
        size = tuple(int(s) for s in rng.integers(2, 8, nd))
        expected = _interpolate_model(x, size, align_corners, rounding)
        got = gt.nn.functional.interpolate(_bf16(x), size=size, mode=_MODES[nd],
                                           align_corners=align_corners)
        assert got.dtype is gt.bfloat16
        np.testing.assert_array_equal(_values(got), expected)


def test_trilinear_weights_the_op_db_sample_found():
    """The op-db sample's element: with lambda0 = 0.3320 and 0.3984 (1 minus the rounded
    lambda1 0.6680 and 0.6016) the corner values -5.59, -5.81, -6.84 and 8.88 give
    -0.15625; weights each rounded from float (0.3340, 0.3994) gave -0.1797."""
    x = np.zeros((1, 1, 1, 3, 5), F32)
    x[0, 0, 0, :2, 1:3] = [[-5.59375, -5.8125], [-6.84375, 8.875]]
    got = gt.nn.functional.interpolate(_bf16(x), size=(1, 4, 6), mode="trilinear",
                                       align_corners=True)
    assert float(got[0, 0, 0, 1, 2]) == -0.15625


@pytest.mark.parametrize("nd", [1, 3])
def test_linear_interpolation_matches_pytorch(nd):
    torch = _torch()
    rng = np.random.default_rng(10 + nd)
    for align_corners in (False, True):
        x = r(rng.standard_normal((2, 3) + tuple(rng.integers(2, 6, nd))) * 5)
        size = tuple(int(s) for s in rng.integers(2, 8, nd))
        oracle = torch.nn.functional.interpolate(torch.from_numpy(x).bfloat16(), size=size,
                                                 mode=_MODES[nd], align_corners=align_corners)
        np.testing.assert_array_equal(oracle.float().numpy(),
                                      _interpolate_model(x, size, align_corners, "lambda1"))


# ---- batch norm ---------------------------------------------------------------------------

def _batch_norm_model(x, w, b, rm, rv, training, eps, dense, momentum=0.1):
    """PyTorch's bfloat16 batch norm with bfloat16 parameters (Normalization.cpp,
    cpu/batch_norm_kernel.cpp): output, saved mean and invstd, new running stats."""
    c = x.shape[1]
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, c) + (1,) * (x.ndim - 2)
    n = x.size // c
    with np.errstate(all="ignore"):
        if training:
            if dense:   # collect_stats: float sums about the float mean, stored in bfloat16
                mean_f = x.sum(axis=axes, dtype=F32) / F32(n)
                var_sum = r(((x - mean_f.reshape(shape)) ** 2).sum(axis=axes, dtype=F32))
                mean, var = r(mean_f), r(var_sum / r(n))
            else:       # at::mean in bfloat16, then float squares about it
                mean = r(x.astype(np.float64).mean(axis=axes))
                var_sum = ((x - mean.reshape(shape)) ** 2).sum(axis=axes, dtype=F32)
                var = var_sum / F32(n)
            invstd = r((1 / np.sqrt(var.astype(np.float64) + eps)).astype(F32))
            if dense:
                m = r(momentum)
                new_rm = r(r(m * mean) + r(r(1 - m) * rm))
                new_rv = r(m * r(var_sum / r(n - 1)) + r(r(1 - m) * rv))
            else:
                new_rm = r(momentum * mean.astype(np.float64) + (1 - momentum) * rm)
                new_rv = r(momentum * (var_sum / F32(n - 1)).astype(np.float64)
                           + (1 - momentum) * rv)
        else:
            mean, new_rm, new_rv = rm, rm, rv
            invstd = (F32(1) / np.sqrt(rv + F32(eps)) if dense
                      else r(F32(1) / r(np.sqrt(r(rv + F32(eps))))))
        if dense:       # x * alpha + beta in float, rounded once
            alpha = invstd * w
            beta = b - mean * alpha
            out = r(x * alpha.reshape(shape) + beta.reshape(shape))
        else:           # ((x - mean) * invstd) * weight + bias, each step in bfloat16
            out = r(r(r(r(x - mean.reshape(shape)) * invstd.reshape(shape))
                      * w.reshape(shape)) + b.reshape(shape))
    return out, mean, invstd, new_rm, new_rv


def _batch_norm_case(seed, shape=(3, 4, 5, 6)):
    rng = np.random.default_rng(seed)
    x = r(rng.standard_normal(shape) * 3 + 5)
    c = shape[1]
    w, b, rm = (r(rng.standard_normal(c)) for _ in range(3))
    rv = r(rng.random(c) + 0.5)
    return x, w, b, rm, rv


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
@pytest.mark.parametrize("eps", [1e-5, 0.5])
def test_bfloat16_batch_norm_rounds_as_pytorch(training, layout, eps):
    x, w, b, rm, rv = _batch_norm_case(0)
    inp = _bf16(x)
    if layout == "channels_last":
        inp = inp.contiguous(memory_format=gt.channels_last)
    elif layout == "transposed":                     # same values, not dense in any format
        inp = _bf16(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(2, 3)
    expected = _batch_norm_model(x, w, b, rm, rv, training, eps, layout != "transposed")
    grm, grv = _bf16(rm), _bf16(rv)
    out, mean, invstd = gt.native_batch_norm(inp, _bf16(w), _bf16(b), grm, grv, training, 0.1,
                                             eps)
    got = [out, mean, invstd, grm, grv] if training else [out, grm, grv]
    want = list(expected) if training else [expected[0], expected[3], expected[4]]
    for g, e in zip(got, want):
        assert g.dtype is gt.bfloat16
        np.testing.assert_array_equal(_values(g), e)
    torch = _torch()
    t_inp = torch.from_numpy(x).bfloat16()
    if layout == "channels_last":
        t_inp = t_inp.contiguous(memory_format=torch.channels_last)
    elif layout == "transposed":
        t_inp = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).bfloat16() \
            .transpose(2, 3)
    trm, trv = (torch.from_numpy(v).bfloat16() for v in (rm, rv))
    oracle = torch.native_batch_norm(t_inp, *(torch.from_numpy(v).bfloat16() for v in (w, b)),
                                     trm, trv, training, 0.1, eps)
    t_got = [*oracle, trm, trv] if training else [oracle[0], trm, trv]
    for t, e in zip(t_got, want):
        np.testing.assert_array_equal(t.float().numpy(), e)


def test_bfloat16_instance_norm_rounds_its_mean_as_pytorch():
    """instance_norm is batch norm of the (1, N*C, *) view: where an input is close to its
    plane's mean, the mean's rounding to bfloat16 decides the output (the op-db sample gave
    -0.0052 against PyTorch's -0.0293)."""
    x, w, b, _, _ = _batch_norm_case(1, (3, 2, 3, 4))
    plane = x[2, 0]
    plane[2, 3] = r(plane.mean(dtype=F32))                  # an element at its plane's mean
    folded = x.reshape(1, 6, 3, 4)
    expected = _batch_norm_model(folded, np.tile(w[:2], 3), np.tile(b[:2], 3), np.zeros(6, F32),
                                 np.ones(6, F32), True, 0.5, True)[0].reshape(x.shape)
    got = gt.nn.functional.instance_norm(_bf16(x), weight=_bf16(w[:2]), bias=_bf16(b[:2]),
                                         eps=0.5)
    np.testing.assert_array_equal(_values(got), expected)
    torch = _torch()
    oracle = torch.nn.functional.instance_norm(torch.from_numpy(x).bfloat16(),
                                               weight=torch.from_numpy(w[:2]).bfloat16(),
                                               bias=torch.from_numpy(b[:2]).bfloat16(), eps=0.5)
    np.testing.assert_array_equal(oracle.float().numpy(), expected)


# ---- transposed convolution ---------------------------------------------------------------

def _conv_transpose_model(x, w, b, stride, padding, dilation, output_padding, groups, rd):
    """PyTorch's slow_conv_transpose2d/3d in a 16-bit dtype (rd rounds to it): per sample
    and group the columns w^T @ x rounded, col2im adding them into the zeroed output one
    kernel offset after another, each sum rounded, then the bias added and rounded."""
    n, c = x.shape[:2]
    nd = x.ndim - 2
    kernel, sp = w.shape[2:], x.shape[2:]
    cg, og = c // groups, w.shape[1]
    out_sp = tuple((i - 1) * s - 2 * p + d * (k - 1) + 1 + op for i, s, p, d, k, op in
                   zip(sp, stride, padding, dilation, kernel, output_padding))
    out = np.zeros((n, groups * og) + out_sp, F32)
    for g in range(groups):
        wg = w[g * cg:(g + 1) * cg].reshape(cg, -1)                 # (Cg, Og*K)
        cols = rd(np.einsum("ck,ncl->nkl", wg, x[:, g * cg:(g + 1) * cg].reshape(n, cg, -1))
                  .astype(F32)).reshape((n, og) + tuple(kernel) + tuple(sp))
        dst = out[:, g * og:(g + 1) * og]
        for k in np.ndindex(*kernel):
            for i in np.ndindex(*sp):
                pos = tuple(ii * s - p + kk * d for ii, s, p, kk, d in
                            zip(i, stride, padding, k, dilation))
                if all(0 <= q < m for q, m in zip(pos, out_sp)):
                    key = (slice(None), slice(None)) + pos
                    dst[key] = rd(dst[key] + cols[(slice(None), slice(None)) + k + i])
    if b is not None:
        out = rd(out + b.reshape((-1,) + (1,) * nd))
    return out


_CONV_T_CASES = [   # nd, groups, stride, padding, dilation, output_padding (one >= stride)
    (2, 2, (3, 2), (1, 2), (4, 4), (2, 3)),
    (2, 1, (1, 2), (0, 1), (2, 1), (1, 0)),
    (3, 1, (2, 1, 2), (1, 0, 0), (1, 2, 1), (0, 1, 1)),
    (1, 3, (2,), (1,), (3,), (2,)),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", _CONV_T_CASES)
def test_transposed_convolution_with_big_output_padding_rounds_as_pytorch(dtype, case):
    """An output padding that reaches its stride sends PyTorch's 16-bit transposed
    convolutions to its slow kernels on every CPU (oneDNN refuses them), which round the
    columns and every sum."""
    nd, groups, stride, padding, dilation, output_padding = case
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16

    def rd(v):
        return np.asarray(v, F32).astype(np_dtype).astype(F32)
    rng = np.random.default_rng(len(case) + nd + groups)
    x = rd(rng.standard_normal((2, 2 * groups) + (4,) * nd))
    w = rd(rng.standard_normal((2 * groups, 3) + (3,) * nd))
    b = rd(rng.standard_normal(3 * groups))
    expected = _conv_transpose_model(x, w, b, stride, padding, dilation, output_padding,
                                     groups, rd)
    fn = f"conv_transpose{nd}d"
    d = getattr(gt, dtype)
    got = getattr(gt.nn.functional, fn)(
        *(gt.from_numpy(v).to(d) for v in (x, w, b)), stride=stride, padding=padding,
        output_padding=output_padding, groups=groups, dilation=dilation)
    assert got.dtype is d
    np.testing.assert_array_equal(_values(got), expected)
    torch = _torch()
    oracle = getattr(torch.nn.functional, fn)(
        *(torch.from_numpy(v).to(getattr(torch, dtype)) for v in (x, w, b)), stride=stride,
        padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)
    np.testing.assert_array_equal(oracle.float().numpy(), expected)
