"""The C kernels of backends/cpu/native against the NumPy formulas they replace (each
operator's tests against PyTorch run on both paths through the `kernel_path` fixture):
that they are used, agree to libm's rounding, work in place, threaded and in a forked
child, and that a missing or broken compiler falls back to NumPy."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import glasstorch as gt
import glasstorch.nn.functional as GF
from glasstorch.backends.cpu import native, reduction
from glasstorch.compiler.inductor import build
from glasstorch.ops.nn.activation import gelu_backward
from native_paths import both_paths, needs_compiler, spy_kernels, threaded_kernels



def _values(dtype, n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.standard_normal(n) * 4, np.linspace(-12, 12, 999),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 3e38, -3e38]])
    return x.astype(dtype)


def assert_equal_with_nan(a, b):
    assert np.array_equal(a, b, equal_nan=True)


@needs_compiler
def test_gelu_uses_the_c_kernel(monkeypatch):
    calls = spy_kernels(monkeypatch)
    x = gt.randn(64, 8)
    GF.gelu(x)
    GF.gelu(x.double(), approximate="tanh")
    gelu_backward(gt.ones(64, 8), x)
    GF.gelu(x.t())                    # not C-contiguous: the NumPy formulas
    GF.gelu(x.half())                 # float16: the NumPy formulas (in float32)
    assert calls == ["gelu_f32", "gelu_f64", "gelu_backward_f32"]


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_agrees_with_the_numpy_formulas(dtype, approximate, monkeypatch):
    """The same arithmetic in the same order: only exp, tanh and erf (libm's against
    NumPy's) may round differently, by an ulp or two of the terms (Phi(x) = 0.5 + erf / 2
    cancels for negative x, so the result's own ulp can be far smaller)."""
    x = _values(dtype)
    g = np.random.default_rng(1).standard_normal(x.size).astype(dtype)
    y_c, y_np = both_paths(lambda: GF.gelu(gt.from_numpy(x), approximate=approximate).numpy(),
                            monkeypatch)
    dx_c, dx_np = both_paths(lambda: gelu_backward(gt.from_numpy(g), gt.from_numpy(x),
                                                    approximate=approximate).numpy(),
                              monkeypatch)
    assert y_c.dtype == y_np.dtype == dtype
    assert np.array_equal(np.isnan(y_c), np.isnan(y_np))
    assert np.array_equal(np.isnan(dx_c), np.isnan(dx_np))
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(y_c, y_np, rtol=4 * eps, atol=4 * eps)
    np.testing.assert_allclose(dx_c, dx_np, rtol=4 * eps, atol=4 * eps)


@needs_compiler
def test_in_place_gelu_reads_each_element_before_writing_it(monkeypatch):
    monkeypatch.setattr(native, "ENABLED", True)
    x = gt.from_numpy(_values(np.float32))
    want = GF.gelu(x)
    y = x.clone()
    gt.ops.aten.gelu_(y)
    assert_equal_with_nan(y.numpy(), want.numpy())


@needs_compiler
def test_results_do_not_depend_on_threads_or_position(monkeypatch):
    monkeypatch.setattr(native, "ENABLED", True)
    x = gt.from_numpy(_values(np.float32, n=200_000))
    g = gt.from_numpy(_values(np.float32, n=200_000)[::-1].copy())
    before = gt.get_num_threads()
    gt.set_num_threads(1)
    try:
        serial, serial_grad = GF.gelu(x).numpy(), gelu_backward(g, x).numpy()
    finally:
        gt.set_num_threads(before)
    with threaded_kernels(monkeypatch):
        assert native.threads(x.numel()) == 3 and native.pool_threads(x.numel()) == 3
        assert_equal_with_nan(GF.gelu(x).numpy(), serial)
        assert_equal_with_nan(gelu_backward(g, x).numpy(), serial_grad)
        # and an element's result does not depend on where it falls in a vector
        for i in (0, 5, 17, 33):
            assert_equal_with_nan(GF.gelu(x[i:i + 3]).numpy(), serial[i:i + 3])


@needs_compiler
def test_a_forked_child_runs_the_kernels_on_one_thread():
    """libgomp hangs in a forked child's first parallel region once the parent has started
    OpenMP threads; the child runs the kernels (and compiled code) on one thread instead."""
    script = textwrap.dedent("""
        import os
        import glasstorch as gt
        from glasstorch.compiler.inductor import codegen
        codegen.PARALLEL_THRESHOLD = 1
        gt.set_num_threads(2)
        x = gt.randn(100_000)
        f = gt.compile(lambda t: (t * 2).relu() + 1)
        want = (gt.nn.functional.gelu(x), f(x))
        pid = os.fork()
        if pid == 0:
            ok = (gt.equal(gt.nn.functional.gelu(x), want[0]) and gt.equal(f(x), want[1]))
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        raise SystemExit(os.waitstatus_to_exitcode(status))
    """)
    result = subprocess.run([sys.executable, "-c", script], timeout=120, capture_output=True,
                            text=True, env={**os.environ, "GLASSTORCH_NATIVE": "1"})
    assert result.returncode == 0, result.stderr


@needs_compiler
@pytest.mark.parametrize("keys", [7, 64, 256, 300])  # transposed scores to 128 keys, rows above
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("dtype", [gt.float32, gt.float64])
def test_attention_softmax_agrees_with_the_numpy_formulas(keys, is_causal, dtype, monkeypatch):
    """The attention kernels' softmax and its backward by C and by NumPy: the C kernel is
    called, values, logsumexp and gradients agree, the result does not depend on the thread
    count, and a nan score makes its query's row nan on both paths."""
    rng = np.random.default_rng(keys)
    # long rows: the causal masks of the last queries end inside the last partial block
    queries = keys - 3 if keys > 128 else min(keys, 40)
    q = gt.from_numpy(rng.standard_normal((2, 3, queries, 8))).to(dtype)
    k, v = (gt.from_numpy(rng.standard_normal((2, 3, keys, 8))).to(dtype) for _ in range(2))
    g = gt.from_numpy(rng.standard_normal(tuple(q.shape))).to(dtype)
    aten = gt.ops.aten

    def run(q=q):
        out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal)
        grads = aten._scaled_dot_product_flash_attention_for_cpu_backward(
            g, q, k, v, out, lse, 0.0, is_causal)
        return [t.numpy() for t in (out, lse, *grads)]
    calls = spy_kernels(monkeypatch)
    with_c, with_numpy = both_paths(run, monkeypatch)
    assert {name.rsplit("_", 1)[0] for name in calls} == {
        "softmax_columns" if keys <= 128 else "softmax_rows", "softmax_backward_rows"}
    eps = np.finfo(with_c[0].dtype).eps
    for a, b in zip(with_c, with_numpy):
        np.testing.assert_allclose(a, b, rtol=64 * eps, atol=64 * eps)
    monkeypatch.setattr(native, "ENABLED", True)
    with threaded_kernels(monkeypatch):
        for a, b in zip(run(), with_c):
            assert np.array_equal(a, b)
    q_nan = q.clone()
    q_nan[1, 2, 3, 0] = float("nan")
    with_c, with_numpy = both_paths(lambda: run(q_nan)[:2], monkeypatch)
    for a, b in zip(with_c, with_numpy):
        assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.isnan(with_c[0][1, 2, 3]).all() and not np.isnan(with_c[0][1, 2, 4]).any()


