"""Matrix decompositions, solves, inverses and norms behind glasstorch.linalg.

Each aten op is a `kernel_op` whose CPU kernel (backends/cpu/decompositions.py) runs NumPy's
batched LAPACK routines over all leading (batch) dimensions at once and returns tensors laid out as PyTorch's: the
matrices that LAPACK writes (inverses, solutions, factors, singular and eigen vectors) are
batched column-major ("Fortran") matrices, the rest row-major. Errors carry PyTorch's texts;
a singular or non-positive-definite input raises `LinAlgError` (a RuntimeError) with the
batch element and the LAPACK `info` that PyTorch reports, unless an `_ex` variant was asked
to return that `info` instead (NumPy only says that a batch failed: the `info` of the
failed batch comes from a vectorised elimination of our own, which is also the LU
factorization: NumPy has no getrf). Most ops also have a Meta kernel (checks and output
metadata). The ops that PyTorch composes of others (matrix_norm,
matrix_power, vecdot, multi_dot, ...) are written in glasstorch ops, so their gradients and
node names follow from those ops; the others get derivatives in
decomposition_derivatives.py.
"""
from __future__ import annotations

import math

import numpy as np

from ...core.grad_state import state as _grad_state
from ...core import dtype as dt
from ...core.device import META
from ...core.shape import broadcast_shapes2, wrap_dim
from ...core.tensor import Tensor
from ... import return_types
from ..shape.joining import where
from ..creation.ranges import eye
from ..reduction.reductions import _norm_meta, norm_op
from ..registry import composite, export, kernel_op, structured, warn_user
from ...backends.cpu.decompositions import (_batch, _check_lu_input, _cholesky_solve_cpu,
    _into, _lu_cpu, _triangular_solve_cpu, check_eig, check_float, check_float_or_double,
    check_matrix, check_pinv_input, check_pivots, check_square, check_uplo, cholesky_ex_cpu,
    cholesky_inverse_cpu, cholesky_legacy_cpu, cross_checks, cross_cpu, det_cpu, eig_cpu,
    eigh_cpu, fortran_strides, inv_ex_cpu, legacy_solve_checks, lstsq_cpu, lu_factor_ex_cpu,
    lu_solve_checks, lu_solve_cpu, lu_unpack_cpu, matrix_exp_cpu, need_tensor, new_tensor,
    pinv_cpu, qr_checks, qr_cpu, raise_for_info, raise_for_lu, rank_array, same_dtype,
    slogdet_cpu, solve_checks, solve_ex_cpu, solve_triangular_checks, solve_triangular_cpu,
    svd_checks, svd_cpu, tolerances)


# ---- vector and matrix norms -------------------------------------------------------------

linalg_vector_norm = structured(
    "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
    "ScalarType? dtype=None) -> Tensor", _norm_meta, method=False, inplace=False,
    promotes=False, tags=("reduction",),
    doc="Vector ord-norm of the elements over `dim` (all dims by default).")
linalg_vector_norm.impl("CPU")(norm_op.impls["CPU"])

