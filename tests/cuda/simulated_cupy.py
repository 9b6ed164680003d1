"""A NumPy-backed stand-in for CuPy 14.2, so glasstorch's CUDA backend runs without a GPU.

Imported, this module IS the `cupy` module for the backend (`runtime.use_cupy(module)`), with
CuPy's API and CuPy's strictness rather than NumPy's leniency:
- device memory is host bytes registered by address, so pointers, views, allocator hooks,
  capacity (out of memory) and use-after-free behave as on a GPU;
- implicit conversion to NumPy and NumPy arrays mixed into device operations raise TypeError;
- bfloat16 (and every dtype CuPy lacks) is refused;
- only names real CuPy 14.2 has exist (cupy_api_14.2.0.json, read from real CuPy), plus
  `reset()` and `live_allocations()` for the tests.
Work is synchronous (streams and events only track what is current and when it was recorded),
and CUDA C kernels cannot run here.
"""
from __future__ import annotations

SIMULATED = True    # glasstorch.backends.cuda.runtime.runs_cuda_c() reads this: no CUDA C here

import bisect as _bisect
import ctypes as _ctypes
import itertools as _itertools
import json as _json
import math as _math
import pathlib as _pathlib
import sys as _sys
import threading as _threading
import time as _time
import types as _types
from builtins import all as _all, any as _any, bool as _bool, max as _max, sum as _sum

import numpy as _np

_API = _json.loads(_pathlib.Path(__file__).with_name("cupy_api_14.2.0.json").read_text())
_CUPY_NAMES = frozenset(_API["cupy"])
# Which ufunc methods real CuPy 14.2 implements (cupy/_core/_kernel.pyx,
# _routines_indexing.pyx): every ufunc has `outer`; reduce/accumulate only add and multiply,
# reduceat only add, at only add, subtract, maximum, minimum and the bitwise ones.
_REAL_METHODS = {"add": ("reduce", "accumulate", "reduceat", "at", "outer"),
                 "multiply": ("reduce", "accumulate", "outer"),
                 "subtract": ("at", "outer"), "maximum": ("at", "outer"),
                 "minimum": ("at", "outer"), "bitwise_and": ("at", "outer"),
                 "bitwise_or": ("at", "outer"), "bitwise_xor": ("at", "outer")}
_UFUNC_METHODS = {name: [m for m in methods if m in _REAL_METHODS.get(name, ("outer",))]
                  for name, methods in _API["ufunc_methods"].items()}
_KEYWORDS = {"__call__": {"out", "dtype", "casting"},          # no where=, no signature=
             "reduce": {"axis", "dtype", "out", "keepdims"},     # no initial=, no where=
             "accumulate": {"axis", "dtype", "out"}}
_AT_DTYPES = {"add": set("ilqILQefd"), "subtract": set("iI"),     # cupy.<ufunc>.at dtypes
              "maximum": set("ilqILQfd"), "minimum": set("ilqILQfd")}
_COMPARISONS = {"greater", "greater_equal", "less", "less_equal", "equal", "not_equal"}
_this = _sys.modules[__name__]
_NO_CUDA_C = "the simulated CuPy cannot run CUDA C; run this on a GPU"
_SUPPORTED_CHARS = frozenset("?bhilqBHILQefdFD")    # CuPy's dtypes (_core/_dtype.pyx)
_DEFAULT_TOTAL = 80 << 30                           # a device without a capacity
_ALIGN = 256                                        # cudaMalloc's alignment
_NOTHING = _np.empty(0, _np.uint8)                  # the buffer behind empty arrays
_SCALARS = (int, float, complex, _np.generic)       # bool is an int
_ERRORS = {
    1: ("cudaErrorInvalidValue", "invalid argument"),
    2: ("cudaErrorMemoryAllocation", "out of memory"),
    21: ("cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"),
    100: ("cudaErrorNoDevice", "no CUDA-capable device is detected"),
    101: ("cudaErrorInvalidDevice", "invalid device ordinal"),
    400: ("cudaErrorInvalidResourceHandle", "invalid resource handle"),
    700: ("cudaErrorIllegalAddress", "an illegal memory access was encountered"),
}


def _named(name):
    """Give a private class CuPy's public name (the class is exported under that name only
    in the submodule where real CuPy has it)."""
    def rename(cls):
        cls.__name__ = cls.__qualname__ = name
        return cls
    return rename


@_named("CUDARuntimeError")
class _CUDARuntimeError(RuntimeError):
    """cupy_backends.cuda.api.runtime.CUDARuntimeError: a CUDA status and its text."""

    def __init__(self, status):
        self.status = status
        name, text = _ERRORS.get(status, ("cudaErrorUnknown", "unknown error"))
        super().__init__(f"{name}: {text}")

    def __reduce__(self):
        return type(self), (self.status,)


@_named("OutOfMemoryError")
class _OutOfMemoryError(MemoryError):
    """cupy.cuda.memory.OutOfMemoryError, raised by CuPy's own allocator (not runtime.malloc)."""

    def __init__(self, size, total, limit=0):
        limit_text = f", limit set to: {limit} bytes" if limit else ""
        super().__init__(f"Out of memory allocating {size} bytes "
                         f"(allocated so far: {total} bytes{limit_text}).")


# ---------------------------------------------------------------------------------------------
# Simulated memory: blocks of host bytes, found from any pointer inside them.

