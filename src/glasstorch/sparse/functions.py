"""The top-level torch functions of sparse tensors: the constructors, the legacy products
(spmm, smm, hspmm, sspaddmm, dsmm, hsmm, saddmm), resize_as_sparse_ and the `*_copy` forms
of the accessors."""
from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor
from .construction import (resize_as_sparse_, sparse_bsc_tensor, sparse_bsr_tensor,
                           sparse_compressed_tensor, sparse_coo_tensor, sparse_csc_tensor,
                           sparse_csr_tensor)
from .tensor import index_tensor, make_coo, np_of

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor",
           "sparse_bsc_tensor", "sparse_compressed_tensor", "spmm", "smm", "hspmm", "hsmm",
           "dsmm", "sspaddmm", "saddmm", "resize_as_sparse_", "indices_copy", "values_copy",
           "crow_indices_copy", "col_indices_copy", "ccol_indices_copy", "row_indices_copy"]


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Sparse @ dense (torch.mm's sparse form)."""
    return input.mm(mat2)


def dsmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Sparse @ dense, a dense result."""
    return input.mm(mat2)


def smm(input: Tensor, mat: Tensor) -> Tensor:
    """Sparse @ dense, the result as a sparse COO tensor."""
    return input.mm(mat).to_sparse()


def hspmm(mat1: Tensor, mat2: Tensor, *, out=None) -> Tensor:
    """Sparse COO @ dense as a hybrid COO tensor: one sparse dimension (the rows mat1 has
    entries in), one dense."""
    if not mat1.is_sparse:
        raise RuntimeError("hspmm: Argument #2 (mat1): Expected a sparse COO tensor")
    product = mat1.mm(mat2)
    rows = np.unique(np_of(mat1.coalesce()._indices())[0])
    result = make_coo(index_tensor(rows[None], product.device),
                      product[index_tensor(rows, product.device)], product.shape, True)
    return out.copy_(result) if out is not None else result


hsmm = hspmm


def sspaddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2) for sparse input and mat1: a sparse result."""
    product = (mat1.mm(mat2) * alpha).to_sparse()
    result = input * beta + product
    return out.copy_(result) if out is not None else result


def saddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


def _copying(name):
    def fn(input: Tensor, *, out=None) -> Tensor:
        result = getattr(input, name)().clone()
        return out.copy_(result) if out is not None else result
    fn.__name__ = fn.__qualname__ = f"{name}_copy"
    fn.__doc__ = f"A fresh copy of {name}() (no aliasing)."
    return fn


indices_copy = _copying("indices")
values_copy = _copying("values")
crow_indices_copy = _copying("crow_indices")
col_indices_copy = _copying("col_indices")
ccol_indices_copy = _copying("ccol_indices")
row_indices_copy = _copying("row_indices")
