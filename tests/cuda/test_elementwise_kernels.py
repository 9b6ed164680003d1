"""glasstorch's vectorised CUDA C for large elementwise ops (backends/cuda/elementwise.py).

- Every kernel compiles with NVRTC (any machine with libnvrtc; see test_nvrtc.py).
- emulated (simulated CuPy): runs_cuda_c() forced True and the kernels replaced by a NumPy
  emulation, so the routing runs here: which calls launch, the operands' order and kinds,
  scalars in the output's dtype, and every case that must stay with CuPy.
- real (marked `cuda`, a GPU only): the compiled kernels against the host's values and
  CuPy's own ufuncs, over values with NaN, infinities and signed zeros.
"""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cuda import elementwise, nvrtc, runtime

N = elementwise.MIN_ELEMENTS
UFUNCS = list(elementwise.EXPRESSIONS)


def _nvrtc_or_skip():
    try:
        nvrtc.compile_check('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }')
    except (OSError, nvrtc.CompileError) as error:
        pytest.skip(f"no usable libnvrtc here: {error}")


@pytest.mark.parametrize("op, dtype, kinds", elementwise.all_kernels())
def test_every_kernel_compiles(op, dtype, kinds):
    _nvrtc_or_skip()
    ptx = nvrtc.compile_check(elementwise.source(op, dtype, kinds))
    assert elementwise.kernel_name(op, dtype, kinds) in ptx


def _reference(op: str, a, b):
    """What a kernel computes, on the host: one IEEE operation, or for maximum/minimum the
    C expression's select (NaN propagates; a tie such as -0.0 vs 0.0 keeps the first)."""
    with np.errstate(all="ignore"):
        if op == "maximum":
            return np.where((a >= b) | (a != a), a, b)
        if op == "minimum":
            return np.where((a <= b) | (a != a), a, b)
        return {f.__name__: f for f in UFUNCS}[op](a, b)


@pytest.fixture
def emulated(cuda_backend, monkeypatch):
    """The kernels launched (names, in order), run by a NumPy emulation of their C."""
    if cuda_backend == "real":
        pytest.skip("emulation stands in for a GPU; this machine runs the real kernels")
    launched = []

    def kernel(op, dtype, kinds):
        def run(grid, block, args):
            *operands, out, groups = args
            lanes = elementwise.VECTORS[dtype][2]
            assert int(groups) * lanes == out.size and out.data.ptr % 16 == 0
            assert grid[0] * block[0] >= min(int(groups), elementwise.THREADS)
            values = [o.get() if kind == "t" else o for kind, o in zip(kinds, operands)]
            for kind, v in zip(kinds, values):
                assert kind == "t" or v.dtype == out.dtype       # scalars in out's dtype
            out.set(np.broadcast_to(_reference(op, *values), out.shape).astype(out.dtype))
            launched.append(elementwise.kernel_name(op, dtype, kinds))
        return run
    monkeypatch.setattr(elementwise, "_kernel", kernel)
    monkeypatch.setattr(runtime, "runs_cuda_c", lambda: True)
    return launched


def _values(n, dtype, seed):
    v = np.random.default_rng(seed).normal(size=n).astype(dtype)
    v[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0]
    return v


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensor_ops_take_the_kernels_and_give_the_cpu_values(emulated, dtype):
    a, b = gt.tensor(_values(N, dtype, 0)), gt.tensor(_values(N, dtype, 1))
    ga, gb = a.to("cuda"), b.to("cuda")
    for got, expected in ((ga + gb, a + b), (ga - gb, a - b), (ga * gb, a * b),
                          (ga / gb, a / b), (gt.maximum(ga, gb), gt.maximum(a, b)),
                          (gt.minimum(ga, gb), gt.minimum(a, b)),
                          (ga * 3.0, a * 3.0), (2.5 - ga, 2.5 - a),
                          (gt.relu(ga), gt.relu(a))):
        assert got.device.type == "cuda" and got.dtype is expected.dtype
        np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())
    assert len(emulated) == 9
    assert f"gt_elementwise_multiply_{dtype}_ts" in emulated
    assert f"gt_elementwise_subtract_{dtype}_st" in emulated
    assert f"gt_elementwise_maximum_{dtype}_ts" in emulated      # relu