class _Block:
    """One allocation: `size` bytes at `addr` (256-byte aligned, like cudaMalloc)."""
    __slots__ = ("buf", "addr", "size", "device", "live")

    def __init__(self, size, device):
        raw = _np.empty(size + _ALIGN, _np.uint8)
        start = -raw.ctypes.data % _ALIGN
        self.buf = raw[start:start + size]
        self.addr, self.size, self.device, self.live = raw.ctypes.data + start, size, device, True


class _Table:
    """Live blocks sorted by address, so a pointer anywhere inside one resolves by bisection."""

    def __init__(self):
        self.addrs, self.blocks = [], {}

    def add(self, block):
        _bisect.insort(self.addrs, block.addr)
        self.blocks[block.addr] = block

    def pop(self, addr):
        block = self.blocks.pop(addr, None)
        if block is not None:
            del self.addrs[_bisect.bisect_left(self.addrs, addr)]
            block.live = False
        return block

    def owner(self, ptr):
        i = _bisect.bisect_right(self.addrs, ptr) - 1
        if i >= 0:
            block = self.blocks[self.addrs[i]]
            if ptr < block.addr + block.size:
                return block
        return None


class _State:
    """Everything reset() forgets."""

    def __init__(self, device_count, capacity):
        self.device_count, self.capacity = device_count, capacity
        self.used = [0] * device_count
        self.device_mem, self.host_mem = _Table(), _Table()
        self.allocator = self.pinned_allocator = None
        self.handles = _itertools.count(0x1000, 0x10)      # stream and event handles


_lock = _threading.RLock()
_state = _State(1, None)
_tls = _threading.local()


def _thread():
    """This thread's current device and streams (fresh after a reset)."""
    t = _tls
    if getattr(t, "state", None) is not _state:
        t.state, t.device, t.streams = _state, 0, {}
    return t


def reset(device_count=1, capacity_bytes=None):
    """Forget every device, allocation, stream and allocator hook: a fresh simulated machine
    with `device_count` GPUs of `capacity_bytes` each (None: 80 GiB)."""
    global _state
    with _lock:
        for table in (_state.device_mem, _state.host_mem):
            for block in table.blocks.values():
                block.live = False
        _state = _State(device_count, capacity_bytes)


def live_allocations():
    """How many device allocations are not freed (leak checks)."""
    with _lock:
        return len(_state.device_mem.blocks)


# ---------------------------------------------------------------------------------------------
# cupy.cuda.runtime

def _check_device(device):
    if not 0 <= device < _state.device_count:
        raise _CUDARuntimeError(101)
    return device


def _device_count():
    if not _state.device_count:
        raise _CUDARuntimeError(100)
    return _state.device_count


def _get_device():
    _device_count()
    return _thread().device


def _set_device(device):
    _thread().device = _check_device(int(device))


def _total(device):
    return _DEFAULT_TOTAL if _state.capacity is None else _state.capacity


def _mem_info(device):
    return _total(device) - _state.used[device], _total(device)


def _malloc(size):
    device = _get_device()
    with _lock:
        if _state.used[device] + size > _total(device):
            raise _CUDARuntimeError(2)
        if size == 0:
            return 0
        block = _Block(size, device)
        _state.device_mem.add(block)
        _state.used[device] += size
    return block.addr


def _release(state, ptr):
    with _lock:
        block = state.device_mem.pop(ptr)
        if block is not None:
            state.used[block.device] -= block.size
    return block is not None


def _free(ptr):
    if ptr and not _release(_state, ptr):
        raise _CUDARuntimeError(1)


def _host_alloc(size, flags=0):
    if size == 0:
        return 0
    block = _Block(size, -1)
    with _lock:
        _state.host_mem.add(block)
    return block.addr


def _free_host(ptr):
    with _lock:
        block = _state.host_mem.pop(ptr)
    if ptr and block is None:
        raise _CUDARuntimeError(1)


def _span(ptr, size, device_side):
    """Check [ptr, ptr+size) for a copy: inside one live block, or (host side only) memory
    this module does not track (pageable host memory)."""
    with _lock:
        block = _state.device_mem.owner(ptr) or _state.host_mem.owner(ptr)
    if block is None and not device_side:
        return
    if block is None or ptr + size > block.addr + block.size:
        raise _CUDARuntimeError(1)


def _memcpy(dst, src, size, kind):
    if kind not in range(5):
        raise _CUDARuntimeError(21)
    if size:
        _span(dst, size, kind in (1, 3))
        _span(src, size, kind in (2, 3))
        _ctypes.memmove(dst, src, size)


def _memcpy_async(dst, src, size, kind, stream):
    _memcpy(dst, src, size, kind)


def _memset(ptr, value, size):
    if size:
        _span(ptr, size, True)
        _ctypes.memset(ptr, value, size)


def _memset_async(ptr, value, size, stream):
    _memset(ptr, value, size)


