"""torch.compile's kernels on a GPU: a graph whose inputs are CUDA tensors gets CUDA C
kernels (compiled by NVRTC), host code that makes its buffers on the GPU, and extern ops
through the CUDA backend. On a real GPU the kernels run; on simulated CuPy, which cannot run
CUDA C, each launch runs the same kernel generated as C for the CPU on the same (host)
memory instead, so the host code's allocation, pointers, views and externs are checked
here too, while the CUDA C itself is compile-checked with NVRTC."""
import ctypes
import os
import sys

import numpy as np
import pytest

import glasstorch as torch
import glasstorch.nn.functional as F
from glasstorch.backends.cuda import nvrtc
from glasstorch.compiler.inductor import CompiledGraph, build, cuda_codegen

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "compiler",
                                "inductor"))
from inductor_helpers import assert_same, compiled  # noqa: E402



def _stand_ins_available(cuda_backend):
    if cuda_backend == "simulated" and build.compiler() is None:
        pytest.skip("the kernels' CPU stand-ins on simulated CuPy need a C compiler")


def _graphs():
    g = np.random.default_rng(0)

    def arr(*shape):
        return torch.from_numpy(g.standard_normal(shape).astype(np.float32))
    x, y, w = arr(64, 96), arr(64, 96), arr(96)
    return {
        "fma_relu": (lambda a, b, c: torch.relu(a * b + c), (x, y, x.t().contiguous().t())),
        "layer_norm_residual": (lambda x, r, w: F.layer_norm(x + r, (96,), w, w), (x, y, w)),
        "softmax_and_sums": (lambda x: (torch.softmax(x * 0.125, -1), x.sum(0), x.amax(1)),
                             (x,)),
        "matmul_epilogue": (lambda x, w: F.gelu(x @ w.t() + 1.0).half(), (x, y)),
        "views": (lambda x: (x.t() * 2, x[:, :10].exp(), x.view(96, 64)), (x,)),
    }


def _on_cpu_instead(gpu: CompiledGraph, cpu: CompiledGraph):
    """Point the GPU graph's launches at the CPU build of the same kernels (simulated CuPy
    keeps "device" memory in host memory, at real addresses)."""
    gpu_art, cpu_art = gpu.artefacts, cpu.artefacts
    assert [k.name for k in gpu_art.kernels] == [k.name for k in cpu_art.kernels]
    for k in gpu_art.kernels:
        assert isinstance(gpu_art.namespace[k.name], cuda_codegen.CudaLaunch)
        cpu_kernel = cpu_art.namespace[k.name]
        gpu_art.namespace[k.name] = (
            lambda *pointers, fn=cpu_kernel: fn(1, *(ctypes.c_void_p(int(p)) for p in pointers)))


@pytest.mark.parametrize("name", list(_graphs()))
def test_a_compiled_graph_on_the_gpu_runs_its_kernels_there(name, cuda_backend):
    _stand_ins_available(cuda_backend)
    fn, cpu_inputs = _graphs()[name]
    inputs = [x.cuda() for x in cpu_inputs]
    gpu = compiled(fn, *inputs)
    art = gpu.artefacts
    assert art.language == "cuda" and art.kernels, "the graph should have fused kernels"
    assert "__global__" in art.kernel_source
    if cuda_backend == "simulated":
        _on_cpu_instead(gpu, compiled(fn, *cpu_inputs))
    out, ref = gpu(*inputs), fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    assert all(o.device == inputs[0].device for o in outs)
    # the GPU's exp, erf and float16 rounding may differ from eager's in the last bit
    rtol, atol = (1e-5, 1e-6) if cuda_backend == "simulated" else (1e-3, 1e-5)
    assert_same(tuple(o.cpu() for o in outs),
                tuple(r.cpu() for r in (ref if isinstance(ref, tuple) else (ref,))),
                rtol=rtol, atol=atol)


@pytest.mark.skipif(not nvrtc.nvrtc_available(), reason="libnvrtc not found")
def test_the_gpu_graphs_cuda_c_compiles_with_nvrtc(cuda_backend):
    for fn, cpu_inputs in _graphs().values():
        art = compiled(fn, *[x.cuda() for x in cpu_inputs]).artefacts
        ptx = nvrtc.compile_check(art.kernel_source)
        assert all(f".entry {k.name}(" in ptx for k in art.kernels)


def test_a_graph_with_inputs_on_two_devices_runs_eagerly(cuda_backend):
    def fn(a, b):
        return a.cpu() + b
    a, b = torch.ones(3).cuda(), torch.ones(3)
    graph = compiled(fn, a, b)
    assert graph.artefacts is None                  # not compiled: eager, same result
    assert_same(graph(a, b), fn(a, b))


def test_torch_compile_reaches_the_gpu_kernels(cuda_backend):
    """The user's path: torch.compile(fn) on CUDA tensors compiles CUDA kernels (on
    simulated CuPy the launch itself says it needs a GPU)."""
    x = torch.randn(8, 8).cuda()
    fn = torch.compile(lambda x: torch.relu(x * 2 + 1))
    if cuda_backend == "simulated":
        with pytest.raises(NotImplementedError):
            fn(x)
    else:
        assert_same(fn(x).cpu(), torch.relu(x * 2 + 1).cpu(), rtol=1e-6, atol=0)
