"""torch.utils.cpp_extension: C++ built by the system compiler, called through ctypes,
registered as torch.library operators. Values are checked against NumPy, gradients with
gradcheck, compiled results against eager."""
import shutil

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.utils import cpp_extension
from glasstorch.utils.cpp_extension import load_inline

pytestmark = pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler")

SOURCE = r"""
#include <thread>

torch::Tensor add_one(torch::Tensor x) {
  TORCH_CHECK(x.is_contiguous(), "add_one: x must be contiguous");
  auto out = torch::empty_like(x);
  const float* a = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] + 1.0f;
  return out;
}

// The LLTM tutorial's style: accessors, AT_DISPATCH, factories from options().
torch::Tensor row_dot(const torch::Tensor& a, const torch::Tensor& b, double scale) {
  TORCH_CHECK(a.dim() == 2 && a.sizes() == b.sizes(), "row_dot: expected equal 2-d shapes");
  auto out = torch::zeros({a.size(0)}, a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "row_dot", [&] {
    auto x = a.accessor<scalar_t, 2>();
    auto y = b.accessor<scalar_t, 2>();
    auto o = out.accessor<scalar_t, 1>();
    for (int64_t i = 0; i < a.size(0); ++i)
      for (int64_t j = 0; j < a.size(1); ++j) o[i] += x[i][j] * y[i][j] * scale;
  });
  return out;
}

std::tuple<torch::Tensor, int64_t, bool> describe(torch::Tensor x, int64_t k) {
  return {x.contiguous(), x.dim() * k + x.stride(-1), x.is_contiguous()};
}

std::vector<torch::Tensor> numbered(std::vector<torch::Tensor> xs, std::vector<int64_t> sizes) {
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    auto t = torch::ones({sizes[i]}, torch::TensorOptions().dtype(torch::kInt64));
    t.data_ptr<int64_t>()[0] = xs[i].numel();
    out.push_back(t);
  }
  return out;
}

void fill_(torch::Tensor x, double value) {
  AT_DISPATCH_ALL_TYPES(x.scalar_type(), "fill_", [&] {
    scalar_t* p = x.data_ptr<scalar_t>();
    for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<scalar_t>(value);
  });
}

int64_t twice(int64_t n) { return 2 * n; }

torch::Tensor cube(torch::Tensor x) {
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "cube", [&] {
    const scalar_t* a = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < xc.numel(); ++i) o[i] = a[i] * a[i] * a[i];
  });
  return out;
}

torch::Tensor from_a_thread(torch::Tensor x) {
  torch::Tensor out;
  std::string error;
  std::thread worker([&] {
    try { out = torch::empty_like(x); } catch (const std::exception& e) { error = e.what(); }
  });
  worker.join();
  TORCH_CHECK(error.empty(), error);
  return out;
}
"""
FUNCTIONS = ["add_one", "row_dot", "describe", "numbered", "fill_", "twice", "cube",
             "from_a_thread"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cpp_extension_cache")


@pytest.fixture(scope="module")
def ext(cache):
    return load_inline("gt_test_ext", SOURCE, functions=FUNCTIONS, build_directory=cache)


def test_elementwise_op_over_data_ptr(ext):
    x = gt.arange(6.0).reshape(2, 3)
    out = ext.add_one(x)
    assert isinstance(out, gt.Tensor) and out.dtype == gt.float32
    np.testing.assert_array_equal(out.numpy(), x.numpy() + 1)
    assert out.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("dtype", [gt.float32, gt.float64])
def test_accessors_dispatch_and_strided_inputs(ext, dtype):
    a = gt.randn(5, 4, dtype=dtype)
    b = gt.randn(4, 5, dtype=dtype).t()              # strided: the accessor follows strides
    out = ext.row_dot(a, b, 0.5)
    assert out.dtype == dtype and out.shape == (5,)
    np.testing.assert_allclose(out.numpy(), (a.numpy() * b.numpy()).sum(1) * 0.5, rtol=1e-5)


def test_results_tuples_lists_and_plain_numbers(ext):
    x = gt.arange(6.0).reshape(2, 3).t()
    contiguous, number, is_contiguous = ext.describe(x, 10)
    assert number == 2 * 10 + 3 and is_contiguous is False
    assert contiguous.is_contiguous() and gt.equal(contiguous, x)
    out = ext.numbered([gt.ones(2, 3), gt.ones(4)], [3, 1])
    assert [t.tolist() for t in out] == [[6, 1, 1], [4]]
    assert ext.twice(21) == 42


def test_a_void_function_writes_its_argument_and_bumps_its_version(ext):
    y = gt.zeros(3, dtype=gt.int32)
    version = y._version
    assert ext.fill_(y, 7.0) is None
    assert y.tolist() == [7, 7, 7] and y._version > version
    assert "Tensor(a!) arg0" in str(gt.ops.gt_test_ext.fill_.default._schema)


def test_torch_check_becomes_runtime_error(ext):
    with pytest.raises(RuntimeError, match="add_one: x must be contiguous"):
        ext.add_one(gt.ones(2, 3).t())
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ext.add_one(gt.ones(2, dtype=gt.float64))
    with pytest.raises(NotImplementedError, match="\"row_dot\" not implemented for 'Long'"):
        ext.row_dot(gt.ones(1, 1, dtype=gt.int64), gt.ones(1, 1, dtype=gt.int64), 1.0)


def test_factories_on_a_thread_of_the_extension_raise_clearly(ext):
    with pytest.raises(RuntimeError, match="factories work on the thread glasstorch called"):
        ext.from_a_thread(gt.ones(2))


def test_wrong_argument_types_raise_type_error_as_pybind(ext):
    with pytest.raises(TypeError, match=r"(?s)incompatible function arguments.*"
                                        r"\(arg0: torch.Tensor, arg1: int\).*"
                                        r"Invoked with types: Tensor, str"):
        ext.describe(gt.ones(1), "3")
    with pytest.raises(TypeError, match="incompatible"):
        ext.add_one()


def test_functions_are_operators_seen_by_dispatch_modes(ext):
    from glasstorch.utils._python_dispatch import TorchDispatchMode
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = gt.ones(2)
    with Log():
        ext.add_one(x)
    assert seen == ["gt_test_ext.add_one.default"]
    assert gt.ops.gt_test_ext.add_one(gt.zeros(1)).tolist() == [1.0]


def test_cache_hit_and_rebuild_on_edit(cache, ext):
    builds = cpp_extension.builds
    assert load_inline("gt_test_ext", SOURCE, functions=FUNCTIONS, build_directory=cache) is ext
    assert cpp_extension.builds == builds                  # same source: nothing built
    small = "double shift(double x) { return x + 1; }"
    first = load_inline("gt_test_edit", small, functions=["shift"], build_directory=cache)
    edited = load_inline("gt_test_edit", small.replace("+ 1", "+ 2"), functions=["shift"],
                         build_directory=cache)
    assert cpp_extension.builds == builds + 2 and edited is not first
    assert edited.shift(1.0) == 3.0
    # a new process (here: a forgotten module) finds the library in the disk cache
    for lib in cpp_extension._loaded.pop("gt_test_edit")[2]:
        lib._destroy()
    again = load_inline("gt_test_edit", small.replace("+ 1", "+ 2"), functions=["shift"],
                        build_directory=cache)
    assert cpp_extension.builds == builds + 2 and again.shift(0.5) == 2.5


def test_a_compile_error_names_the_line(cache):
    source = "torch::Tensor f(torch::Tensor x) {\n  return torch::addmm(x, x, x);\n}\n"
    with pytest.raises(RuntimeError, match=r"(?s)Error building extension 'gt_test_bad'.*"
                                           r"main.cpp:3:\d+: error: .addmm. is not a member"):
        load_inline("gt_test_bad", source, functions=["f"], build_directory=cache)
    assert not hasattr(gt.ops.gt_test_bad, "f")


def test_register_autograd_gives_gradients(ext):
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x

    gt.library.register_autograd("gt_test_ext::cube", backward, setup_context=setup_context)
    x = gt.randn(4, dtype=gt.float64, requires_grad=True)
    y = ext.cube(x)
    assert type(y.grad_fn).__name__ == "GeneratedBackwardFor_gt_test_ext_cube_defaultBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.detach().numpy() ** 2)
    assert gt.autograd.gradcheck(ext.cube, (gt.randn(3, dtype=gt.float64, requires_grad=True),))

    @gt.library.register_fake("gt_test_ext::cube")
    def _(x):
        return gt.empty_like(x)

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm.code)
        return gm.forward

    def f(x):
        return ext.cube(x.sin()) + 1

    y = gt.randn(5)
    assert gt.equal(gt.compile(f, backend=backend)(y), f(y))
    assert "torch.ops.gt_test_ext.cube.default" in graphs[0]   # one opaque call
    assert gt.allclose(gt.compile(f)(y), f(y))    # inductor (its sin may round differently)
    w = gt.randn(4, dtype=gt.float64, requires_grad=True)
    gt.compile(f)(w).sum().backward()               # compiled training step: same gradient
    np.testing.assert_allclose(w.grad.numpy(), 3 * np.sin(w.detach().numpy()) ** 2 *
                               np.cos(w.detach().numpy()), rtol=1e-6)


