"""Matrix decompositions, solves, inverses and norms behind glasstorch.linalg.

Each aten op is a `kernel_op` whose CPU kernel runs NumPy's batched LAPACK routines over
all leading (batch) dimensions at once and returns tensors laid out as PyTorch's: the
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
derivatives_linalg_decomp.py.
"""
from __future__ import annotations

import math

import numpy as np

from ...core.grad_state import state as _grad_state
from ...core import dtype as dt
from ...core.device import CPU, META
from ...core.shape import broadcast_shapes2, contiguous_strides, wrap_dim
from ...core.tensor import Tensor
from ... import return_types
from ..copying.copies import assign_array
from ..shape.joining import where
from ..creation.ranges import eye
from ..reduction.reductions import _norm_meta, norm_op
from ..registry import composite, export, kernel_op, structured, warn_user


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular, not positive-definite)."""


LinAlgError.__module__ = "glasstorch.linalg"


# ---- checks with PyTorch's messages ------------------------------------------------------

def check_float(name: str, A: Tensor, arg: str = "input", kernel: str | None = None) -> None:
    """Integer and low-precision inputs are rejected, as LAPACK has no kernels for them
    (`kernel`: PyTorch's CPU kernel, which names itself for a low-precision dtype)."""
    if A.dtype.category < dt.FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as {arg}. "
                           f"Got {A.dtype.cname}")
    if A.dtype is dt.float16 or A.dtype is dt.bfloat16:
        if kernel is not None:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{A.dtype.cname}'")
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {A.dtype.cname}")


def _check_float_or_double(A: Tensor) -> None:
    if A.dtype.category < dt.FLOAT or A.dtype.itemsize < 4:
        raise RuntimeError("This function doesn't handle types other than float and double")


def check_matrix(name: str, A: Tensor, arg: str = "A") -> None:
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")


def check_square(name: str, A: Tensor, arg: str = "A") -> None:
    check_matrix(name, A, arg)
    m, n = A._shape[-2:]
    if m != n:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{m} by {n} matrices")


def _need_tensor(name, arg, pos, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(value).__name__}")


def _same_dtype(name, a_name, a, b_name, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}: Expected {a_name} and {b_name} to have the same dtype, but "
                           f"found {a_name} of type {a.dtype.cname} and {b_name} of type "
                           f"{b.dtype.cname} instead")


# ---- results ---------------------------------------------------------------------------

def fortran_strides(shape) -> tuple:
    """Batched column-major strides: each matrix column-major, matrices one after another."""
    if len(shape) < 2:
        return contiguous_strides(shape)
    m, n = shape[-2], shape[-1]
    batch = contiguous_strides(tuple(shape[:-2]) + (max(m * n, 1),))[:-1]
    return batch + (1, max(m, 1))


def new_tensor(arr, dtype: dt.dtype, fortran: bool = False, device=CPU) -> Tensor:
    """A fresh tensor holding `arr` (cast to `dtype`), column-major matrices if `fortran`."""
    shape = tuple(arr.shape)
    out = Tensor._empty(shape, dtype, device, fortran_strides(shape) if fortran else None)
    if out.numel():
        assign_array(out._array(), arr)
    return out


def _empty(dtype):
    return Tensor._empty((0,), dtype, CPU)


def _batched(a: np.ndarray) -> np.ndarray:
    """(..., m, n) as (B, m, n)."""
    return a.reshape((-1,) + a.shape[-2:])


def _batch_text(index: int, batched: bool) -> str:
    return f"(Batch element {index}): " if batched else ""


def raise_for_info(name: str, info: Tensor, kind: str) -> None:
    """Raise PyTorch's LinAlgError for the first failed batch element of `info`."""
    if info.device.type == "meta":
        return
    codes = info._array().reshape(-1)
    bad = np.flatnonzero(codes)
    if not bad.size:
        return
    i = int(bad[0])
    prefix = f"{name}: {_batch_text(i, info.dim() > 0)}"
    k = int(codes[i])
    if kind == "inv":
        raise LinAlgError(f"{prefix}The diagonal element {k} is zero, the inversion could not "
                          "be completed because the input matrix is singular.")
    if kind == "solve":
        raise LinAlgError(f"{prefix}The solver failed because the input matrix is singular.")
    raise LinAlgError(f"{prefix}The factorization could not be completed because the input is "
                      f"not positive-definite (the leading minor of order {k} is not "
                      "positive-definite).")


# ---- LAPACK's info where NumPy only says "failed" --------------------------------------

def _getrf(a: np.ndarray):
    """LAPACK's getrf on each matrix of (B, m, n), vectorised over the batch: partial
    pivoting, one column at a time. Returns (LU packed in one array, 1-based row swaps
    `ipiv`, info: 1 + the first column whose pivot is exactly zero, else 0, and 1 + the
    column of the smallest pivot, for a matrix that LAPACK finds singular where this
    elimination, rounding in another order, does not)."""
    a = np.array(a)
    nb, m, n = a.shape
    k = min(m, n)
    info = np.zeros(nb, np.int32)
    ipiv = np.zeros((nb, k), np.int32)
    weakest = np.ones(nb, np.int32)
    smallest = np.full(nb, np.inf)
    rows = np.arange(nb)
    for j in range(k):
        p = j + np.abs(a[:, j:, j]).argmax(axis=1)
        ipiv[:, j] = p + 1
        top = a[rows, j].copy()
        a[rows, j] = a[rows, p]
        a[rows, p] = top
        piv = a[:, j, j]
        info[(piv == 0) & (info == 0)] = j + 1
        small = np.abs(piv) < smallest
        smallest[small], weakest[small] = np.abs(piv[small]), j + 1
        f = a[:, j + 1:, j] / np.where(piv == 0, 1, piv)[:, None]
        a[:, j + 1:, j] = f
        a[:, j + 1:, j + 1:] -= f[:, :, None] * a[:, j, None, j + 1:]
    return a, ipiv, info, weakest


