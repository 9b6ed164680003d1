"""CPU kernels for the matrix decompositions and solvers (LAPACK through NumPy): det, slogdet,
inv, solve, cholesky, qr, svd, eigh, eig, pinv, lstsq, matrix_exp, triangular solves, lu and
cross. Results are laid out column-major (LAPACK's), as PyTorch's; a failed factorization
raises LinAlgError with PyTorch's message."""
from __future__ import annotations

import math

import numpy as np

from ... import return_types
from ...core import dtype as dt
from ...core.device import CPU
from ...core.grad_state import state as _grad_state
from ...core.shape import broadcast_shapes2, contiguous_strides, wrap_dim
from ...core.tensor import Tensor
from .copy import assign_array


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular, not positive-definite)."""


LinAlgError.__module__ = "glasstorch.linalg"


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


def check_float_or_double(A: Tensor) -> None:
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


def need_tensor(name, arg, pos, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(value).__name__}")


def same_dtype(name, a_name, a, b_name, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}: Expected {a_name} and {b_name} to have the same dtype, but "
                           f"found {a_name} of type {a.dtype.cname} and {b_name} of type "
                           f"{b.dtype.cname} instead")


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


def empty(dtype):
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
    examples = getattr(type(info), "_examples", None)    # under vmap: every example's codes
    if examples is not None:
        info = examples(info)
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


def det_cpu(A):
    check_square("linalg.det", A)
    check_float("linalg.det", A, kernel="lu_cpu")
    return new_tensor(np.linalg.det(A._array()), A.dtype)


def slogdet_cpu(A):
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    sign, logabs = np.linalg.slogdet(A._array())
    return return_types.linalg_slogdet((new_tensor(sign, A.dtype),
                                        new_tensor(logabs, A.dtype.to_real())))


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


def inv_ex_cpu(A, check_errors=False):
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    inv, info = _inv_arrays(A._array())
    info_t = new_tensor(info, dt.int32)
    if check_errors:
        raise_for_info("linalg.inv_ex", info_t, "inv")
    return return_types.linalg_inv_ex((new_tensor(inv, A.dtype, fortran=True), info_t))


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """B is a (batch of) vector(s) when 1-D, or when its shape is A's without the last dim."""
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and B._shape == A._shape[:-1])


def solve_checks(A, B, left, name="linalg.solve"):
    check_square(name, A)
    check_float(name, A, kernel="lu_cpu")
    same_dtype(name, "A", A, "B", B)
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


def solve_ex_cpu(A, B, left=True, check_errors=False):
    vector = solve_checks(A, B, left)
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


def cholesky_ex_cpu(A, upper=False, check_errors=False):
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


