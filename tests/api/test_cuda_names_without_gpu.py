"""torch.cuda names that answer without a GPU as PyTorch's CPU build does: the legacy
storage classes, memory-stat aliases and nested views, build facts, the errors, and the
functions that need CUDA (or NVML) raising clearly."""
import warnings

import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(gt.cuda.is_available(), reason="checks the CPU-only answers")


def test_storage_classes_are_the_gpu_kind_of_each_dtype():
    assert sorted(n for n in dir(gt.cuda) if n.endswith("Storage")) == \
        sorted(n for n in dir(torch.cuda) if n.endswith("Storage") and n[0] != "_")
    assert not isinstance(gt.FloatStorage(2), gt.cuda.FloatStorage)
    assert isinstance(gt.FloatStorage(2), gt.FloatStorage)
    with pytest.raises((AssertionError, RuntimeError)):
        gt.cuda.FloatStorage(3)


@pytest.mark.parametrize("name", ["memory_cached", "max_memory_cached"])
def test_renamed_memory_functions_warn_and_answer_as_torch(name):
    with pytest.warns(FutureWarning, match="has been renamed to"):
        ours = getattr(gt.cuda, name)()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ours == getattr(torch.cuda, name)() == 0


def test_stats_views_and_facts_as_torch():
    for name in ("memory_stats_as_nested_dict", "host_memory_stats",
                 "host_memory_stats_as_nested_dict", "get_arch_list", "get_gencode_flags",
                 "is_tf32_supported", "is_available"):
        assert getattr(gt.cuda, name)() == getattr(torch.cuda, name)(), name
    assert (gt.cuda.has_half, gt.cuda.has_magma) == (torch.cuda.has_half, torch.cuda.has_magma)
    assert gt.cuda.cudaStatus.SUCCESS == torch.cuda.cudaStatus.SUCCESS
    assert gt.cuda.cudaStatus.ERROR_NOT_READY == torch.cuda.cudaStatus.ERROR_NOT_READY
    assert issubclass(gt.cuda.CudaError, RuntimeError)
    assert not issubclass(gt.cuda.DeferredCudaCallError, RuntimeError)
    gt.cuda.check_error(0)
    with pytest.raises(gt.cuda.CudaError, match=r"\(2\)"):
        gt.cuda.check_error(2)
    assert gt.cuda.list_gpu_processes() == torch.cuda.list_gpu_processes()
    gt.cuda.reset_peak_host_memory_stats()
    gt.cuda.reset_accumulated_host_memory_stats()


def test_nested_stats_nest_the_flat_keys():
    from glasstorch.cuda.memory import _nested
    assert _nested({"a.b.c": 1, "a.b.d": 2, "e": 3}) == {"a": {"b": {"c": 1, "d": 2}}, "e": 3}


@pytest.mark.parametrize("call", [
    lambda c: c.cudart(), lambda c: c.caching_allocator_alloc(16),
    lambda c: c.get_per_process_memory_fraction(), lambda c: c.can_device_access_peer(0, 1),
    lambda c: c.current_blas_handle(), lambda c: c.ipc_collect(),
    lambda c: c.get_stream_from_external(0),
])
def test_calls_that_need_cuda_raise_as_torch(call):
    with pytest.raises(AssertionError):
        call(torch.cuda)
    with pytest.raises(AssertionError, match="CUDA is not available"):
        call(gt.cuda)


def test_graphs_nvtx_and_nvml_without_cuda():
    assert gt.cuda.is_current_stream_capturing() is False
    for make in (gt.cuda.CUDAGraph, gt.cuda.graph_pool_handle):
        with pytest.raises(AssertionError, match="CUDA is not available"):
            make()
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="NVTX functions not installed"):
            lib.cuda.nvtx.range_push("region")
        with pytest.raises(RuntimeError, match="NVTX functions not installed"):
            with lib.cuda.nvtx.range("region {}", 1):
                pass
    try:
        import pynvml  # noqa: F401
    except ImportError:
        for name in ("device_memory_used", "clock_rate", "power_draw", "temperature",
                     "utilization", "memory_usage"):
            with pytest.raises(ModuleNotFoundError, match="nvidia-ml-py does not seem"):
                getattr(gt.cuda, name)()