def _singular_info(flat: np.ndarray) -> np.ndarray:
    """getrf's info for each matrix of (B, n, n), after LAPACK found one singular."""
    _, _, info, weakest = _getrf(flat)
    ok = info == 0
    try:
        np.linalg.inv(flat[ok])
    except np.linalg.LinAlgError:
        for i in np.flatnonzero(ok):         # rounded differently: ask LAPACK one by one
            try:
                np.linalg.inv(flat[i])
            except np.linalg.LinAlgError:
                info[i] = weakest[i]
    return info


def _cholesky_info(a: np.ndarray) -> np.ndarray:
    """potrf's info per matrix of (B, n, n), reading the lower triangle: 1 + the first
    leading minor that is not positive-definite, 0 where the factorization exists."""
    a = np.array(a, dtype=np.result_type(a.dtype, np.float64))
    nb, n = a.shape[0], a.shape[-1]
    L = np.zeros_like(a)
    info = np.zeros(nb, np.int32)
    for j in range(n):
        row = L[:, j, :j]
        d = a[:, j, j].real - (row * row.conj()).real.sum(-1)
        info[~(d > 0) & (info == 0)] = j + 1
        ljj = np.sqrt(np.where(d > 0, d, 1))
        L[:, j, j] = ljj
        L[:, j + 1:, j] = (a[:, j + 1:, j] - np.einsum("bik,bk->bi", L[:, j + 1:, :j],
                                                       row.conj())) / ljj[:, None]
    return info


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
    _need_tensor("linalg_matrix_norm", "input", 1, A)
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
    _need_tensor("linalg_norm", "input", 1, A)
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


def _into(result: Tensor, out, op: str | None = None):
    """The out= convention of the composite functions: resize `out`, copy, return it. `op`:
    the operator PyTorch's function writes into out=, which refuses to record gradients."""
    if out is None:
        return result
    if op is not None and _grad_state.enabled and any(
            t.requires_grad for t in (result if isinstance(result, tuple) else (result,))):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if isinstance(out, Tensor):
        if out._shape != result._shape:
            out.resize_(result._shape)
        return out.copy_(result)
    for o, r in zip(out, result):
        _into(r, o)
    return out


# ---- determinants ------------------------------------------------------------------------

linalg_det = kernel_op("linalg_det(Tensor A) -> Tensor", method=False,
                       doc="Determinant of each square matrix.")


@linalg_det.impl("CPU")
def _det_cpu(A):
    check_square("linalg.det", A)
    check_float("linalg.det", A, kernel="lu_cpu")
    return new_tensor(np.linalg.det(A._array()), A.dtype)


@composite(method=True)
def det(input):
    """Determinant of each square matrix (torch.det: linalg.det)."""
    return linalg_det(input)


linalg_slogdet = kernel_op("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)",
                           method=False,
                           doc="(sign, log|det|) of each square matrix, without overflow.")


@linalg_slogdet.impl("CPU")
def _slogdet_cpu(A):
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    sign, logabs = np.linalg.slogdet(A._array())
    return return_types.linalg_slogdet((new_tensor(sign, A.dtype),
                                        new_tensor(logabs, A.dtype.to_real())))


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

def _inv_arrays(a: np.ndarray):
    """(inverse, getrf info) of every matrix; singular ones get NaN."""
    try:
        with np.errstate(all="ignore"):
            return np.linalg.inv(a), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        pass
    flat = _batched(a)
    with np.errstate(all="ignore"):
        info = _singular_info(flat)
        inv = np.full(flat.shape, np.nan, a.dtype)
        inv[info == 0] = np.linalg.inv(flat[info == 0])
    return inv.reshape(a.shape), info.reshape(a.shape[:-2])


linalg_inv_ex = kernel_op(
    "linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)",
    method=False, doc="(inverse, info) of each square matrix; info > 0 marks a singular one.")


@linalg_inv_ex.impl("CPU")
def _inv_ex_cpu(A, check_errors=False):
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    inv, info = _inv_arrays(A._array())
    info_t = new_tensor(info, dt.int32)
    if check_errors:
        raise_for_info("linalg.inv_ex", info_t, "inv")
    return return_types.linalg_inv_ex((new_tensor(inv, A.dtype, fortran=True), info_t))


def inv(A, *, out=None):
    """Inverse of each square matrix; LinAlgError when one is singular."""
    _need_tensor("linalg_inv", "A", 1, A)
    result, info = linalg_inv_ex(A)
    raise_for_info("linalg.inv", info, "inv")
    return _into(result, out, "linalg_inv_ex")


@composite(method=True)
def inverse(input, *, out=None):
    """Inverse of each square matrix (torch.inverse: linalg.inv)."""
    return inv(input, out=out)


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """B is a (batch of) vector(s) when 1-D, or when its shape is A's without the last dim."""
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and B._shape == A._shape[:-1])


def _solve_checks(A, B, left, name="linalg.solve"):
    check_square(name, A)
    check_float(name, A, kernel="lu_cpu")
    _same_dtype(name, "A", A, "B", B)
    vector = _is_vector_rhs(A, B)
    n = A._shape[-1]
    if vector:
        if B._shape[-1] != n or not left:
            raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                               f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                               f"{B._shape[-1]}x1)")
        return vector
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    k = B._shape[-2] if left else B._shape[-1]
    if k != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]})")
    return vector


def _solve_arrays(a: np.ndarray, b: np.ndarray):
    """(solution of a x = b, getrf info of each a), b (..., n, k) broadcast against a."""
    if a.shape[:-2] == b.shape[:-2]:
        batch, ab, bb = a.shape[:-2], a, b
    else:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        ab = np.broadcast_to(a, batch + a.shape[-2:])
        bb = np.broadcast_to(b, batch + b.shape[-2:])
    with np.errstate(all="ignore"):
        try:
            return np.linalg.solve(ab, bb), np.zeros(a.shape[:-2], np.int32)
        except np.linalg.LinAlgError:
            pass
        info = _singular_info(_batched(a)).reshape(a.shape[:-2])
        ok = np.broadcast_to(info == 0, batch)
        x = np.full(bb.shape, np.nan, np.result_type(a, b))
        x[ok] = np.linalg.solve(ab[ok], bb[ok])
    return x, info


linalg_solve_ex = kernel_op(
    "linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> "
    "(Tensor result, Tensor info)", method=False,
    doc="(X, info) with AX = B (XA = B if not left); info > 0 marks a singular A.")


