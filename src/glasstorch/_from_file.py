"""torch.from_file: a CPU tensor over a memory-mapped file.

With shared=True writes go through to the file (which is created, zero-filled, if it is
missing); otherwise the tensor is a private copy-on-write mapping and the file never
changes, as in PyTorch.
"""
from __future__ import annotations

import os

import numpy as np

from .core import dtype as dt
from .core.tensor import Tensor

__all__ = ["from_file"]


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False) -> Tensor:
    """The first `size` elements of `dtype` stored in `filename`, as a 1-D CPU tensor."""
    from .ops.creation.factories import from_numpy
    if device is not None and str(device) != "cpu":
        raise RuntimeError("from_file: only CPU tensors can be mapped to files")
    if pin_memory:
        raise RuntimeError("from_file: tensors backed by a memory-mapped file cannot be "
                           "created in pinned memory")
    dtype = dt.get_default_dtype() if dtype is None else dtype
    size = int(size)
    nbytes = size * dtype.itemsize
    filename = os.fspath(filename)
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
            with open(filename, "ab") as f:
                f.truncate(max(nbytes, f.seek(0, os.SEEK_END)))
    elif not os.path.exists(filename):
        raise RuntimeError(f"unable to open file <{filename}> in read-only mode: No such "
                           "file or directory (2)")
    elif os.path.getsize(filename) < nbytes:
        raise RuntimeError(f"file <{filename}> size <{os.path.getsize(filename)}> is smaller "
                           f"than the required mapping size <{nbytes}>")
    if size == 0:
        return from_numpy(np.empty(0, dtype=dtype.np))
    mapped = np.memmap(filename, dtype=dtype.np, mode="r+" if shared else "c", shape=(size,))
    return from_numpy(mapped)
