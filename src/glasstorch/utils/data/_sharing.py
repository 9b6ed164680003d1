"""Passing tensors between DataLoader processes: large ones through POSIX shared memory.

Registered with multiprocessing's ForkingPickler (which every multiprocessing queue, pipe
and process start uses), so only inter-process pickling changes; `pickle` and
`glasstorch.save` are untouched. A tensor travels as its metadata plus the bytes its
elements span in the storage (a row of a big dataset tensor does not drag the whole storage).

Inside a DataLoader worker, default_collate stacks large batches straight into a fresh
shared-memory segment named `<prefix><worker>_<n>` (`empty_shared`), and other spans of at
least `SHM_MIN_BYTES` are copied once into one; only the segment's name is sent. The
receiver maps the segment, unlinks the name at once and wraps the mapping as the tensor's
storage, so the memory lives exactly as long as the tensor. Smaller spans (and everything
sent from the main process, such as a dataset for 'spawn' workers) are pickled by value:
measured through a 2-worker loader, the pipe wins below ~64 KiB (the segment's system
calls and page faults cost more than the copy) and shared memory wins from ~256 KiB (2.5x
at 512 KiB, about 3-5x at 4-8 MiB).

No segment can outlive the loader: each has the resource tracker as a last resort (if the
main process is killed), and when an iterator shuts its workers down it unlinks every
segment left under its prefix (results never received, or a pickling that failed).
"""
from __future__ import annotations

import itertools
import mmap
import os
import weakref
from math import prod
from multiprocessing import resource_tracker
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ...core.shape import contiguous_strides
from ...core.storage import UntypedStorage, meta_storage
from ...core.tensor import Tensor
from ...multiprocessing.shared_storage import rebuild_shared, segment_of

try:
    import _posixshmem
except ImportError:         # no POSIX shared memory (Windows): everything goes by value
    _posixshmem = None

SHM_MIN_BYTES = 1 << 16
_SHM_DIR = "/dev/shm"

_prefix: str | None = None      # set in a DataLoader worker: name prefix of its segments
_counter = itertools.count()
created: list[str] = []         # segments sent since the worker last cleared this list
_segment_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # storage -> name
_unsent: set[str] = set()       # segments of live `empty_shared` storages not sent yet


def use_shared_memory(prefix: str | None) -> None:
    """Send large tensors from this process through segments named `prefix...`."""
    global _prefix
    _prefix = prefix if _posixshmem is not None else None


def shared_memory_enabled(nbytes: int) -> bool:
    """Whether a tensor of `nbytes` made here would travel through shared memory."""
    return _prefix is not None and nbytes >= SHM_MIN_BYTES


def _new_segment() -> tuple[str, int]:
    name = f"/{_prefix}{next(_counter)}"
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    resource_tracker.register(name, "shared_memory")
    return name, fd


def empty_shared(shape: tuple, dtype) -> Tensor:
    """A contiguous tensor allocated straight in a new segment, so that sending it copies
    nothing (default_collate stacks into one in a worker). If it dies unsent, so does its
    segment."""
    nbytes = prod(shape) * dtype.itemsize
    name, fd = _new_segment()
    try:
        os.ftruncate(fd, nbytes)
        mapping = mmap.mmap(fd, nbytes)
    except BaseException:
        _unlink(name)
        raise
    finally:
        os.close(fd)
    storage = UntypedStorage._wrap(np.frombuffer(mapping, np.uint8))
    _segment_of[storage] = name
    _unsent.add(name)
    weakref.finalize(storage, _drop_unsent, name)
    return Tensor._make(storage, 0, tuple(shape), contiguous_strides(shape), dtype)


def _drop_unsent(name: str) -> None:
    if name in _unsent:
        _unsent.discard(name)
        _unlink(name)


def _to_segment(data: np.ndarray) -> str:
    """Write `data` into a new segment; returns its name (with the leading slash)."""
    name, fd = _new_segment()
    try:
        created.append(name)
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.pwrite(fd, view[done:], done)
    finally:
        os.close(fd)
    return name


def _unlink(name: str) -> None:
    try:
        _posixshmem.shm_unlink(name)
    except FileNotFoundError:
        return
    resource_tracker.unregister(name, "shared_memory")


def unlink_segments(prefix: str) -> None:
    """Unlink every segment whose name starts with `prefix` (after its workers are gone)."""
    if _posixshmem is None or not os.path.isdir(_SHM_DIR):
        return
    for entry in os.listdir(_SHM_DIR):
        if entry.startswith(prefix):
            _unlink("/" + entry)


def discard_created() -> None:
    """Unlink the segments made for a message that could not be sent."""
    while created:
        _unlink(created.pop())


def _wrap(buf, dtype, shape, stride, requires_grad, offset=0) -> Tensor:
    t = Tensor._make(UntypedStorage._wrap(buf), offset, shape, stride, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_from_array(data, dtype, shape, stride, requires_grad) -> Tensor:
    return _wrap(data, dtype, shape, stride, requires_grad)


def _rebuild_from_segment(name, nbytes, offset, dtype, shape, stride, requires_grad):
    fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
    try:
        mapping = mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)
        _unlink(name)
    return _wrap(np.frombuffer(mapping, np.uint8), dtype, shape, stride, requires_grad, offset)


def _rebuild_meta(nbytes, dtype, shape, stride, requires_grad) -> Tensor:
    t = Tensor._make(meta_storage(nbytes), 0, shape, stride, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t: Tensor):
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., putting "
            "it on the queue).")
    shape, stride = t._shape, t._stride
    span = 0 if 0 in shape else sum((s - 1) * st for s, st in zip(shape, stride)) + 1
    nbytes = span * t.dtype.itemsize
    meta = (t.dtype, shape, stride, t.requires_grad)
    device = t.device.type
    if device == "meta":
        return _rebuild_meta, (nbytes,) + meta
    if device != "cpu":
        raise RuntimeError(f"glasstorch cannot send a {device} tensor to another process; "
                           "move it to the CPU first (tensor.cpu())")
    storage = t._storage
    shared = segment_of(storage)
    if shared is not None:          # share_memory_(): the receiver maps the same memory
        return rebuild_shared, (shared, storage.nbytes(), t._offset) + meta
    name = _segment_of.get(storage)
    if name in _unsent:             # already in a segment: send its name, copy nothing
        _unsent.discard(name)
        created.append(name)
        return _rebuild_from_segment, (name, storage.nbytes(), t._offset) + meta
    start = t._offset * t.dtype.itemsize
    data = storage.buf[start:start + nbytes]
    if shared_memory_enabled(nbytes):
        return _rebuild_from_segment, (_to_segment(data), nbytes, 0) + meta
    return _rebuild_from_array, (data,) + meta


ForkingPickler.register(Tensor, _reduce_tensor)