def test_relu_keeps_negative_zero_and_nan(emulated):
    x = gt.zeros(N)
    x[0], x[1] = -0.0, float("nan")
    y = gt.relu(x.to("cuda")).cpu().numpy()
    assert np.signbit(y[0]) and np.isnan(y[1])
    assert emulated == ["gt_elementwise_maximum_float32_ts"]


def test_in_place_ops_write_their_input(emulated):
    a = gt.ones(N, device="cuda")
    a.add_(a).mul_(3.0)
    np.testing.assert_array_equal(a.cpu().numpy(), np.full(N, 6.0, np.float32))
    assert emulated == ["gt_elementwise_add_float32_tt", "gt_elementwise_multiply_float32_ts"]


def test_cases_the_kernels_leave_to_cupy(emulated):
    big = gt.ones(N, device="cuda")
    cases = [
        lambda: gt.ones(N - 4, device="cuda") + 1.0,                   # below MIN_ELEMENTS
        lambda: big + gt.ones(1, device="cuda"),                        # broadcast
        lambda: big[::2] * gt.ones(N // 2, device="cuda"),              # strided
        lambda: big.double() + big,                                     # mixed dtypes
        lambda: big.half() * 2.0,                                       # float16
        lambda: gt.ones(N, dtype=gt.int32, device="cuda") + 1,          # integers
        lambda: big[1:N - 3] + big[1:N - 3],                            # not 16-byte aligned
        lambda: gt.ones(N + 1, device="cuda")[:N] * 2.0 + 0.0,          # aligned view: kernels
    ]
    for case in cases[:-1]:
        case()
        assert emulated == [], case
    cases[-1]()
    assert emulated == ["gt_elementwise_multiply_float32_ts", "gt_elementwise_add_float32_ts"]


def test_numbers_the_output_dtype_cannot_hold_go_to_cupy(emulated):
    out = gt.ones(N, device="cuda")._array()
    assert not elementwise.launch(np.add, (out, 10 ** 400), out)
    assert not elementwise.launch(np.add, (out, True), out)
    assert not elementwise.launch(np.add, (out, np.float64(0.5)), out)     # NumPy: float64
    assert elementwise.launch(np.add, (out, np.float64(0.5)), out, dtype=np.float32)
    assert elementwise.launch(np.add, (out, 10 ** 30), out)
    assert emulated == ["gt_elementwise_add_float32_ts"] * 2


def test_an_output_overlapping_an_operand_goes_to_cupy(emulated):
    from glasstorch.backends.cpu import parallel
    buf = gt.arange(float(N + 8), device="cuda")
    x = buf._array()
    out, shifted = x[:N], x[4:N + 4]
    assert not elementwise.launch(np.add, (shifted, out), out)
    expected = (np.arange(N, dtype=np.float32) + 4) + np.arange(N, dtype=np.float32)
    parallel.ufunc(np.add, (shifted, out), out)
    np.testing.assert_array_equal(out.get(), expected)
    assert emulated == []


def _assert_same_values(got, expected):
    """Equal values, NaN where NaN (a GPU gives its own NaN bits), zeros of the same sign."""
    np.testing.assert_array_equal(got, expected)
    numbers = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(expected[numbers]))


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda f: f.__name__)
def test_real_kernels_give_the_reference_values(cuda_backend, ufunc, dtype):
    """No subnormals: CuPy compiles every kernel, its own and these, with -ftz=true, so
    float32 subnormals flush to zero on either path (module docstring)."""
    import cupy as cp
    a, b = _values(N, dtype, 0), _values(N, dtype, 1)
    b[16:24] = -0.0
    scalar = np.dtype(dtype).type(-0.0 if ufunc in (np.maximum, np.minimum) else 1.5)
    for x, y in ((a, b), (a, scalar), (scalar, b)):
        ours = cp.empty(N, dtype)
        args = tuple(cp.asarray(v) if isinstance(v, np.ndarray) else v for v in (x, y))
        assert elementwise.launch(ufunc, args, ours)
        _assert_same_values(ours.get(), _reference(ufunc.__name__, x, y).astype(dtype))
        if ufunc not in (np.maximum, np.minimum):          # CuPy's: the same IEEE operation
            _assert_same_values(ours.get(), ufunc(*args).get())