_MATRIX_ORDS = (1, -1, 2, -2, math.inf, -math.inf)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm over the two dims `dim`: 'fro', 'nuc' (sum of singular values), +-2
    (largest/smallest singular value), +-1 (max/min column abs sum), +-inf (rows)."""
    name = "linalg.matrix_norm"
    need_tensor("linalg_matrix_norm", "input", 1, A)
    check_matrix(name, A)
    if isinstance(dim, int) or len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got "
                           + " ".join(str(d) for d in ((dim,) if isinstance(dim, int) else dim)))
    d0, d1 = (wrap_dim(d, A.dim()) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({d0}, {d1})")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"{name}: Order {ord} not supported.")
    elif ord not in _MATRIX_ORDS:
        raise RuntimeError(f"{name}: Order {ord:g} not supported.")
    if A.dtype.category < dt.FLOAT:
        check_float(name, A)
    if dtype is not None:
        A = A.to(dtype)
    if ord == "nuc" or ord in (2, -2):
        check_float(name, A)
    if ord == "fro":
        result = linalg_vector_norm(A, 2, (d0, d1), keepdim)
    elif ord == "nuc" or abs(ord) == 2:
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        result = (s.sum(-1, keepdim) if ord == "nuc" else s.amax(-1, keepdim) if ord == 2
                  else s.amin(-1, keepdim))
        if keepdim:
            result = result.unsqueeze(-1).movedim((-2, -1), (d0, d1))
    else:
        inner, outer = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = A.abs().sum(inner, keepdim=keepdim)
        if not keepdim and inner < outer:
            outer -= 1
        result = sums.amax(outer, keepdim) if ord > 0 else sums.amin(outer, keepdim)
    return _into(result, out)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """linalg.norm: a vector norm (dim an int, or no dim and no ord) or a matrix norm
    (dim a 2-tuple, or a 2-D input with an ord)."""
    need_tensor("linalg_norm", "input", 1, A)
    if dim is not None and not isinstance(dim, int) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if dim is None and ord is not None:
        if A.dim() == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
        if A.dim() != 1:
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Expected ord to be a number, got {ord}")
    return _into(linalg_vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype),
                 out)


# ---- determinants ------------------------------------------------------------------------

linalg_det = kernel_op("linalg_det(Tensor A) -> Tensor", method=False,
                       doc="Determinant of each square matrix.")
linalg_det.impl("CPU")(det_cpu)


@composite(method=True)
def det(input):
    """Determinant of each square matrix (torch.det: linalg.det)."""
    return linalg_det(input)


linalg_slogdet = kernel_op("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)",
                           method=False,
                           doc="(sign, log|det|) of each square matrix, without overflow.")
linalg_slogdet.impl("CPU")(slogdet_cpu)


@composite(method=True)
def slogdet(input):
    """(sign, log|det|) of each square matrix, as torch.return_types.slogdet."""
    return return_types.slogdet(tuple(linalg_slogdet(input)))


@composite(method=True)
def logdet(input):
    """log(det(input)): NaN where a real determinant is negative, -inf where it is zero."""
    sign, logabs = linalg_slogdet(input)
    if input.dtype.is_complex:
        return logabs + sign.log()
    return where(sign == -1, math.nan, logabs)


# ---- inverse and solve -------------------------------------------------------------------

linalg_inv_ex = kernel_op(
    "linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)",
    method=False, doc="(inverse, info) of each square matrix; info > 0 marks a singular one.")
linalg_inv_ex.impl("CPU")(inv_ex_cpu)


def inv(A, *, out=None):
    """Inverse of each square matrix; LinAlgError when one is singular."""
    need_tensor("linalg_inv", "A", 1, A)
    result, info = linalg_inv_ex(A)
    raise_for_info("linalg.inv", info, "inv")
    return _into(result, out, "linalg_inv_ex")


@composite(method=True)
def inverse(input, *, out=None):
    """Inverse of each square matrix (torch.inverse: linalg.inv)."""
    return inv(input, out=out)


linalg_solve_ex = kernel_op(
    "linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> "
    "(Tensor result, Tensor info)", method=False,
    doc="(X, info) with AX = B (XA = B if not left); info > 0 marks a singular A.")
linalg_solve_ex.impl("CPU")(solve_ex_cpu)


def solve(A, B, *, left=True, out=None):
    """X with AX = B (XA = B when not left), batched and broadcast; B may be vectors."""
    need_tensor("linalg_solve", "A", 1, A)
    need_tensor("linalg_solve", "B", 2, B)
    result, info = linalg_solve_ex(A, B, left=left)
    raise_for_info("torch.linalg.solve", info, "solve")
    return _into(result, out, "_linalg_solve_ex")


# ---- Cholesky ----------------------------------------------------------------------------

linalg_cholesky_ex = kernel_op(
    "linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> "
    "(Tensor L, Tensor info)", method=False,
    doc="(L, info): the Cholesky factor of each Hermitian positive-definite matrix (read "
        "from its lower triangle; the upper one and U with upper=True).")
linalg_cholesky_ex.impl("CPU")(cholesky_ex_cpu)


def cholesky(A, *, upper=False, out=None):
    """Cholesky factor L (A = L L^H) of each Hermitian positive-definite matrix."""
    need_tensor("linalg_cholesky", "input", 1, A)
    L, info = linalg_cholesky_ex(A, upper=upper)
    raise_for_info("linalg.cholesky", info, "cholesky")
    return _into(L, out, "linalg_cholesky_ex")


# ---- QR ----------------------------------------------------------------------------------

linalg_qr = kernel_op("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)",
                      method=False, doc="QR decomposition; mode 'reduced', 'complete' or 'r'.")
linalg_qr.impl("CPU")(qr_cpu)


# ---- SVD ---------------------------------------------------------------------------------

_linalg_svd = kernel_op(
    "_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None)"
    " -> (Tensor U, Tensor S, Tensor Vh)", method=False,
    doc="(U, S, Vh) with A = U diag(S) Vh, singular values in decreasing order.")
_linalg_svd.impl("CPU")(svd_cpu)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """linalg.svd: (U, S, Vh) with A = U diag(S) Vh."""
    need_tensor("linalg_svd", "A", 1, A)
    return _into(return_types.linalg_svd(tuple(_linalg_svd(A, full_matrices, driver=driver))),
                 out, "_linalg_svd")


def _requires_grad(A: Tensor) -> bool:
    return A._requires_grad and _grad_state.enabled


def svdvals(A, *, driver=None, out=None):
    """Singular values of each matrix, in decreasing order."""
    need_tensor("linalg_svdvals", "A", 1, A)
    return _into(_linalg_svd(A, False, _requires_grad(A), driver=driver)[1], out, "_linalg_svd")


def _svd_legacy(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V (not V^H); without compute_uv, U and V are zeros."""
    need_tensor("svd", "input", 1, input)
    if not compute_uv:
        check_matrix("linalg.svd", input)
        S = svdvals(input)
        m, n = input._shape[-2:]
        batch = tuple(input._shape[:-2])
        return return_types.svd((new_tensor(np.zeros(batch + (m, m)), input.dtype).to(
            input.device), S, new_tensor(np.zeros(batch + (n, n)), input.dtype, True).to(
            input.device)))
    U, S, Vh = _linalg_svd(input, not some)
    return return_types.svd((U, S, Vh.mH))