@linalg_solve_ex.impl("CPU")
def _solve_ex_cpu(A, B, left=True, check_errors=False):
    vector = _solve_checks(A, B, left)
    a, b = A._array(), B._array()
    if vector:
        b = b[..., None]
    if left:
        x, info = _solve_arrays(a, b)
    else:
        x, info = _solve_arrays(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2))
        x = np.swapaxes(x, -1, -2)
    if vector:
        x = x[..., 0]
    info_t = new_tensor(info, dt.int32)
    if check_errors:
        raise_for_info("torch.linalg.solve_ex", info_t, "solve")
    return return_types.linalg_solve_ex((new_tensor(x, A.dtype, fortran=left), info_t))


def solve(A, B, *, left=True, out=None):
    """X with AX = B (XA = B when not left), batched and broadcast; B may be vectors."""
    _need_tensor("linalg_solve", "A", 1, A)
    _need_tensor("linalg_solve", "B", 2, B)
    result, info = linalg_solve_ex(A, B, left=left)
    raise_for_info("torch.linalg.solve", info, "solve")
    return _into(result, out, "_linalg_solve_ex")


# ---- Cholesky ----------------------------------------------------------------------------

linalg_cholesky_ex = kernel_op(
    "linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> "
    "(Tensor L, Tensor info)", method=False,
    doc="(L, info): the Cholesky factor of each Hermitian positive-definite matrix (read "
        "from its lower triangle; the upper one and U with upper=True).")


@linalg_cholesky_ex.impl("CPU")
def _cholesky_ex_cpu(A, upper=False, check_errors=False):
    check_square("linalg.cholesky", A)
    check_float("linalg.cholesky", A, kernel="cholesky_cpu")
    a = A._array()
    if upper:                       # the upper triangle of A is the lower one of A^H
        a = np.swapaxes(a, -1, -2).conj()
    try:
        L, info = np.linalg.cholesky(a), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        flat = _batched(a)
        info = _cholesky_info(flat)
        L = np.tril(flat)
        ok = info == 0
        if ok.any():
            L[ok] = np.linalg.cholesky(flat[ok])
        L, info = L.reshape(a.shape), info.reshape(a.shape[:-2])
    if upper:
        L = np.swapaxes(L, -1, -2).conj()
    info_t = new_tensor(info, dt.int32)
    if check_errors:
        raise_for_info("linalg.cholesky_ex", info_t, "cholesky")
    return return_types.linalg_cholesky_ex((new_tensor(L, A.dtype, fortran=True), info_t))


def cholesky(A, *, upper=False, out=None):
    """Cholesky factor L (A = L L^H) of each Hermitian positive-definite matrix."""
    _need_tensor("linalg_cholesky", "input", 1, A)
    L, info = linalg_cholesky_ex(A, upper=upper)
    raise_for_info("linalg.cholesky", info, "cholesky")
    return _into(L, out, "linalg_cholesky_ex")


# ---- QR ----------------------------------------------------------------------------------

linalg_qr = kernel_op("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)",
                      method=False, doc="QR decomposition; mode 'reduced', 'complete' or 'r'.")


