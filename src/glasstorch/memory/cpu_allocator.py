"""The CPU allocator: 64-byte aligned host memory, counted exactly (c10's CPUAllocator).

Every CPU storage's bytes come from here, so `memory_allocated('cpu')` is exact. Like
PyTorch's, it keeps no cache of segments to split or count as reserved: a freed block goes
back to NumPy's allocator (small ones by way of the recycling below), and `empty` memory is
not zeroed.

A memory limit (`glasstorch.memory.set_memory_limit`, `glasstorch.cpu.
set_per_process_memory_fraction`) makes an allocation past it raise OutOfMemoryError, as a
GPU would, so out-of-memory handling can be tried on any machine. The check is installed as
the instance's `allocate` only while a limit is set: the unlimited path pays nothing for it.

Small freed blocks that nothing references any more are recycled: the next allocation of the
same size takes one back instead of making a new buffer (NumPy keeps a like cache of its small
blocks). Counting is unchanged (a recycled block is neither allocated nor reserved); what it
saves is the three NumPy objects and the address read a fresh aligned buffer costs, on every
op's output. The recycled bytes are bounded (`RECYCLE_MAX_BYTES`) and `empty_recycled` frees
them.

Large freed blocks are kept too, for the same reason glibc is told to keep freed heap
(`host_malloc`): glibc serves a block above its mmap threshold (32 MiB at most) with a fresh
mapping and unmaps it on free, so an op that makes a 40 MB output every call has the kernel
zero 40 MB of new pages every call: relu(a*b+c) over 10M floats spent half its time so (NumPy
alone, one thread: 47 ms with fresh outputs, 24 ms writing into old ones). Up to
`RECYCLE_LARGE_MAX_BYTES` of such blocks wait for an allocation of their size, the oldest
going first; an allocation that finds no memory lets them all go and tries again.
"""
from __future__ import annotations

import ctypes
import os
import threading
from sys import getrefcount

import numpy as np

from .errors import OutOfMemoryError, format_size
from .host_malloc import MMAP_THRESHOLD, keep_freed_memory
from .stats import MemoryStats

ALIGNMENT = 64  # bytes, c10's gAlignment
RECYCLE_MAX_BLOCK = 256 << 10   # freed blocks up to this size are kept for reuse,
RECYCLE_MAX_BYTES = 16 << 20    # about this many bytes of them in all
# Freed blocks larger than glibc's mmap threshold (which glibc would unmap) are kept, up to
# this many bytes of them (glibc keeps as much free heap: host_malloc.TRIM_THRESHOLD), unless
# GLASSTORCH_KEEP_FREED_MEMORY=0 asks for freed memory to go back to the system.
# The bound sits a little under the threshold: the request is nbytes + ALIGNMENT and malloc
# adds its header, so a tensor of exactly 32 MiB (8192x1024 float32) is mapped afresh too
# (compiled layer_norm over one took 3 ms a call, or 250 when the VM was slow to hand out
# pages, for its 528 page faults).
RECYCLE_LARGE_FROM = MMAP_THRESHOLD - 2 * ALIGNMENT
RECYCLE_LARGE_MAX_BYTES = (256 << 20) if os.environ.get(
    "GLASSTORCH_KEEP_FREED_MEMORY", "1") != "0" else 0
addressof = ctypes.addressof
_byte = ctypes.c_char
_word = ctypes.c_size_t.from_address


def _data_pointer_offset():
    """Where an ndarray object keeps its data pointer, or 0 where that cannot be relied on.

    The public PyArrayObject layout puts the pointer right after the object header, so
    reading that word by the array's id gives its address for about half of what exporting
    its buffer to ctypes costs (`from_buffer`, the portable way, used wherever a probe
    array's two answers differ)."""
    offset = object.__basicsize__          # the header: larger on free-threaded builds
    probe = np.empty(2 * ALIGNMENT, np.uint8)[1:]
    return offset if _word(id(probe) + offset).value == addressof(_byte.from_buffer(probe)) \
        else 0


_DATA_AT = _data_pointer_offset()


def data_pointer(array: np.ndarray) -> int:
    """The address of a non-empty contiguous ndarray's first byte (a storage's buffer)."""
    if _DATA_AT:
        return _word(id(array) + _DATA_AT).value
    return addressof(_byte.from_buffer(array))


