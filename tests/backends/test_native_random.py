"""The C samplers of backends/cpu/native/random.c: PyTorch's normal_fill rows (float32:
Cephes' log and sincos in the steps of PyTorch's AVX2 kernel; float64: libm's log, cos and
sin), its normal_distribution<double> and its uniform_real. They give PyTorch's bits where
the NumPy formulas they replace were a few ulps off (NumPy's vector log/sin/cos), the
uniforms the NumPy formula's bits, on any thread count, writing only their tensor and moving
the generator exactly as the NumPy path does."""
from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt
from native_paths import both_paths, needs_compiler, spy_kernels, threaded_kernels

pytestmark = needs_compiler


def _draw(lib, expr: str, seed: int):
    """(values, RNG state bytes) of `expr` drawn after manual_seed(seed)."""
    lib.manual_seed(seed)
    value = eval(expr, {"lib": lib})
    if value.dtype in (lib.float16, lib.bfloat16):
        value = value.float()
    return value.numpy(), lib.get_rng_state().numpy()


@pytest.fixture
def calls(monkeypatch):
    return spy_kernels(monkeypatch, "random")


def test_the_samplers_use_the_c_kernels_where_they_apply(calls):
    gt.randn(16)
    gt.randn(40, dtype=gt.float64)
    gt.randn(20, dtype=gt.complex64)                 # its real view: 40 float32
    gt.randn(8)                                      # under 16: normal_distribution<double>
    gt.empty(8, 4).t().normal_()                     # not contiguous: likewise
    gt.empty(5).log_normal_()
    gt.rand(5)
    gt.rand(5, dtype=gt.float64)
    assert calls == ["normal_fill_f32", "normal_fill_f64", "normal_fill_f32", "normal_doubles",
                     "normal_doubles", "normal_doubles", "uniform_f32", "uniform_f64"]
    calls.clear()
    gt.randn(100, dtype=gt.float16)                  # block by block in float32: NumPy
    gt.rand(100, dtype=gt.bfloat16)
    assert calls == []


# ---- PyTorch's values ------------------------------------------------------------------

FLOAT32_BLOCKS = [
    "lib.randn(16)", "lib.randn(17)", "lib.randn(31)", "lib.randn(32)", "lib.randn(1000)",
    "lib.randn(64, 256)", "lib.randn_like(lib.zeros(64, 256))",
    "lib.empty(300).normal_(-2.0, 0.5)", "lib.empty(300).normal_(3.0, 0.0)",
    "lib.empty(40).normal_(0.0, 1e-30)", "lib.normal(2.0, 3.0, (50,))",
    "lib.randn(20, dtype=lib.complex64)",
    "(lib.randn(3, dtype=lib.float64), lib.randn(33))[-1]"]
EXACT = [
    "lib.randn(16, dtype=lib.float64)", "lib.randn(17, dtype=lib.float64)",
    "lib.randn(31, dtype=lib.float64)", "lib.randn(1000, dtype=lib.float64)",
    "lib.empty(300, dtype=lib.float64).normal_(-2.0, 0.5)",
    "lib.empty(300, dtype=lib.float64).normal_(3.0, 0.0)",
    "lib.randn(9, dtype=lib.complex128)", "lib.randn(5)", "lib.randn(15, dtype=lib.float64)",
    "lib.empty(37, 41, dtype=lib.float64).t().normal_(1.5, 2.25)",
    "lib.empty(100, dtype=lib.float64)[::3].normal_(-1.0, 0.5)",
    "(lib.randn(3, dtype=lib.float64), lib.randn(1, dtype=lib.float64),"
    " lib.randn(40, dtype=lib.float64), lib.randn(2, dtype=lib.float64))[-1]",
    "lib.empty(1001).uniform_(-3.0, 5.0)", "lib.empty(1001, dtype=lib.float64).uniform_(-3, 5)",
    "lib.empty(40, 50).t().uniform_(-2, 2)", "lib.rand(3, 7, dtype=lib.float64)",
    "lib.empty(301, dtype=lib.float64).log_normal_(0.5, 1.5)",
    "lib.empty(7, 3).log_normal_(-1.0, 0.25)"]


def _pytorch_avx2_normal(torch) -> bool:
    """Whether PyTorch's float32 normal_fill is its AVX2 kernel (on AVX2 and AVX512 CPUs),
    the one whose steps random.c takes; elsewhere it is the scalar one."""
    return torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


@pytest.mark.parametrize("seed", [0, 7, 2 ** 33 + 5])
@pytest.mark.parametrize("expr", FLOAT32_BLOCKS + EXACT)
def test_values_and_state_are_pytorchs_bit_for_bit(expr, seed, monkeypatch):
    torch = pytest.importorskip("torch")
    if expr in FLOAT32_BLOCKS and not _pytorch_avx2_normal(torch):
        pytest.skip("PyTorch's float32 normal_fill is not its AVX2 kernel on this CPU")
    spy_kernels(monkeypatch)                         # the C kernels on
    (ours, our_state), (theirs, their_state) = _draw(gt, expr, seed), _draw(torch, expr, seed)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(our_state, their_state)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_threaded_fills_give_pytorchs_values(dtype, monkeypatch):
    torch = pytest.importorskip("torch")
    if dtype == "float32" and not _pytorch_avx2_normal(torch):
        pytest.skip("PyTorch's float32 normal_fill is not its AVX2 kernel on this CPU")
    expr = f"lib.randn((1 << 16) + 5, dtype=lib.{dtype})"
    spy_kernels(monkeypatch)
    with threaded_kernels(monkeypatch):
        ours = _draw(gt, expr, 3)[0]
    np.testing.assert_array_equal(ours, _draw(torch, expr, 3)[0])