def _device_properties(device):
    """getDeviceProperties: real CuPy's keys and value types, an H100/H200-like device."""
    _check_device(device)
    return {
        "name": b"Simulated GPU", "totalGlobalMem": _total(device), "sharedMemPerBlock": 49152,
        "regsPerBlock": 65536, "warpSize": 32, "maxThreadsPerBlock": 1024,
        "maxThreadsDim": (1024, 1024, 64), "maxGridSize": (2147483647, 65535, 65535),
        "clockRate": 1980000, "totalConstMem": 65536, "major": 9, "minor": 0,
        "multiProcessorCount": 132, "kernelExecTimeoutEnabled": 0, "integrated": 0,
        "canMapHostMemory": 1, "computeMode": 0, "concurrentKernels": 1, "ECCEnabled": 1,
        "pciBusID": device, "pciDeviceID": 0, "pciDomainID": 0, "tccDriver": 0,
        "memoryClockRate": 2619000, "memoryBusWidth": 5120, "l2CacheSize": 50331648,
        "maxThreadsPerMultiProcessor": 2048, "isMultiGpuBoard": 0, "asyncEngineCount": 3,
        "unifiedAddressing": 1, "sharedMemPerMultiprocessor": 233472,
        "regsPerMultiprocessor": 65536, "managedMemory": 1, "sharedMemPerBlockOptin": 232448,
        "uuid": b"simulated-gpu-%02d" % device, "maxBlocksPerMultiProcessor": 32,
    }


_runtime = _types.ModuleType(f"{__name__}.cuda.runtime", "cupy.cuda.runtime, simulated")
_runtime.__dict__.update(
    CUDARuntimeError=_CUDARuntimeError, getDeviceCount=_device_count, getDevice=_get_device,
    setDevice=_set_device, getDeviceProperties=_device_properties, malloc=_malloc, free=_free,
    memGetInfo=lambda: _mem_info(_get_device()), deviceSynchronize=lambda: None,
    runtimeGetVersion=lambda: 13000, driverGetVersion=lambda: 13000, hostAlloc=_host_alloc,
    freeHost=_free_host, memcpy=_memcpy, memcpyAsync=_memcpy_async, memset=_memset,
    memsetAsync=_memset_async, memcpyHostToHost=0, memcpyHostToDevice=1,
    memcpyDeviceToHost=2, memcpyDeviceToDevice=3, memcpyDefault=4, hostAllocDefault=0,
    hostAllocPortable=1, hostAllocMapped=2, hostAllocWriteCombined=4, streamLegacy=1,
    streamPerThread=2)


# ---------------------------------------------------------------------------------------------
# cupy.cuda: memory, pointers, allocators

@_named("BaseMemory")
class _BaseMemory:
    """What a MemoryPointer points into."""
    ptr = size = 0
    device_id = -1

    @property
    def device(self):
        return _Device(self.device_id)

    def __int__(self):
        return self.ptr


@_named("Memory")
class _Memory(_BaseMemory):
    """Device memory from cudaMalloc, freed when the last reference goes (as CuPy's RAII)."""

    def __init__(self, size):
        self.device_id, self._state = _get_device(), _state
        self.ptr, self.size = _malloc(size), size

    def __del__(self, _release=_release):      # bound now: may run at interpreter exit
        if self.ptr:
            _release(self._state, self.ptr)


@_named("UnownedMemory")
class _UnownedMemory(_BaseMemory):
    """Memory someone else owns; every array over it keeps `owner` alive."""

    def __init__(self, ptr, size, owner, device_id=-1):
        if device_id is None or device_id < 0:       # ask the pointer, as CuPy does
            with _lock:
                block = _state.device_mem.owner(ptr)
            device_id = _get_device() if block is None else block.device
        self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id


def _address(mem):
    return mem.value if isinstance(mem, _ctypes.c_void_p) else int(mem)


@_named("MemoryPointer")
class _MemoryPointer:
    """A pointer into a Memory (`mem`), as every CuPy array's `.data`."""
    __slots__ = ("mem", "ptr", "device_id")

    def __init__(self, mem, offset):
        self.mem, self.ptr, self.device_id = mem, mem.ptr + offset, mem.device_id

    device = property(lambda self: _Device(self.device_id))

    def __int__(self):
        return self.ptr

    def __add__(self, offset):
        return _MemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

    __radd__ = __add__

    def __sub__(self, offset):
        return self + -offset

    def copy_from_device(self, src, size):
        _memcpy(self.ptr, src.ptr, size, 3)

    def copy_from_host(self, mem, size):
        _memcpy(self.ptr, _address(mem), size, 1)

    def copy_to_host(self, mem, size):
        _memcpy(_address(mem), self.ptr, size, 2)

    def memset(self, value, size):
        _memset(self.ptr, value, size)


for _name in ("copy_from_device", "copy_from_host", "copy_to_host", "memset"):
    setattr(_MemoryPointer, f"{_name}_async",     # synchronous here: the stream changes nothing
            lambda self, source, size, stream=None, _sync=_name: getattr(self, _sync)(source, size))


def _default_malloc(size):
    """CuPy's allocation without a hook: CuPy's pool raises OutOfMemoryError, not the
    runtime's error."""
    try:
        return _MemoryPointer(_Memory(size), 0)
    except _CUDARuntimeError as error:
        if error.status != 2:
            raise
        raise _OutOfMemoryError(size, _state.used[_get_device()]) from None


def _alloc(size):
    """Memory for every simulated array (new, result, copy): from the allocator in force."""
    pointer = (_state.allocator or _default_malloc)(size)
    if not isinstance(pointer, _MemoryPointer):
        raise TypeError("the allocator must return a cupy.cuda.MemoryPointer, "
                        f"not {type(pointer).__name__}")
    return pointer


