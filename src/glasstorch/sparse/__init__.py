"""torch.sparse: sparse tensors (COO, CSR, CSC, BSR, BSC) and the operations on them.

The layouts' representation is in sparse/tensor.py, the NumPy kernels in sparse/kernels.py,
the operators and their sparse-key kernels in sparse/ops.py, the constructors and the Tensor
methods in sparse/construction.py. The functions here are written in those operators, so
autograd reaches the values of sparse inputs (a sparse leaf gets a sparse gradient).
"""
from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor, sparse_coo, sparse_csr
from . import ops as _ops
from .construction import check_sparse_tensor_invariants
from .tensor import index_tensor, make_coo, np_of, tensor_of, with_values

__all__ = ["addmm", "check_sparse_tensor_invariants", "mm", "sum", "softmax", "log_softmax",
           "sampled_addmm", "spdiags", "as_sparse_gradcheck"]


def mm(mat1: Tensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """mat1 @ mat2 where mat1 is sparse: dense for a dense mat2, sparse for a sparse one."""
    if reduce not in (None, "sum"):
        raise RuntimeError(f"torch.sparse.mm: reduce={reduce!r} is not supported by "
                           "glasstorch (only 'sum')")
    return mat1.mm(mat2)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1.0, alpha=1.0) -> Tensor:
    """beta * mat + alpha * (mat1 @ mat2), mat1 sparse."""
    return mat.addmm(mat1, mat2, beta=beta, alpha=alpha)


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:
    """Sum of a sparse tensor's entries over `dim` (all: a dense 0-d result)."""
    if dim is None:
        values = input.coalesce().values() if input.is_sparse else input.values()
        return values.sum(dtype=dtype)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return input.sum(dims, dtype=dtype)


def _grouped_softmax(input: Tensor, dim: int, dtype, log: bool) -> Tensor:
    """Softmax over the specified entries along `dim`: absent entries count as -inf."""
    if input.layout is not sparse_coo:
        raise RuntimeError(f"softmax: expected a sparse COO tensor, got {input.layout}")
    x = input.coalesce()
    if dtype is not None:
        x = x.to(dtype)
    n = x.dim()
    dim = dim % n
    sd = x.sparse_dim()
    values = x.values()
    if dim >= sd:                       # a dense dimension: softmax within each value slice
        v = values.log_softmax(dim - sd + 1) if log else values.softmax(dim - sd + 1)
        return _ops.coo_with_tensors.functional(sd, x.dense_dim(), x.shape, x._indices(), v,
                                                is_coalesced=True)
    idx = np_of(x._indices())
    rest = np.delete(idx, dim, axis=0)
    shape = tuple(s for i, s in enumerate(x.shape[:sd]) if i != dim)
    keys = np.ravel_multi_index(tuple(rest), shape) if rest.shape[0] else np.zeros(
        idx.shape[1], np.int64)
    groups, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)
    raw = np_of(values.detach())
    peak = np.full((len(groups),) + raw.shape[1:], -np.inf, dtype=raw.dtype)
    np.maximum.at(peak, inverse, raw)
    group = index_tensor(inverse, values.device)
    shifted = values - tensor_of(peak[inverse], values.device, values.dtype)
    exp = shifted.exp()
    total = exp.new_zeros((len(groups),) + tuple(values.shape[1:])).index_add(0, group, exp)
    v = shifted - total.log()[group] if log else exp / total[group]
    return _ops.coo_with_tensors.functional(sd, x.dense_dim(), x.shape, x._indices(), v,
                                            is_coalesced=True)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Softmax of a sparse COO tensor along `dim`, over its specified entries only."""
    return _grouped_softmax(input, dim, dtype, log=False)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """log(softmax) of a sparse COO tensor along `dim`, over its specified entries only."""
    return _grouped_softmax(input, dim, dtype, log=True)


def sampled_addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1.0, alpha=1.0,
                  out=None) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2) at input's sparsity pattern (input: CSR)."""
    if input.layout is not sparse_csr:
        raise RuntimeError(f"sampled_addmm: Expected input to be a sparse CSR tensor, but "
                           f"got {input.layout}")
    if mat1.dim() != 2 or mat2.dim() != 2 or mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
                           f"({mat1.shape[0]}x{mat1.shape[1]} and {mat2.shape[0]}x"
                           f"{mat2.shape[1]})")
    rows, cols, _ = _ops._matrix_arrays(input)
    a, b = np_of(mat1.detach().contiguous()), np_of(mat2.detach().contiguous())
    product = np.einsum("ij,ij->i", a[rows], b[:, cols].T)
    values = beta * np_of(input._sparse.values) + alpha * product
    result = with_values(input, tensor_of(values, input.device, input.dtype))
    if out is not None:
        return out.copy_(result)
    return result


def spdiags(diagonals: Tensor, offsets: Tensor, shape, layout=None) -> Tensor:
    """A sparse matrix of `shape` with the rows of `diagonals` on the diagonals `offsets`:
    element j of a row lands in column j."""
    if diagonals.dim() != 2 or offsets.dim() != 1:
        raise RuntimeError("spdiags: diagonals must be 2-D and offsets 1-D")
    if diagonals.shape[0] != offsets.shape[0]:
        raise RuntimeError("Number of diagonals (" + str(diagonals.shape[0]) + ") does not "
                           "match the number of offsets (" + str(offsets.shape[0]) + ")")
    offs = np_of(offsets).tolist()
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    rows_n, cols_n = int(shape[0]), int(shape[1])
    data = np_of(diagonals.detach())
    rows, cols, values = [], [], []
    for k, off in enumerate(offs):
        j = np.arange(max(0, off), min(cols_n, rows_n + off, data.shape[1]))
        rows.append(j - off)
        cols.append(j)
        values.append(data[k, j])
    indices = np.stack([np.concatenate(rows), np.concatenate(cols)]) if rows else np.zeros((2, 0))
    result = make_coo(index_tensor(indices, diagonals.device),
                      tensor_of(np.concatenate(values) if values else data[:0, 0],
                                diagonals.device, diagonals.dtype), (rows_n, cols_n))
    if layout is None or layout is sparse_coo:
        return result
    return result.to_sparse(layout=layout)


def as_sparse_gradcheck(gradcheck):
    """Wrap `gradcheck` so that it checks functions of sparse tensors: each sparse input is
    checked through its values (the pattern stays fixed), as PyTorch's wrapper does."""
    def gradcheck_with_sparse_support(func, inputs, **kwargs):
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        flat, rebuild = [], []
        for x in inputs:
            if isinstance(x, Tensor) and x._sparse is not None and x.requires_grad:
                values = x.detach()._sparse.values.clone().requires_grad_(True)
                flat.append(values)
                rebuild.append(x.detach())
            else:
                flat.append(x)
                rebuild.append(None)

        def on_values(*args):
            real = [a if pattern is None else _with_values_differentiable(pattern, a)
                    for a, pattern in zip(args, rebuild)]
            out = func(*real)
            return _densify(out)
        return gradcheck(on_values, tuple(flat), **kwargs)
    return gradcheck_with_sparse_support


def _with_values_differentiable(pattern: Tensor, values: Tensor) -> Tensor:
    d = pattern._sparse
    if d.layout is sparse_coo:
        return _ops.coo_with_tensors.functional(d.sparse_dim, d.dense_dim, pattern.shape,
                                                d.indices, values, is_coalesced=d.coalesced)
    return with_values(pattern, values)


def _densify(out):
    if isinstance(out, Tensor):
        return out.to_dense() if out._sparse is not None else out
    if isinstance(out, (tuple, list)):
        return type(out)(_densify(o) for o in out)
    return out

