"""Storages in shared memory: `tensor.share_memory_()` and `tensor.is_shared()`.

share_memory_() moves a CPU storage's bytes into a POSIX shared-memory segment (once; a
storage already shared stays where it is) and points the storage, and every tensor over it,
at the mapping. When such a tensor is put on a multiprocessing queue or passed to a process,
only the segment's name travels: the receiver maps the same memory, so writes on either
side are seen by the other, and the received tensor is shared too.

The process that shared the storage owns the segment's name: it is unlinked when that
storage is collected (or at exit), after which processes that mapped it keep their mapping.
As in PyTorch, keep the sender's tensor alive until the receivers have it.
"""
from __future__ import annotations

import itertools
import mmap
import os
import weakref

import numpy as np

from ..core.storage import UntypedStorage
from ..core.tensor import Tensor

try:
    import _posixshmem
except ImportError:         # no POSIX shared memory (Windows)
    _posixshmem = None

__all__ = ["share_storage", "segment_of", "rebuild_shared"]

_counter = itertools.count()
_segments: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # storage -> name


def segment_of(storage: UntypedStorage) -> str | None:
    """The shared-memory segment holding `storage`'s bytes, or None."""
    return _segments.get(storage)


def _map(name: str, nbytes: int, create: bool) -> np.ndarray:
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = _posixshmem.shm_open(name, flags, mode=0o600)
    try:
        if create:
            os.ftruncate(fd, max(nbytes, 1))
        mapping = mmap.mmap(fd, max(nbytes, 1))
    finally:
        os.close(fd)
    return np.frombuffer(mapping, np.uint8)[:nbytes]


def _unlink(name: str) -> None:
    try:
        _posixshmem.shm_unlink(name)
    except FileNotFoundError:
        pass


def share_storage(storage: UntypedStorage) -> UntypedStorage:
    """Move `storage`'s bytes into a new shared-memory segment (nothing to do if shared)."""
    if storage in _segments or storage.device.type == "cuda":
        return storage            # a GPU's memory reaches other processes another way
    if storage.device.type != "cpu":
        raise RuntimeError("share_memory_: only available on CPU (and CUDA) storages, not "
                           f"{storage.device.type}")
    if _posixshmem is None:
        raise RuntimeError("share_memory_: this platform has no POSIX shared memory")
    name = f"/glasstorch_{os.getpid()}_{next(_counter)}"
    buf = _map(name, storage.nbytes(), create=True)
    buf[:] = storage.buf
    if storage._allocator is not None:
        storage._allocator.free(storage._nbytes, storage.buf)
    storage.buf, storage._allocator, storage.resizable = buf, None, False
    storage._forget_tensor_arrays()
    _segments[storage] = name
    weakref.finalize(storage, _unlink, name)
    return storage


def rebuild_shared(name, nbytes, offset, dtype, shape, stride, requires_grad) -> Tensor:
    """The receiving side: a tensor over the sender's segment (shared as well)."""
    storage = UntypedStorage._wrap(_map(name, nbytes, create=False))
    _segments[storage] = name
    t = Tensor._make(storage, offset, shape, stride, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _share_memory_(self: Tensor) -> Tensor:
    """Move the tensor's storage into shared memory (nothing to do if it is there already,
    or on a GPU, as in PyTorch)."""
    share_storage(self._storage)
    return self


def _is_shared(self: Tensor) -> bool:
    return self.device.type == "cuda" or self._storage in _segments


def _storage_share_memory_(self: UntypedStorage) -> UntypedStorage:
    return share_storage(self)


def _storage_is_shared(self: UntypedStorage) -> bool:
    return self.device.type == "cuda" or self in _segments


Tensor.share_memory_ = _share_memory_
Tensor.is_shared = _is_shared
UntypedStorage.share_memory_ = _storage_share_memory_
UntypedStorage.is_shared = _storage_is_shared