_svd_legacy.__name__ = _svd_legacy.__qualname__ = "svd"
export("svd", _svd_legacy, method=True)


# ---- eigen decompositions ------------------------------------------------------------------

linalg_eigh = kernel_op(
    "linalg_eigh(Tensor self, str UPLO='L') -> (Tensor eigenvalues, Tensor eigenvectors)",
    method=False, doc="Eigenvalues (ascending) and orthonormal eigenvectors of each Hermitian "
                      "matrix, read from its UPLO triangle.")
linalg_eigh.impl("CPU")(eigh_cpu)


linalg_eig = kernel_op(
    "linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)", method=False,
    doc="Complex eigenvalues and unit-norm eigenvectors of each square matrix.")
linalg_eig.impl("CPU")(eig_cpu)


def eigvals(A, *, out=None):
    """Complex eigenvalues of each square matrix."""
    need_tensor("linalg_eigvals", "input", 1, A)
    check_eig("linalg.eigvals", A)
    return _into(linalg_eig(A)[0], out)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of each Hermitian matrix."""
    need_tensor("linalg_eigvalsh", "input", 1, A)
    return _into(linalg_eigh(A, UPLO)[0], out, "_linalg_eigh")


# ---- pseudo-inverse, least squares, rank ---------------------------------------------------

linalg_pinv = kernel_op(
    "linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, "
    "bool hermitian=False) -> Tensor", method=False,
    doc="Moore-Penrose pseudo-inverse, singular values under the tolerance dropped.")
linalg_pinv.impl("CPU")(pinv_cpu)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Pseudo-inverse; rcond is the older name of rtol."""
    need_tensor("linalg_pinv", "input", 1, A)
    check_pinv_input(A)
    atol, rtol = tolerances("linalg.pinv", A, atol, rtol, rcond)
    return _into(linalg_pinv(A, atol=atol, rtol=rtol, hermitian=hermitian), out, "linalg_pinv")