def test_cuda_sources_compile_with_nvrtc_and_need_a_gpu_to_launch(cache, monkeypatch):
    from glasstorch.backends.cuda import nvrtc, runtime
    if not nvrtc.nvrtc_available():
        pytest.skip("libnvrtc not found")
    kernel = r"""
    extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i];
    }"""
    ext = load_inline("gt_test_cuda", "", cuda_sources=kernel, functions=["scale"],
                      build_directory=cache)
    assert ext.scale.param_types == ["pointer", "pointer", "float32", "int32"]
    monkeypatch.setattr(runtime, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs an NVIDIA GPU"):
        ext.scale((1,), (32,), (gt.ones(3), gt.ones(3), 2.0, 3))
    with pytest.raises(RuntimeError, match=r'(?s)gt_test_cuda_bad.*identifier "z" is undefined'):
        load_inline("gt_test_cuda_bad", "", cuda_sources=kernel.replace("x[i]", "z[i]"),
                    functions=["scale"], build_directory=cache)


LIBRARY_SOURCE = r"""
#include <torch/library.h>

namespace demo {
// PyTorch's custom-operator tutorial (its CPU part): TORCH_LIBRARY, an out= kernel.
at::Tensor muladd(const at::Tensor& a, const at::Tensor& b, double c) {
  TORCH_CHECK(a.sizes() == b.sizes());
  TORCH_CHECK(a.dtype() == at::kFloat);
  at::Tensor a_contig = a.contiguous(), b_contig = b.contiguous();
  at::Tensor result = torch::empty(a_contig.sizes(), a_contig.options());
  const float* pa = a_contig.data_ptr<float>();
  const float* pb = b_contig.data_ptr<float>();
  float* out = result.data_ptr<float>();
  for (int64_t i = 0; i < result.numel(); i++) out[i] = pa[i] * pb[i] + c;
  return result;
}

void add_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  for (int64_t i = 0; i < out.numel(); i++)
    out.data_ptr<float>()[i] = a.data_ptr<float>()[i] + b.data_ptr<float>()[i];
}

torch::Tensor neg(const torch::Tensor& x) {
  auto out = torch::empty(x.sizes(), x.options());
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<double>()[i] = -x.data_ptr<double>()[i];
  return out;
}

TORCH_LIBRARY(gt_test_lib, m) {
  m.def("muladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("add_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
}

TORCH_LIBRARY_IMPL(gt_test_lib, CPU, m) {
  m.impl("muladd", &muladd);
  m.impl("add_out", TORCH_FN(add_out));
}

TORCH_LIBRARY_IMPL(gt_test_lib, CUDA, m) {
  m.impl("muladd", &muladd);
}
}  // namespace demo

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("neg", &demo::neg, "negate", py::arg("x"));
}
"""


def test_load_builds_files_with_torch_library_and_pybind_blocks(cache, tmp_path):
    (tmp_path / "ops.cpp").write_text(LIBRARY_SOURCE)
    with pytest.warns(UserWarning, match="the CUDA kernel of gt_test_lib::muladd is not"):
        ext = cpp_extension.load("gt_test_load", [tmp_path / "ops.cpp"],
                                 build_directory=cache)
    assert ext.neg(x=gt.tensor([1.0, -2.0], dtype=gt.float64)).tolist() == [-1.0, 2.0]
    assert "negate" in ext.neg.__doc__ and "neg(Tensor x) -> Tensor" in ext.neg.__doc__
    a, b = gt.randn(2, 3), gt.randn(3, 2).t()
    out = gt.ops.gt_test_lib.muladd(a, b, 0.5)
    np.testing.assert_allclose(out.numpy(), a.numpy() * b.numpy() + 0.5, rtol=1e-6)
    result = gt.zeros(3)
    version = result._version
    assert gt.ops.gt_test_lib.add_out(gt.ones(3), gt.ones(3), result) is None
    assert result.tolist() == [2.0, 2.0, 2.0] and result._version > version
    with pytest.raises(RuntimeError, match=r"Expected a.dtype\(\) == at::kFloat to be true"):
        gt.ops.gt_test_lib.muladd(a.double(), b.double(), 1.0)


def test_bad_names_are_refused_before_building(cache):
    with pytest.raises(ValueError, match="identifier"):
        load_inline("my-ext", "", functions=[], build_directory=cache)
