"""CuPy, loaded on first use, and the CUDA devices it sees.

glasstorch talks to the GPU through CuPy: `cupy()` imports it the first time a CUDA tensor
or query needs it. `use_cupy(module)` points the backend at another module with CuPy's API
(the test suite's simulated CuPy runs the whole backend on a machine without a GPU) and
drops every piece of CUDA state made with the previous one.
"""
from __future__ import annotations

import threading

from ...core.device import device as Device
from ...dispatch import dispatcher

ERROR_MEMORY_ALLOCATION = 2  # cudaErrorMemoryAllocation: CUDARuntimeError.status of an OOM

_cupy = None                 # the CuPy module once imported (or the stand-in in use)
_device_count = None         # cached: the number of devices does not change in a process
_reset_hooks: list = []      # callables that drop state tied to the current CuPy module
_init_lock = threading.RLock()


class CudaUnavailableError(RuntimeError):
    """CUDA was asked for where there is no CuPy, no driver or no GPU."""


def cupy():
    """The CuPy module, imported on first use."""
    global _cupy
    if _cupy is None:
        with _init_lock:
            if _cupy is None:
                try:
                    import cupy as module
                except ImportError as error:
                    raise CudaUnavailableError(
                        "glasstorch's CUDA backend needs CuPy, which is not installed: "
                        "pip install 'glasstorch[cuda]' (or the cupy-cudaXXx wheel for your "
                        f"CUDA version) ({error})") from None
                except Exception as error:      # a broken install: a missing CUDA library
                    raise CudaUnavailableError(
                        f"CuPy is installed but fails to import ({type(error).__name__}: "
                        f"{error}); check that its wheel matches your CUDA version") from None
                _cupy = module
    return _cupy


def use_cupy(module) -> None:
    """Run the CUDA backend on `module` (None: the real CuPy, imported on next use).
    Every allocator, stream and cached kernel made with the previous module is dropped."""
    global _cupy, _device_count
    with _init_lock:
        for hook in _reset_hooks:
            hook()
        _cupy = module
        _device_count = None
        dispatcher.several_gpus = False


def on_reset(hook):
    """Register `hook()` to run whenever use_cupy switches modules (decorator)."""
    _reset_hooks.append(hook)
    return hook


def runs_cuda_c() -> bool:
    """Whether glasstorch's own CUDA C kernels can run: on real CuPy, not on a stand-in
    such as the test suite's simulated CuPy (which runs NumPy underneath)."""
    return not getattr(cupy(), "SIMULATED", False)


def device_count() -> int:
    """How many GPUs CuPy sees; 0 without CuPy, a driver or a GPU (never raises)."""
    global _device_count
    if _device_count is None:
        try:
            count = int(cupy().cuda.runtime.getDeviceCount())
        except Exception:       # no CuPy, no driver, driver too old: all mean no CUDA here
            count = 0
        _device_count = count
        dispatcher.several_gpus = count > 1
    return _device_count


def is_available() -> bool:
    return device_count() > 0


def require() -> None:
    """Raise torch's error for CUDA use in a process that has no usable GPU."""
    if not is_available():
        try:
            cupy()
        except CudaUnavailableError as error:
            raise AssertionError(f"CUDA is not available: {error}") from None
        raise RuntimeError("Found no NVIDIA driver on your system, or no GPU: "
                           "glasstorch.cuda.is_available() is False")


def current_device() -> int:
    require()
    return int(cupy().cuda.runtime.getDevice())


def check_index(index: int) -> int:
    count = device_count()
    if not 0 <= index < count:
        raise RuntimeError(f"CUDA error: invalid device ordinal (device {index} requested, "
                           f"{count} available)")
    return index


def set_device(index: int) -> None:
    require()
    cupy().cuda.runtime.setDevice(check_index(index))


def index_of(device) -> int:
    """The device index a device argument names (None or 'cuda' mean the current one)."""
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        d = Device(device)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        index = current_device() if d.index is None else d.index
    require()
    return check_index(index)


def resolve(device: Device) -> Device:
    """`cuda` with its index filled in (tensors always know their GPU, as in PyTorch)."""
    if device.index is not None:
        require()
        check_index(device.index)
        return device
    return Device("cuda", current_device())


class DeviceGuard:
    """Make `index` the current device for a block, restoring the previous one after. With
    one GPU there is nothing to switch, and the guard asks the driver nothing (every GPU
    kernel runs under one)."""

    __slots__ = ("index", "_previous")

    def __init__(self, index: int):
        self.index = index

    def __enter__(self):
        if _device_count == 1:
            self._previous = self.index
            return self
        runtime = cupy().cuda.runtime
        self._previous = runtime.getDevice()
        if self.index != self._previous:
            runtime.setDevice(self.index)
        return self

    def __exit__(self, *exc):
        if self.index != self._previous:
            cupy().cuda.runtime.setDevice(self._previous)
