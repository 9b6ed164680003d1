"""torch.sparse_coo_tensor and the compressed constructors, their invariant checks (PyTorch's
texts), torch.sparse.check_sparse_tensor_invariants, and the Tensor methods that read a
sparse tensor's parts."""
from __future__ import annotations

import numpy as np

from ..core import dtype as dt
from ..core.device import device as as_device
from ..core.tensor import Tensor, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from . import ops as S
from .tensor import (BLOCKED, COMPRESSED, INDEX_NAMES, ROW_COMPRESSED, make_compressed, make_coo,
                     np_of)


class check_sparse_tensor_invariants:
    """Turn invariant checks of the sparse constructors on, globally (`enable()`), for a
    block (`with check_sparse_tensor_invariants():`) or a function (as a decorator)."""

    _enabled = False

    @staticmethod
    def is_enabled() -> bool:
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable() -> None:
        check_sparse_tensor_invariants._enabled = False

    def __init__(self, enable=True):
        self.state = enable
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = self.is_enabled()
        check_sparse_tensor_invariants._enabled = self.state

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self.saved_state
        self.saved_state = None

    def __call__(self, mth):
        def test_mth(*args, **kwargs):
            with type(self)(self.state):
                return mth(*args, **kwargs)
        return test_mth


def _checking(check_invariants) -> bool:
    return check_sparse_tensor_invariants._enabled if check_invariants is None else bool(
        check_invariants)


def _as_tensor(x, dtype=None, device=None) -> Tensor:
    from ..ops.creation.factories import tensor as make_tensor
    if isinstance(x, Tensor):
        return x.to(dtype=dtype, device=device) if (dtype or device) else x
    return make_tensor(x, dtype=dtype, device=device)


def _check_coo(indices: np.ndarray, values_nnz: int, size) -> None:
    sparse_dim = indices.shape[0]
    if indices.shape[1] != values_nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: {values_nnz}")
    for d in range(sparse_dim):
        row = indices[d]
        if row.size and row.min() < 0:
            raise RuntimeError(f"found negative index {int(row.min())} for dim {d}")
        if row.size and row.max() >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {int(row.max())}")


def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None,
                      is_coalesced=None) -> Tensor:
    """A COO tensor with entries `values` at `indices` (sparse_dim x nnz); given only a size
    (`sparse_coo_tensor(size)` or `size=`), an empty one of that size."""
    device = None if device is None else as_device(device)
    if values is None:
        size = indices if size is None else size
        if size is None or indices is not None and size is not indices:
            raise TypeError("sparse_coo_tensor() takes indices and values, or a size")
        from ..ops.creation.factories import zeros
        size = tuple(int(n) for n in size)
        empty = make_coo(zeros(len(size), 0, dtype=dt.int64, device=device),
                         zeros(0, dtype=dtype, device=device), size, True)
        return empty.requires_grad_(True) if requires_grad else empty
    values = _as_tensor(values, dtype, device)
    indices = _as_tensor(indices, device=values.device)
    if indices.dtype is not dt.int64:
        indices = indices.to(dt.int64)
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices._shape)}")
    sparse_dim, dense_dim = indices._shape[0], values.dim() - 1
    if values.dim() == 0:
        raise RuntimeError("values must have at least one dimension (nnz x dense dims)")
    array = np_of(indices)
    if size is None:
        lead = [int(r.max()) + 1 if r.size else 0 for r in array]
        size = tuple(lead) + tuple(values._shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) "
                           f"= {len(size)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if _checking(check_invariants):
        _check_coo(array, values._shape[0], size)
    out = S.coo_with_tensors.functional(sparse_dim, dense_dim, size, indices, values,
                                      is_coalesced=bool(is_coalesced))
    if requires_grad:
        out.requires_grad_(True)
    return out


