"""glasstorch's own CUDA C behind ops and the optimizer: the native CUDA kernels of softmax,
log_softmax, their backwards and native_layer_norm (ops/cuda_fused.py), Adam's fused step
(optim/adam.py) and the one-pass bfloat16 conversions (backends/cuda/bfloat16.py).

Each check runs in up to three modes:
- plain: the backend as it is. On simulated CuPy every op takes the shared kernel, on a
  GPU the fused one; either way 'cuda' must give the CPU's values.
- emulated (simulated CuPy only): `runtime.runs_cuda_c()` forced True and fused.py's CUDA C
  kernels replaced by NumPy emulations that run on the simulated device arrays, so the
  routing runs here: which cases launch, operand copies, temporaries, rounding into
  strided or lower-precision outputs, bfloat16 widening, the launchers' own checks.
- real (marked `cuda`, a GPU only): the compiled kernels, which must be the ones launched
  and agree with the shared kernel on the same GPU and with the CPU.
"""
import ml_dtypes
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cuda import fused, runtime

FLOATS = ["float16", "float32", "float64", "bfloat16"]
TOL = {"float16": dict(rtol=2e-3, atol=2e-3), "bfloat16": dict(rtol=1.6e-2, atol=1.6e-2),
       "float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}
MODES = [pytest.param("emulated", id="emulated"),
         pytest.param("real", marks=pytest.mark.cuda, id="real")]


# ---------------------------------------------------------------- emulated kernels

def _math(a):
    return np.float64 if a.dtype == np.float64 else np.float32


def _rows_of(a, rows, n):
    return a.get().astype(_math(a)).reshape(int(rows), int(n))


def _put(dst, values):
    dst.set(np.asarray(values).astype(dst.dtype).reshape(dst.shape))


def _softmax_emulated(grid, block, args, shared_mem=0, log=False):
    x, y, rows, n = args
    v = _rows_of(x, rows, n)
    shifted = v - v.max(1, keepdims=True)
    total = np.exp(shifted).sum(1, keepdims=True)
    _put(y, shifted - np.log(total) if log else np.exp(shifted) / total)


def _softmax_backward_emulated(grid, block, args, shared_mem=0, log=False):
    g, y, out, rows, n = args
    g, y = _rows_of(g, rows, n), _rows_of(y, rows, n)
    if log:
        _put(out, g - np.exp(y) * g.sum(1, keepdims=True))
    else:
        _put(out, y * (g - (g * y).sum(1, keepdims=True)))


def _layer_norm_emulated(grid, block, args, shared_mem=0):
    x, w, b, out, mean, rstd, rows, n, eps, has_w, has_b = args
    v = _rows_of(x, rows, n)
    mu = v.sum(1, keepdims=True) / max(int(n), 1)
    with np.errstate(invalid="ignore"):     # no columns: rstd NaN, as the kernel
        rs = 1 / np.sqrt(((v - mu) ** 2).sum(1, keepdims=True) / n + eps)
    y = (v - mu) * rs
    if has_w:
        y = y * w.get().astype(_math(x))
    if has_b:
        y = y + b.get().astype(_math(x))
    _put(out, y)
    _put(mean, mu)
    _put(rstd, rs)


def _adam_emulated(grid, block, args, shared_mem=0):
    """The kernel's operations in its order, in its math dtype."""
    (param, grad, exp_avg, exp_avg_sq, ams, n, flags, decay, wd, lerp_weight, lerp_rest,
     beta2, sq_weight, neg_step_size, bias_correction2_sqrt, eps) = args
    p, g, m, v = (a.get().astype(_math(param)) for a in (param, grad, exp_avg, exp_avg_sq))
    if flags & 1:
        g = -g
    if flags & 2:
        p = p * decay
    if flags & 4:
        g = g + wd * p
    d = g - m
    m = m + d * lerp_weight if flags & 8 else g - d * lerp_rest
    v = v * beta2
    v = v + (g * sq_weight) * g
    second = v
    if flags & 16:
        second = np.maximum(ams.get().astype(_math(param)), v)
        _put(ams, second)
    p = p + (m * neg_step_size) / (np.sqrt(second) / bias_correction2_sqrt + eps)
    for dst, value in ((param, p), (exp_avg, m), (exp_avg_sq, v)):
        _put(dst, value)


def _bf16_emulated(grid, block, args, shared_mem=0, widen=True):
    x, out, n = args
    if widen:
        _put(out, x.get().view(ml_dtypes.bfloat16).astype(np.float32))
    else:
        with np.errstate(invalid="ignore"):     # NaN payloads
            out.set(x.get().astype(ml_dtypes.bfloat16).view(np.uint16))


EMULATED = {
    ("softmax", 0): _softmax_emulated,
    ("softmax", 1): lambda *a, **k: _softmax_emulated(*a, **k, log=True),
    ("softmax", 2): _softmax_backward_emulated,
    ("softmax", 3): lambda *a, **k: _softmax_backward_emulated(*a, **k, log=True),
    ("layer_norm", 0): _layer_norm_emulated,
    ("adam", 0): _adam_emulated,
    ("bf16", 0): _bf16_emulated,
    ("bf16", 1): lambda *a, **k: _bf16_emulated(*a, **k, widen=False),
}


@pytest.fixture(params=MODES)
def launches(request, cuda_backend, monkeypatch):
    """The fused.py kernels launched during the test, by name (in order), in the emulated or
    the real mode."""
    mode = request.param
    if mode == "emulated" and cuda_backend == "real":
        pytest.skip("emulation stands in for a GPU; this machine runs the real kernels")
    names = []
    compiled = fused._kernel

    def kernel(family, dtype, index=0):
        name = fused.kernel_names(family, dtype)[index]
        run = EMULATED[family, index] if mode == "emulated" else compiled(family, dtype, index)

        def launch(*args, **kwargs):
            names.append(name)
            return run(*args, **kwargs)
        return launch
    monkeypatch.setattr(fused, "_kernel", kernel)
    if mode == "emulated":
        monkeypatch.setattr(runtime, "runs_cuda_c", lambda: True)
    return names


def _shared_path(monkeypatch, fn):
    """fn() with the fused kernels off: every op takes its shared kernel."""
    with monkeypatch.context() as m:
        m.setattr(runtime, "runs_cuda_c", lambda: False)
        return fn()


# ---------------------------------------------------------------- helpers

def _both(values, dtype, view=None):
    """The same values and layout on the CPU and on 'cuda': `view` (a function of a tensor)
    is applied to a contiguous base tensor on each device."""
    cpu = gt.tensor(values, dtype=getattr(gt, dtype))
    cuda = cpu.to("cuda")
    return (cpu, cuda) if view is None else (view(cpu), view(cuda))


def _assert_close(got, expected, dtype):
    """Values within the dtype's tolerance; dtype, shape and strides identical."""
    assert got.device.type == "cuda" and expected.device.type == "cpu"
    assert (got.dtype, got.shape, got.stride()) == (expected.dtype, expected.shape,
                                                    expected.stride())
    np.testing.assert_allclose(got.cpu().double().numpy(), expected.double().numpy(),
                               **TOL[dtype])


def _rng(seed):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- softmax family

# name: (base shape, view of the base, dim, whether the fused kernel takes it)
LAYOUTS = {
    "rows": ((3, 4, 9), None, -1, True),
    "padded-rows": ((5, 11), lambda t: t[1:, 2:9], 1, True),
    "expanded-rows": ((1, 9), lambda t: t.expand(4, 9), -1, True),
    "0-d": ((), None, 0, True),
    "one-column": ((1, 6), lambda t: t.t(), 1, True),
    "transposed": ((9, 4), lambda t: t.t(), -1, False),
    "other-dim": ((3, 4, 9), None, 1, False),
    "empty": ((0, 9), None, -1, False),
}
SOFTMAX_OPS = ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward"]
KERNEL_NAMES = {"softmax": "gt_softmax_rows_{}", "log_softmax": "gt_log_softmax_rows_{}",
                "softmax_backward": "gt_softmax_rows_backward_{}",
                "log_softmax_backward": "gt_log_softmax_rows_backward_{}"}


def _softmax_inputs(op, layout, dtype, seed=0):
    """(cpu operands, cuda operands, dim) for `op` on `layout`."""
    shape, view, dim, _ = LAYOUTS[layout]
    rng = _rng(seed)
    x = _both(rng.normal(size=shape) * 3, dtype, view)
    if not op.endswith("backward"):
        return (x[0],), (x[1],), dim
    y = rng.uniform(0.01, 1, size=shape)
    y = _both(np.log(y) if op.startswith("log") else y, dtype, view)
    return (x[0], y[0]), (x[1], y[1]), dim


def _call(op, operands, dim, **out):
    if op == "softmax":
        return gt._softmax(operands[0], dim, False, **out)
    if op == "log_softmax":
        return gt._log_softmax(operands[0], dim, False, **out)
    fn = gt._softmax_backward_data if op == "softmax_backward" else \
        gt._log_softmax_backward_data
    return fn(operands[0], operands[1], dim, operands[0].dtype, **out)


def _kernel_dtype(dtype):
    return "float32" if dtype == "bfloat16" else dtype


SOFTMAX_CASES = [(op, layout, "float32") for op in SOFTMAX_OPS for layout in LAYOUTS] + [
    (op, layout, dtype) for op in SOFTMAX_OPS for dtype in ("float16", "float64", "bfloat16")
    for layout in ("rows", "padded-rows", "other-dim")]


@pytest.mark.parametrize("op,layout,dtype", SOFTMAX_CASES)
def test_softmax_family_fused_where_rows_are_contiguous(launches, monkeypatch, op, layout,
                                                        dtype):
    """The shared kernel (on simulated CuPy: the plain backend) and the fused one (where
    the rows are contiguous) both give the CPU's values."""
    cpu, cuda, dim = _softmax_inputs(op, layout, dtype)
    expected = _call(op, cpu, dim)
    shared = _shared_path(monkeypatch, lambda: _call(op, cuda, dim))
    _assert_close(shared, expected, dtype)
    launches.clear()
    got = _call(op, cuda, dim)
    row_kernels = [k for k in launches if "softmax" in k]
    fusable = LAYOUTS[layout][3]
    assert row_kernels == ([KERNEL_NAMES[op].format(_kernel_dtype(dtype))] if fusable else [])
    _assert_close(got, expected, dtype)
    _assert_close(got, shared.cpu(), dtype)


@pytest.mark.parametrize("op", SOFTMAX_OPS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_softmax_family_into_strided_outs(launches, op, dtype):
    cpu, cuda, dim = _softmax_inputs(op, "rows", dtype, seed=2)
    shape = cpu[0].shape
    outs = [gt.empty(shape[::-1], dtype=getattr(gt, dtype), device=d).permute(2, 1, 0)
            for d in ("cpu", "cuda")]
    launches.clear()
    got = _call(op, cuda, dim, out=outs[1])
    assert got is outs[1] and got.stride() == (1, 3, 12)
    assert [k for k in launches if "softmax" in k] == [
        KERNEL_NAMES[op].format(_kernel_dtype(dtype))]
    _assert_close(got, _call(op, cpu, dim, out=outs[0]), dtype)


def test_half_to_float_and_float16_gradients_of_float32_softmax(launches):
    """The kernels honour the output dtype the meta gives: float32 from float16 input
    (half_to_float, PyTorch's CUDA-only mode) and a float16 input gradient from float32
    grad_output/output; both compute in float32 and round once."""
    from glasstorch.ops.nn.loss import _log_softmax, _softmax_backward_data
    x = _rng(3).normal(size=(4, 6)) * 3
    cpu16, cuda16 = _both(x, "float16")
    out = gt.empty((4, 6), device="cuda")
    launches.clear()
    _log_softmax.impls["CUDA"](out, cuda16, -1, True)
    assert launches[-1] == "gt_log_softmax_rows_float32"
    _assert_close(out, gt._log_softmax(cpu16.float(), -1, False), "float32")

    g, y = (_both(v, "float32") for v in (x, np.abs(x) / 10))
    grad16 = gt.empty((4, 6), dtype=gt.float16, device="cuda")
    _softmax_backward_data.impls["CUDA"](grad16, g[1], y[1], 1, gt.float16)
    assert launches[-1] == "gt_softmax_rows_backward_float32"
    _assert_close(grad16, gt._softmax_backward_data(g[0], y[0], 1, gt.float32).half(),
                  "float16")


@pytest.mark.parametrize("mode", ["softmax", "log_softmax"])
def test_autograd_through_fused_softmax(launches, mode):
    """F.softmax/log_softmax and their backward (an nll-style gradient) on 'cuda' match the
    CPU, through the native kernels."""
    x = _rng(4).normal(size=(5, 7))
    w = _rng(5).normal(size=(5, 7))
    grads = []
    for device in ("cpu", "cuda"):
        t = gt.tensor(x, dtype=gt.float32, device=device, requires_grad=True)
        y = getattr(gt.nn.functional, mode)(t, dim=-1)
        (y * gt.tensor(w, dtype=gt.float32, device=device)).sum().backward()
        grads.append((y.detach(), t.grad))
    assert any(k.startswith(f"gt_{mode}_rows_backward") for k in launches)
    for got, expected in zip(grads[1], grads[0]):
        _assert_close(got, expected, "float32")


# ---------------------------------------------------------------- layer_norm

# name: (base shape, view, normalized_shape)
LN_LAYOUTS = {
    "rows": ((4, 3, 8), None, (8,)),
    "two-dims": ((5, 3, 4), None, (3, 4)),
    "transposed": ((8, 6), lambda t: t.t(), (8,)),
    "no-rows": ((0, 5), None, (5,)),
    "empty-rows": ((3, 0), None, (0,)),
}
LN_CASES = [(layout, "float32", affine) for layout in LN_LAYOUTS
            for affine in ("none", "weight", "both")] + [
    (layout, dtype, affine) for dtype in ("float16", "float64", "bfloat16")
    for layout in ("rows", "transposed") for affine in ("none", "both")] + [
    ("rows", "float16", "float32-params"), ("two-dims", "bfloat16", "float32-params")]


def _layer_norm_inputs(layout, dtype, affine, seed=0):
    shape, view, normalized = LN_LAYOUTS[layout]
    rng = _rng(seed)
    x = _both(rng.normal(size=shape) * 2 + 1, dtype, view)
    param_dtype = "float32" if affine == "float32-params" else dtype
    w = b = (None, None)
    if affine != "none":
        w = _both(rng.normal(size=normalized), param_dtype)
    if affine in ("both", "float32-params"):
        b = _both(rng.normal(size=normalized), param_dtype)
    return (x[0], normalized, w[0], b[0], 1e-5), (x[1], normalized, w[1], b[1], 1e-5)


@pytest.mark.parametrize("layout,dtype,affine", LN_CASES)
def test_layer_norm_fused(launches, monkeypatch, layout, dtype, affine):
    """Output, mean and rstd of the shared and the fused kernel (every layout: a strided
    input is copied) are the CPU's, in the dtypes and strides the meta gives."""
    cpu, cuda = _layer_norm_inputs(layout, dtype, affine)
    expected = gt.native_layer_norm(*cpu)
    if dtype in ("float16", "bfloat16"):    # on a GPU mean and rstd stay float32 (torch's)
        expected = (expected[0],) + tuple(e.float() for e in expected[1:])
    shared = _shared_path(monkeypatch, lambda: gt.native_layer_norm(*cuda))
    for s, e in zip(shared, expected):
        _assert_close(s, e, dtype)
    launches.clear()
    got = gt.native_layer_norm(*cuda)
    kernel_dtype = "float32" if dtype == "bfloat16" or affine == "float32-params" else dtype
    rows = LN_LAYOUTS[layout][0][0]
    assert [k for k in launches if "layer_norm" in k] == (
        [f"gt_layer_norm_rows_{kernel_dtype}"] if rows else [])
    for g, s, e in zip(got, shared, expected):
        _assert_close(g, e, dtype)
        _assert_close(g, s.cpu(), dtype)


# ---------------------------------------------------------------- Adam

ADAM_CONFIGS = {
    "adam": dict(lr=1e-2),
    "adam-l2-amsgrad": dict(lr=1e-2, weight_decay=0.1, amsgrad=True),
    "adamw-maximize": dict(lr=1e-2, weight_decay=0.01, maximize=True,
                           decoupled_weight_decay=True),
    "adamw-amsgrad-beta1-0.3": dict(lr=3e-3, betas=(0.3, 0.99), weight_decay=0.05,
                                    amsgrad=True, decoupled_weight_decay=True),
}
ADAM_STEPS = 5


def _adam_run(device, dtype, config):
    """Five Adam steps on three parameters: a weight (whose gradient is transposed in
    memory every other step), a bias, and a parameter strided in memory."""
    rng = _rng(7)
    d = getattr(gt, dtype)
    values = [rng.normal(size=s) for s in ((6, 5), (5,), (4, 3))]
    params = [gt.tensor(v, dtype=d, device=device, requires_grad=True) for v in values[:2]]
    strided = gt.empty_strided((4, 3), (1, 4), dtype=d, device=device)
    with gt.no_grad():
        strided.copy_(gt.tensor(values[2], dtype=d))
    params.append(strided.requires_grad_())
    opt = gt.optim.Adam(params, **config)
    for step in range(ADAM_STEPS):
        grads = [rng.normal(size=v.shape) * (0.1 if step == 3 else 1) for v in values]
        params[0].grad = gt.tensor(grads[0].T, dtype=d, device=device).t() if step % 2 else \
            gt.tensor(grads[0], dtype=d, device=device)
        for p, g in zip(params[1:], grads[1:]):
            p.grad = gt.tensor(g, dtype=d, device=device)
        opt.step()
    return params, opt


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", ADAM_CONFIGS)
def test_adam_on_cuda_equals_adam_on_the_cpu(launches, dtype, config):
    """The fused step for the contiguous parameters, the NumPy sequence for the strided one:
    either way the values of the CPU's Adam to the last bit, and its version counts."""
    expected, expected_opt = _adam_run("cpu", dtype, ADAM_CONFIGS[config])
    launches.clear()
    got, opt = _adam_run("cuda", dtype, ADAM_CONFIGS[config])
    assert launches.count(f"gt_adam_step_{dtype}") == 2 * ADAM_STEPS
    assert len([k for k in launches if k.startswith("gt_adam")]) == 2 * ADAM_STEPS
    for p, e in zip(got, expected):
        assert p._version == e._version
        np.testing.assert_array_equal(p.detach().cpu().numpy(), e.detach().numpy())
        state, expected_state = opt.state[p], expected_opt.state[e]
        assert sorted(state) == sorted(expected_state)
        for key in state:
            assert state[key]._version == expected_state[key]._version, key
            np.testing.assert_array_equal(state[key].cpu().numpy(),
                                          expected_state[key].numpy(), err_msg=key)


def test_adam_takes_the_numpy_sequence_on_simulated_cupy(cuda_backend):
    """Without CUDA C (the simulation) the GPU branch declines and the NumPy calls run on
    the device arrays: the CPU's values exactly."""
    if cuda_backend == "real":
        pytest.skip("a real GPU runs the fused kernel (the test above)")
    for config in ADAM_CONFIGS.values():
        for p, e in zip(_adam_run("cuda", "float32", config)[0],
                        _adam_run("cpu", "float32", config)[0]):
            np.testing.assert_array_equal(p.detach().cpu().numpy(), e.detach().numpy())


# ---------------------------------------------------------------- bfloat16 conversions

def _bf16_values():
    special = np.array([0x7F800001, 0xFF800001, 0x7FC00000, 0xFFFFFFFF, 0x7F7FFFFF,
                        0x7F800000, 0xFF800000, 0x00000001, 0x80008000, 0x00018000,
                        0x3F808000, 0x3F818000, 0x3F807FFF, 0x80000000, 0], np.uint32)
    noise = _rng(8).integers(0, 1 << 32, 6 * 40 - special.size, dtype=np.uint32)
    return np.concatenate([special, noise]).view(np.float32).reshape(6, 40)


def test_bfloat16_conversions_take_one_pass_where_contiguous(launches):
    from glasstorch.backends.cuda import bfloat16
    cp = runtime.cupy()
    x = _bf16_values()
    with np.errstate(invalid="ignore"):
        expected = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    widened = expected.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
    device_x = cp.asarray(x)
    cases = [(device_x, expected, True), (device_x.T, expected.T, False),
             (device_x[::2, 1::3], expected[::2, 1::3], False),
             (device_x[2, 5], expected[2, 5], True)]
    for array, bits, contiguous in cases:
        launches.clear()
        got = bfloat16.from_float32(cp, array)
        assert launches == (["gt_float32_to_bf16"] if contiguous else [])
        assert got.dtype == np.uint16 and got.shape == bits.shape
        np.testing.assert_array_equal(got.get(), bits)
    for array, values, contiguous in [(cp.asarray(expected), widened, True),
                                      (cp.asarray(expected).T, widened.T, False)]:
        launches.clear()
        got = bfloat16.to_float32(cp, array)
        assert launches == (["gt_bf16_to_float32"] if contiguous else [])
        np.testing.assert_array_equal(got.get().view(np.uint32), values)


def test_bfloat16_tensors_round_trip_on_cuda_as_on_the_cpu(launches):
    """Device-side casts (float32 <-> bfloat16 between GPU tensors) round as the CPU's,
    contiguous ones in one launch each, transposed ones by the arithmetic."""
    x = gt.tensor(_bf16_values())
    for view, kernels in ((lambda t: t, ["gt_float32_to_bf16", "gt_bf16_to_float32"]),
                          (lambda t: t.t(), [])):
        on_gpu = view(x.to("cuda"))
        launches.clear()
        got = on_gpu.to(gt.bfloat16)
        back = got.float()
        assert launches == kernels
        expected = view(x).to(gt.bfloat16)
        assert got.stride() == expected.stride() and back.stride() == expected.stride()
        np.testing.assert_array_equal(got.cpu().view(gt.int16).numpy(),
                                      expected.view(gt.int16).numpy())
        np.testing.assert_array_equal(back.cpu().numpy().view(np.uint32),
                                      expected.float().numpy().view(np.uint32))


def test_half_to_float_softmax_is_a_cuda_option():
    # PyTorch's CUDA softmax may take float16 and give float32 (and its backward the
    # reverse); its CPU kernel refuses, and so does glasstorch's on the CPU.
    x = gt.randn(4, 7).half()
    for op in (gt.ops.aten._softmax, gt.ops.aten._log_softmax):
        y = op(x.cuda(), -1, True)
        assert y.dtype is gt.float32 and y.device.type == "cuda"
        expected = op(x.float(), -1, False)
        np.testing.assert_allclose(y.cpu().numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
        with pytest.raises(RuntimeError, match="not supported on CPU"):
            op(x, -1, True)
        with pytest.raises(RuntimeError, match="Half type only"):
            op(x.float().cuda(), -1, True)
    y = gt.ops.aten._softmax(x.cuda(), -1, True)
    g = gt.randn(4, 7).cuda()
    grad = gt.ops.aten._softmax_backward_data(g, y, -1, gt.float16)
    assert grad.dtype is gt.float16
    expected = gt.ops.aten._softmax_backward_data(g.cpu(), y.cpu(), -1, gt.float32)
    np.testing.assert_allclose(grad.cpu().float().numpy(), expected.numpy(), rtol=2e-3,
                               atol=2e-3)


@pytest.mark.parametrize("dtype", [gt.float16, gt.bfloat16], ids=str)
def test_layer_norm_statistics_stay_float32_on_the_gpu(dtype):
    # PyTorch's CUDA layer_norm returns its mean and rstd in the accumulation type
    x = gt.randn(3, 8).to(dtype)
    w, b = gt.randn(8).to(dtype), gt.randn(8).to(dtype)
    out, mean, rstd = gt.ops.aten.native_layer_norm(x.cuda(), [8], w.cuda(), b.cuda(), 1e-5)
    assert out.dtype is dtype and mean.dtype is gt.float32 and rstd.dtype is gt.float32
    ref_out, ref_mean, ref_rstd = gt.ops.aten.native_layer_norm(x.float(), [8], w.float(),
                                                                b.float(), 1e-5)
    np.testing.assert_allclose(mean.cpu().numpy(), ref_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd.cpu().numpy(), ref_rstd.numpy(), rtol=1e-5, atol=1e-6)
    xr = x.cuda().requires_grad_()
    gt.nn.functional.layer_norm(xr, (8,), w.cuda(), b.cuda()).float().sum().backward()
    assert xr.grad.dtype is dtype and xr.grad.device.type == "cuda"
