"""UntypedStorage: bytes on one device, from that device's allocator (c10's StorageImpl).

A storage knows nothing of dtypes or shapes; tensors are views over it. Its bytes go back to
the allocator when the last reference to the storage goes.
"""
from __future__ import annotations

import numpy as np

from ..memory.cpu_allocator import cpu_allocator, data_pointer
from .device import CPU, META, device as Device, device_backend




class UntypedStorage:
    """A flat run of bytes. `buf` is a uint8 array: NumPy's for CPU storages, CuPy's on a
    GPU, None on 'meta'."""

    __slots__ = ("buf", "_nbytes", "device", "_allocator", "resizable", "__weakref__")

    def __init__(self, nbytes: int = 0, *, device=None):
        dev = CPU if device is None else Device(device)
        nbytes = int(nbytes)
        if nbytes < 0:
            self._allocator = None                    # nothing held: __del__ frees nothing
            raise RuntimeError(f"Trying to create a storage of negative size: {nbytes} bytes")
        self._init(nbytes, dev)

    def _init(self, nbytes, dev):
        self.device = dev
        self._nbytes = nbytes
        self.resizable = True
        self._allocator = None      # set once memory is held, so __del__ never frees twice
        if dev.type == "cpu":
            self.buf = cpu_allocator.allocate(nbytes)   # first: if it raises, __del__ frees nothing
            self._allocator = cpu_allocator
        elif dev.type == "meta":
            self.buf = None
        else:
            backend = device_backend(dev.type)
            self.device = dev = backend.resolve(dev)
            allocator = backend.allocator(dev.index)
            self.buf = allocator.allocate(nbytes)
            self._allocator = allocator

    @classmethod
    def _new(cls, nbytes: int, dev) -> "UntypedStorage":
        if dev.type == "cpu":
            return cls._new_cpu(nbytes, dev)
        self = object.__new__(cls)
        self._init(nbytes, dev)
        return self

    @classmethod
    def _new_cpu(cls, nbytes: int, dev=CPU) -> "UntypedStorage":
        """The hot path: every CPU op's output storage is made here."""
        allocator = cpu_allocator    # module global: memory.set_cpu_allocator replaces it
        buf = allocator.allocate(nbytes)     # first: if it raises, there is no storage to free
        self = object.__new__(cls)
        self.device = dev
        self._nbytes = nbytes
        self.resizable = True
        self.buf = buf
        self._allocator = allocator
        return self

    @classmethod
    def _new_from(cls, allocator, nbytes: int, dev=CPU) -> "UntypedStorage":
        """A storage from a given allocator (pinned host memory, say)."""
        buf = allocator.allocate(nbytes)
        self = object.__new__(cls)
        self.device = dev
        self._nbytes = nbytes
        self.resizable = True
        self.buf = buf
        self._allocator = allocator
        return self

    @classmethod
    def _wrap(cls, buf, dev=CPU) -> "UntypedStorage":
        """A storage over memory someone else owns (from_numpy): not counted, not resizable."""
        self = object.__new__(cls)
        self.device = dev
        self.buf = buf
        self._nbytes = buf.nbytes
        self._allocator = None
        self.resizable = False
        return self

    def __del__(self):
        if self._allocator is not None:
            self._allocator.free(self._nbytes, self.buf)

    def nbytes(self) -> int:
        return self._nbytes

    def size(self) -> int:
        return self._nbytes

    def __len__(self) -> int:
        return self._nbytes

    def data_ptr(self) -> int:
        """The address of the first byte (0 for an empty or meta storage)."""
        buf = self.buf
        if buf is None or self._nbytes == 0:
            return 0
        return data_pointer(buf) if buf.__class__ is np.ndarray else buf.data.ptr

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def is_shared(self):
        return False

    def is_pinned(self, device="cuda") -> bool:
        """Whether the bytes are page-locked host memory (for asynchronous GPU copies)."""
        return getattr(self._allocator, "pinned", False)

    def element_size(self):
        return 1

    def resize_(self, nbytes: int) -> "UntypedStorage":
        """Grow or shrink in place, keeping the common prefix of the bytes."""
        nbytes = int(nbytes)
        if not self.resizable:
            raise RuntimeError("Trying to resize storage that is not resizable")
        if nbytes < 0:
            raise RuntimeError(f"Trying to resize storage to negative size: {nbytes}")
        if self.device.type == "meta":
            self._nbytes = nbytes
            return self
        new = self._allocator.allocate(nbytes)
        keep = min(nbytes, self._nbytes)
        new[:keep] = self.buf[:keep]
        self._allocator.free(self._nbytes, self.buf)
        self.buf, self._nbytes = new, nbytes
        self._forget_tensor_arrays()
        return self

    def _forget_tensor_arrays(self) -> None:
        """The tensors over this storage cache an array over the old buffer: drop those
        caches, so they read and write the new one. Resizing a storage is rare, so the
        tensors are found by a scan of the heap rather than registered on every tensor."""
        import gc
        from .tensor import Tensor
        for ref in gc.get_referrers(self):
            if isinstance(ref, Tensor) and ref._storage is self:
                ref._np = None

    def _check_index(self, idx: int) -> int:
        if self.buf is None:
            raise NotImplementedError("Cannot access data of a storage on the 'meta' device")
        if idx < 0:
            idx += self._nbytes
        if not 0 <= idx < self._nbytes:
            raise IndexError(f"index {idx} out of range for storage of size {self._nbytes}")
        return idx

    def __getitem__(self, idx: int) -> int:
        return int(self.buf[self._check_index(int(idx))])   # a GPU byte comes home as int

    def __setitem__(self, idx: int, value: int) -> None:
        self.buf[self._check_index(int(idx))] = value

    def tolist(self) -> list:
        return [] if self.buf is None else self.buf.tolist()

    def __iter__(self):
        return iter(self.tolist())

    def copy_(self, src: "UntypedStorage") -> "UntypedStorage":
        if src.nbytes() != self._nbytes:
            raise RuntimeError(f"size mismatch, {self._nbytes} vs {src.nbytes()}")
        if self.buf is None or src.buf is None:
            return self
        if self.buf.__class__ is np.ndarray and src.buf.__class__ is np.ndarray:
            np.copyto(self.buf, src.buf)
        else:                   # a GPU on either side: bytes are copied as a uint8 tensor
            from .tensor import Tensor
            from . import dtype as dt
            n = (self._nbytes,)
            device_backend("cuda").copy_between(Tensor._make(self, 0, n, (1,), dt.uint8),
                         Tensor._make(src, 0, n, (1,), dt.uint8))
        return self

    def clone(self) -> "UntypedStorage":
        new = UntypedStorage._new(self._nbytes, self.device)
        return new.copy_(self)

    def __repr__(self):
        if self.buf is None:
            body = "..."
        else:
            body = "\n".join(f" {b}" for b in self.buf[:1000].tolist())   # NumPy or CuPy
        return (f"{body}\n[torch.storage.UntypedStorage(device={self.device}) of size "
                f"{self._nbytes}]")


def meta_storage(nbytes: int) -> UntypedStorage:
    return UntypedStorage._new(nbytes, META)