def _check_compressed(layout, compressed: np.ndarray, plain: np.ndarray, nnz: int, size,
                      blocksize) -> None:
    cname, pname = INDEX_NAMES[layout]
    row_major = layout in ROW_COMPRESSED
    n_major = size[0 if row_major else 1] // blocksize[0 if row_major else 1]
    n_minor = size[1 if row_major else 0] // blocksize[1 if row_major else 0]
    major_name, minor_name = ("nrows", "ncols") if row_major else ("ncols", "nrows")
    number = "rows" if row_major else "columns"
    if plain.shape[-1] != nnz:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by "
                           f"values.shape[0], but got {plain.shape[-1]}")
    if compressed.shape[-1] != n_major + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {number} + 1 "
                           f"(={n_major + 1}), but got {compressed.shape[-1]}")

    def fail(text):
        raise RuntimeError(f"`{text}` is not satisfied.")
    if compressed[0] != 0:
        fail(f"{cname}[..., 0] == 0")
    if compressed[-1] != nnz:
        fail(f"{cname}[..., -1] == nnz")
    steps = np.diff(compressed)
    if steps.size and (steps.min() < 0 or steps.max() > n_minor):
        fail(f"0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {minor_name}")
    if plain.size and (plain.min() < 0 or plain.max() >= n_minor):
        fail(f"0 <= {pname} < {minor_name}")
    for i in range(n_major):
        part = plain[compressed[i]:compressed[i + 1]]
        if part.size > 1 and (np.diff(part) <= 0).any():
            fail(f"{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = 1, ..., "
                 f"{major_name} are sorted and distinct along the last dimension values")


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory=False,
                             requires_grad=False, check_invariants=None) -> Tensor:
    """A CSR, CSC, BSR or BSC tensor (`layout`) from its compressed and plain indices."""
    if layout not in COMPRESSED:
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {S.LAYOUT_NAME.get(layout, layout)}")
    device = None if device is None else as_device(device)
    values = _as_tensor(values, dtype, device)
    compressed = _as_tensor(compressed_indices, device=values.device)
    plain = _as_tensor(plain_indices, device=values.device)
    cname, pname = INDEX_NAMES[layout]
    if compressed.dtype is not plain.dtype:
        raise RuntimeError(f"{cname} and {pname} must have the same dtype, bot got "
                           f"{compressed.dtype.cname} and {plain.dtype.cname}, respectively")
    if compressed.dtype not in (dt.int32, dt.int64):
        raise RuntimeError(f"{cname} and {pname} must be an int32 or int64 type, but got: "
                           f"{compressed.dtype.cname}")
    if compressed.dim() != 1 or plain.dim() != 1:
        raise RuntimeError("glasstorch supports compressed sparse tensors without batch "
                           "dimensions: the index tensors must be 1-D")
    blocked = layout in BLOCKED
    if blocked and values.dim() < 3:
        raise RuntimeError(f"{S.LAYOUT_NAME[layout]} values must be nnz x blocksize[0] x "
                           f"blocksize[1], but got {list(values._shape)}")
    blocksize = tuple(values._shape[1:3]) if blocked else (1, 1)
    dense_shape = tuple(values._shape[3:] if blocked else values._shape[1:])
    comp, pl = np_of(compressed), np_of(plain)
    if size is None:
        n_major = len(comp) - 1
        n_minor = int(pl.max()) + 1 if pl.size else 0
        if layout in ROW_COMPRESSED:
            size = (n_major * blocksize[0], n_minor * blocksize[1])
        else:
            size = (n_minor * blocksize[0], n_major * blocksize[1])
        size = size + dense_shape
    size = tuple(int(s) for s in size)
    if _checking(check_invariants):
        _check_compressed(layout, comp, pl, values._shape[0], size, blocksize)
    out = S.compressed_with_tensors.functional(compressed, plain, values, size, layout=layout)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _compressed_constructor(layout, compressed_name, plain_name):
    def constructor(compressed_indices, plain_indices, values, size=None, *, dtype=None,
                    device=None, pin_memory=False, requires_grad=False, check_invariants=None):
        return sparse_compressed_tensor(compressed_indices, plain_indices, values, size,
                                        dtype=dtype, layout=layout, device=device,
                                        requires_grad=requires_grad,
                                        check_invariants=check_invariants)
    name = f"sparse_{layout.name.split('_')[1]}_tensor"
    constructor.__name__ = constructor.__qualname__ = name
    constructor.__doc__ = (f"A {layout.name} tensor from {compressed_name} and {plain_name} "
                           "(see sparse_compressed_tensor).")
    return constructor


sparse_csr_tensor = _compressed_constructor(sparse_csr, "crow_indices", "col_indices")
sparse_csc_tensor = _compressed_constructor(sparse_csc, "ccol_indices", "row_indices")
sparse_bsr_tensor = _compressed_constructor(sparse_bsr, "crow_indices", "col_indices")
sparse_bsc_tensor = _compressed_constructor(sparse_bsc, "ccol_indices", "row_indices")


# ---- Tensor methods ----------------------------------------------------------------------