def qr_checks(A, mode):
    check_matrix("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    check_float("linalg.qr", A, kernel="geqrf_cpu")


def qr_cpu(A, mode="reduced"):
    qr_checks(A, mode)
    a = A._array()
    m, n = a.shape[-2:]
    if mode == "r":
        r = np.linalg.qr(a, mode="r") if a.size else np.zeros(a.shape[:-2] + (min(m, n), n))
        return return_types.linalg_qr((empty(A.dtype), new_tensor(r, A.dtype, True)))
    k = m if mode == "complete" else min(m, n)
    if a.size:
        q, r = np.linalg.qr(a, mode=mode)
    else:
        q = np.broadcast_to(np.eye(m, k), a.shape[:-2] + (m, k))
        r = np.zeros(a.shape[:-2] + (k, n))
    return return_types.linalg_qr((new_tensor(q, A.dtype, True), new_tensor(r, A.dtype, True)))


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


def svd_checks(A, driver):
    check_matrix("linalg.svd", A)
    check_float("linalg.svd", A, kernel="linalg_svd_cpu")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")


def svd_cpu(A, full_matrices=False, compute_uv=True, driver=None):
    svd_checks(A, driver)
    a = A._array()
    m, n = a.shape[-2:]
    k, batch, real = min(m, n), a.shape[:-2], A.dtype.to_real()
    if not compute_uv:
        s = svd_arrays(a, compute_uv=False) if a.size else np.zeros(batch + (k,))
        return (empty(A.dtype), new_tensor(s, real), empty(A.dtype))
    if a.size:
        u, s, vh = svd_arrays(a, full_matrices=full_matrices)
    else:
        mu, nv = (m, n) if full_matrices else (k, k)
        u = np.broadcast_to(np.eye(m, mu), batch + (m, mu))
        vh = np.broadcast_to(np.eye(nv, n), batch + (nv, n))
        s = np.zeros(batch + (k,))
    return (new_tensor(u, A.dtype, True), new_tensor(s, real), new_tensor(vh, A.dtype, True))


def check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh_cpu(A, UPLO="L"):
    check_square("linalg.eigh", A)
    check_uplo(UPLO)
    if A.dtype.category < dt.FLOAT or A.dtype.itemsize < 4:
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{A.dtype.cname}'")
    a = A._array()
    if a.size:
        w, v = np.linalg.eigh(a, UPLO=UPLO)
    else:
        w, v = np.zeros(a.shape[:-1]), np.zeros(a.shape)
    return return_types.linalg_eigh((new_tensor(w, A.dtype.to_real()),
                                     new_tensor(v, A.dtype, True)))


def check_eig(name, A):
    check_square(name, A)
    if A.dtype.category < dt.FLOAT:
        raise RuntimeError(f"Unknown Complex ScalarType for {A.dtype.cname}")
    check_float(name, A, kernel="linalg_eig_out_cpu")


def eig_cpu(A):
    check_eig("linalg.eig", A)
    a = A._array()
    cd = A.dtype.to_complex() if not A.dtype.is_complex else A.dtype
    if not np.isfinite(a).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    if a.size:
        w, v = np.linalg.eig(a)
    else:
        w, v = np.zeros(a.shape[:-1]), np.zeros(a.shape)
    return return_types.linalg_eig((new_tensor(w, cd), new_tensor(v, cd, True)))


def tolerances(name, A, atol, rtol, rcond=None):
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


def cutoff(s: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Singular values above max(atol, rtol * largest) count; the cut-off per matrix."""
    top = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,))
    return np.maximum(atol, rtol * top)


def check_pinv_input(A):
    if A.dim() < 2 or A.dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise RuntimeError(f"linalg.pinv({A.dtype.cname}{{{list(A._shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble"
                           " types")


def pinv_cpu(A, atol=None, rtol=None, hermitian=False):
    check_pinv_input(A)
    atol, rtol = tolerances("linalg.pinv", A, atol, rtol)
    a = A._array()
    m, n = a.shape[-2:]
    if not a.size:
        return new_tensor(np.zeros(a.shape[:-2] + (n, m)), A.dtype)
    if hermitian:
        w, v = np.linalg.eigh(a)
        keep = np.abs(w) > cutoff(np.abs(w), atol, rtol)
        winv = np.where(keep, 1 / np.where(keep, w, 1), 0)
        p = (v * winv[..., None, :]) @ np.swapaxes(v, -1, -2).conj()
    else:
        u, s, vh = svd_arrays(a, full_matrices=False)
        keep = s > cutoff(s, atol, rtol)
        sinv = np.where(keep, 1 / np.where(keep, s, 1), 0)
        p = (np.swapaxes(vh, -1, -2).conj() * sinv[..., None, :]) @ np.swapaxes(u, -1, -2).conj()
    return new_tensor(p, A.dtype)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq_cpu(A, B, rcond=None, driver=None):
    name = "torch.linalg.lstsq"
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype.cname} and other's dtype {B.dtype.cname}")
    check_matrix(name, A)
    check_float_or_double(A)
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
    keep = s > cutoff(s, 0.0, rtol) if driver != "gels" else np.ones(s.shape, bool)
    sinv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    x = np.swapaxes(vh, -1, -2).conj() @ (sinv[..., :, None] * (np.swapaxes(u, -1, -2).conj()
                                                                @ b))
    rank = keep.sum(-1).astype(np.int64)
    residuals = empty(real)
    if m > n and driver != "gelsy" and bool((rank == n).all()):
        r = np.abs(a @ x - b) ** 2
        residuals = new_tensor(r.sum(-2)[..., 0] if vector else r.sum(-2), real)
    rank_t = new_tensor(rank, dt.int64) if driver != "gels" else empty(dt.int64)
    sv = new_tensor(s, real) if driver in ("gelsd", "gelss") else empty(real)
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


def matrix_exp_cpu(A):
    check_square("linalg.matrix_exp", A)
    if A.dtype.category < dt.FLOAT:
        check_float("linalg.matrix_exp", A)
    a = A._array()
    return new_tensor(_expm(a) if a.size else a, A.dtype)


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


def solve_triangular_checks(A, B, left):
    name = "linalg.solve_triangular"
    check_matrix(name, A)
    check_matrix(name, B, "B")
    if A.dtype.category < dt.FLOAT or A.dtype.itemsize < 4:
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for "
                                  f"'{A.dtype.cname}'")
    same_dtype(name, "A", A, "B", B)
    n = A._shape[-1]
    if A._shape[-2] != n:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A._shape[-2]} by {n} matrices")
    if (B._shape[-2] if left else B._shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]})")


def solve_triangular_cpu(A, B, upper, left=True, unitriangular=False):
    solve_triangular_checks(A, B, left)
    t = _triangular(A._array(), upper, unitriangular)
    b = B._array()
    if not left:      # X A = B  <=>  A^T X^T = B^T
        t, b, upper = np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not upper
    x = _substitute(t, b, upper)
    if not left:
        x = np.swapaxes(x, -1, -2)
    return new_tensor(x, A.dtype, fortran=True)


def cross_checks(self, other, dim):
    """The broadcast shape and the wrapped dim, after PyTorch's checks."""
    need_tensor("linalg_cross", "other", 2, other)
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


def cross_cpu(self, other, dim=-1):
    shape, d = cross_checks(self, other, dim)
    a = np.broadcast_to(self._array(), shape)
    b = np.broadcast_to(other._array(), shape)
    return new_tensor(np.cross(a, b, axis=d), self.dtype, device=self.device)


def _batch(A):
    return tuple(A._shape[:-2])


def cholesky_legacy_cpu(self, upper=False):
    L, info = cholesky_ex_cpu(self, upper)
    raise_for_info("cholesky", info, "cholesky")
    return L


def legacy_solve_checks(b, A, name=""):
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


def _triangular_solve_cpu(self, A, upper=True, transpose=False, unitriangular=False):
    legacy_solve_checks(self, A, "torch.triangular_solve: ")
    check_float("triangular_solve", A, kernel="triangular_solve_cpu")
    batch = broadcast_shapes2(_batch(self), _batch(A))
    t = _triangular(np.broadcast_to(A._array(), batch + A._shape[-2:]), upper, unitriangular)
    if transpose:
        t, upper = np.swapaxes(t, -1, -2), not upper
    x = _substitute(t, np.broadcast_to(self._array(), batch + self._shape[-2:]), upper)
    clone = new_tensor(np.broadcast_to(A._array(), batch + A._shape[-2:]), A.dtype, True)
    return return_types.triangular_solve((new_tensor(x, A.dtype, True), clone))


def _cholesky_solve_cpu(self, input2, upper=False):
    legacy_solve_checks(self, input2)
    check_float("cholesky_solve", input2, kernel="cholesky_solve_cpu")
    L = input2._array()
    if upper:
        L = np.swapaxes(L, -1, -2).conj()
    L = np.tril(L)
    y = _substitute(L, self._array(), upper=False)
    x = _substitute(np.swapaxes(L, -1, -2).conj(), y, upper=True)
    return new_tensor(x, self.dtype, True)


def cholesky_inverse_cpu(self, upper=False):
    check_square("cholesky_inverse", self)
    check_float("cholesky_inverse", self, kernel="cholesky_inverse_out_cpu")
    n = self._shape[-1]
    identity = Tensor._empty(self._shape, self.dtype, CPU)
    if identity.numel():
        assign_array(identity._array(), np.broadcast_to(np.eye(n), self._shape))
    return _cholesky_solve_cpu(identity, self, upper)


def _permutation_matrices(perm: np.ndarray, dtype) -> np.ndarray:
    """P with A = P L U: P[perm[i], i] = 1."""
    m = perm.shape[-1]
    P = np.zeros(perm.shape + (m,), dtype)
    np.put_along_axis(P, perm[..., :, None], 1, axis=-1)
    return np.swapaxes(P, -1, -2)


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


def lu_factor_ex_cpu(A, pivot=True, check_errors=False):
    _check_lu_input("linalg.lu_factor_ex", A)
    lu, ipiv, info = _lu_arrays(A, pivot)
    info_t = new_tensor(info, dt.int32)
    if check_errors:
        raise_for_lu("torch.linalg.lu_factor_ex", info_t)
    return return_types.linalg_lu_factor_ex((new_tensor(lu, A.dtype, True),
                                             new_tensor(ipiv, dt.int32), info_t))


def raise_for_lu(name: str, info: Tensor) -> None:
    codes = info._array().reshape(-1)
    bad = np.flatnonzero(codes)
    if bad.size:
        i, k = int(bad[0]), int(codes[bad[0]])
        raise RuntimeError(f"{name}: {_batch_text(i, info.dim() > 0)}U[{k},{k}] is zero and "
                           "using it on lu_solve would result in a division by zero. If you "
                           "still want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


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


def _lu_cpu(A, pivot=True):
    _check_lu_input("linalg.lu", A)
    lu, ipiv, _ = _lu_arrays(A, pivot)
    P, L, U = _unpack_arrays(lu, ipiv)
    return return_types.linalg_lu((new_tensor(P, A.dtype), new_tensor(L, A.dtype),
                                   new_tensor(U, A.dtype)))


def check_pivots(LU_pivots):
    if LU_pivots.dtype is not dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype. Note: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")


def lu_unpack_cpu(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    check_pivots(LU_pivots)
    P, L, U = _unpack_arrays(LU_data._array(), LU_pivots._array(), unpack_data, unpack_pivots)
    d = LU_data.dtype
    return return_types.lu_unpack(tuple(empty(d) if x is None else new_tensor(x, d)
                                        for x in (P, L, U)))


def lu_solve_checks(LU, pivots, B, left):
    name = "linalg.lu_solve"
    check_square(name, LU, "LU")
    check_matrix(name, B, "B")
    n = LU._shape[-1]
    if (B._shape[-2] if left else B._shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]})")
    same_dtype(name, "LU", LU, "B", B)
    if pivots.dtype is not dt.int32:
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type torch.int32")
    if pivots.dim() == 0 or pivots._shape[-1] != n:
        raise RuntimeError(f"{name}: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if pivots._shape != LU._shape[:-1]:
        raise RuntimeError(f"{name}: Expected LU.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(pivots._shape)} instead")


def lu_solve_cpu(LU, pivots, B, left=True, adjoint=False):
    lu_solve_checks(LU, pivots, B, left)
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


def _check_lu_input(name: str, A: Tensor) -> None:
    if A.dim() < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(A._shape)} instead")
    if A.dtype.category < dt.FLOAT or A.dtype.itemsize < 4:
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{A.dtype.cname}'")


def rank_array(a: np.ndarray, hermitian: bool, atol, rtol) -> np.ndarray:
    """The rank of each matrix of `a`: its singular values (eigenvalue magnitudes if
    hermitian) above the tolerance."""
    if not a.size:
        s = np.zeros(a.shape[:-2] + (0,))
    elif hermitian:
        s = np.abs(np.linalg.eigvalsh(a))
    else:
        s = svd_arrays(a, compute_uv=False)
    return (s > cutoff(s, atol, rtol)).sum(-1).astype(np.int64)