linalg_lstsq = kernel_op(
    "linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> "
    "(Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)", method=False,
    doc="Least-squares solution of A X = B with residuals, rank and singular values where "
        "the driver computes them ('gelsy' by default).", tags=("dynamic_output_shape",))
linalg_lstsq.impl("CPU")(lstsq_cpu)


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution (solution, residuals, rank, singular_values)."""
    need_tensor("linalg_lstsq", "input", 1, A)
    need_tensor("linalg_lstsq", "b", 2, B)
    return linalg_lstsq(A, B, rcond, driver=driver)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Number of singular values (eigenvalue magnitudes if hermitian) above the tolerance."""
    name = "torch.linalg.matrix_rank"
    need_tensor("linalg_matrix_rank", "input", 1, A)
    check_matrix(name, A, "input")
    check_float_or_double(A)
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = tolerances(name, A, atol, rtol)
    a = A.cpu()._array()            # LAPACK's decompositions run on the host
    return _into(new_tensor(rank_array(a, hermitian, atol, rtol), dt.int64).to(A.device), out)


# ---- matrix functions ----------------------------------------------------------------------

def matrix_power(A, n, *, out=None):
    """A ** n for an integer n by repeated squaring (n < 0: of the inverse; 0: identity)."""
    need_tensor("linalg_matrix_power", "input", 1, A)
    check_square("linalg.matrix_power", A)
    if not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    if n == 0:
        m = A._shape[-1]
        return _into(eye(m, dtype=A.dtype, device=A.device).expand(A._shape).clone(), out,
                     "matmul")
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return _into(A.clone(), out, "matmul")
    result, z = None, A
    while True:
        if n & 1:
            result = z if result is None else result.matmul(z)
        n >>= 1
        if not n:
            break
        z = z.matmul(z)
    return _into(result, out, "matmul")


export("matrix_power", matrix_power, method=True)

linalg_matrix_exp = kernel_op("linalg_matrix_exp(Tensor self) -> Tensor", method=False,
                              doc="Matrix exponential of each square matrix.")
linalg_matrix_exp.impl("CPU")(matrix_exp_cpu)


@composite(method=True)
def matrix_exp(input):
    """Matrix exponential of each square matrix (torch.matrix_exp: linalg.matrix_exp)."""
    return linalg_matrix_exp(input)


# ---- triangular solve ----------------------------------------------------------------------

linalg_solve_triangular = kernel_op(
    "linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, "
    "bool unitriangular=False) -> Tensor", method=False,
    doc="X with AX = B (XA = B if not left) for triangular A (only its triangle is read).")