def _qr_checks(A, mode):
    check_matrix("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    check_float("linalg.qr", A, kernel="geqrf_cpu")


@linalg_qr.impl("CPU")
def _qr_cpu(A, mode="reduced"):
    _qr_checks(A, mode)
    a = A._array()
    m, n = a.shape[-2:]
    if mode == "r":
        r = np.linalg.qr(a, mode="r") if a.size else np.zeros(a.shape[:-2] + (min(m, n), n))
        return return_types.linalg_qr((_empty(A.dtype), new_tensor(r, A.dtype, True)))
    k = m if mode == "complete" else min(m, n)
    if a.size:
        q, r = np.linalg.qr(a, mode=mode)
    else:
        q = np.broadcast_to(np.eye(m, k), a.shape[:-2] + (m, k))
        r = np.zeros(a.shape[:-2] + (k, n))
    return return_types.linalg_qr((new_tensor(q, A.dtype, True), new_tensor(r, A.dtype, True)))


# ---- SVD ---------------------------------------------------------------------------------

_linalg_svd = kernel_op(
    "_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None)"
    " -> (Tensor U, Tensor S, Tensor Vh)", method=False,
    doc="(U, S, Vh) with A = U diag(S) Vh, singular values in decreasing order.")


def svd_arrays(a: np.ndarray, **kw):
    """np.linalg.svd, failing as PyTorch does when a matrix holds infinities or NaNs."""
    try:
        return np.linalg.svd(a, **kw)
    except np.linalg.LinAlgError:
        flat = _batched(a)
        bad = np.flatnonzero(~np.isfinite(flat).all(axis=(-2, -1)))
        i = int(bad[0]) if bad.size else 0
        raise LinAlgError(f"linalg.svd: {_batch_text(i, a.ndim > 2)}The algorithm failed to "
                          "converge because the input matrix contained non-finite values."
                          ) from None


def _svd_checks(A, driver):
    check_matrix("linalg.svd", A)
    check_float("linalg.svd", A, kernel="linalg_svd_cpu")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")


@_linalg_svd.impl("CPU")
def _svd_cpu(A, full_matrices=False, compute_uv=True, driver=None):
    _svd_checks(A, driver)
    a = A._array()
    m, n = a.shape[-2:]
    k, batch, real = min(m, n), a.shape[:-2], A.dtype.to_real()
    if not compute_uv:
        s = svd_arrays(a, compute_uv=False) if a.size else np.zeros(batch + (k,))
        return (_empty(A.dtype), new_tensor(s, real), _empty(A.dtype))
    if a.size:
        u, s, vh = svd_arrays(a, full_matrices=full_matrices)
    else:
        mu, nv = (m, n) if full_matrices else (k, k)
        u = np.broadcast_to(np.eye(m, mu), batch + (m, mu))
        vh = np.broadcast_to(np.eye(nv, n), batch + (nv, n))
        s = np.zeros(batch + (k,))
    return (new_tensor(u, A.dtype, True), new_tensor(s, real), new_tensor(vh, A.dtype, True))


def svd(A, full_matrices=True, *, driver=None, out=None):
    """linalg.svd: (U, S, Vh) with A = U diag(S) Vh."""
    _need_tensor("linalg_svd", "A", 1, A)
    return _into(return_types.linalg_svd(tuple(_linalg_svd(A, full_matrices, driver=driver))),
                 out, "_linalg_svd")


def _requires_grad(A: Tensor) -> bool:
    return A._requires_grad and _grad_state.enabled


def svdvals(A, *, driver=None, out=None):
    """Singular values of each matrix, in decreasing order."""
    _need_tensor("linalg_svdvals", "A", 1, A)
    return _into(_linalg_svd(A, False, _requires_grad(A), driver=driver)[1], out, "_linalg_svd")


def _svd_legacy(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V (not V^H); without compute_uv, U and V are zeros."""
    _need_tensor("svd", "input", 1, input)
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


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@linalg_eigh.impl("CPU")
def _eigh_cpu(A, UPLO="L"):
    check_square("linalg.eigh", A)
    _check_uplo(UPLO)
    if A.dtype.category < dt.FLOAT or A.dtype.itemsize < 4:
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{A.dtype.cname}'")
    a = A._array()
    if a.size:
        w, v = np.linalg.eigh(a, UPLO=UPLO)
    else:
        w, v = np.zeros(a.shape[:-1]), np.zeros(a.shape)
    return return_types.linalg_eigh((new_tensor(w, A.dtype.to_real()),
                                     new_tensor(v, A.dtype, True)))


linalg_eig = kernel_op(
    "linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)", method=False,
    doc="Complex eigenvalues and unit-norm eigenvectors of each square matrix.")


def _check_eig(name, A):
    check_square(name, A)
    if A.dtype.category < dt.FLOAT:
        raise RuntimeError(f"Unknown Complex ScalarType for {A.dtype.cname}")
    check_float(name, A, kernel="linalg_eig_out_cpu")


@linalg_eig.impl("CPU")
def _eig_cpu(A):
    _check_eig("linalg.eig", A)
    a = A._array()
    cd = A.dtype.to_complex() if not A.dtype.is_complex else A.dtype
    if not np.isfinite(a).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    if a.size:
        w, v = np.linalg.eig(a)
    else:
        w, v = np.zeros(a.shape[:-1]), np.zeros(a.shape)
    return return_types.linalg_eig((new_tensor(w, cd), new_tensor(v, cd, True)))


def eigvals(A, *, out=None):
    """Complex eigenvalues of each square matrix."""
    _need_tensor("linalg_eigvals", "input", 1, A)
    _check_eig("linalg.eigvals", A)
    return _into(linalg_eig(A)[0], out)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of each Hermitian matrix."""
    _need_tensor("linalg_eigvalsh", "input", 1, A)
    return _into(linalg_eigh(A, UPLO)[0], out, "_linalg_eigh")


# ---- pseudo-inverse, least squares, rank ---------------------------------------------------

def _tolerances(name, A, atol, rtol, rcond=None):
    """(atol, rtol) as PyTorch: rcond is rtol; with neither given rtol = eps * max(m, n),
    and a positive atol alone makes rtol zero."""
    if rcond is not None:
        rtol = rcond
    for v in (atol, rtol):
        if isinstance(v, Tensor):
            if v.numel() != 1:
                raise NotImplementedError(f"{name}: tensor atol/rtol with more than one "
                                          "element are not supported")
    atol = atol.item() if isinstance(atol, Tensor) else atol
    rtol = rtol.item() if isinstance(rtol, Tensor) else rtol
    if rtol is None:
        eps = float(np.finfo(A.dtype.to_real().np).eps)
        rtol = 0.0 if atol is not None and atol > 0 else eps * max(A._shape[-2:])
    return (0.0 if atol is None else float(atol)), float(rtol)


def _cutoff(s: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Singular values above max(atol, rtol * largest) count; the cut-off per matrix."""
    top = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,))
    return np.maximum(atol, rtol * top)


linalg_pinv = kernel_op(
    "linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, "
    "bool hermitian=False) -> Tensor", method=False,
    doc="Moore-Penrose pseudo-inverse, singular values under the tolerance dropped.")


def _check_pinv_input(A):
    if A.dim() < 2 or A.dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise RuntimeError(f"linalg.pinv({A.dtype.cname}{{{list(A._shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble"
                           " types")


@linalg_pinv.impl("CPU")
def _pinv_cpu(A, atol=None, rtol=None, hermitian=False):
    _check_pinv_input(A)
    atol, rtol = _tolerances("linalg.pinv", A, atol, rtol)
    a = A._array()
    m, n = a.shape[-2:]
    if not a.size:
        return new_tensor(np.zeros(a.shape[:-2] + (n, m)), A.dtype)
    if hermitian:
        w, v = np.linalg.eigh(a)
        keep = np.abs(w) > _cutoff(np.abs(w), atol, rtol)
        winv = np.where(keep, 1 / np.where(keep, w, 1), 0)
        p = (v * winv[..., None, :]) @ np.swapaxes(v, -1, -2).conj()
    else:
        u, s, vh = svd_arrays(a, full_matrices=False)
        keep = s > _cutoff(s, atol, rtol)
        sinv = np.where(keep, 1 / np.where(keep, s, 1), 0)
        p = (np.swapaxes(vh, -1, -2).conj() * sinv[..., None, :]) @ np.swapaxes(u, -1, -2).conj()
    return new_tensor(p, A.dtype)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Pseudo-inverse; rcond is the older name of rtol."""
    _need_tensor("linalg_pinv", "input", 1, A)
    _check_pinv_input(A)
    atol, rtol = _tolerances("linalg.pinv", A, atol, rtol, rcond)
    return _into(linalg_pinv(A, atol=atol, rtol=rtol, hermitian=hermitian), out, "linalg_pinv")


def _rank_arrays(s: np.ndarray, atol, rtol) -> np.ndarray:
    return (s > _cutoff(s, atol, rtol)).sum(-1).astype(np.int64)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")

linalg_lstsq = kernel_op(
    "linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> "
    "(Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)", method=False,
    doc="Least-squares solution of A X = B with residuals, rank and singular values where "
        "the driver computes them ('gelsy' by default).", tags=("dynamic_output_shape",))


@linalg_lstsq.impl("CPU")
def _lstsq_cpu(A, B, rcond=None, driver=None):
    name = "torch.linalg.lstsq"
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype.cname} and other's dtype {B.dtype.cname}")
    check_matrix(name, A)
    _check_float_or_double(A)
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           f"gelss)")
    vector = B.dim() == A.dim() - 1
    b = B._array()[..., None] if vector else B._array()
    if b.ndim < 2 or A._shape[-2] != b.shape[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-2)")
    a = A._array()
    m, n = a.shape[-2:]
    real = A.dtype.to_real()
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    eps = float(np.finfo(real.np).eps)
    rtol = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    if a.size:
        u, s, vh = svd_arrays(a, full_matrices=False)
    else:
        k = min(m, n)
        u, s, vh = np.zeros(batch + (m, k)), np.zeros(batch + (k,)), np.zeros(batch + (k, n))
    keep = s > _cutoff(s, 0.0, rtol) if driver != "gels" else np.ones(s.shape, bool)
    sinv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    x = np.swapaxes(vh, -1, -2).conj() @ (sinv[..., :, None] * (np.swapaxes(u, -1, -2).conj()
                                                                @ b))
    rank = keep.sum(-1).astype(np.int64)
    residuals = _empty(real)
    if m > n and driver != "gelsy" and bool((rank == n).all()):
        r = np.abs(a @ x - b) ** 2
        residuals = new_tensor(r.sum(-2)[..., 0] if vector else r.sum(-2), real)
    rank_t = new_tensor(rank, dt.int64) if driver != "gels" else _empty(dt.int64)
    sv = new_tensor(s, real) if driver in ("gelsd", "gelss") else _empty(real)
    return return_types.linalg_lstsq((_lstsq_solution(x, A.dtype, vector, max(m, n)),
                                      residuals, rank_t, sv))


def _lstsq_solution(x: np.ndarray, dtype: dt.dtype, vector: bool, rows: int) -> Tensor:
    """LAPACK writes the solution over B, in a column-major (max(m, n), k) buffer per
    matrix: the solution is its first n rows, with the buffer's strides."""
    if vector:
        return new_tensor(x[..., 0], dtype)
    buf = new_tensor(np.zeros(x.shape[:-2] + (rows, x.shape[-1])), dtype, fortran=True)
    out = Tensor._make(buf._storage, 0, x.shape, buf._stride, dtype)
    if out.numel():
        assign_array(out._array(), x)
    return out


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution (solution, residuals, rank, singular_values)."""
    _need_tensor("linalg_lstsq", "input", 1, A)
    _need_tensor("linalg_lstsq", "b", 2, B)
    return linalg_lstsq(A, B, rcond, driver=driver)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Number of singular values (eigenvalue magnitudes if hermitian) above the tolerance."""
    name = "torch.linalg.matrix_rank"
    _need_tensor("linalg_matrix_rank", "input", 1, A)
    check_matrix(name, A, "input")
    _check_float_or_double(A)
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = _tolerances(name, A, atol, rtol)
    a = A.cpu()._array()            # LAPACK's decompositions run on the host
    if not a.size:
        s = np.zeros(a.shape[:-2] + (0,))
    elif hermitian:
        s = np.abs(np.linalg.eigvalsh(a))
    else:
        s = svd_arrays(a, compute_uv=False)
    return _into(new_tensor(_rank_arrays(s, atol, rtol), dt.int64).to(A.device), out)


# ---- matrix functions ----------------------------------------------------------------------

def matrix_power(A, n, *, out=None):
    """A ** n for an integer n by repeated squaring (n < 0: of the inverse; 0: identity)."""
    _need_tensor("linalg_matrix_power", "input", 1, A)
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

_EXPM_B = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_EXPM_THETA13 = 5.371920351148152


def _expm(a: np.ndarray) -> np.ndarray:
    """exp of each matrix: Pade(13) with scaling and squaring (Higham 2005), computed in
    double precision, each matrix scaled and squared as much as its 1-norm needs."""
    a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    norm1 = np.abs(a).sum(-2).max(-1)
    with np.errstate(all="ignore"):
        s = np.ceil(np.log2(norm1 / _EXPM_THETA13))
    s = np.where(np.isfinite(s) & (s > 0), s, 0).astype(np.int64)
    a = a / (2.0 ** s)[..., None, None]
    b = _EXPM_B
    ident = np.eye(a.shape[-1], dtype=a.dtype)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * ident)
    v = (a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2
         + b[0] * ident)
    with np.errstate(all="ignore"):
        try:
            r = np.linalg.solve(v - u, v + u)
        except np.linalg.LinAlgError:       # non-finite input: NaN, as LAPACK would give
            r = np.full(a.shape, np.nan, a.dtype)
        for i in range(int(s.max(initial=0))):
            r = np.where((i < s)[..., None, None], r @ r, r)
    return r


