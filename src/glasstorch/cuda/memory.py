"""torch.cuda's memory functions, answered by glasstorch's caching allocator of each GPU.

Before CUDA is first used (or without a GPU) there is nothing allocated: the counters read
0 and the statistics are empty, as in PyTorch.
"""
from __future__ import annotations

import sys
import warnings
from collections import OrderedDict

from .. import memory as _memory
from ..memory import history as _history
from ..backends.cuda import allocator as _allocator, runtime


def _initialized(device) -> bool:
    return runtime.is_available() and _allocator.is_initialized(runtime.index_of(device))


def _cuda(device) -> str:
    return f"cuda:{runtime.index_of(device)}"


def memory_allocated(device=None) -> int:
    """Bytes held by live tensors on the GPU."""
    return _memory.memory_allocated(_cuda(device)) if _initialized(device) else 0


def max_memory_allocated(device=None) -> int:
    return _memory.max_memory_allocated(_cuda(device)) if _initialized(device) else 0


def memory_reserved(device=None) -> int:
    """Bytes in segments the caching allocator holds, in use or cached."""
    return _memory.memory_reserved(_cuda(device)) if _initialized(device) else 0


def max_memory_reserved(device=None) -> int:
    return _memory.max_memory_reserved(_cuda(device)) if _initialized(device) else 0


def memory_stats(device=None) -> dict:
    """The allocator's counters under PyTorch's key names ({} before CUDA is used)."""
    return _memory.memory_stats(_cuda(device)) if _initialized(device) else {}


def memory_summary(device=None, abbreviated: bool = False) -> str:
    runtime.require()
    return _memory.memory_summary(_cuda(device), abbreviated)


def memory_snapshot(device=None) -> list:
    return _memory.memory_snapshot(_cuda(device)) if _initialized(device) else []


def reset_peak_memory_stats(device=None) -> None:
    if _initialized(device):
        _memory.reset_peak_memory_stats(_cuda(device))


def reset_accumulated_memory_stats(device=None) -> None:
    if _initialized(device):
        _allocator.device_allocator(runtime.index_of(device)).caching.reset_accumulated_stats()