linalg_solve_triangular.impl("CPU")(solve_triangular_cpu)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with AX = B (XA = B if not left) for upper/lower triangular A."""
    need_tensor("linalg_solve_triangular", "input", 1, A)
    need_tensor("linalg_solve_triangular", "B", 2, B)
    result = linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)
    return _into(result, out, "linalg_solve_triangular")


# ---- cross, vecdot, multi_dot --------------------------------------------------------------

linalg_cross = kernel_op("linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor",
                         method=False, doc="Cross product of 3-vectors along `dim`.")
linalg_cross.on_cuda = "shared"
linalg_cross.impl("CPU")(cross_cpu)


def cross(input, other, dim=None, *, out=None):
    """torch.cross: linalg.cross along `dim`; without dim, along the first dim of size 3
    (deprecated, with PyTorch's warning)."""
    need_tensor("cross", "input", 1, input)
    if dim is None:
        warn_user("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a"
                      " future release.")
        shape = broadcast_shapes2(input._shape, other._shape) if isinstance(
            other, Tensor) else input._shape
        dim = next((i for i, s in enumerate(shape) if s == 3), -1)
    return _into(linalg_cross(input, other, dim=dim), out, "linalg_cross")


def _cross_method(self, other, dim=None):
    return cross(self, other, dim)


_cross_method.__name__ = "cross"
_cross_method.__qualname__ = "Tensor.cross"
export("cross", cross)
export("cross", _cross_method, method=True, function=False)


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) along `dim`, broadcasting."""
    need_tensor("linalg_vecdot", "x", 1, x)
    need_tensor("linalg_vecdot", "y", 2, y)
    same_dtype("linalg.vecdot", "x", x, "y", y)
    return _into((x.conj() * y if x.dtype.is_complex else x * y).sum(dim), out, "sum")


def _chain_order(dims):
    """Optimal parenthesisation of a matrix chain (dynamic programming): split[i][j]."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors, *, out=None):
    """Product of a chain of matrices in the cheapest order; the first and last may be
    vectors (a row and a column)."""
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    if first.dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{first.dim()}D")
    if last.dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{last.dim()}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    d = first.dtype
    for t in tensors:
        if t.dtype is not d:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but "
                               f"tensor 0 is {d.cname} and tensor "
                               f"{list(tensors).index(t)} {t.dtype.cname}")
    mats = list(tensors)
    if first.dim() == 1:
        mats[0] = first.unsqueeze(0)
    if last.dim() == 1:
        mats[-1] = last.unsqueeze(1)
    for i in range(n - 1):
        if mats[i]._shape[1] != mats[i + 1]._shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i]._shape)} "
                f"and {list(tensors[i + 1]._shape)} cannot be multiplied")
    dims = [mats[0]._shape[0]] + [m._shape[1] for m in mats]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return product(i, k).mm(product(k + 1, j))

    result = product(0, n - 1)
    shape = ((() if first.dim() == 1 else (dims[0],))
             + (() if last.dim() == 1 else (dims[-1],)))
    return _into(result.view(shape), out, "mm")


# ---- the Meta backend: checks and output metadata, no data ---------------------------------------

def _meta(shape, dtype, fortran=False) -> Tensor:
    shape = tuple(shape)
    return Tensor._empty(shape, dtype, META, fortran_strides(shape) if fortran else None)


@linalg_det.impl("Meta")
def _det_meta(A):
    check_square("linalg.det", A)
    check_float("linalg.det", A, kernel="lu_cpu")
    return _meta(_batch(A), A.dtype)


@linalg_slogdet.impl("Meta")
def _slogdet_meta(A):
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    return return_types.linalg_slogdet((_meta(_batch(A), A.dtype),
                                        _meta(_batch(A), A.dtype.to_real())))


@linalg_inv_ex.impl("Meta")
def _inv_ex_meta(A, check_errors=False):
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    return return_types.linalg_inv_ex((_meta(A._shape, A.dtype, True),
                                       _meta(_batch(A), dt.int32)))


@linalg_solve_ex.impl("Meta")
def _solve_ex_meta(A, B, left=True, check_errors=False):
    if solve_checks(A, B, left):
        shape = broadcast_shapes2(_batch(A), tuple(B._shape[:-1])) + (B._shape[-1],)
    else:
        shape = broadcast_shapes2(_batch(A), tuple(B._shape[:-2])) + tuple(B._shape[-2:])
    return return_types.linalg_solve_ex((_meta(shape, A.dtype, fortran=left),
                                         _meta(_batch(A), dt.int32)))


@linalg_cholesky_ex.impl("Meta")
def _cholesky_ex_meta(A, upper=False, check_errors=False):
    check_square("linalg.cholesky", A)
    check_float("linalg.cholesky", A, kernel="cholesky_cpu")
    return return_types.linalg_cholesky_ex((_meta(A._shape, A.dtype, True),
                                            _meta(_batch(A), dt.int32)))


