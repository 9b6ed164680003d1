"""explain(t): what a tensor is made of, its storage, which part of it the tensor shows,
who else shares it, and how many bytes it keeps alive.

A tensor is a window on a storage: element (i, j, ...) lives at storage element
offset + i*stride[0] + j*stride[1] + ...  explain() draws that map, so a transpose, a
slice with a step or an expanded tensor (stride 0) can be read off directly.
"""
from __future__ import annotations

import gc

import numpy as np

from ..core.tensor import Tensor
from ..memory.errors import format_size
from ..memory.retention import _covered, _span, _user_tensors

_DRAW_LIMIT = 64      # storages and tensors up to this many elements are drawn in full


class Explanation:
    """The facts explain() found (attributes) and their report (str())."""

    def __init__(self, t: Tensor):
        storage = t._storage
        item = t.dtype.itemsize
        self.shape, self.stride, self.offset = tuple(t._shape), tuple(t._stride), t._offset
        self.dtype, self.device = t.dtype, t.device
        self.storage_bytes = storage.nbytes()
        self.storage_elements = self.storage_bytes // item
        self.data_ptr = storage.data_ptr()
        self.has_data = storage.device.type != "meta"     # meta storages have sizes only
        self.is_contiguous = t.is_contiguous()
        self.index_map = _index_map(t)            # storage element of each tensor element
        span = _span(t)
        self.covered = sorted(set(self.index_map.ravel().tolist()))
        self.shown_bytes = t.numel() * item       # what the tensor shows (counting repeats)
        self.viewed_bytes = 0 if span is None else len(self.covered) * item
        self.sharing = _sharing(t)
        shared_spans = [s for s in map(_span, [t] + self.sharing) if s is not None]
        self.sharers_viewed_bytes = _covered(shared_spans)

    @property
    def kept_alive_bytes(self) -> int:
        """Bytes held alive by this tensor: its whole storage, whatever part it shows."""
        return self.storage_bytes if self.has_data else 0

    def __str__(self):
        lines = [f"tensor: shape {self.shape}, stride {self.stride}, storage offset "
                 f"{self.offset}, {self.dtype}, {self.device}, "
                 + ("contiguous" if self.is_contiguous else "not contiguous"),
                 f"storage: {self.storage_elements} elements, {format_size(self.storage_bytes)}"
                 f", {self.device}, " + (f"data_ptr {self.data_ptr:#x}" if self.has_data
                                         else "no data (meta: sizes only)")]
        n = self.index_map.size
        lines.append(f"covers {len(self.covered)} of {self.storage_elements} storage elements"
                     + (f" ({n} tensor elements: some share one storage element)"
                        if n > len(self.covered) else ""))
        if 0 < n <= _DRAW_LIMIT:
            body = np.array2string(self.index_map, separator=", ")
            lines.append("storage element of each tensor element:")
            lines += ["  " + row for row in body.splitlines()]
        if 0 < self.storage_elements <= _DRAW_LIMIT:
            width = len(str(self.storage_elements - 1))
            covered = set(self.covered)
            lines.append("storage: " + " ".join(f"{i:>{width}}"
                                                for i in range(self.storage_elements)))
            lines.append("shown:   " + " ".join(f"{'#' if i in covered else '.':>{width}}"
                                                for i in range(self.storage_elements)))
        if self.sharing:
            lines.append(f"shares its storage with {len(self.sharing)} other live tensor(s):")
            for o in self.sharing:
                lines.append(f"  shape {tuple(o._shape)}, stride {tuple(o._stride)}, "
                             f"offset {o._offset}")
        else:
            lines.append("no other live tensor shares its storage")
        lines.append(f"bytes: shows {format_size(self.shown_bytes)}, keeps alive "
                     f"{format_size(self.kept_alive_bytes)}")
        if self.viewed_bytes < self.storage_bytes and \
                self.sharers_viewed_bytes < self.storage_bytes:
            lines.append(f"  {format_size(self.storage_bytes - self.viewed_bytes)} of the "
                         "storage is not shown; .clone() keeps only what is shown")
        return "\n".join(lines)

    __repr__ = __str__


def _index_map(t: Tensor) -> np.ndarray:
    """An int64 array of t's shape: the storage element each of t's elements lives at."""
    index = np.full(t._shape, t._offset, dtype=np.int64)
    for dim, (size, stride) in enumerate(zip(t._shape, t._stride)):
        shape = [1] * len(t._shape)
        shape[dim] = size
        index = index + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return index


def _sharing(t: Tensor) -> list:
    """The other live tensors the user can reach that view t's storage: found through the
    garbage collector's referrers only now, so nothing tracks storages when explain() is
    not called."""
    storage = t._storage
    candidates = [o for o in gc.get_referrers(storage)
                  if issubclass(type(o), Tensor) and o is not t and o._storage is storage]
    # t's own references to its base count as a view's: a base only t holds is not listed.
    # (_user_tensors counts references: `candidates` must be the only list holding them.)
    candidates.append(t)
    return [o for o in _user_tensors(candidates) if o is not t]


def explain(t: Tensor) -> Explanation:
    """Explain how `t` lies on its storage.

        >>> print(glasstorch.debug.explain(glasstorch.arange(6.).view(2, 3).t()))
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"explain(): expected a Tensor, got {type(t).__name__}")
    return Explanation(t)