def _need_sparse(t: Tensor, name: str):
    if t._sparse is None:
        raise RuntimeError(f"{name} expected sparse tensor layout but got Strided")
    return t._sparse


def sparse_dim(self) -> int:
    return 0 if self._sparse is None else self._sparse.sparse_dim


def dense_dim(self) -> int:
    return self.dim() if self._sparse is None else self._sparse.dense_dim


def _nnz(self) -> int:
    if self._sparse is None:
        raise NotImplementedError(f"Could not run 'aten::_nnz' with arguments from the "
                                  f"'{'CUDA' if self.is_cuda else 'CPU'}' backend.")
    return self._sparse.nnz


def is_coalesced(self) -> bool:
    d = _need_sparse(self, "is_coalesced")
    if d.layout is not sparse_coo:
        raise RuntimeError(f"is_coalesced expected sparse coordinate tensor layout but got "
                           f"{S.LAYOUT_NAME[d.layout]}")
    return d.coalesced


def _coalesced_(self, coalesced: bool) -> Tensor:
    _need_sparse(self, "_coalesced_").coalesced = bool(coalesced)
    return self


def coalesce(self) -> Tensor:
    if self._sparse is None or self._sparse.layout is not sparse_coo:
        raise RuntimeError(f"coalesce expected sparse coordinate tensor layout but got "
                           f"{S.LAYOUT_NAME[self.layout]}")
    return S.coalesce_decl.functional(self)


def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    """to_sparse(sparse_dim) or to_sparse(*, layout=, blocksize=, dense_dim=)."""
    if args:
        return S.to_sparse_dim_decl.functional(self, int(args[0]))
    return S.to_sparse_decl.functional(self, layout=layout, blocksize=blocksize,
                                       dense_dim=dense_dim)


def _to_layout(layout, with_blocksize):
    if with_blocksize:
        def method(self, blocksize, dense_dim=None):
            return to_sparse(self, layout=layout, blocksize=blocksize, dense_dim=dense_dim)
    elif layout is sparse_coo:
        def method(self, sparse_dim=None):
            return to_sparse(self) if sparse_dim is None else to_sparse(self, sparse_dim)
    else:
        def method(self, dense_dim=None):
            return to_sparse(self, layout=layout, dense_dim=dense_dim)
    method.__name__ = method.__qualname__ = f"to_{layout.name}"
    return method


def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
    return S.to_dense_decl.functional(self, dtype, masked_grad=masked_grad)


def sparse_mask(self, mask) -> Tensor:
    if mask._sparse is None:
        raise RuntimeError("sparse_mask expects mask to be sparse")
    return S.sparse_mask_decl.functional(self, mask)


def sparse_resize_(self, size, sparse_dim, dense_dim) -> Tensor:
    d = _need_sparse(self, "sparse_resize_")
    size = tuple(int(s) for s in size)
    if sparse_dim != d.sparse_dim or dense_dim != d.dense_dim:
        if d.nnz:
            raise RuntimeError("sparse_resize_: a non-empty sparse tensor keeps its sparse_dim "
                               "and dense_dim")
    if d.nnz:
        idx = np_of(d.indices)
        if any(idx[k].max() >= size[k] for k in range(d.sparse_dim)):
            raise RuntimeError("shrinking the size of dimensions (from "
                               f"{list(self._shape)} to {list(size)}) on a non-empty sparse "
                               "tensor is not supported.")
    self._shape = size
    return self


def resize_as_sparse_(self, the_template) -> Tensor:
    """Give sparse `self` the size, sparse_dim and dense_dim of `the_template`."""
    return sparse_resize_(self, the_template._shape, sparse_dim(the_template),
                          dense_dim(the_template))


METHODS = {
    "sparse_dim": sparse_dim, "dense_dim": dense_dim, "_nnz": _nnz,
    "is_coalesced": is_coalesced, "_coalesced_": _coalesced_, "coalesce": coalesce,
    "to_sparse": to_sparse, "to_dense": to_dense, "sparse_mask": sparse_mask,
    "sparse_resize_": sparse_resize_, "resize_as_sparse_": resize_as_sparse_,
    "to_sparse_coo": _to_layout(sparse_coo, False), "to_sparse_csr": _to_layout(sparse_csr, False),
    "to_sparse_csc": _to_layout(sparse_csc, False),
    "to_sparse_bsr": _to_layout(sparse_bsr, True), "to_sparse_bsc": _to_layout(sparse_bsc, True),
}
for _name, _fn in METHODS.items():
    setattr(Tensor, _name, _fn)