def _set_allocator(allocator=None):
    _state.allocator = allocator


def _get_allocator():
    return _state.allocator or _default_malloc


@_named("PinnedMemory")
class _PinnedMemory(_BaseMemory):
    """Page-locked host memory (cudaHostAlloc), freed with its last reference."""

    def __init__(self, size, flags=0):
        self._state = _state
        self.ptr, self.size = _host_alloc(size, flags), size

    def __del__(self, _lock=_lock):
        if self.ptr:
            with _lock:
                self._state.host_mem.pop(self.ptr)


@_named("PinnedMemoryPointer")
class _PinnedMemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.ptr, self.size = mem, mem.ptr + offset, mem.size - offset


def _alloc_pinned_memory(size):
    allocator = _state.pinned_allocator
    return allocator(size) if allocator else _PinnedMemoryPointer(_PinnedMemory(size), 0)


def _set_pinned_memory_allocator(allocator=None):
    _state.pinned_allocator = allocator


# ---------------------------------------------------------------------------------------------
# cupy.cuda: devices, streams, events

@_named("Device")
class _Device:
    """A CUDA device; as a context manager it is the thread's current device for a block."""

    def __init__(self, device=None):
        self.id = _get_device() if device is None else int(device)
        self._previous = []

    def use(self):
        _set_device(self.id)

    def __enter__(self):
        self._previous.append(_get_device())
        self.use()
        return self

    def __exit__(self, *exc):
        _set_device(self._previous.pop())

    def synchronize(self):
        _check_device(self.id)

    @property
    def compute_capability(self):
        _check_device(self.id)
        return "90"

    @property
    def mem_info(self):
        return _mem_info(_check_device(self.id))

    def __int__(self):
        return self.id

    def __eq__(self, other):
        return isinstance(other, _Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


@_named("Stream")
class _Stream:
    """A CUDA stream. Work runs synchronously here: a stream is only what is current."""
    null = ptds = None      # the singletons, set below

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.ptr = 0 if null else 2 if ptds else next(_state.handles)
        self.device_id = -1 if null or ptds else _get_device()
        self._non_blocking, self._priority, self._previous = non_blocking, priority or 0, []

    done = property(lambda self: True)
    priority = property(lambda self: self._priority)
    is_non_blocking = property(lambda self: self._non_blocking)

    def use(self):
        _thread().streams[_get_device()] = self
        return self

    def __enter__(self):
        self._previous.append(_get_current_stream())
        return self.use()

    def __exit__(self, *exc):
        self._previous.pop().use()

    def synchronize(self):
        pass

    def record(self, event=None):
        event = _Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        if not isinstance(event, _Event):
            raise TypeError(f"expected a cupy.cuda.Event, got {type(event).__name__}")

    def __repr__(self):
        return f"<{type(self).__name__} {self.ptr} (device {self.device_id})>"


_Stream.null, _Stream.ptds = _Stream(null=True), _Stream(ptds=True)


@_named("ExternalStream")
class _ExternalStream(_Stream):
    """A stream made elsewhere, known by its handle."""

    def __init__(self, ptr, device_id=-1):
        self.ptr, self.device_id = ptr, device_id
        self._non_blocking, self._priority, self._previous = False, 0, []


def _get_current_stream(device_id=-1):
    device = _get_device() if device_id < 0 else device_id
    return _thread().streams.get(device, _Stream.null)


@_named("Event")
class _Event:
    """A CUDA event: records the host time (work is synchronous, so it is done at once)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        self.ptr, self.block, self._timing = next(_state.handles), block, not disable_timing
        self._time = None

    done = property(lambda self: True)      # as cudaEventQuery, also before any record

    def record(self, stream=None):
        self._time = _time.perf_counter()

    def synchronize(self):
        pass


def _get_elapsed_time(start_event, end_event):
    """Milliseconds between two recorded events; CUDA's invalid-handle error (as
    cudaEventElapsedTime) if one was not recorded or was made with disable_timing."""
    end_event.synchronize()
    if _any(e._time is None or not e._timing for e in (start_event, end_event)):
        raise _CUDARuntimeError(400)
    return (end_event._time - start_event._time) * 1000.0


# ---------------------------------------------------------------------------------------------
# ndarray

def _supported(dtype):
    """The dtype, if CuPy has it (no bfloat16, object, strings...)."""
    dtype = _np.dtype(dtype)
    if dtype.char not in _SUPPORTED_CHARS:
        raise TypeError(f"Unsupported dtype {dtype}")
    return dtype


def _check_dtype_argument(kwargs):
    if kwargs.get("dtype") is not None:
        _supported(kwargs["dtype"])


def _unsupported(value):
    return TypeError(f"Unsupported type {type(value)}")


def _contiguous_strides(shape, itemsize, fortran):
    strides, step = [], itemsize
    for n in (shape if fortran else reversed(shape)):
        strides.append(step)
        step *= _max(n, 1)
    return tuple(strides if fortran else reversed(strides))


def _resolve(ptr, nbytes):
    """The live device block holding [ptr, ptr+nbytes): what a kernel may touch."""
    with _lock:
        block = _state.device_mem.owner(ptr)
    if block is None or ptr + nbytes > block.addr + block.size:
        raise _CUDARuntimeError(700)
    return block


def _init(array, memptr, shape, dtype, strides, base, block=None):
    """Make `array` the elements at memptr: a NumPy view of the block's bytes."""
    dtype = _supported(dtype)
    if _math.prod(shape) == 0:
        inner = _np.ndarray(shape, dtype, buffer=_NOTHING, strides=strides)
    else:
        lo = _sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        hi = _sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + dtype.itemsize
        if block is None:
            block = _resolve(memptr.ptr + lo, hi - lo)
        inner = _np.ndarray(shape, dtype, buffer=block.buf, offset=memptr.ptr - block.addr,
                            strides=strides)
    array._a, array._rec, array._data, array._base = inner, block, memptr, base