linalg_matrix_exp = kernel_op("linalg_matrix_exp(Tensor self) -> Tensor", method=False,
                              doc="Matrix exponential of each square matrix.")


@linalg_matrix_exp.impl("CPU")
def _matrix_exp_cpu(A):
    check_square("linalg.matrix_exp", A)
    if A.dtype.category < dt.FLOAT:
        check_float("linalg.matrix_exp", A)
    a = A._array()
    return new_tensor(_expm(a) if a.size else a, A.dtype)


@composite(method=True)
def matrix_exp(input):
    """Matrix exponential of each square matrix (torch.matrix_exp: linalg.matrix_exp)."""
    return linalg_matrix_exp(input)


# ---- triangular solve ----------------------------------------------------------------------

def _triangular(a: np.ndarray, upper: bool, unitriangular: bool) -> np.ndarray:
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t.copy()
        np.einsum("...ii->...i", t)[...] = 1
    return t


def _substitute(t: np.ndarray, b: np.ndarray, upper: bool) -> np.ndarray:
    """t x = b by substitution, one row at a time (zeros on the diagonal give inf/NaN as
    BLAS trsm does)."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 np.result_type(t, b))
    order = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(all="ignore"):
        for i in order:
            acc = b[..., i, :] - np.einsum("...k,...kj->...j", t[..., i, :], x)
            x[..., i, :] = acc / t[..., i, i, None]
    return x


linalg_solve_triangular = kernel_op(
    "linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, "
    "bool unitriangular=False) -> Tensor", method=False,
    doc="X with AX = B (XA = B if not left) for triangular A (only its triangle is read).")


def _solve_triangular_checks(A, B, left):
    name = "linalg.solve_triangular"
    check_matrix(name, A)
    check_matrix(name, B, "B")
    if A.dtype.category < dt.FLOAT or A.dtype.itemsize < 4:
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for "
                                  f"'{A.dtype.cname}'")
    _same_dtype(name, "A", A, "B", B)
    n = A._shape[-1]
    if A._shape[-2] != n:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A._shape[-2]} by {n} matrices")
    if (B._shape[-2] if left else B._shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]})")


@linalg_solve_triangular.impl("CPU")
def _solve_triangular_cpu(A, B, upper, left=True, unitriangular=False):
    _solve_triangular_checks(A, B, left)
    t = _triangular(A._array(), upper, unitriangular)
    b = B._array()
    if not left:      # X A = B  <=>  A^T X^T = B^T
        t, b, upper = np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not upper
    x = _substitute(t, b, upper)
    if not left:
        x = np.swapaxes(x, -1, -2)
    return new_tensor(x, A.dtype, fortran=True)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with AX = B (XA = B if not left) for upper/lower triangular A."""
    _need_tensor("linalg_solve_triangular", "input", 1, A)
    _need_tensor("linalg_solve_triangular", "B", 2, B)
    result = linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)
    return _into(result, out, "linalg_solve_triangular")