# ---- against the NumPy formulas --------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "gt.randn(100_000)", "gt.randn(100_007, dtype=gt.float64)",
    "gt.empty(50_000).normal_(3.0, 7.0)", "gt.empty(50_000, dtype=gt.float64).normal_(-1, 0.1)",
    "gt.empty(300, 200, dtype=gt.float64).t().normal_(0.5, 2.0)",
    "gt.empty(300, 200).t().normal_(0.5, 2.0)", "gt.randn(11, dtype=gt.float64)"])
def test_normals_agree_with_the_numpy_formulas_to_the_math_functions(expr, monkeypatch):
    """The same draws through the same steps: only log, sin and cos differ (NumPy's vector
    ones against libm's and Cephes'), by a few ulps of a value or of its std."""
    def draw():
        gt.manual_seed(5)
        return eval(expr).numpy()
    c, numpy_path = both_paths(draw, monkeypatch)
    eps = np.finfo(c.dtype).eps
    std = 7.0 if "7.0" in expr else 2.0
    np.testing.assert_allclose(c, numpy_path, rtol=4 * eps, atol=8 * eps * std)
    assert np.mean(c == numpy_path) > 0.8             # most are the same bits


@pytest.mark.parametrize("dtype", [gt.float32, gt.float64])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-3.0, 5.0), (1e-3, 2e-3), (-1e30, 1e30),
                                    (2.5, 2.5), (0.0, 1e-45)])
def test_uniforms_are_the_numpy_formulas_bits(dtype, bounds, monkeypatch):
    def draw():
        gt.manual_seed(9)
        return [gt.empty(1001, dtype=dtype).uniform_(*bounds).numpy(),
                gt.empty(40, 50, dtype=dtype).t().uniform_(*bounds).numpy()]
    c, numpy_path = both_paths(draw, monkeypatch)
    for a, b in zip(c, numpy_path):
        np.testing.assert_array_equal(a, b)


def test_threaded_uniforms_are_the_same(monkeypatch):
    def draw():
        gt.manual_seed(2)
        return gt.rand(100_003).numpy(), gt.rand(50_001, dtype=gt.float64).numpy()
    spy_kernels(monkeypatch)
    single = draw()
    with threaded_kernels(monkeypatch):
        for a, b in zip(draw(), single):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [gt.float16, gt.bfloat16])
def test_half_precision_normals_keep_the_numpy_path(dtype, monkeypatch):
    def draw():
        gt.manual_seed(4)
        return [gt.randn(100, dtype=dtype).float().numpy(),
                gt.randn(9, dtype=dtype).float().numpy()]
    c, numpy_path = both_paths(draw, monkeypatch)
    for a, b in zip(c, numpy_path):
        np.testing.assert_array_equal(a, b)


def test_the_generator_moves_as_on_the_numpy_path(monkeypatch):
    """Each draw takes the same words, and the cached sine half of a normal_distribution
    pair is kept and used alike: the state after, and what follows, are the same."""
    def draws():
        gt.manual_seed(13)
        for expr in ["gt.randn(3, dtype=gt.float64)", "gt.randn(17)", "gt.randn(1)",
                     "gt.randn(2, dtype=gt.float64)", "gt.empty(5).log_normal_()",
                     "gt.randn(40, dtype=gt.float64)", "gt.rand(7)", "gt.randn(5, 3).t()"]:
            eval(expr)
        return gt.get_rng_state().numpy(), gt.rand(6, dtype=gt.float64).numpy()
    (c_state, c_next), (np_state, np_next) = both_paths(draws, monkeypatch)
    np.testing.assert_array_equal(c_state, np_state)
    np.testing.assert_array_equal(c_next, np_next)


# ---- writing -------------------------------------------------------------------------------

@pytest.mark.parametrize("sample", [lambda t: t.normal_(1.0, 2.0), lambda t: t.uniform_(-1, 1)])
def test_a_contiguous_view_is_filled_in_place_and_nothing_around_it(sample, monkeypatch):
    spy_kernels(monkeypatch)
    base = gt.zeros(100, dtype=gt.float64)
    gt.manual_seed(6)
    sample(base[10:50])
    gt.manual_seed(6)
    alone = sample(gt.empty(40, dtype=gt.float64))
    np.testing.assert_array_equal(base[10:50].numpy(), alone.numpy())
    assert not base[:10].numpy().any() and not base[50:].numpy().any()
    assert base._version == 1