def _same_device(arrays):
    current = _get_device()
    for a in arrays:
        if a._data.device_id != current:
            raise ValueError(f"The device where the array resides ({a._data.device_id}) is "
                             f"different from the current device ({current}). Peer access is "
                             "unavailable between these devices.")


def _to_device(result, sources=()):
    """A new device array holding a fresh NumPy result (memory from the allocator in force),
    C-ordered unless the result is Fortran-ordered only."""
    _supported(result.dtype)
    _same_device(sources)
    fortran = result.flags.f_contiguous and not result.flags.c_contiguous
    out = ndarray(result.shape, result.dtype, order="F" if fortran else "C")
    out._a[...] = result
    return out


def _view_of(source, result, addr):
    mem = source._data.mem
    view = ndarray.__new__(ndarray)
    _init(view, _MemoryPointer(mem, addr - mem.ptr), result.shape, result.dtype, result.strides,
          source if source._base is None else source._base, source._rec)
    return view


def _wrap(result, sources):
    """Turn what NumPy returned into what CuPy returns: an input itself, a view sharing its
    device memory, a new device array (NumPy scalars become 0-d arrays), or a list/tuple of
    those; anything else (ints, dtypes, strings...) as it is."""
    if isinstance(result, _np.ndarray):
        for s in sources:
            if result is s._a:
                return s
        if result.size:
            addr = result.__array_interface__["data"][0]
            # the source whose own memory holds the view keeps it alive (arrays from a
            # caching allocator share one block), else any source over the same block
            for s in sorted(sources, key=lambda s: not s._data.mem.ptr <= addr <
                            s._data.mem.ptr + s._data.mem.size):
                block = s._rec
                if block is not None and block.addr <= addr < block.addr + block.size:
                    return _view_of(s, result, addr)
        return _to_device(result, sources)
    if isinstance(result, _np.generic):
        return _to_device(_np.asarray(result), sources)
    if type(result) is list:
        return [_wrap(r, sources) for r in result]
    if isinstance(result, tuple):
        return tuple(_wrap(r, sources) for r in result)
    return result


def _unwrap(value, sources, host=False):
    """The NumPy view behind each simulated array in value (inside lists and tuples too).
    A NumPy array of nonzero dimension is refused as CuPy refuses it, unless `host`."""
    if isinstance(value, ndarray):
        sources.append(value)
        return value._inner()
    if isinstance(value, _np.ndarray):
        if value.ndim and not host:
            raise _unsupported(value)
        return value
    if type(value) in (list, tuple):
        return type(value)(_unwrap(v, sources, host) for v in value)
    return value


def _operand(value, sources):
    """An operand of an elementwise operation: a device array or a scalar, nothing else
    (a 0-d NumPy array is refused too, as CuPy's scalar conversion refuses it)."""
    if isinstance(value, ndarray):
        sources.append(value)
        return value._inner()
    if isinstance(value, _SCALARS):
        return value
    raise _unsupported(value)


def _apply_ufunc(function, method, inputs, kwargs):
    if function.__name__ in _COMPARISONS or method == "at":     # CuPy takes .item() of these
        inputs = tuple(x.item() if isinstance(x, _np.ndarray) and x.ndim == 0 else x
                       for x in inputs)
    extra = set(kwargs) - _KEYWORDS.get(method, set(kwargs))
    if extra:
        raise TypeError(f"cupy.{function.__name__}.{method}() got unexpected keyword "
                        f"argument(s) {sorted(extra)}")
    if method == "at":
        allowed = _AT_DTYPES.get(function.__name__)
        if allowed is not None and inputs[0].dtype.char not in allowed:
            raise TypeError(f"cupy.{function.__name__}.at does not support dtype "
                            f"{inputs[0].dtype}")
    sources = []
    args = [_unwrap(x, sources) if i == 1 and method in ("at", "reduceat")
            else _operand(x, sources) for i, x in enumerate(inputs)]
    kwargs = dict(kwargs)
    if kwargs.get("out") is not None:
        outs = kwargs["out"] if isinstance(kwargs["out"], tuple) else (kwargs["out"],)
        if not _all(isinstance(o, ndarray) for o in outs):
            raise TypeError("Output arguments must be cupy.ndarray")
        sources.extend(outs)
        kwargs["out"] = tuple(o._inner() for o in outs)
    if "where" in kwargs:
        kwargs["where"] = _operand(kwargs["where"], sources)
    _check_dtype_argument(kwargs)
    _same_device(sources)
    return _wrap(getattr(function, method)(*args, **kwargs), sources)


def _key(key):
    if type(key) is tuple:
        return tuple(k._inner() if isinstance(k, ndarray) else k for k in key)
    return key._inner() if isinstance(key, ndarray) else key