@linalg_qr.impl("Meta")
def _qr_meta(A, mode="reduced"):
    qr_checks(A, mode)
    (m, n), batch = A._shape[-2:], _batch(A)
    k = m if mode == "complete" else min(m, n)
    Q = _meta((0,), A.dtype) if mode == "r" else _meta(batch + (m, k), A.dtype, True)
    return return_types.linalg_qr((Q, _meta(batch + (k if mode != "r" else min(m, n), n),
                                            A.dtype, True)))


@_linalg_svd.impl("Meta")
def _svd_meta(A, full_matrices=False, compute_uv=True, driver=None):
    svd_checks(A, driver)
    (m, n), batch = A._shape[-2:], _batch(A)
    k = min(m, n)
    S = _meta(batch + (k,), A.dtype.to_real())
    if not compute_uv:
        return (_meta((0,), A.dtype), S, _meta((0,), A.dtype))
    mu, nv = (m, n) if full_matrices else (k, k)
    return (_meta(batch + (m, mu), A.dtype, True), S, _meta(batch + (nv, n), A.dtype, True))


@linalg_eigh.impl("Meta")
def _eigh_meta(A, UPLO="L"):
    check_square("linalg.eigh", A)
    check_uplo(UPLO)
    check_float("linalg.eigh", A, kernel="linalg_eigh_cpu")
    return return_types.linalg_eigh((_meta(A._shape[:-1], A.dtype.to_real()),
                                     _meta(A._shape, A.dtype, True)))


@linalg_eig.impl("Meta")
def _eig_meta(A):
    check_eig("linalg.eig", A)
    cd = A.dtype if A.dtype.is_complex else A.dtype.to_complex()
    return return_types.linalg_eig((_meta(A._shape[:-1], cd), _meta(A._shape, cd, True)))


@linalg_pinv.impl("Meta")
def _pinv_meta(A, atol=None, rtol=None, hermitian=False):
    check_pinv_input(A)
    return _meta(_batch(A) + (A._shape[-1], A._shape[-2]), A.dtype)


@linalg_matrix_exp.impl("Meta")
def _matrix_exp_meta(A):
    check_square("linalg.matrix_exp", A)
    if A.dtype.category < dt.FLOAT:
        check_float("linalg.matrix_exp", A)
    return _meta(A._shape, A.dtype)


@linalg_solve_triangular.impl("Meta")
def _solve_triangular_meta(A, B, upper, left=True, unitriangular=False):
    solve_triangular_checks(A, B, left)
    shape = broadcast_shapes2(_batch(A), tuple(B._shape[:-2])) + tuple(B._shape[-2:])
    return _meta(shape, A.dtype, True)


@linalg_cross.impl("Meta")
def _cross_meta(self, other, dim=-1):
    return _meta(cross_checks(self, other, dim)[0], self.dtype)


