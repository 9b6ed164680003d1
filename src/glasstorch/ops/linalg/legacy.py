"""torch's top-level linear algebra from before torch.linalg, kept for the programs that call
it: lu, lu_solve, nuclear_norm, frobenius_norm and norm_except_dim (weight norm's). Each is a
composite over torch.linalg's operators, so gradients come from those."""
from __future__ import annotations

from ... import return_types
from ..registry import composite
from ...backends.cpu.decompositions import _into, need_tensor
from .decompositions import linalg_lu_factor_ex, linalg_vector_norm, lu_solve as _lu_solve
from .decompositions import matrix_norm


@composite(method=True)
def lu(A, pivot=True, get_infos=False, out=None):
    """(LU, pivots), or (LU, pivots, infos) with get_infos: linalg.lu_factor_ex without the
    error on a singular matrix."""
    need_tensor("lu", "A", 1, A)
    LU, pivots, info = linalg_lu_factor_ex(A, pivot=pivot)
    if get_infos:
        result = return_types._lu_with_info((LU, pivots, info))
    else:
        result = (LU, pivots)
    return _into(result, out) if out is not None else result


@composite(method=True)
def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """X with A X = b from lu(A)'s (LU_data, LU_pivots)."""
    need_tensor("lu_solve", "input", 1, b)
    return _into(_lu_solve(LU_data, LU_pivots, b), out, "lu_solve")


@composite()
def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of singular values of a matrix (or over the two dims `dim`)."""
    need_tensor("nuclear_norm", "input", 1, input)
    if isinstance(dim, bool):                 # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    if dim is None:
        if input.dim() != 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                               "dimensions." if input.dim() < 2 else
                               f"Expected a tensor with 2 dimensions, but got a tensor with "
                               f"{input.dim()} dimensions instead.")
        dim = (-2, -1)
    if isinstance(dim, int):
        dim = (dim,)
    if len(dim) != 2:
        raise RuntimeError("nuclear_norm: dim must be a 2-tuple")
    return _into(matrix_norm(input, "nuc", tuple(dim), keepdim), out)


@composite()
def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The square root of the sum of squares over one or two dims."""
    need_tensor("frobenius_norm", "input", 1, input)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    return _into(linalg_vector_norm(input, 2, list(dims), keepdim), out)


@composite()
def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm over every dim but `dim`, shaped to broadcast against v (keeping
    `dim`); over everything when dim == -1."""
    if dim == -1:
        return linalg_vector_norm(v, pow)
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    return linalg_vector_norm(v, pow, others, True)
