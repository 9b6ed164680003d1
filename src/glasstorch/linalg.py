"""glasstorch.linalg: the functions of torch.linalg.

The operators and their kernels are in ops/linalg_decomp.py (decompositions, solves, norms)
and ops/linalg.py (products); this module gives them torch.linalg's names and signatures.
"""
from __future__ import annotations

from .ops.creation.factories import ones as _ones, zeros as _zeros
from .ops.shape.joining import cat as _cat
from .ops.linalg.products import matmul as _matmul
from .backends.cpu.decompositions import LinAlgError
from .ops.linalg.decompositions import (cholesky, eigvals, eigvalsh, inv, lstsq, lu,
                                lu_factor, lu_solve, matrix_norm, matrix_power, matrix_rank,
                                multi_dot, norm, pinv, solve, solve_triangular, svd, svdvals,
                                vecdot)
from .ops.linalg import decompositions as _ops
from .ops.linalg.householder import householder_product
from .ops.linalg.ldl import ldl_factor, ldl_factor_ex, ldl_solve

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex",
           "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor",
           "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex",
           "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot",
           "vector_norm"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector ord-norm over `dim` (all elements by default)."""
    return _ops.linalg_vector_norm(x, ord, dim, keepdim, dtype=dtype, out=out)


def det(A, *, out=None):
    """Determinant of each square matrix."""
    return _ops._into(_ops.linalg_det(A), out, "_linalg_det")


def slogdet(A, *, out=None):
    """(sign, log|det|) of each square matrix."""
    return _ops._into(_ops.linalg_slogdet(A), out, "_linalg_slogdet")


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info > 0 marks a singular matrix instead of raising."""
    return _ops._into(_ops.linalg_inv_ex(A, check_errors=check_errors), out, "linalg_inv_ex")


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(solution, info): info > 0 marks a singular A instead of raising."""
    result = _ops.linalg_solve_ex(A, B, left=left, check_errors=check_errors)
    return _ops._into(result, out, "_linalg_solve_ex")


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): info > 0 is the order of the first leading minor that is not
    positive-definite, instead of raising."""
    result = _ops.linalg_cholesky_ex(A, upper=upper, check_errors=check_errors)
    return _ops._into(result, out, "linalg_cholesky_ex")


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): info > 0 marks a zero on U's diagonal instead of raising."""
    result = _ops.linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors)
    return _ops._into(result, out, "linalg_lu_factor_ex")


def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = QR; mode 'reduced', 'complete' or 'r' (R only, Q empty)."""
    return _ops._into(_ops.linalg_qr(A, mode), out, "linalg_qr")


def eig(A, *, out=None):
    """(eigenvalues, eigenvectors), complex, of each square matrix."""
    return _ops._into(_ops.linalg_eig(A), out, "linalg_eig")


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, orthonormal eigenvectors) of each Hermitian matrix."""
    return _ops._into(_ops.linalg_eigh(A, UPLO), out, "_linalg_eigh")


def matrix_exp(A):
    """Matrix exponential of each square matrix."""
    return _ops.linalg_matrix_exp(A)


def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along `dim`, broadcasting."""
    return _ops._into(_ops.linalg_cross(input, other, dim=dim), out, "linalg_cross")


def cond(A, p=None, *, out=None):
    """Condition number: ratio of extreme singular values (p None or +-2), else
    norm(A, p) * norm(inv(A), p)."""
    if A.numel() == 0:           # PyTorch's convention: the condition number of nothing is 0
        _ops.check_matrix("linalg.cond", A)
        return _ops._into(_zeros(A.shape[:-2], dtype=A.dtype.to_real()), out)
    if p is None or p in (2, -2):
        s = svdvals(A)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        return _ops._into(r, out)
    return _ops._into(matrix_norm(A, p) * matrix_norm(inv(A), p), out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal of each matrix (a view), as torch.diagonal with matrix defaults."""
    return A.diagonal(offset, dim1, dim2)


def matmul(input, other, *, out=None):
    """Matrix product (an alias of glasstorch.matmul)."""
    return _matmul(input, other, out=out)


def vander(x, *, N=None):
    """Vandermonde matrix: columns x**0, x**1, ..., x**(N-1) (integers give int64)."""
    if x.dim() == 0:
        x = x.reshape(1)                   # a number is a one-element vector
    N = x.shape[-1] if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x.unsqueeze(-1).expand(tuple(x.shape) + (N - 1,)).cumprod(-1)
    return _cat([_ones(tuple(x.shape) + (1,), dtype=powers.dtype, device=x.device), powers], -1)


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A seen as a matrix (prod(shape[:ind]), prod(shape[ind:])), reshaped to
    shape[ind:] + shape[:ind], so that tensordot(tensorinv(A), A, ind) is the identity."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(rows) != _prod(cols):
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {_prod(cols)} != {_prod(rows)}")
    result = inv(A.reshape(_prod(rows), _prod(cols))).reshape(cols + rows)
    return _ops._into(result, out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B; `dims` of A are first moved to the end."""
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.permute([d for d in range(A.dim()) if d not in dims] + dims)
    rows, cols = tuple(A.shape[:B.dim()]), tuple(A.shape[B.dim():])
    if _prod(rows) != _prod(cols):
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           f"]) == prod(self.shape[:other.ndim]), but got {_prod(cols)} != "
                           f"{_prod(rows)}")
    result = solve(A.reshape(_prod(rows), _prod(cols)), B.reshape(-1)).view(cols)
    return _ops._into(result, out)