class CPUAllocator:
    """Hands out aligned uint8 buffers and keeps statistics of what is live.

    `observer`, when set, is called as observer(event, nbytes, address) with event "alloc"
    or "free" (memory history recording); None costs the hot path one attribute check.
    """

    observer = None
    limit = None        # bytes that may be allocated at once, or None

    def __init__(self):
        self.stats = MemoryStats()
        self._recycled: dict = {}     # nbytes -> [freed buffers nothing else references]
        self._recycled_bytes = 0
        self._large: list = []        # freed large buffers, oldest first
        self._large_bytes = 0
        self._large_lock = threading.Lock()

    def allocate(self, nbytes: int, _empty=np.empty, _u8=np.uint8) -> np.ndarray:
        """A fresh, uninitialised, 64-byte aligned uint8 buffer of exactly `nbytes`."""
        free_list = self._recycled.get(nbytes)
        buf = None
        if free_list:                   # a recycled block: no new buffer to make
            try:
                buf = free_list.pop()
                self._recycled_bytes -= nbytes
            except IndexError:          # another thread took the last one
                pass
        elif nbytes > RECYCLE_LARGE_FROM and self._large:
            buf = self._take_large(nbytes)
        if buf is None:
            try:
                raw = _empty(nbytes + ALIGNMENT, _u8)
            except (MemoryError, ValueError):
                raw = self._allocate_after_emptying(nbytes)
            # data_pointer(raw), inlined: every CPU storage is allocated here
            base = _word(id(raw) + _DATA_AT).value if _DATA_AT else \
                addressof(_byte.from_buffer(raw))
            start = -base & (ALIGNMENT - 1)
            buf = raw[start:start + nbytes]
        stats = self.stats
        stats.allocated_bytes += nbytes
        stats.total_allocated_bytes += nbytes
        stats.allocation_count += 1
        if stats.allocated_bytes > stats.peak_allocated_bytes:
            stats.peak_allocated_bytes = stats.allocated_bytes
        if self.observer is not None:
            self.observer("alloc", nbytes, data_pointer(buf))
        return buf

    def _allocate_after_emptying(self, nbytes: int) -> np.ndarray:
        """The raw buffer for `nbytes` once the recycled blocks are gone, or the
        out-of-memory error when there is still no room."""
        if self._large or self._recycled:
            self.empty_recycled()
            try:
                return np.empty(nbytes + ALIGNMENT, np.uint8)
            except (MemoryError, ValueError):
                pass
        self.stats.num_ooms += 1
        raise OutOfMemoryError(
            f"DefaultCPUAllocator: not enough memory: you tried to allocate {nbytes} "
            f"bytes ({format_size(nbytes)}).") from None

    def _take_large(self, nbytes: int):
        """A kept large block of exactly `nbytes`, or None."""
        with self._large_lock:
            for i, buf in enumerate(self._large):
                if buf.nbytes == nbytes:
                    del self._large[i]
                    self._large_bytes -= nbytes
                    return buf
        return None

    def _keep_large(self, buf) -> None:
        """Keep a freed large block, letting the oldest go past RECYCLE_LARGE_MAX_BYTES."""
        with self._large_lock:
            self._large.append(buf)
            self._large_bytes += buf.nbytes
            while self._large_bytes > RECYCLE_LARGE_MAX_BYTES:
                self._large_bytes -= self._large.pop(0).nbytes

    def _allocate_within_limit(self, nbytes: int) -> np.ndarray:
        """allocate(), refusing what would take the live bytes past `limit`."""
        allocated = self.stats.allocated_bytes
        if allocated + nbytes > self.limit:
            self.stats.num_ooms += 1
            raise OutOfMemoryError(
                f"CPU out of memory. Tried to allocate {format_size(nbytes)}. The CPU memory "
                f"limit is {format_size(self.limit)}, of which "
                f"{format_size(max(self.limit - allocated, 0))} is free; "
                f"{format_size(allocated)} is allocated by glasstorch. "
                "(glasstorch.memory.set_memory_limit(None) removes the limit.)")
        return CPUAllocator.allocate(self, nbytes)

    def set_limit(self, nbytes) -> None:
        """Cap the live bytes at `nbytes` (None: no cap)."""
        if nbytes is None:
            self.__dict__.pop("allocate", None)
            self.__dict__.pop("limit", None)
            return
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
            raise ValueError(f"memory limit must be a non-negative int or None, got {nbytes!r}")
        self.limit = nbytes
        self.allocate = self._allocate_within_limit

    def free(self, nbytes: int, buf=None) -> None:
        """Account for `nbytes` going back; `buf` (the allocated buffer) names the address."""
        stats = self.stats
        # The count of live buffers peaks just before some free: checking here keeps the
        # allocation path free of it.
        live = stats.allocation_count - stats.free_count
        if live > stats.peak_count:
            stats.peak_count = live
        stats.allocated_bytes -= nbytes
        stats.free_count += 1
        if self.observer is not None and nbytes and buf is not None:
            self.observer("free", nbytes, data_pointer(buf))
        # Recycle a small block only when nothing but its storage held it: its slot, this
        # call's argument and getrefcount's; and its raw buffer only by the block (every
        # NumPy view of the memory, however made, references the raw buffer it came from).
        if nbytes <= RECYCLE_MAX_BLOCK and getrefcount(buf) <= 3 and \
                getrefcount(buf.base) <= 2 and self._recycled_bytes < RECYCLE_MAX_BYTES:
            free_list = self._recycled.get(nbytes)
            if free_list is None:
                free_list = self._recycled[nbytes] = []
            free_list.append(buf)
            self._recycled_bytes += nbytes
        elif nbytes > RECYCLE_LARGE_FROM and nbytes <= RECYCLE_LARGE_MAX_BYTES and \
                getrefcount(buf) <= 3 and getrefcount(buf.base) <= 2:
            self._keep_large(buf)

    def empty_recycled(self) -> None:
        """Let the recycled blocks go back to NumPy's (and malloc's) allocator."""
        self._recycled.clear()
        self._recycled_bytes = 0
        with self._large_lock:
            self._large.clear()
            self._large_bytes = 0


cpu_allocator = CPUAllocator()
keep_freed_memory()       # freed host memory stays in the process for the next allocation