# ---- cross, vecdot, multi_dot --------------------------------------------------------------

linalg_cross = kernel_op("linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor",
                         method=False, doc="Cross product of 3-vectors along `dim`.")
linalg_cross.on_cuda = "shared"


def _cross_checks(self, other, dim):
    """The broadcast shape and the wrapped dim, after PyTorch's checks."""
    _need_tensor("linalg_cross", "other", 2, other)
    if self.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if self.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {self.dtype.cname} but found "
                           f"{other.dtype.cname}")
    shape = broadcast_shapes2(self._shape, other._shape)
    d = wrap_dim(dim, len(shape))
    if self._shape[d] != 3 or other._shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{self._shape[d]} and {other._shape[d]}")
    return shape, d


@linalg_cross.impl("CPU")
def _cross_cpu(self, other, dim=-1):
    shape, d = _cross_checks(self, other, dim)
    a = np.broadcast_to(self._array(), shape)
    b = np.broadcast_to(other._array(), shape)
    return new_tensor(np.cross(a, b, axis=d), self.dtype, device=self.device)


def cross(input, other, dim=None, *, out=None):
    """torch.cross: linalg.cross along `dim`; without dim, along the first dim of size 3
    (deprecated, with PyTorch's warning)."""
    _need_tensor("cross", "input", 1, input)
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
    _need_tensor("linalg_vecdot", "x", 1, x)
    _need_tensor("linalg_vecdot", "y", 2, y)
    _same_dtype("linalg.vecdot", "x", x, "y", y)
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


def _batch(A):
    return tuple(A._shape[:-2])


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
    if _solve_checks(A, B, left):
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
    _qr_checks(A, mode)
    (m, n), batch = A._shape[-2:], _batch(A)
    k = m if mode == "complete" else min(m, n)
    Q = _meta((0,), A.dtype) if mode == "r" else _meta(batch + (m, k), A.dtype, True)
    return return_types.linalg_qr((Q, _meta(batch + (k if mode != "r" else min(m, n), n),
                                            A.dtype, True)))


@_linalg_svd.impl("Meta")
def _svd_meta(A, full_matrices=False, compute_uv=True, driver=None):
    _svd_checks(A, driver)
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
    _check_uplo(UPLO)
    check_float("linalg.eigh", A, kernel="linalg_eigh_cpu")
    return return_types.linalg_eigh((_meta(A._shape[:-1], A.dtype.to_real()),
                                     _meta(A._shape, A.dtype, True)))


@linalg_eig.impl("Meta")
def _eig_meta(A):
    _check_eig("linalg.eig", A)
    cd = A.dtype if A.dtype.is_complex else A.dtype.to_complex()
    return return_types.linalg_eig((_meta(A._shape[:-1], cd), _meta(A._shape, cd, True)))


@linalg_pinv.impl("Meta")
def _pinv_meta(A, atol=None, rtol=None, hermitian=False):
    _check_pinv_input(A)
    return _meta(_batch(A) + (A._shape[-1], A._shape[-2]), A.dtype)


@linalg_matrix_exp.impl("Meta")
def _matrix_exp_meta(A):
    check_square("linalg.matrix_exp", A)
    if A.dtype.category < dt.FLOAT:
        check_float("linalg.matrix_exp", A)
    return _meta(A._shape, A.dtype)


@linalg_solve_triangular.impl("Meta")
def _solve_triangular_meta(A, B, upper, left=True, unitriangular=False):
    _solve_triangular_checks(A, B, left)
    shape = broadcast_shapes2(_batch(A), tuple(B._shape[:-2])) + tuple(B._shape[-2:])
    return _meta(shape, A.dtype, True)


@linalg_cross.impl("Meta")
def _cross_meta(self, other, dim=-1):
    return _meta(_cross_checks(self, other, dim)[0], self.dtype)


