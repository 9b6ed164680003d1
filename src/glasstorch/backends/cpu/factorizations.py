"""The two LAPACK factorizations NumPy does not expose as such: Householder QR in LAPACK's
compact form (geqrf) and the Bunch-Kaufman LDL^T factorization of a symmetric or Hermitian
indefinite matrix (sytrf/hetrf) with its solve (sytrs/hetrs).

geqrf is NumPy's `qr(mode="raw")`, which calls LAPACK's geqrf and hands back the transposed
(row-major) compact form. The LDL^T factorization follows LAPACK's unblocked algorithm for
the lower triangle (xSYTF2/xHETF2): the same pivot choices, the same 1x1 and 2x2 diagonal
blocks and LAPACK's pivot encoding (1-based; a 2x2 block has both entries negative), so the
factors equal PyTorch's wherever the pivot choices are not ties.
"""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ... import return_types
from .decompositions import LinAlgError, check_float, check_matrix, check_square, new_tensor

# Bunch and Kaufman's threshold: the growth bound of a 1x1 pivot against a 2x2 one.
_ALPHA = (1.0 + np.sqrt(17.0)) / 8.0


def geqrf_cpu(A):
    """(a, tau): R on and above a's diagonal, the Householder vectors below it."""
    if A.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if A.dtype.category < dt.FLOAT or A.dtype in (dt.float16, dt.bfloat16):
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{A.dtype.cname}'")
    a = A._array()
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        h, tau = np.zeros(a.shape, a.dtype), np.zeros(a.shape[:-2] + (k,), a.dtype)
    else:
        h, tau = np.linalg.qr(a, mode="raw")
        h = np.swapaxes(h, -1, -2)
    return return_types.geqrf((new_tensor(h, A.dtype, True), new_tensor(tau, A.dtype)))


