"""The sparse layouts' representation: a `Tensor` object with no storage of its own whose
`_sparse` field holds its index and value tensors (PyTorch's SparseTensorImpl and
SparseCsrTensorImpl).

A sparse tensor is a plain `Tensor` (`type(s) is Tensor`), so everything that asks for
shape, dtype, device or requires_grad works unchanged; its key set carries a sparse backend
key (SparseCPU for COO, SparseCsrCPU for the compressed layouts) in place of CPU, so that an
operator runs its sparse kernel, or raises NotImplementedError where it has none.
"""
from __future__ import annotations

import numpy as np

from ..core import dtype as dt
from ..core.shape import contiguous_strides
from ..core.storage import UntypedStorage
from ..core.tensor import Tensor, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from ..dispatch.keys import BACKEND_MASK, TENSOR_KEYSETS, DispatchKey

COMPRESSED = (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)
ROW_COMPRESSED = (sparse_csr, sparse_bsr)
BLOCKED = (sparse_bsr, sparse_bsc)
_KEY = {("cpu", False): DispatchKey.SparseCPU, ("cuda", False): DispatchKey.SparseCUDA,
        ("cpu", True): DispatchKey.SparseCsrCPU, ("cuda", True): DispatchKey.SparseCsrCUDA}
# The names PyTorch gives each compressed layout's two index tensors.
INDEX_NAMES = {sparse_csr: ("crow_indices", "col_indices"),
               sparse_bsr: ("crow_indices", "col_indices"),
               sparse_csc: ("ccol_indices", "row_indices"),
               sparse_bsc: ("ccol_indices", "row_indices")}


class SparseData:
    """What a sparse tensor holds. COO: `indices` (sparse_dim, nnz) int64 and `values`
    (nnz, *dense_shape). Compressed layouts: `compressed` and `plain` index tensors and
    `values` (nnz, *block_shape, *dense_shape). The index and value tensors never require
    grad: a sparse tensor's history is its own grad_fn."""

    __slots__ = ("layout", "indices", "values", "coalesced", "compressed", "plain")

    def __init__(self, layout, values, indices=None, coalesced=False, compressed=None,
                 plain=None):
        self.layout, self.values, self.indices = layout, values, indices
        self.coalesced, self.compressed, self.plain = coalesced, compressed, plain

    @property
    def sparse_dim(self) -> int:
        return self.indices._shape[0] if self.layout is sparse_coo else 2

    @property
    def dense_dim(self) -> int:
        extra = 3 if self.layout in BLOCKED else 1
        return self.values.dim() - extra

    @property
    def nnz(self) -> int:
        if self.layout is sparse_coo:
            return self.indices._shape[1]
        return self.plain._shape[0]


def _shell(shape: tuple, dtype, device, layout) -> Tensor:
    storage = object.__new__(UntypedStorage)
    storage.device, storage.buf, storage._allocator, storage.resizable = device, None, None, False
    storage._nbytes = 0
    t = Tensor._make(storage, 0, shape, contiguous_strides(shape), dtype)
    key = _KEY[(device.type, layout is not sparse_coo)]
    t._keyset = TENSOR_KEYSETS[device.type] & ~BACKEND_MASK | 1 << key
    return t


def _plain(t: Tensor) -> Tensor:
    """An index or value tensor as stored: no history, no grad."""
    return t.detach() if t._requires_grad else t


def make_coo(indices: Tensor, values: Tensor, shape, coalesced: bool = False) -> Tensor:
    """A COO tensor over these index and value tensors (no checks)."""
    t = _shell(tuple(int(s) for s in shape), values.dtype, values.device, sparse_coo)
    t._sparse = SparseData(sparse_coo, _plain(values), _plain(indices), bool(coalesced))
    return t


def make_compressed(layout, compressed: Tensor, plain: Tensor, values: Tensor, shape) -> Tensor:
    """A CSR/CSC/BSR/BSC tensor over these tensors (no checks)."""
    t = _shell(tuple(int(s) for s in shape), values.dtype, values.device, layout)
    t._sparse = SparseData(layout, _plain(values), compressed=_plain(compressed),
                           plain=_plain(plain))
    return t


def with_values(s: Tensor, values: Tensor) -> Tensor:
    """`s`'s pattern with other values (of any dtype): the result of a pointwise op."""
    d = s._sparse
    if d.layout is sparse_coo:
        return make_coo(d.indices, values, s._shape, d.coalesced)
    return make_compressed(d.layout, d.compressed, d.plain, values, s._shape)


def np_of(t: Tensor) -> np.ndarray:
    """A NumPy array of a dense tensor's values (CuPy tensors come to the host)."""
    return t.detach().cpu()._array() if t.device.type != "cpu" else t._array()


def tensor_of(array: np.ndarray, like_device=None, dtype=None) -> Tensor:
    """A fresh dense tensor holding `array`."""
    from ..ops.creation.factories import from_numpy
    array = np.ascontiguousarray(array)
    if dtype is not None and dtype.np != array.dtype:
        array = array.astype(dtype.np)
    t = from_numpy(array.copy() if not array.flags.owndata else array)
    if dtype is not None and t.dtype is not dtype:   # bfloat16 and others NumPy spells apart
        t = t.to(dtype)
    if like_device is not None and like_device.type != "cpu":
        t = t.to(like_device)
    return t


def index_tensor(array: np.ndarray, device=None, dtype=dt.int64) -> Tensor:
    return tensor_of(np.asarray(array, dtype=dtype.np), device)


def reduce_sparse(t: Tensor):
    """Pickling a sparse tensor as PyTorch does: torch._utils._rebuild_sparse_tensor with
    (layout, data), so that checkpoints travel both ways."""
    d = t._sparse
    if d.layout is sparse_coo:
        data = (d.indices, d.values, tuple(t._shape), d.coalesced)
    else:
        data = (d.compressed, d.plain, d.values, tuple(t._shape))
    return rebuild_sparse_tensor, (d.layout, data)


def rebuild_sparse_tensor(layout, data) -> Tensor:
    """The inverse of `reduce_sparse` (PyTorch's torch._utils._rebuild_sparse_tensor)."""
    if layout is sparse_coo:
        indices, values, size = data[:3]
        return make_coo(indices, values, size, data[3] if len(data) > 3 else False)
    compressed, plain, values, size = data
    return make_compressed(layout, compressed, plain, values, size)