def empty_cache() -> None:
    """Return every wholly free cached segment of every GPU to the driver (cudaFree)."""
    for allocator in _allocator.initialized_allocators().values():
        allocator.caching.empty_cache()


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap this process's allocations on the GPU at `fraction` of its total memory."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _allocator.device_allocator(runtime.index_of(device)).caching.set_memory_fraction(fraction)


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the GPU, as the driver reports them."""
    index = runtime.index_of(device)
    with runtime.DeviceGuard(index):
        free, total = runtime.cupy().cuda.runtime.memGetInfo()
    return int(free), int(total)


def _record_memory_history(enabled="all", context="all", stacks="all",
                           max_entries: int = sys.maxsize, device=None, **kwargs) -> None:
    """Record every allocation on the GPU with its Python stack (torch.cuda.memory's)."""
    _history._record_memory_history(enabled, context, stacks, max_entries,
                                     device=_cuda(device), **kwargs)


def _snapshot(device=None) -> dict:
    """The GPU's segments and blocks (live ones with the stack that allocated them) and the
    recorded trace, in torch's layout."""
    return _history._snapshot(_cuda(device))


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    _history._dump_snapshot(filename, _cuda(None))


# ---- older spellings and the nested views PyTorch also offers ---------------------------
def memory_cached(device=None) -> int:
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def reset_max_memory_allocated(device=None) -> None:
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def _nested(flat: dict) -> dict:
    """{'a.b.c': 1} -> {'a': {'b': {'c': 1}}}: PyTorch's stats before flattening."""
    nested: dict = {}
    for key, value in flat.items():
        *path, last = key.split(".")
        level = nested
        for part in path:
            level = level.setdefault(part, {})
        level[last] = value
    return nested


def memory_stats_as_nested_dict(device=None) -> dict:
    return _nested(memory_stats(device))


def _pinned_allocator():
    from ..backends.cuda import pinned
    return pinned._allocator           # None until something was pinned


def host_memory_stats() -> OrderedDict:
    """The pinned host allocator's counters (empty before anything is pinned)."""
    allocator = _pinned_allocator()
    return OrderedDict(allocator.caching.memory_stats() if allocator is not None else {})


def host_memory_stats_as_nested_dict() -> dict:
    return _nested(host_memory_stats())


def reset_peak_host_memory_stats() -> None:
    allocator = _pinned_allocator()
    if allocator is not None:
        allocator.caching.reset_peak_stats()


def reset_accumulated_host_memory_stats() -> None:
    allocator = _pinned_allocator()
    if allocator is not None:
        allocator.caching.reset_accumulated_stats()


def get_per_process_memory_fraction(device=None) -> float:
    """The cap set_per_process_memory_fraction put on the GPU (1.0 when none)."""
    runtime.require()
    fraction = _allocator.device_allocator(runtime.index_of(device)).caching.memory_fraction
    return 1.0 if fraction is None else float(fraction)


def get_allocator_backend() -> str:
    """'native': GPU memory comes from glasstorch's caching allocator."""
    runtime.require()
    return "native"


_raw_blocks: dict = {}


def caching_allocator_alloc(size, device=None, stream=None) -> int:
    """The address of `size` bytes from the GPU's caching allocator, for memory used
    outside tensors; give it back with caching_allocator_delete."""
    runtime.require()
    index = runtime.index_of(device)
    stream_ptr = _allocator.current_stream_ptr() if stream is None else \
        int(getattr(stream, "cuda_stream", stream))
    with runtime.DeviceGuard(index):
        block = _allocator.device_allocator(index).caching.malloc(int(size), stream_ptr)
    _raw_blocks[block.address] = (index, block)
    return block.address


def caching_allocator_delete(mem_ptr: int) -> None:
    if mem_ptr not in _raw_blocks:
        raise RuntimeError(f"caching_allocator_delete: {mem_ptr:#x} was not allocated by "
                           "caching_allocator_alloc (or was freed already)")
    index, block = _raw_blocks.pop(mem_ptr)
    _allocator.device_allocator(index).caching.free(block)


def ipc_collect() -> None:
    """Free GPU memory other processes no longer use through CUDA IPC: glasstorch shares
    no GPU memory between processes, so there is none."""
    runtime.require()


# ---- what NVML (nvidia-ml-py) reports about the GPU ---------------------------------------
def _nvml():
    try:
        import pynvml
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError("nvidia-ml-py does not seem to be installed or it can't be "
                                  "imported.") from error
    pynvml.nvmlInit()
    return pynvml


def _nvml_handle(device):
    nvml = _nvml()
    return nvml, nvml.nvmlDeviceGetHandleByIndex(runtime.index_of(device))


def device_memory_used(device=None) -> int:
    """Bytes in use on the GPU, by every process (NVML)."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetMemoryInfo(handle).used


def memory_usage(device=None) -> int:
    """Percent of time in the last sample period the GPU's memory was read or written."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetUtilizationRates(handle).memory


def utilization(device=None) -> int:
    """Percent of time in the last sample period a kernel ran on the GPU."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetUtilizationRates(handle).gpu


def temperature(device=None) -> int:
    """The GPU's temperature in degrees Celsius."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetTemperature(handle, 0)


def power_draw(device=None) -> int:
    """The GPU's power draw in milliwatts."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetPowerUsage(handle)


def clock_rate(device=None) -> int:
    """The GPU's streaming-multiprocessor clock in MHz."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetClockInfo(handle, 1)


def list_gpu_processes(device=None) -> str:
    """The processes using the GPU and their memory, as text."""
    try:
        nvml, handle = _nvml_handle(device)
    except ModuleNotFoundError:
        return "pynvml module not found, please install nvidia-ml-py"
    lines = [f"GPU:{runtime.index_of(device)}"]
    processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    if not processes:
        lines.append("no processes are running")
    for p in processes:
        lines.append(f"process {p.pid:>10d} uses {p.usedGpuMemory / 1024 ** 2:>12.3f} MB GPU "
                     "memory")
    return "\n".join(lines)