_BASIC_INDEX = (int, _np.integer, slice, type(None), type(Ellipsis))


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")
    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous", "OWNDATA": "owndata"}

    def __init__(self, c_contiguous, f_contiguous, owndata):
        self.c_contiguous, self.f_contiguous, self.owndata = c_contiguous, f_contiguous, owndata

    def __getitem__(self, name):
        return getattr(self, self._KEYS[name])

    def __repr__(self):
        return "\n".join(f"  {k} : {getattr(self, v)}" for k, v in self._KEYS.items())


class ndarray:
    """cupy.ndarray over simulated device memory: a NumPy view of an allocation's bytes,
    reachable only through CuPy's API (never a NumPy array itself)."""
    __slots__ = ("_a", "_rec", "_data", "_base", "__weakref__")

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if isinstance(shape, (int, _np.integer)):
            shape = (shape,)
        shape, dtype = tuple(int(n) for n in shape), _supported(dtype)
        if strides is None:
            if order not in ("C", "F"):
                raise ValueError(f"order not understood: {order!r}")
            strides = _contiguous_strides(shape, dtype.itemsize, order == "F")
        if memptr is None:
            memptr = _alloc(_math.prod(shape) * dtype.itemsize)
        _init(self, memptr, shape, dtype, tuple(strides), None)

    def _inner(self):
        """The NumPy view, once sure the memory under it is still allocated."""
        if self._rec is not None and not self._rec.live:
            raise _CUDARuntimeError(700)
        return self._a

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    strides = property(lambda self: self._a.strides)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    data = property(lambda self: self._data)
    base = property(lambda self: self._base)
    device = property(lambda self: _Device(self._data.device_id))
    T = property(lambda self: _wrap(self._inner().T, [self]))
    mT = property(lambda self: _wrap(self._inner().mT, [self]))
    real = property(lambda self: _wrap(self._inner().real, [self]))
    imag = property(lambda self: _wrap(self._inner().imag, [self]))

    @property
    def flags(self):
        return _Flags(self._a.flags.c_contiguous, self._a.flags.f_contiguous, self._base is None)

    @property
    def __cuda_array_interface__(self):
        a = self._inner()
        return {"shape": a.shape, "typestr": a.dtype.str, "descr": a.dtype.descr,
                "strides": None if a.flags.c_contiguous else a.strides,
                "data": (self._data.ptr if a.size else 0, False), "version": 3,
                "stream": _get_current_stream().ptr or 1}

    def get(self, stream=None, order="C", out=None, blocking=True):
        a = self._inner()
        if out is None:
            return _np.array(a, order=order)
        if not isinstance(out, _np.ndarray):
            raise TypeError("Only numpy.ndarray can be obtained from cupy.ndarray")
        if out.dtype != a.dtype:
            raise TypeError(f"{out.dtype} array cannot be obtained from {a.dtype} array")
        if out.shape != a.shape:
            raise ValueError(f"Shape mismatch. Expected shape: {a.shape}, "
                             f"actual shape: {out.shape}")
        if not (out.flags.c_contiguous or out.flags.f_contiguous):
            raise RuntimeError("`out` cannot be specified when copying to non-contiguous "
                               "ndarray")
        out[...] = a
        return out

    def set(self, arr, stream=None):
        if not isinstance(arr, _np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if arr.dtype != self.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if arr.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        a = self._inner()
        if not (a.flags.c_contiguous or a.flags.f_contiguous):
            raise RuntimeError("Cannot set to non-contiguous array")
        a[...] = arr

    def copy(self, order="C"):
        """A copy in new memory of the array's own device (CuPy copies there)."""
        t = _thread()
        previous, t.device = t.device, self._data.device_id
        try:
            return _to_device(self._inner().copy(order))
        finally:
            t.device = previous

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = ufunc.__name__
        if name not in _CUPY_NAMES or (method != "__call__"
                                       and method not in _UFUNC_METHODS.get(name, ())):
            return NotImplemented
        if not _all(isinstance(x, (ndarray, _np.ndarray) + _SCALARS) for x in inputs):
            return NotImplemented       # CuPy defers on any other operand: a tuple key of .at
        return _apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        implementation = _FUNCTIONS.get(func.__module__, {}).get(func.__name__)
        if implementation is None:
            return NotImplemented
        return implementation(*args, **kwargs)

    def __getitem__(self, key):
        key, inner = _key(key), self._inner()
        parts = key if type(key) is tuple else (key,)
        if _all(isinstance(k, _BASIC_INDEX) and not isinstance(k, _bool) for k in parts) \
                and Ellipsis not in parts:
            key = parts + (Ellipsis,)      # a view even when every axis is indexed, as CuPy
        return _wrap(inner[key], [self])

    def __setitem__(self, key, value):
        sources = [self]
        if isinstance(value, ndarray):
            value = _operand(value, sources)
        elif not (isinstance(value, _SCALARS)
                  or isinstance(value, _np.ndarray) and value.ndim == 0):
            raise _unsupported(value)
        _same_device(sources)
        self._inner()[_key(key)] = value

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        return _bool(self._inner())

    def __int__(self):
        return int(self._inner())

    def __float__(self):
        return float(self._inner())

    def __complex__(self):
        return complex(self._inner())

    def __index__(self):
        if self.size != 1 or self.dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._inner().reshape(()))

    def __format__(self, spec):
        return format(self._inner(), spec)

    def __repr__(self):
        return repr(self._inner())

    def __str__(self):
        return str(self._inner())