def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with a relative tolerance rcond."""
    return pinv(input, rcond)


export("pinverse", pinverse, method=True)


# ---- deprecated torch.* forms ---------------------------------------------------------------

cholesky_op = kernel_op("cholesky(Tensor self, bool upper=False) -> Tensor", function=False,
                        method=False, doc="The deprecated torch.cholesky.")


@cholesky_op.impl("CPU")
def _cholesky_legacy_cpu(self, upper=False):
    L, info = _cholesky_ex_cpu(self, upper)
    raise_for_info("cholesky", info, "cholesky")
    return L


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
    _need_tensor("cholesky", "input", 1, input)
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
    _need_tensor("qr", "input", 1, input)
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
    _need_tensor("triangular_solve", "input", 1, input)
    _need_tensor("triangular_solve", "A", 2, A)
    return _into(triangular_solve_op(input, A, upper, transpose, unitriangular), out,
                 "triangular_solve")


def _triangular_solve_method(self, A, upper=True, transpose=False, unitriangular=False):
    return triangular_solve(self, A, upper, transpose, unitriangular)


_triangular_solve_method.__name__ = "triangular_solve"
_triangular_solve_method.__qualname__ = "Tensor.triangular_solve"
export("triangular_solve", triangular_solve)
export("triangular_solve", _triangular_solve_method, method=True, function=False)


def _legacy_solve_checks(b, A, name=""):
    if b.dim() < 2:
        raise RuntimeError(f"{name}Expected b to have at least 2 dimensions, but it has "
                           f"{b.dim()} dimensions instead")
    if A.dim() < 2:
        raise RuntimeError(f"{name}Expected A to have at least 2 dimensions, but it has "
                           f"{A.dim()} dimensions instead")
    if A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are "
                           f"{A._shape[-2]} by {A._shape[-1]} matrices")
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{b.dtype.cname} and A of type {A.dtype.cname} instead.")
    if A._shape[-1] != b._shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name.rstrip(': ')}: each A matrix "
                           f"is {A._shape[-1]} by {A._shape[-1]} but each b matrix is "
                           f"{b._shape[-2]} by {b._shape[-1]}")


@triangular_solve_op.impl("CPU")
def _triangular_solve_cpu(self, A, upper=True, transpose=False, unitriangular=False):
    _legacy_solve_checks(self, A, "torch.triangular_solve: ")
    check_float("triangular_solve", A, kernel="triangular_solve_cpu")
    batch = broadcast_shapes2(_batch(self), _batch(A))
    t = _triangular(np.broadcast_to(A._array(), batch + A._shape[-2:]), upper, unitriangular)
    if transpose:
        t, upper = np.swapaxes(t, -1, -2), not upper
    x = _substitute(t, np.broadcast_to(self._array(), batch + self._shape[-2:]), upper)
    clone = new_tensor(np.broadcast_to(A._array(), batch + A._shape[-2:]), A.dtype, True)
    return return_types.triangular_solve((new_tensor(x, A.dtype, True), clone))


@triangular_solve_op.impl("Meta")
def _triangular_solve_meta(self, A, upper=True, transpose=False, unitriangular=False):
    _legacy_solve_checks(self, A, "torch.triangular_solve: ")
    check_float("triangular_solve", A, kernel="triangular_solve_cpu")
    batch = broadcast_shapes2(_batch(self), _batch(A))
    return return_types.triangular_solve((_meta(batch + self._shape[-2:], A.dtype, True),
                                          _meta(batch + A._shape[-2:], A.dtype, True)))


cholesky_solve_op = kernel_op(
    "cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor",
    doc="X with (L L^H) X = B, from the Cholesky factor L (U^H U with upper=True).")


@cholesky_solve_op.impl("CPU")
def _cholesky_solve_cpu(self, input2, upper=False):
    _legacy_solve_checks(self, input2)
    check_float("cholesky_solve", input2, kernel="cholesky_solve_cpu")
    L = input2._array()
    if upper:
        L = np.swapaxes(L, -1, -2).conj()
    L = np.tril(L)
    y = _substitute(L, self._array(), upper=False)
    x = _substitute(np.swapaxes(L, -1, -2).conj(), y, upper=True)
    return new_tensor(x, self.dtype, True)


@cholesky_solve_op.impl("Meta")
def _cholesky_solve_meta(self, input2, upper=False):
    _legacy_solve_checks(self, input2)
    check_float("cholesky_solve", input2, kernel="cholesky_solve_cpu")
    batch = broadcast_shapes2(_batch(self), _batch(input2))
    return _meta(batch + self._shape[-2:], self.dtype, True)


cholesky_inverse_op = kernel_op(
    "cholesky_inverse(Tensor self, bool upper=False) -> Tensor",
    doc="(L L^H)^-1 from the Cholesky factor L (U^H U with upper=True).")


@cholesky_inverse_op.impl("CPU")
def _cholesky_inverse_cpu(self, upper=False):
    check_square("cholesky_inverse", self)
    check_float("cholesky_inverse", self, kernel="cholesky_inverse_out_cpu")
    n = self._shape[-1]
    identity = Tensor._empty(self._shape, self.dtype, CPU)
    if identity.numel():
        assign_array(identity._array(), np.broadcast_to(np.eye(n), self._shape))
    return _cholesky_solve_cpu(identity, self, upper)


@cholesky_inverse_op.impl("Meta")
def _cholesky_inverse_meta(self, upper=False):
    check_square("cholesky_inverse", self)
    check_float("cholesky_inverse", self, kernel="cholesky_inverse_out_cpu")
    return _meta(self._shape, self.dtype, True)


# ---- LU ------------------------------------------------------------------------------------

def _permutations(ipiv: np.ndarray, m: int) -> np.ndarray:
    """The row permutation of each matrix that LAPACK's swaps `ipiv` (..., k) describe:
    perm[..., i] is the row of A that becomes row i of L U."""
    batch = ipiv.shape[:-1]
    flat = ipiv.reshape((math.prod(batch), ipiv.shape[-1])) - 1
    perm = np.broadcast_to(np.arange(m), (flat.shape[0], m)).copy()
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        top = perm[rows, j].copy()
        perm[rows, j] = perm[rows, p]
        perm[rows, p] = top
    return perm.reshape(batch + (m,))


def _permutation_matrices(perm: np.ndarray, dtype) -> np.ndarray:
    """P with A = P L U: P[perm[i], i] = 1."""
    m = perm.shape[-1]
    P = np.zeros(perm.shape + (m,), dtype)
    np.put_along_axis(P, perm[..., :, None], 1, axis=-1)
    return np.swapaxes(P, -1, -2)


def _check_lu_input(name: str, A: Tensor) -> None:
    if A.dim() < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(A._shape)} instead")
    if A.dtype.category < dt.FLOAT or A.dtype.itemsize < 4:
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{A.dtype.cname}'")


def _lu_arrays(A: Tensor, pivot: bool):
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    a = A._array()
    m, n = a.shape[-2:]
    batch, k = a.shape[:-2], min(m, n)
    if not a.size:
        return (np.zeros(a.shape), np.broadcast_to(np.arange(1, k + 1, dtype=np.int32),
                                                   batch + (k,)), np.zeros(batch, np.int32))
    lu, ipiv, info, _ = _getrf(_batched(a))
    return lu.reshape(a.shape), ipiv.reshape(batch + (k,)), info.reshape(batch)


linalg_lu_factor_ex = kernel_op(
    "linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> "
    "(Tensor LU, Tensor pivots, Tensor info)", method=False,
    doc="(LU, pivots, info): L and U packed in one matrix, LAPACK's 1-based row swaps.")


@linalg_lu_factor_ex.impl("CPU")
def _lu_factor_ex_cpu(A, pivot=True, check_errors=False):
    _check_lu_input("linalg.lu_factor_ex", A)
    lu, ipiv, info = _lu_arrays(A, pivot)
    info_t = new_tensor(info, dt.int32)
    if check_errors:
        _raise_for_lu("torch.linalg.lu_factor_ex", info_t)
    return return_types.linalg_lu_factor_ex((new_tensor(lu, A.dtype, True),
                                             new_tensor(ipiv, dt.int32), info_t))


def _raise_for_lu(name: str, info: Tensor) -> None:
    codes = info._array().reshape(-1)
    bad = np.flatnonzero(codes)
    if bad.size:
        i, k = int(bad[0]), int(codes[bad[0]])
        raise RuntimeError(f"{name}: {_batch_text(i, info.dim() > 0)}U[{k},{k}] is zero and "
                           "using it on lu_solve would result in a division by zero. If you "
                           "still want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of each matrix; an error when some U has a zero on its diagonal."""
    _need_tensor("linalg_lu_factor", "A", 1, A)
    LU, pivots, info = linalg_lu_factor_ex(A, pivot=pivot)
    _raise_for_lu("torch.linalg.lu_factor", info)
    return _into(return_types.linalg_lu_factor((LU, pivots)), out, "linalg_lu_factor_ex")