def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with a relative tolerance rcond."""
    return pinv(input, rcond)


export("pinverse", pinverse, method=True)


# ---- deprecated torch.* forms ---------------------------------------------------------------

cholesky_op = kernel_op("cholesky(Tensor self, bool upper=False) -> Tensor", function=False,
                        method=False, doc="The deprecated torch.cholesky.")
cholesky_op.impl("CPU")(cholesky_legacy_cpu)


@cholesky_op.impl("Meta")
def _cholesky_legacy_meta(self, upper=False):
    return _cholesky_ex_meta(self, upper)[0]


_CHOLESKY_DEPRECATED = (
    "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
    "future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = "
    "torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced with"
    "\nU = torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results for all "
    "valid (symmetric positive definite) inputs.")


def _cholesky_legacy(input, upper=False, *, out=None):
    """torch.cholesky (deprecated): linalg.cholesky(A), or its conjugate transpose."""
    warn_user(_CHOLESKY_DEPRECATED)
    need_tensor("cholesky", "input", 1, input)
    return _into(cholesky_op(input, upper), out, "cholesky")


def _cholesky_method(self, upper=False):
    warn_user(_CHOLESKY_DEPRECATED)
    return cholesky_op(self, upper)


_cholesky_legacy.__name__ = _cholesky_legacy.__qualname__ = "cholesky"
_cholesky_method.__name__, _cholesky_method.__qualname__ = "cholesky", "Tensor.cholesky"
export("cholesky", _cholesky_legacy)
export("cholesky", _cholesky_method, method=True, function=False)


def qr(input, some=True, *, out=None):
    """torch.qr (deprecated): linalg.qr with mode 'reduced' (some) or 'complete'."""
    warn_user(
        "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future "
        "PyTorch release.\nThe boolean parameter 'some' has been replaced with a string parameter"
        " 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, "
        "'reduced' if some else 'complete')")
    need_tensor("qr", "input", 1, input)
    result = return_types.qr(tuple(linalg_qr(input, "reduced" if some else "complete")))
    return _into(result, out, "linalg_qr")


def _qr_method(self, some=True):
    return qr(self, some)


_qr_method.__name__, _qr_method.__qualname__ = "qr", "Tensor.qr"
export("qr", qr)
export("qr", _qr_method, method=True, function=False)


triangular_solve_op = kernel_op(
    "triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, "
    "bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)",
    function=False, method=False,
    doc="The deprecated torch.triangular_solve: X with A X = b (A^T X = b if transpose), and "
        "a copy of A.")


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve (deprecated): (X, A.clone()) with A X = input."""
    warn_user(
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will "
        "be removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its "
        "arguments reversed and does not return a copy of one of the inputs.\nX = "
        "torch.triangular_solve(B, A).solution\nshould be replaced with\nX = "
        "torch.linalg.solve_triangular(A, B).")
    need_tensor("triangular_solve", "input", 1, input)
    need_tensor("triangular_solve", "A", 2, A)
    return _into(triangular_solve_op(input, A, upper, transpose, unitriangular), out,
                 "triangular_solve")


def _triangular_solve_method(self, A, upper=True, transpose=False, unitriangular=False):
    return triangular_solve(self, A, upper, transpose, unitriangular)


_triangular_solve_method.__name__ = "triangular_solve"
_triangular_solve_method.__qualname__ = "Tensor.triangular_solve"
export("triangular_solve", triangular_solve)
export("triangular_solve", _triangular_solve_method, method=True, function=False)


triangular_solve_op.impl("CPU")(_triangular_solve_cpu)


@triangular_solve_op.impl("Meta")
def _triangular_solve_meta(self, A, upper=True, transpose=False, unitriangular=False):
    legacy_solve_checks(self, A, "torch.triangular_solve: ")
    check_float("triangular_solve", A, kernel="triangular_solve_cpu")
    batch = broadcast_shapes2(_batch(self), _batch(A))
    return return_types.triangular_solve((_meta(batch + self._shape[-2:], A.dtype, True),
                                          _meta(batch + A._shape[-2:], A.dtype, True)))


cholesky_solve_op = kernel_op(
    "cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor",
    doc="X with (L L^H) X = B, from the Cholesky factor L (U^H U with upper=True).")
cholesky_solve_op.impl("CPU")(_cholesky_solve_cpu)


@cholesky_solve_op.impl("Meta")
def _cholesky_solve_meta(self, input2, upper=False):
    legacy_solve_checks(self, input2)
    check_float("cholesky_solve", input2, kernel="cholesky_solve_cpu")
    batch = broadcast_shapes2(_batch(self), _batch(input2))
    return _meta(batch + self._shape[-2:], self.dtype, True)


cholesky_inverse_op = kernel_op(
    "cholesky_inverse(Tensor self, bool upper=False) -> Tensor",
    doc="(L L^H)^-1 from the Cholesky factor L (U^H U with upper=True).")
cholesky_inverse_op.impl("CPU")(cholesky_inverse_cpu)


@cholesky_inverse_op.impl("Meta")
def _cholesky_inverse_meta(self, upper=False):
    check_square("cholesky_inverse", self)
    check_float("cholesky_inverse", self, kernel="cholesky_inverse_out_cpu")
    return _meta(self._shape, self.dtype, True)


