"""cpp_extension's cuda_sources: kernels compiled by NVRTC, launched through CuPy (on a real
GPU in the test marked `cuda`; elsewhere the launcher's checks run on simulated CuPy)."""
import pytest

import glasstorch as gt
from glasstorch.backends.cuda import nvrtc
from glasstorch.utils.cpp_extension import load_inline

pytestmark = pytest.mark.skipif(not nvrtc.nvrtc_available(), reason="libnvrtc not found")

AXPY = r"""
extern "C" __global__ void axpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
"""


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    return load_inline("gt_test_cuda_kernels", "", cuda_sources=AXPY, functions=["axpy"],
                       build_directory=tmp_path_factory.mktemp("cache"))


def test_arguments_are_checked_before_launching(ext):
    x = gt.ones(3, device="cuda")
    with pytest.raises(ValueError, match="a pointer argument must be a CUDA tensor"):
        ext.axpy((1,), (32,), (gt.ones(3), x, 2.0, 3))
    with pytest.raises(TypeError, match="axpy takes 4 arguments, got 3"):
        ext.axpy((1,), (32,), (x, x, 2.0))


def test_a_kernel_that_is_not_extern_c_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match='declare the kernel k extern "C"'):
        load_inline("gt_test_cuda_mangled", "", cuda_sources="__global__ void k(float* x) {}",
                    functions=["k"], build_directory=tmp_path)


@pytest.mark.cuda
def test_launches_on_a_gpu(ext):
    n = 1000
    x = gt.arange(n, dtype=gt.float32, device="cuda")
    y = gt.ones(n, device="cuda")
    ext.axpy(((n + 255) // 256,), (256,), (x, y, 2.0, n))
    assert gt.equal(y.cpu(), 1 + 2 * gt.arange(n, dtype=gt.float32))