def _abs1(x):
    """LAPACK's cheap modulus |re| + |im| (the modulus itself for real numbers)."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


def _first_argmax(values: np.ndarray) -> int:
    return int(np.argmax(values))                  # the first of equal maxima, as I_AMAX


def _sytf2_lower(a: np.ndarray, hermitian: bool):
    """Factor a (n x n, lower triangle read, overwritten) in place; (pivots, info)."""
    n = a.shape[0]
    conj = np.conj if hermitian else (lambda x: x)
    ipiv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        if hermitian:
            a[k, k] = a[k, k].real
        absakk = abs(a[k, k].real) if hermitian else _abs1(a[k, k])
        if k < n - 1:
            imax = k + 1 + _first_argmax(_abs1(a[k + 1:, k]))
            colmax = _abs1(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or np.isnan(absakk):
            info = info or k + 1
            kp = k
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                jmax = k + _first_argmax(_abs1(a[imax, k:imax]))
                rowmax = _abs1(a[imax, jmax])
                if imax < n - 1:
                    jmax = imax + 1 + _first_argmax(_abs1(a[imax + 1:, imax]))
                    rowmax = max(rowmax, _abs1(a[jmax, imax]))
                diag = abs(a[imax, imax].real) if hermitian else _abs1(a[imax, imax])
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif diag >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:                           # symmetric interchange of kk and kp
                a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                between = a[kk + 1:kp, kk].copy()
                a[kk + 1:kp, kk] = conj(a[kp, kk + 1:kp])
                a[kp, kk + 1:kp] = conj(between)
                if hermitian:
                    a[kp, kk] = np.conj(a[kp, kk])
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if kstep == 1:
                if k < n - 1:
                    d11 = 1.0 / (a[k, k].real if hermitian else a[k, k])
                    col = a[k + 1:, k].copy()
                    a[k + 1:, k + 1:] -= np.tril(d11 * np.outer(col, conj(col)))
                    if hermitian:
                        idx = np.arange(k + 1, n)
                        a[idx, idx] = a[idx, idx].real
                    a[k + 1:, k] = d11 * col
            elif k < n - 2:
                d21 = a[k + 1, k]
                if hermitian:
                    d = abs(d21)
                    d11, d22 = a[k + 1, k + 1].real / d, a[k, k].real / d
                    t = 1.0 / (d11 * d22 - 1.0)
                    d21 = d21 / d
                    wk = (t / d) * (d11 * a[k + 2:, k] - d21 * a[k + 2:, k + 1])
                    wkp1 = (t / d) * (d22 * a[k + 2:, k + 1] - np.conj(d21) * a[k + 2:, k])
                else:
                    d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
                    t = 1.0 / (d11 * d22 - 1.0)
                    scale = t / d21
                    wk = scale * (d11 * a[k + 2:, k] - a[k + 2:, k + 1])
                    wkp1 = scale * (d22 * a[k + 2:, k + 1] - a[k + 2:, k])
                a[k + 2:, k + 2:] -= np.tril(np.outer(a[k + 2:, k], conj(wk))
                                             + np.outer(a[k + 2:, k + 1], conj(wkp1)))
                if hermitian:
                    idx = np.arange(k + 2, n)
                    a[idx, idx] = a[idx, idx].real
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += kstep
    return ipiv, info


def ldl_factor_ex_cpu(A, hermitian=False, check_errors=False):
    """(LD, pivots, info): L below LD's diagonal, D's blocks on and beside it."""
    name = "torch.linalg.ldl_factor_ex"
    check_matrix(name, A)
    check_square(name, A)
    check_float(name, A)
    a = np.array(A._array(), copy=True)
    n = a.shape[-1]
    flat = a.reshape((int(np.prod(a.shape[:-2], dtype=np.int64)), n, n))
    pivots = np.zeros(flat.shape[:1] + (n,), np.int32)
    infos = np.zeros(flat.shape[:1], np.int32)
    for i, matrix in enumerate(flat):
        pivots[i], infos[i] = _sytf2_lower(matrix, hermitian and np.iscomplexobj(a))
    ld = np.tril(flat).reshape(a.shape)
    info = new_tensor(infos.reshape(a.shape[:-2]), dt.int32)
    if check_errors:
        raise_for_ldl(name, info)
    return return_types.linalg_ldl_factor_ex((
        new_tensor(ld, A.dtype, True), new_tensor(pivots.reshape(a.shape[:-2] + (n,)), dt.int32),
        info))


def raise_for_ldl(name: str, info) -> None:
    """LinAlgError for the first matrix whose D has a zero block (LAPACK's info > 0)."""
    codes = info._array().reshape(-1)
    bad = np.flatnonzero(codes)
    if bad.size:
        i, k = int(bad[0]), int(codes[bad[0]])
        where = f"(Batch element {i}): " if info.dim() > 0 else ""
        raise LinAlgError(f"{name}: {where}The factorization could not be completed because "
                          f"the input is singular: D[{k},{k}] is exactly zero.")


def _sytrs_lower(ld: np.ndarray, ipiv: np.ndarray, b: np.ndarray, hermitian: bool):
    """Solve (L D L^T) x = b in place of b, from the factors _sytf2_lower made."""
    n = ld.shape[0]
    conj = np.conj if hermitian else (lambda x: x)
    k = 0
    while k < n:                                   # L D y = P b, block by block
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k].real if hermitian else ld[k, k]
            k += 1
        else:
            kp = -ipiv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1 = ld[k, k] / (np.conj(akm1k) if hermitian else akm1k)
            ak = ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1 = b[k] / (np.conj(akm1k) if hermitian else akm1k)
            bk = b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:                                  # L^T x = y, back up the blocks
        if ipiv[k] > 0:
            b[k] -= conj(ld[k + 1:, k]) @ b[k + 1:]
            kp = ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= conj(ld[k + 1:, k]) @ b[k + 1:]
            b[k - 1] -= conj(ld[k + 1:, k - 1]) @ b[k + 1:]
            kp = -ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2


def ldl_solve_cpu(LD, pivots, B, hermitian=False):
    """X with A X = B, A given by ldl_factor's (LD, pivots); batch dims broadcast."""
    name = "torch.linalg.ldl_solve"
    check_matrix(name, LD, "LD")
    check_square(name, LD, "LD")
    if B.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(B.dim(), 1)}"
                         f", {max(B.dim(), 1) - 1}], but got -2)")
    n = LD._shape[-1]
    if B._shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {n} by {n} "
                           f"but each b matrix is {B._shape[-2]} by {B._shape[-1]}")
    if pivots.dtype is not dt.int32:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {pivots.dtype.cname}")
    if LD.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but found LD of "
                           f"type {LD.dtype.cname} and B of type {B.dtype.cname} instead")
    batch = np.broadcast_shapes(LD._shape[:-2], B._shape[:-2], pivots._shape[:-1])
    count = int(np.prod(batch, dtype=np.int64))
    ld = np.broadcast_to(LD._array(), batch + (n, n)).reshape((count, n, n))
    piv = np.broadcast_to(pivots._array(), batch + (n,)).reshape((count, n))
    b = np.array(np.broadcast_to(B._array(), batch + B._shape[-2:]), copy=True)
    flat = b.reshape((count,) + tuple(B._shape[-2:]))
    for i in range(flat.shape[0]):
        _sytrs_lower(ld[i], piv[i], flat[i], hermitian and np.iscomplexobj(b))
    return new_tensor(flat.reshape(b.shape), B.dtype, True)