# ---- LU ------------------------------------------------------------------------------------

linalg_lu_factor_ex = kernel_op(
    "linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> "
    "(Tensor LU, Tensor pivots, Tensor info)", method=False,
    doc="(LU, pivots, info): L and U packed in one matrix, LAPACK's 1-based row swaps.")
linalg_lu_factor_ex.impl("CPU")(lu_factor_ex_cpu)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of each matrix; an error when some U has a zero on its diagonal."""
    need_tensor("linalg_lu_factor", "A", 1, A)
    LU, pivots, info = linalg_lu_factor_ex(A, pivot=pivot)
    raise_for_lu("torch.linalg.lu_factor", info)
    return _into(return_types.linalg_lu_factor((LU, pivots)), out, "linalg_lu_factor_ex")


linalg_lu = kernel_op("linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, "
                      "Tensor U)", method=False, doc="(P, L, U) with A = P L U.")
linalg_lu.impl("CPU")(_lu_cpu)


lu_unpack_op = kernel_op(
    "lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
    "bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)", method=False,
    doc="(P, L, U) from lu_factor's packed LU and pivots.")
lu_unpack_op.impl("CPU")(lu_unpack_cpu)


@lu_unpack_op.impl("Meta")
def _lu_unpack_meta(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    check_pivots(LU_pivots)
    (m, n), batch, d = LU_data._shape[-2:], _batch(LU_data), LU_data.dtype
    k = min(m, n)
    none = _meta((0,), d)
    return return_types.lu_unpack((
        _meta(batch + (m, m), d) if unpack_pivots else none,
        _meta(batch + (m, k), d) if unpack_data else none,
        _meta(batch + (k, n), d) if unpack_data else none))


linalg_lu_solve = kernel_op(
    "linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, "
    "bool adjoint=False) -> Tensor", method=False,
    doc="X with A X = B (X A = B if not left; A^H if adjoint) from A's lu_factor.")
linalg_lu_solve.impl("CPU")(lu_solve_cpu)


@linalg_lu_solve.impl("Meta")
def _lu_solve_meta(LU, pivots, B, left=True, adjoint=False):
    lu_solve_checks(LU, pivots, B, left)
    batch = broadcast_shapes2(_batch(LU), _batch(B))
    return _meta(batch + B._shape[-2:], LU.dtype, fortran=left)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B from (LU, pivots) = lu_factor(A)."""
    need_tensor("linalg_lu_solve", "LU", 1, LU)
    return _into(linalg_lu_solve(LU, pivots, B, left=left, adjoint=adjoint), out,
                 "linalg_lu_solve")


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U."""
    need_tensor("linalg_lu", "A", 1, A)
    return _into(linalg_lu(A, pivot=pivot), out, "linalg_lu")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """torch.lu_unpack: (P, L, U) from lu_factor's results."""
    need_tensor("lu_unpack", "LU_data", 1, LU_data)
    return _into(lu_unpack_op(LU_data, LU_pivots, unpack_data, unpack_pivots), out,
                 "lu_unpack")


export("lu_unpack", lu_unpack)


@linalg_lu_factor_ex.impl("Meta")
def _lu_factor_ex_meta(A, pivot=True, check_errors=False):
    _check_lu_input("linalg.lu_factor_ex", A)
    k = min(A._shape[-2:])
    return return_types.linalg_lu_factor_ex((_meta(A._shape, A.dtype, True),
                                             _meta(_batch(A) + (k,), dt.int32),
                                             _meta(_batch(A), dt.int32)))


@linalg_lu.impl("Meta")
def _lu_meta(A, pivot=True):
    _check_lu_input("linalg.lu", A)
    (m, n), batch = A._shape[-2:], _batch(A)
    k = min(m, n)
    return return_types.linalg_lu((_meta(batch + (m, m), A.dtype),
                                   _meta(batch + (m, k), A.dtype), _meta(batch + (k, n), A.dtype)))