def _unpack_arrays(lu: np.ndarray, ipiv: np.ndarray, unpack_data=True, unpack_pivots=True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    P = L = U = None
    if unpack_pivots:
        P = _permutation_matrices(_permutations(ipiv, m), lu.dtype)
    if unpack_data:
        L = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
        U = np.triu(lu[..., :k, :])
    return P, L, U


linalg_lu = kernel_op("linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, "
                      "Tensor U)", method=False, doc="(P, L, U) with A = P L U.")


@linalg_lu.impl("CPU")
def _lu_cpu(A, pivot=True):
    _check_lu_input("linalg.lu", A)
    lu, ipiv, _ = _lu_arrays(A, pivot)
    P, L, U = _unpack_arrays(lu, ipiv)
    return return_types.linalg_lu((new_tensor(P, A.dtype), new_tensor(L, A.dtype),
                                   new_tensor(U, A.dtype)))


lu_unpack_op = kernel_op(
    "lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
    "bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)", method=False,
    doc="(P, L, U) from lu_factor's packed LU and pivots.")


def _check_pivots(LU_pivots):
    if LU_pivots.dtype is not dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype. Note: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")


@lu_unpack_op.impl("CPU")
def _lu_unpack_cpu(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    _check_pivots(LU_pivots)
    P, L, U = _unpack_arrays(LU_data._array(), LU_pivots._array(), unpack_data, unpack_pivots)
    d = LU_data.dtype
    return return_types.lu_unpack(tuple(_empty(d) if x is None else new_tensor(x, d)
                                        for x in (P, L, U)))


@lu_unpack_op.impl("Meta")
def _lu_unpack_meta(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    _check_pivots(LU_pivots)
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


def _lu_solve_checks(LU, pivots, B, left):
    name = "linalg.lu_solve"
    check_square(name, LU, "LU")
    check_matrix(name, B, "B")
    n = LU._shape[-1]
    if (B._shape[-2] if left else B._shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]})")
    _same_dtype(name, "LU", LU, "B", B)
    if pivots.dtype is not dt.int32:
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type torch.int32")
    if pivots.dim() == 0 or pivots._shape[-1] != n:
        raise RuntimeError(f"{name}: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if pivots._shape != LU._shape[:-1]:
        raise RuntimeError(f"{name}: Expected LU.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(pivots._shape)} instead")


@linalg_lu_solve.impl("CPU")
def _lu_solve_cpu(LU, pivots, B, left=True, adjoint=False):
    _lu_solve_checks(LU, pivots, B, left)
    P, L, U = _unpack_arrays(LU._array(), pivots._array())
    A = P @ L @ U                            # solved again, as one batched LAPACK solve
    if adjoint:
        A = np.swapaxes(A, -1, -2).conj()
    b = B._array()
    if left:
        x, _ = _solve_arrays(A, b)
    else:
        x, _ = _solve_arrays(np.swapaxes(A, -1, -2), np.swapaxes(b, -1, -2))
        x = np.swapaxes(x, -1, -2)
    return new_tensor(x, LU.dtype, fortran=left)


@linalg_lu_solve.impl("Meta")
def _lu_solve_meta(LU, pivots, B, left=True, adjoint=False):
    _lu_solve_checks(LU, pivots, B, left)
    batch = broadcast_shapes2(_batch(LU), _batch(B))
    return _meta(batch + B._shape[-2:], LU.dtype, fortran=left)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B from (LU, pivots) = lu_factor(A)."""
    _need_tensor("linalg_lu_solve", "LU", 1, LU)
    return _into(linalg_lu_solve(LU, pivots, B, left=left, adjoint=adjoint), out,
                 "linalg_lu_solve")


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U."""
    _need_tensor("linalg_lu", "A", 1, A)
    return _into(linalg_lu(A, pivot=pivot), out, "linalg_lu")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """torch.lu_unpack: (P, L, U) from lu_factor's results."""
    _need_tensor("lu_unpack", "LU_data", 1, LU_data)
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
