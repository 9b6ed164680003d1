"""glasstorch.cuda: the CUDA device's namespace (torch.cuda).

Nothing here imports CuPy until a call needs the GPU: without CuPy, a driver or a GPU,
`is_available()` is False and `device_count()` is 0, never an exception.
"""
from __future__ import annotations

from collections import namedtuple

from . import amp  # noqa: F401
from . import jiterator  # noqa: F401
from ..backends.cuda import runtime
from ..memory.errors import OutOfMemoryError  # noqa: F401
from .streams import (Event, Stream, StreamContext, current_stream,  # noqa: F401
                      default_stream, set_stream, stream)
from .random import (default_generators, get_rng_state, get_rng_state_all,  # noqa: F401
                     initial_seed, manual_seed, manual_seed_all, seed, seed_all,
                     set_rng_state, set_rng_state_all)
from .memory import (empty_cache, max_memory_allocated, max_memory_reserved,  # noqa: F401
                     mem_get_info, memory_allocated, memory_reserved, memory_snapshot,
                     memory_stats, memory_summary, reset_accumulated_memory_stats,
                     reset_peak_memory_stats, set_per_process_memory_fraction)


def is_available() -> bool:
    """Whether CuPy is installed and sees at least one GPU."""
    return runtime.is_available()


def device_count() -> int:
    return runtime.device_count()


def is_initialized() -> bool:
    return runtime._cupy is not None and runtime.is_available()


def init() -> None:
    runtime.require()


def current_device() -> int:
    return runtime.current_device()


def set_device(device) -> None:
    """Make `device` (an index, 'cuda:N' or a device) the current GPU of this thread."""
    index = runtime.index_of(device)
    runtime.set_device(index)


class device:
    """Context manager: make `device` the current GPU for a block (None or -1: no change)."""

    def __init__(self, device):
        self.idx = -1 if device is None else (device if isinstance(device, int)
                                             else runtime.index_of(device))

    def __enter__(self):
        if self.idx != -1:
            self._guard = runtime.DeviceGuard(runtime.index_of(self.idx))
            self._guard.__enter__()

    def __exit__(self, *exc):
        if self.idx != -1:
            self._guard.__exit__(*exc)
        return False


class device_of(device):
    """Context manager: make the GPU of tensor `obj` current (no change for a CPU tensor)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def synchronize(device=None) -> None:
    """Wait until every stream of `device` (the current GPU by default) has finished."""
    index = runtime.index_of(device)
    with runtime.DeviceGuard(index):
        runtime.cupy().cuda.runtime.deviceSynchronize()


_CudaDeviceProperties = namedtuple(
    "_CudaDeviceProperties", "name major minor total_memory multi_processor_count "
    "L2_cache_size warp_size max_threads_per_block is_integrated is_multi_gpu_board uuid")
_CudaDeviceProperties.__doc__ = "What get_device_properties reports (torch's field names)."


def get_device_properties(device=None) -> _CudaDeviceProperties:
    index = runtime.index_of(device)
    p = runtime.cupy().cuda.runtime.getDeviceProperties(index)
    name = p["name"]
    return _CudaDeviceProperties(
        name.decode() if isinstance(name, bytes) else str(name), int(p["major"]),
        int(p["minor"]), int(p["totalGlobalMem"]), int(p["multiProcessorCount"]),
        int(p.get("l2CacheSize", 0)), int(p.get("warpSize", 32)),
        int(p.get("maxThreadsPerBlock", 1024)), bool(p.get("integrated", 0)),
        bool(p.get("isMultiGpuBoard", 0)), p.get("uuid", b""))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple:
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 tensors work on every GPU here (stored as bits, computed in float32);
    native bfloat16 arithmetic needs compute capability 8.0 (Ampere) or later."""
    if not is_available():
        return False
    return including_emulation or get_device_capability()[0] >= 8


has_half = True      # float16 tensors work on every GPU
has_magma = False    # linear algebra on the GPU is cuSOLVER's (through CuPy), not MAGMA's


def get_arch_list() -> list:
    """The architectures kernels are built for: glasstorch compiles its kernels at run time
    (NVRTC) for the GPUs present, so those GPUs' (empty without CUDA)."""
    if not is_available():
        return []
    return sorted({"sm_%d%d" % get_device_capability(i) for i in range(device_count())})


def get_gencode_flags() -> str:
    return " ".join(f"-gencode compute=compute_{arch[3:]},code={arch}"
                    for arch in get_arch_list())


def is_tf32_supported() -> bool:
    """TensorFloat-32 matrix products need compute capability 8.0 (Ampere) or later."""
    return is_available() and get_device_capability()[0] >= 8


def can_device_access_peer(device, peer_device) -> bool:
    """Whether GPU `device` can read and write `peer_device`'s memory directly."""
    runtime.require()
    a, b = runtime.index_of(device), runtime.index_of(peer_device)
    return a != b and bool(runtime.cupy().cuda.runtime.deviceCanAccessPeer(a, b))


def current_blas_handle() -> int:
    """The cuBLAS handle of the current GPU (CuPy's)."""
    runtime.require()
    return int(runtime.cupy().cuda.device.get_cublas_handle())


def current_solver_handle() -> int:
    """The cuSOLVER handle of the current GPU (CuPy's)."""
    runtime.require()
    return int(runtime.cupy().cuda.device.get_cusolver_handle())


from . import graphs, nvtx, profiler  # noqa: E402,F401
from .errors import (CudaError, DeferredCudaCallError, check_error,  # noqa: E402,F401
                     cudart, cudaStatus)
from .graphs import (CUDAGraph, graph, graph_pool_handle,  # noqa: E402,F401
                     is_current_stream_capturing, make_graphed_callables)
from .memory import (caching_allocator_alloc, caching_allocator_delete,  # noqa: E402,F401
                     clock_rate, device_memory_used, get_allocator_backend,
                     get_per_process_memory_fraction, host_memory_stats,
                     host_memory_stats_as_nested_dict, ipc_collect, list_gpu_processes,
                     max_memory_cached, memory_cached, memory_stats_as_nested_dict,
                     memory_usage, power_draw, reset_accumulated_host_memory_stats,
                     reset_max_memory_allocated, reset_max_memory_cached,
                     reset_peak_host_memory_stats, temperature, utilization)
from .storage import names as _storage_names  # noqa: E402
from .streams import ExternalStream, get_stream_from_external  # noqa: E402,F401

globals().update(_storage_names())          # torch.cuda.FloatStorage, ...
