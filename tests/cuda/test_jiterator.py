"""torch.cuda.jiterator: the generated elementwise kernel compiles with NVRTC here (no GPU);
on a real GPU (tests marked `cuda`) it runs and matches NumPy."""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cuda import nvrtc, runtime
from glasstorch.cuda import jiterator

needs_nvrtc = pytest.mark.skipif(
    not nvrtc.nvrtc_available(),
    reason="libnvrtc not found: pip install nvidia-cuda-nvrtc (in the test extra)")

AXPY = "template <typename T> T my_kernel(T x, T y, T alpha) { return -x + alpha * y; }"


@needs_nvrtc
@pytest.mark.parametrize("dtypes,ndim", [((gt.float32, gt.float32), 1),
                                         ((gt.float64, gt.int64), 3),
                                         ((gt.int32, gt.uint8), 0), ((gt.bool, gt.float32), 2)])
def test_generated_kernel_compiles(dtypes, ndim):
    fn = jiterator._create_jit_fn(AXPY, alpha=1.0)
    ptx = fn._compile_check(*dtypes, ndim=ndim)
    assert ".entry jiterator_my_kernel" in ptx


def test_kernel_computes_in_the_promoted_dtype():
    fn = jiterator._create_jit_fn(AXPY, alpha=1.0)
    source, name = fn._source([gt.int32, gt.float64], 2)
    assert name == "jiterator_my_kernel"
    assert "my_kernel<double>(static_cast<double>(in0[off0]), static_cast<double>(in1[off1])" \
        in source
    assert "const int* __restrict__ in0" in source and "double* __restrict__ out0" in source
    source, _ = fn._source([gt.int32, gt.uint8], 1)
    assert "my_kernel<int>" in source                 # promote_types(int32, uint8) = int32


@needs_nvrtc
def test_multi_output_and_helper_functions_compile():
    code = ("template <typename T> T helper(T x) { return ::sin(x); }"
            "template <typename T> void two(T x, T y, T& a, T& b) { a = x + y; b = helper(x); }")
    fn = jiterator._create_multi_output_jit_fn(code, num_outputs=2)
    assert fn.kernel_name == "two"                    # the last function is the entry
    assert ".entry jiterator_two" in fn._compile_check(gt.float32, gt.float32, ndim=2)


@needs_nvrtc
def test_an_error_in_the_code_string_shows_nvrtcs_log():
    fn = jiterator._create_jit_fn("template <typename T> T bad(T x) { return nope(x); }")
    with pytest.raises(nvrtc.CompileError, match='identifier "nope" is undefined'):
        fn._compile_check(gt.float32)


def test_unparsable_code_and_bad_arguments_raise_as_pytorch():
    with pytest.raises(Exception, match="Couldn't parse code"):
        jiterator._create_jit_fn("float f(float x) { return x; }")
    with pytest.raises(AssertionError, match="single output"):
        jiterator._JittedFunction(AXPY, return_by_ref=False, num_outputs=2)
    with pytest.raises(NotImplementedError, match="not supported"):
        jiterator._create_jit_fn(AXPY, alpha=1.0)._source([gt.float16, gt.float16], 1)


def test_without_a_gpu_calling_raises_pytorchs_assertion(monkeypatch):
    monkeypatch.setattr(runtime, "is_available", lambda: False)
    fn = jiterator._create_jit_fn(AXPY, alpha=1.0)
    with pytest.raises(AssertionError, match="only supported on CUDA and ROCm GPUs"):
        fn(gt.ones(3), gt.ones(3))


def test_cpu_tensors_undeclared_keywords_and_too_many_inputs_raise(cuda_backend):
    fn = jiterator._create_jit_fn(AXPY, alpha=1.0)
    with pytest.raises(RuntimeError, match="must be a CUDA tensor"):
        fn(gt.ones(3), gt.ones(3))
    x = gt.ones(3, device="cuda")
    with pytest.raises(KeyError, match="beta is not declared"):
        fn(x, x, beta=2.0)
    with pytest.raises(AssertionError, match="up to 8 tensor inputs"):
        fn(*[x] * 9)


@pytest.mark.cuda
def test_runs_on_a_gpu_with_broadcasting_and_promotion():
    fn = jiterator._create_jit_fn(AXPY, alpha=1.0)
    a = np.random.default_rng(0).standard_normal((4, 1, 3))
    b = np.arange(5, dtype=np.int64)[:, None]
    out = fn(gt.tensor(a, device="cuda").transpose(0, 2), gt.tensor(b, device="cuda"),
             alpha=0.5)
    assert out.dtype == gt.float64 and out.shape == (3, 5, 4)
    np.testing.assert_allclose(out.cpu().numpy(), -a.transpose(2, 1, 0) + 0.5 * b)
    two = jiterator._create_multi_output_jit_fn(
        "template <typename T> void two(T x, T y, T& s, T& p) { s = x + y; p = x * y; }", 2)
    x = gt.arange(6.0, device="cuda")
    s, p = two(x, x)
    assert s.tolist() == [2.0 * i for i in range(6)]
    assert p.tolist() == [float(i * i) for i in range(6)]
