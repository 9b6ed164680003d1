"""Pinned (page-locked) host memory: CPU storages the GPU can copy from asynchronously.

PyTorch's CachingHostAllocator, over the same caching logic as device memory: segments
come from cudaHostAlloc, and a block an asynchronous copy used is not handed out again
until an event recorded on that copy's stream has completed, because the CPU, unlike a
stream, would not wait for the copy before overwriting it.
"""
from __future__ import annotations

from ...memory.alloc_conf import parse_alloc_conf
from ...memory.caching_allocator import CachingAllocator
from ...memory.raw_backends import HostBackend, HostCachingAllocator
from . import runtime
from .allocator import _StreamEvent, cupy_stream, driver_allocation

HOST_STREAM = -1   # pinned blocks belong to no stream: every stream that used one is recorded


class PinnedHostBackend:
    """Segments of page-locked host memory from cudaHostAlloc."""

    name = "cudaHostAlloc"

    def malloc(self, nbytes: int) -> int:
        return driver_allocation(runtime.cupy().cuda.runtime.hostAlloc, nbytes, 0)

    def address(self, handle: int) -> int:
        return handle

    def free(self, handle: int) -> None:
        runtime.cupy().cuda.runtime.freeHost(handle)

    def mem_get_info(self) -> tuple:
        return HostBackend().mem_get_info()

    def record_event(self, stream: int) -> _StreamEvent:
        event = runtime.cupy().cuda.Event(disable_timing=True)
        event.record(cupy_stream(stream))
        return _StreamEvent(event)


class PinnedAllocator(HostCachingAllocator):
    """The allocator of pinned CPU storages (`Tensor.pin_memory()`)."""

    pinned = True

    def allocate(self, nbytes: int):
        return super().allocate(nbytes, stream=HOST_STREAM)


_allocator = None


def allocator() -> PinnedAllocator:
    global _allocator
    if _allocator is None:
        runtime.require()
        _allocator = PinnedAllocator(CachingAllocator(PinnedHostBackend(), "cpu (pinned)",
                                                      parse_alloc_conf()))
    return _allocator


def new_storage(nbytes: int):
    """A CPU storage of `nbytes` in pinned memory."""
    from ...core.storage import UntypedStorage
    return UntypedStorage._new_from(allocator(), nbytes)


def is_pinned(t) -> bool:
    return t._storage.is_pinned()


def record_use(t, stream_ptr: int) -> None:
    """An asynchronous copy on `stream_ptr` reads or writes t's pinned block."""
    owner = t._storage.buf.base
    block = getattr(owner, "block", None)
    if block is not None:
        t._storage._allocator.caching.record_stream(block, stream_ptr)


@runtime.on_reset
def _drop() -> None:
    global _allocator
    _allocator = None