def _operator(function, reflected=False, inplace=False):
    def operator(self, other):
        if not isinstance(other, (ndarray, _np.ndarray) + _SCALARS):
            return NotImplemented
        args = (other, self) if reflected else (self, other)
        return _apply_ufunc(function, "__call__", args, {"out": (self,)} if inplace else {})
    return operator


for _name, _function in {
        "add": _np.add, "sub": _np.subtract, "mul": _np.multiply, "truediv": _np.true_divide,
        "floordiv": _np.floor_divide, "mod": _np.remainder, "pow": _np.power,
        "matmul": _np.matmul, "lshift": _np.left_shift, "rshift": _np.right_shift,
        "and": _np.bitwise_and, "or": _np.bitwise_or, "xor": _np.bitwise_xor}.items():
    setattr(ndarray, f"__{_name}__", _operator(_function))
    setattr(ndarray, f"__r{_name}__", _operator(_function, reflected=True))
    setattr(ndarray, f"__i{_name}__", _operator(_function, inplace=True))
for _name, _function in {"eq": _np.equal, "ne": _np.not_equal, "lt": _np.less,
                         "le": _np.less_equal, "gt": _np.greater, "ge": _np.greater_equal,
                         "divmod": _np.divmod}.items():
    setattr(ndarray, f"__{_name}__", _operator(_function))
ndarray.__rdivmod__ = _operator(_np.divmod, reflected=True)
for _name, _function in {"neg": _np.negative, "pos": _np.positive, "abs": _np.absolute,
                         "invert": _np.invert}.items():
    setattr(ndarray, f"__{_name}__",
            lambda self, _f=_function: _apply_ufunc(_f, "__call__", (self,), {}))
ndarray.__hash__ = None

_HOST_RESULTS = frozenset(("item", "tolist", "tobytes", "dumps", "dump", "tofile"))


def _method(name):
    """ndarray.<name>: NumPy's method on the device array's view, results wrapped."""
    def method(self, *args, **kwargs):
        sources = [self]
        args = _unwrap(args, sources)
        kwargs = {k: _unwrap(v, sources) for k, v in kwargs.items()}
        _check_dtype_argument(kwargs)
        result = getattr(self._inner(), name)(*args, **kwargs)
        return result if name in _HOST_RESULTS else _wrap(result, sources)
    method.__name__ = method.__qualname__ = name
    return method


for _name in _API["ndarray"]:
    if (not _name.startswith("_") and _name not in vars(ndarray)
            and callable(getattr(_np.ndarray, _name, None))):
        setattr(ndarray, _name, _method(_name))


# ---------------------------------------------------------------------------------------------
# Module functions

class ufunc:
    """A CuPy ufunc: NumPy's, on device arrays, with only the methods CuPy gives it."""

    def __init__(self, function):
        self._f, self.__name__ = function, function.__name__
        self.nin, self.nout, self.nargs = function.nin, function.nout, function.nargs

    def __call__(self, *args, **kwargs):
        return _apply_ufunc(self._f, "__call__", args, kwargs)

    def __getattr__(self, method):
        if method in _UFUNC_METHODS.get(self.__dict__.get("__name__"), ()):
            return lambda *args, **kwargs: _apply_ufunc(self._f, method, args, kwargs)
        raise AttributeError(f"'cupy.ufunc' object has no attribute '{method}'")

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"


_REFUSED_KEYWORDS = {"einsum": {"out"}}     # NumPy's keywords that CuPy's function lacks
_BOOL_ARRAY_RESULTS = frozenset(("array_equal", "array_equiv", "allclose"))  # 0-d in CuPy


def _delegate(function, name, random=False):
    """cupy.<name>: NumPy's function on the views behind device arrays, results wrapped."""
    def call(*args, **kwargs):
        refused = sorted(set(kwargs) & _REFUSED_KEYWORDS.get(name, set()))
        if refused:
            raise TypeError(f"Did not understand the following kwargs: {refused}")
        sources = []
        args = _unwrap(args, sources)
        kwargs = {k: _unwrap(v, sources) for k, v in kwargs.items()}
        _check_dtype_argument(kwargs)
        dtype = kwargs.pop("dtype", None) if random and name != "randint" else None
        _same_device(sources)
        result = function(*args, **kwargs)
        if name in _BOOL_ARRAY_RESULTS:
            result = _np.bool_(result)
        if dtype is not None:       # CuPy's generators take a dtype NumPy's do not
            result = _np.asarray(result).astype(dtype)
        return _wrap(result, sources)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"cupy.{name}, simulated: NumPy's {name} on simulated device arrays."
    return call


_FUNCTIONS = {}     # NumPy module -> {name: implementation}, for __array_function__
_MISSING = object()


