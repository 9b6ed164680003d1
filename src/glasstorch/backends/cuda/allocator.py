"""Device memory: glasstorch's caching allocator over cudaMalloc, one per GPU.

`CudaMallocBackend` is the raw backend (segments from cudaMalloc, events on streams);
`DeviceAllocator` is what CUDA storages allocate from. A storage's `buf` is a CuPy uint8
array over one block, made with `UnownedMemory` whose owner returns the block to the cache
when the last CuPy array over it is collected, so a view taken with `_array()` keeps its
bytes allocated, as on the CPU. CuPy's own temporaries (inside cuBLAS calls, reductions,
fancy indexing) are routed through the same allocator with `cupy.cuda.set_allocator`, so
glasstorch's statistics count every byte on the device.

Blocks are cached per stream, as in PyTorch: a block freed on one stream is reused by the
next allocation on that stream, which the stream orders after the earlier work;
`record_stream` makes a block wait for events on the other streams that used it.
"""
from __future__ import annotations

from ...memory.alloc_conf import parse_alloc_conf
from ...memory.caching_allocator import CachingAllocator
from ...memory.raw_backends import RawAllocationError, _StatsView
from . import runtime

_allocators: dict = {}      # device index -> DeviceAllocator


class _StreamEvent:
    """A CuPy event recorded on a stream, with the query()/synchronize() the cache uses."""

    __slots__ = ("event",)

    def __init__(self, event):
        self.event = event

    def query(self) -> bool:
        return bool(self.event.done)

    def synchronize(self) -> None:
        self.event.synchronize()


def cupy_stream(ptr: int):
    """The CuPy stream object for a raw stream pointer (0: the legacy default stream)."""
    cuda = runtime.cupy().cuda
    return cuda.Stream.null if ptr == 0 else cuda.ExternalStream(ptr)


def current_stream_ptr() -> int:
    return runtime.cupy().cuda.get_current_stream().ptr


def driver_allocation(call, *args) -> int:
    """call(*args) (cudaMalloc, cudaHostAlloc): the address; the driver's out-of-memory
    error as RawAllocationError, which makes the cache free itself and retry."""
    cuda = runtime.cupy().cuda
    try:
        return int(call(*args))
    except cuda.runtime.CUDARuntimeError as error:
        if getattr(error, "status", None) == runtime.ERROR_MEMORY_ALLOCATION:
            raise RawAllocationError(str(error)) from None
        raise


class CudaMallocBackend:
    """Segments from cudaMalloc on one device; a segment's handle is its device address."""

    def __init__(self, index: int):
        self.index = index
        self.name = f"cudaMalloc (device {index})"

    def malloc(self, nbytes: int) -> int:
        with runtime.DeviceGuard(self.index):
            return driver_allocation(runtime.cupy().cuda.runtime.malloc, nbytes)

    def address(self, handle: int) -> int:
        return handle

    def free(self, handle: int) -> None:
        with runtime.DeviceGuard(self.index):
            runtime.cupy().cuda.runtime.free(handle)

    def mem_get_info(self) -> tuple:
        with runtime.DeviceGuard(self.index):
            free, total = runtime.cupy().cuda.runtime.memGetInfo()
        return int(free), int(total)

    def record_event(self, stream: int) -> _StreamEvent:
        cuda = runtime.cupy().cuda
        with runtime.DeviceGuard(self.index):
            event = cuda.Event(disable_timing=True)
            event.record(cupy_stream(stream))
        return _StreamEvent(event)


class _BlockOwner:
    """Owns one block while any CuPy array over its bytes lives; returns it when collected
    (telling the allocator's observer, memory history, when one is set)."""

    __slots__ = ("allocator", "block", "nbytes", "__weakref__")

    def __init__(self, allocator, block, nbytes):
        self.allocator, self.block, self.nbytes = allocator, block, nbytes

    def __del__(self):
        allocator = self.allocator
        if allocator is not None:
            self.allocator = None
            if allocator.observer is not None:
                allocator.observer("free", self.nbytes, self.block.address)
            allocator.caching.free(self.block)


class DeviceAllocator:
    """The allocate/free interface CUDA storages use, over one device's CachingAllocator."""

    def __init__(self, index: int):
        self.index = index
        self.caching = CachingAllocator(CudaMallocBackend(index), f"cuda:{index}",
                                        parse_alloc_conf())
        self.stats = _StatsView(self.caching)
        self.observer = None        # memory history's recorder, while it records

    def memory_pointer(self, nbytes: int):
        """A CuPy MemoryPointer to a fresh block of `nbytes` on the current stream."""
        cuda = runtime.cupy().cuda
        block = self.caching.malloc(nbytes, current_stream_ptr())
        owner = _BlockOwner(self, block, nbytes)
        if self.observer is not None:
            self.observer("alloc", nbytes, block.address)
        memory = cuda.UnownedMemory(block.address, nbytes, owner, self.index)
        return cuda.MemoryPointer(memory, 0)

    def allocate(self, nbytes: int):
        """A storage's buffer: a CuPy uint8 array over a fresh block."""
        cp = runtime.cupy()
        with runtime.DeviceGuard(self.index):
            if nbytes == 0:
                return cp.empty(0, cp.uint8)     # like PyTorch: no block for zero bytes
            return cp.ndarray((nbytes,), cp.uint8, self.memory_pointer(nbytes))

    def free(self, nbytes: int, buf=None) -> None:
        """Nothing to do: the block goes back when the last array over it is collected."""

    def record_stream(self, buf, stream_ptr: int) -> None:
        """Mark the block under `buf` as used on another stream (Tensor.record_stream)."""
        owner = getattr(buf.data.mem, "_owner", None)     # UnownedMemory's owner
        if isinstance(owner, _BlockOwner):
            self.caching.record_stream(owner.block, stream_ptr)


def device_allocator(index: int) -> DeviceAllocator:
    """The allocator of GPU `index`, made (and CuPy routed through it) on first use."""
    allocator = _allocators.get(index)
    if allocator is None:
        with runtime._init_lock:
            allocator = _allocators.get(index)
            if allocator is None:
                runtime.check_index(index)
                allocator = _allocators[index] = DeviceAllocator(index)
                runtime.cupy().cuda.set_allocator(_cupy_malloc)
    return allocator


def _cupy_malloc(nbytes: int):
    """CuPy's allocator hook: its temporaries come from glasstorch's cache too."""
    index = int(runtime.cupy().cuda.runtime.getDevice())
    return device_allocator(index).memory_pointer(nbytes)


def initialized_allocators() -> dict:
    return dict(_allocators)


def is_initialized(index: int) -> bool:
    """Whether GPU `index` has allocated anything yet (its allocator exists)."""
    return index in _allocators


@runtime.on_reset
def _drop_allocators() -> None:
    if _allocators and runtime._cupy is not None:
        runtime._cupy.cuda.set_allocator(None)
    _allocators.clear()