@needs_compiler
@settings(deadline=None, max_examples=60,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=70),
       lead=st.integers(1, 3), dtype=st.sampled_from([np.float32, np.float64]))
def test_sums_over_leading_dims_are_numpys_bit_for_bit(shape, lead, dtype, monkeypatch):
    lead = min(lead, len(shape) - 1)
    rng = np.random.default_rng(len(shape))
    a = (rng.standard_normal(shape) * rng.lognormal(0, 3, shape)).astype(dtype)
    a.reshape(-1)[::7] = np.inf if a.size > 7 else 0
    monkeypatch.setattr(reduction, "_NATIVE_SUM_MIN", 0)
    with monkeypatch.context() as m:
        calls = spy_kernels(m)
        got = gt.from_numpy(a).sum(list(range(lead))).numpy()
    want = np.add.reduce(a, axis=tuple(range(lead)))
    one_column = np.prod(shape[lead:]) <= 1           # NumPy sums one column pairwise
    assert calls == ([] if one_column else [f"sum_rows_{'f32' if dtype == np.float32 else 'f64'}"])
    assert got.dtype == dtype and np.array_equal(got, want, equal_nan=True)


@pytest.fixture
def fresh_builds(monkeypatch):
    """The build caches (which libraries loaded, whether libmvec links) emptied before and
    after the test, which changes the compiler or cache settings; the C kernels on."""
    def clear():
        build.vector_math_available.cache_clear()
        native._library.cache_clear()
        native._function.cache_clear()
    monkeypatch.setattr(native, "ENABLED", True)
    clear()
    yield
    clear()


def test_without_a_compiler_the_numpy_formulas_run(monkeypatch, fresh_builds):
    monkeypatch.setenv("GLASSTORCH_INDUCTOR_CPP", "0")
    assert native.function("activation", "gelu_f32", "nppii") is None
    x = _values(np.float32)
    monkeypatch.setattr(native, "ENABLED", False)
    want = GF.gelu(gt.from_numpy(x)).numpy()
    monkeypatch.setattr(native, "ENABLED", True)
    assert_equal_with_nan(GF.gelu(gt.from_numpy(x)).numpy(), want)


def test_a_compiler_that_fails_warns_and_falls_back(monkeypatch, tmp_path, fresh_builds):
    monkeypatch.setenv("CC", "false")
    monkeypatch.setenv("GLASSTORCH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GLASSTORCH_INDUCTOR_CPP", raising=False)
    with pytest.warns(RuntimeWarning, match="native activation kernels did not build"):
        y = GF.gelu(gt.ones(3))
    np.testing.assert_allclose(y.numpy(), [0.8413447] * 3, rtol=1e-6)
    assert not list(tmp_path.rglob("*.so"))


@needs_compiler
def test_a_cache_that_cannot_be_written_warns_and_falls_back(monkeypatch, tmp_path,
                                                            fresh_builds):
    """A read-only or missing cache directory is the compiler's problem, never the op's."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("GLASSTORCH_CACHE_DIR", str(blocker / "cache"))   # under a file
    with pytest.warns(RuntimeWarning, match="native activation kernels did not build"):
        y = GF.gelu(gt.ones(3))
    np.testing.assert_allclose(y.numpy(), [0.8413447] * 3, rtol=1e-6)