def _export(namespace, names, numpy_module, random=False):
    """Give `namespace` every name of CuPy's list that NumPy has: ufuncs, dtypes and
    constants as they are, functions delegated."""
    for name in sorted(names):
        if name.startswith("_") or name in namespace or name == "default_rng":
            continue
        value = vars(numpy_module).get(name, _MISSING)   # no lazy imports, no deprecations
        if isinstance(value, _np.ufunc):
            namespace[name] = ufunc(value)
        elif isinstance(value, type):
            if issubclass(value, (_np.generic, BaseException)) or value in (
                    _np.dtype, _np.finfo, _np.iinfo):
                namespace[name] = value
        elif callable(value):
            namespace[name] = _delegate(value, name, random)
            module = getattr(value, "__module__", None) or numpy_module.__name__
            _FUNCTIONS.setdefault(module, {})[name] = namespace[name]
        elif value is None or isinstance(value, float):
            namespace[name] = value


def asarray(a, dtype=None, order=None, *, copy=None, blocking=False):
    if isinstance(a, ndarray):
        return array(a, dtype, copy=_bool(copy), order=order or "K")
    return _to_device(_np.asarray(_unwrap(a, [], host=True), dtype=dtype, order=order))


asanyarray = asarray


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    if isinstance(obj, ndarray):
        result = obj.astype(obj.dtype if dtype is None else dtype, order=order, copy=copy)
        if result.ndim < ndmin:
            result = result.reshape((1,) * (ndmin - result.ndim) + result.shape)
        return result
    return _to_device(_np.array(_unwrap(obj, [], host=True), dtype=dtype, order=order,
                                ndmin=ndmin))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if isinstance(a, ndarray):
        return a.get(stream, order, out, blocking)
    if out is None:
        return _np.asarray(a, order=order)
    out[...] = a
    return out


def get_array_module(*args):
    return _this if _any(isinstance(a, ndarray) for a in args) else _np


def is_available():
    return _state.device_count > 0


class _Uncompiled:
    """CUDA C kept for inspection: running it needs a GPU."""

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(_NO_CUDA_C)


class ElementwiseKernel(_Uncompiled):
    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True,
                 preamble="", no_return=False, return_tuple=False, **kwargs):
        self.in_params, self.out_params, self.operation = in_params, out_params, operation
        self.name, self.preamble, self.kwargs = name, preamble, kwargs


class ReductionKernel(_Uncompiled):
    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="",
                 options=()):
        self.in_params, self.out_params, self.identity = in_params, out_params, identity
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.name, self.reduce_type, self.preamble, self.options = (
            name, reduce_type, preamble, options)


class RawKernel(_Uncompiled):
    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False, *,
                 enable_cooperative_groups=False, jitify=False):
        self.code, self.name, self.options, self.backend = code, name, tuple(options), backend


class RawModule:
    def __init__(self, code=None, *, path=None, options=(), backend="nvrtc",
                 translate_cucomplex=False, enable_cooperative_groups=False,
                 name_expressions=None, jitify=False):
        self.code, self.path, self.options, self.backend = code, path, tuple(options), backend
        self.name_expressions = name_expressions

    def get_function(self, name):
        return RawKernel(self.code, name, self.options, self.backend)


def _as_strided(x, shape=None, strides=None):
    """cupy.lib.stride_tricks.as_strided: a new array over x's memory (no base, as CuPy)."""
    return ndarray(x.shape if shape is None else shape, x.dtype, x.data,
                   x.strides if strides is None else strides)


def _module(name, doc, **members):
    module = _types.ModuleType(f"{__name__}.{name}", doc)
    module.__dict__.update(members)
    return module


_memory = _module(
    "cuda.memory", "cupy.cuda.memory, simulated", BaseMemory=_BaseMemory, Memory=_Memory,
    MemoryPointer=_MemoryPointer, UnownedMemory=_UnownedMemory,
    OutOfMemoryError=_OutOfMemoryError, CUDARuntimeError=_CUDARuntimeError,
    set_allocator=_set_allocator, get_allocator=_get_allocator, alloc=_alloc)
cuda = _module(
    "cuda", "cupy.cuda, simulated", runtime=_runtime, memory=_memory, Device=_Device,
    Stream=_Stream, ExternalStream=_ExternalStream, Event=_Event,
    get_elapsed_time=_get_elapsed_time, get_current_stream=_get_current_stream,
    get_device_id=lambda: _get_device(), BaseMemory=_BaseMemory, Memory=_Memory,
    MemoryPointer=_MemoryPointer, UnownedMemory=_UnownedMemory, PinnedMemory=_PinnedMemory,
    PinnedMemoryPointer=_PinnedMemoryPointer, set_allocator=_set_allocator,
    get_allocator=_get_allocator, alloc=_alloc, alloc_pinned_memory=_alloc_pinned_memory,
    set_pinned_memory_allocator=_set_pinned_memory_allocator, is_available=is_available)
lib = _module("lib", "cupy.lib, simulated", stride_tricks=_module(
    "lib.stride_tricks", "cupy.lib.stride_tricks, simulated", as_strided=_as_strided))
linalg = _module("linalg", "cupy.linalg, simulated")
fft = _module("fft", "cupy.fft, simulated")
random = _module("random", "cupy.random, simulated")

_export(globals(), _API["cupy"], _np)
_export(globals(), _API["cupy"], _np.exceptions)       # AxisError and the warnings
_export(linalg.__dict__, _API["linalg"], _np.linalg)
_export(fft.__dict__, _API["fft"], _np.fft)
_export(random.__dict__, _API["random"], _np.random, random=True)
_export(lib.stride_tricks.__dict__, _API["lib.stride_tricks"], _np.lib.stride_tricks)
