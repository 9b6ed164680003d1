"""Derivative formulas of the decompositions and solves (decompositions.py).

Node names are PyTorch's. The formulas are the usual matrix-calculus adjoints, written in
glasstorch ops (so double backward records them too): the inverse and solves through more
solves, the factorizations (Cholesky, QR, SVD, eigh, eig) through their gauge-invariant
forms, matrix_exp through the exponential of a block matrix [[A^H, G], [0, A^H]] whose upper
right block is the adjoint, det through the adjugate (from the SVD when a matrix is
singular). The vectors of complex SVD/eig/eigh are fixed only up to a phase each, so, as
PyTorch, backward refuses a loss that depends on those phases.
"""
from __future__ import annotations

import numpy as np

from ..derivative import derivative
from ..reduction.derivatives import _norm
from ..creation.factories import zeros_like
from ..shape.joining import cat
from ..creation.ranges import eye
from ...backends.cpu.decompositions import _is_vector_rhs
from .decompositions import (_linalg_svd, cholesky_solve_op, linalg_cross,
                            linalg_det, linalg_inv_ex, linalg_lu_solve, linalg_matrix_exp,
                            linalg_solve_triangular, lu_unpack_op, pinv, solve)
from . import decompositions


def _diag(v, n):
    """diag_embed of the last dim of `v`."""
    return v.unsqueeze(-1) * eye(n, dtype=v.dtype, device=v.device)


def _off_diagonal(x, n):
    return x * (1 - eye(n, dtype=x.dtype.to_real(), device=x.device))


_PHASE = ("The {} in the complex case are specified up to multiplication by e^{{i phi}}. The "
          "specified loss function depends on this {}")


def _check_phase(a, b, text):
    """A loss of complex singular/eigen vectors must not depend on their phases: the
    imaginary parts of diag(U^H gU) (a) and of diag(V^H gV) (b) must cancel (PyTorch's lax
    check; None stands for zeros)."""
    a, b = (None if x is None else x._array() for x in (a, b))
    a = np.zeros_like(b) if a is None else a
    b = np.zeros_like(a) if b is None else b
    if not np.allclose(a, -b, rtol=1e-2, atol=1e-2):
        raise RuntimeError(text)


def _grads(grad, count):
    """The output gradients of a multi-output op as a tuple of `count` (None if absent)."""
    if not isinstance(grad, tuple):
        grad = (grad,)
    return tuple(grad) + (None,) * (count - len(grad))


@derivative(decompositions.linalg_vector_norm, "LinalgVectorNormBackward0")
def _vector_norm(grad, self, ord, dim, keepdim, result):
    return _norm(grad, self, ord, dim, keepdim, result)


# ---- determinants and inverse -------------------------------------------------------------

def _inverse_h(A):
    return linalg_inv_ex(A)[0].mH


def _exclusive_products(s):
    """prod_{j != i} s_j for each i, without dividing (s may hold zeros)."""
    ones = s[..., :1] * 0 + 1
    before = cat([ones, s[..., :-1]], -1).cumprod(-1)
    after = cat([ones, s.flip(-1)[..., :-1]], -1).cumprod(-1).flip(-1)
    return before * after


@derivative(decompositions.linalg_det, "LinalgDetBackward0")
def _det(grad, A, result):
    """d det = tr(adj(A) dA): grad_A = grad adj(A)^H, which is grad conj(det) A^-H when A is
    invertible; with a singular matrix in the batch, adj(A) comes from the SVD A = U S Vh:
    adj(A)^H = conj(det U det Vh) U diag(prod_{j != i} s_j) Vh."""
    g = grad.unsqueeze(-1).unsqueeze(-1)
    inverse, info = linalg_inv_ex(A)
    if not bool((info != 0).any()):
        return (g * result.conj().unsqueeze(-1).unsqueeze(-1) * inverse.mH,)
    U, S, Vh = _linalg_svd(A)
    phase = (linalg_det(U) * linalg_det(Vh)).conj().unsqueeze(-1).unsqueeze(-1)
    adj_h = (U * _exclusive_products(S).unsqueeze(-2).to(U.dtype)).matmul(Vh)
    return (g * phase * adj_h,)


@derivative(decompositions.linalg_slogdet, "LinalgSlogdetBackward0")
def _slogdet(grad, A, result0):
    """d log det = tr(A^-1 dA) = d log|det| + i d(arg det): the gradient of the complex
    log-determinant is g_logabsdet + i Im(g_sign conj(sign))."""
    g_sign, g_log = _grads(grad, 2)
    if A.dtype.is_complex:
        g = g_log.to(A.dtype) if g_log is not None else None
        if g_sign is not None:
            phase = (g_sign * result0.conj()).imag * 1j
            g = phase if g is None else g + phase
    else:
        g = g_log
    if g is None:
        return (None,)
    return (g.unsqueeze(-1).unsqueeze(-1) * _inverse_h(A),)


@derivative(decompositions.linalg_inv_ex, "LinalgInvExBackward0")
def _inv_ex(grad, result0):
    g = _grads(grad, 2)[0]
    if g is None:
        return (None,)
    inv_h = result0.mH
    return (-inv_h.matmul(g).matmul(inv_h),)


@derivative(decompositions.linalg_solve_ex, "LinalgSolveExBackward0")
def _solve_ex(grad, A, B, left, result0):
    """AX = B: gB = A^-H g, gA = -gB X^H (XA = B: gB = g A^-H, gA = -X^H gB)."""
    g = _grads(grad, 2)[0]
    if g is None:
        return None, None
    X = result0
    gB = solve(A.mH, g, left=left)
    if not left:
        return -X.mH.matmul(gB), gB
    if _is_vector_rhs(A, B):
        return -gB.unsqueeze(-1).matmul(X.unsqueeze(-1).mH), gB
    return -gB.matmul(X.mH), gB


# ---- Cholesky and QR -----------------------------------------------------------------------

@derivative(decompositions.linalg_cholesky_ex, "LinalgCholeskyExBackward0")
def _cholesky_ex(grad, upper, result0):
    """A = L L^H (Murray 2016): gA = L^-H Phi L^-1 with T = tril(L^H gL) and
    Phi = (T + tril(T, -1)^H) / 2, the Hermitian matrix that T's lower triangle describes."""
    gL = _grads(grad, 2)[0]
    if gL is None:
        return (None,)
    L = result0
    if upper:
        L, gL = L.mH, gL.mH
    T = L.mH.matmul(gL).tril()
    phi = 0.5 * (T + T.tril(-1).mH)
    gA = linalg_solve_triangular(L, phi, upper=False, left=False)
    return (linalg_solve_triangular(L.mH, gA, upper=True),)


def _qr_square_or_tall(gQ, gR, Q, R):
    """A = QR with Q (m, n) orthonormal columns, R (n, n) upper triangular with a real
    diagonal: gA = Q gR + (gQ - Q Q^H gQ + Q N) R^-H, N from M = Q^H gQ - gR R^H."""
    n = R.shape[-1]
    M = 0
    if gQ is not None:
        M = Q.mH.matmul(gQ)
    if gR is not None:
        M = M - gR.matmul(R.mH)
    N = (M - M.mH).tril(-1)
    if Q.dtype.is_complex:
        N = N + _diag(M.diagonal(0, -2, -1).imag * 1j, n)
    inner = Q.matmul(N)
    if gQ is not None:
        inner = inner + gQ - Q.matmul(Q.mH.matmul(gQ))
    gA = linalg_solve_triangular(R.mH, inner, upper=False, left=False)
    if gR is not None:
        gA = gA + Q.matmul(gR)
    return gA


@derivative(decompositions.linalg_qr, "LinalgQrBackward0")
def _qr(grad, A, mode, result0, result1):
    gQ, gR = _grads(grad, 2)
    if gQ is None and gR is None:
        return (None,)
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when"
                           " mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    m, n = A.shape[-2:]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    Q, R = result0, result1
    if m >= n:
        return (_qr_square_or_tall(gQ, gR, Q, R),)
    # A = [X | Y] with X = Q R1 square and Y = Q R2, R2 = Q^H Y
    Y = A[..., m:]
    R1 = R[..., :m]
    gR1 = gR[..., :m] if gR is not None else None
    gR2 = gR[..., m:] if gR is not None else None
    if gR2 is not None:
        gQ = Y.matmul(gR2.mH) if gQ is None else gQ + Y.matmul(gR2.mH)
    gX = _qr_square_or_tall(gQ, gR1, Q, R1)
    gY = Q.matmul(gR2) if gR2 is not None else zeros_like(Y)
    return (cat([gX, gY], -1),)


# ---- SVD and eigen decompositions ------------------------------------------------------------

@derivative(decompositions._linalg_svd, "LinalgSvdBackward0")
def _svd(grad, A, full_matrices, compute_uv, result0, result1, result2):
    gU, gS, gVh = _grads(grad, 3)
    if not compute_uv:
        raise RuntimeError("linalg.svd: the derivative needs the singular vectors, which are not"
                           " computed with compute_uv=False")
    U, S, Vh = result0, result1, result2
    m, n = A.shape[-2:]
    k = S.shape[-1]
    if full_matrices:       # only the first k singular vectors enter the gradient
        U, Vh = U[..., :k], Vh[..., :k, :]
        gU = gU[..., :k] if gU is not None else None
        gVh = gVh[..., :k, :] if gVh is not None else None
    if gU is None and gVh is None:
        if gS is None:
            return (None,)
        return ((U * gS.unsqueeze(-2).to(U.dtype)).matmul(Vh),)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye(k, dtype=S.dtype, device=S.device)
    core = 0
    if gU is not None:
        UhgU = U.mH.matmul(gU)
        core = (UhgU - UhgU.mH) * S.unsqueeze(-2)
    if gVh is not None:
        VhgV = Vh.matmul(gVh.mH)
        core = core + S.unsqueeze(-1) * (VhgV - VhgV.mH)
    if A.dtype.is_complex:
        _check_phase(UhgU.diagonal(0, -2, -1).imag if gU is not None else None,
                     VhgV.diagonal(0, -2, -1).imag if gVh is not None else None,
                     "svd_backward: " + _PHASE.format("singular vectors",
                                                      "phase term, making it ill-defined."))
    core = _off_diagonal(core / E, k)
    if gS is not None:
        core = core + _diag(gS.to(core.dtype), k)
    if A.dtype.is_complex and gU is not None:
        core = core + _diag(UhgU.diagonal(0, -2, -1).imag * 1j / S, k)
    gA = U.matmul(core).matmul(Vh)
    if m > n and gU is not None:
        gUS = gU / S.unsqueeze(-2)
        gA = gA + (gUS - U.matmul(U.mH.matmul(gUS))).matmul(Vh)
    if m < n and gVh is not None:
        gVS = gVh / S.unsqueeze(-1)
        gA = gA + U.matmul(gVS - gVS.matmul(Vh.mH).matmul(Vh))
    return (gA,)


@derivative(decompositions.linalg_eigh, "LinalgEighBackward0")
def _eigh(grad, result0, result1):
    """A = V diag(L) V^H: gA = V (diag(gL) + skew(V^H gV) / 2 / (L_j - L_i)) V^H."""
    gL, gV = _grads(grad, 2)
    L, V = result0, result1
    n = L.shape[-1]
    core = 0
    if gV is not None:
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye(n, dtype=L.dtype, device=L.device)
        VhgV = V.mH.matmul(gV)
        if V.dtype.is_complex:
            _check_phase(VhgV.diagonal(0, -2, -1).imag, None, "linalg_eigh_backward: " +
                         _PHASE.format("eigenvectors", "quantity, so it is ill-defined."))
        core = _off_diagonal(0.5 * (VhgV - VhgV.mH) / E, n)
    if gL is not None:
        core = core + _diag(gL.to(V.dtype), n)
    if gL is None and gV is None:
        return (None,)
    return (V.matmul(core).matmul(V.mH),)


@derivative(decompositions.linalg_eig, "LinalgEigBackward0")
def _eig(grad, self, result0, result1):
    """A V = V diag(L), unit-norm columns: gA = V^-H K V^H, K = diag(gL) off the diagonal
    (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(L_j - L_i)."""
    gL, gV = _grads(grad, 2)
    if gL is None and gV is None:
        return (None,)
    L, V = result0, result1
    n = L.shape[-1]
    Vh = V.mH
    K = 0
    if gV is not None:
        VhgV = Vh.matmul(gV)
        _check_phase(VhgV.diagonal(0, -2, -1).imag, None, "linalg_eig_backward: " +
                     _PHASE.format("eigenvectors", "quantity, so it is ill-defined."))
        H = VhgV - Vh.matmul(V * VhgV.diagonal(0, -2, -1).real.unsqueeze(-2))
        E = (L.unsqueeze(-2) - L.unsqueeze(-1)).conj() + eye(n, dtype=L.dtype, device=L.device)
        K = _off_diagonal(H / E, n)
    if gL is not None:
        K = K + _diag(gL, n)
    gA = solve(Vh, K.matmul(Vh))
    return (gA if self.dtype.is_complex else gA.real,)


# ---- pseudo-inverse and least squares --------------------------------------------------------

def _pinv_backward(g, P, A):
    """The adjoint of P = pinv(A) (constant rank)."""
    m, n = A.shape[-2:]
    Ph, gh = P.mH, g.mH
    if m <= n:
        K = gh.matmul(P)
        KPh = K.matmul(Ph)
        return (-(P.matmul(K)).mH + KPh - A.matmul(P).matmul(KPh)
                + Ph.matmul(P).matmul(gh - K.matmul(A)))
    K = P.matmul(gh)
    PhK = Ph.matmul(K)
    return (-(K.matmul(P)).mH + PhK - PhK.matmul(P).matmul(A)
            + (gh - A.matmul(K)).matmul(P).matmul(Ph))


@derivative(decompositions.linalg_pinv, "LinalgPinvBackward0")
def _pinv(grad, self, result):
    return (_pinv_backward(grad, result, self),)


@derivative(decompositions.linalg_lstsq, "LinalgLstsqBackward0", outputs=(0, 1))
def _lstsq(grad, self, b):
    """solution = pinv(A) B: gB = pinv(A)^H g, gA through pinv with g B^H. The residuals
    ||A x - B||^2 are minimal in x, so only their explicit dependence on A and B counts:
    2 R x^H for A and -2 R for B, with R = A x - B (scaled per column)."""
    g, g_res = _grads(grad, 4)[:2]
    P = pinv(self)
    vector = b.dim() == self.dim() - 1
    bm = b.unsqueeze(-1) if vector else b
    gA = gB = None
    if g is not None:
        gm = g.unsqueeze(-1) if vector else g
        gA = _pinv_backward(gm.matmul(bm.mH), P, self)
        gB = P.mH.matmul(gm)
    if g_res is not None and g_res.numel():
        x = P.matmul(bm)
        weighted = (self.matmul(x) - bm) * (g_res.unsqueeze(-1) if vector else
                                            g_res.unsqueeze(-2)) * 2
        gA = weighted.matmul(x.mH) if gA is None else gA + weighted.matmul(x.mH)
        gB = -weighted if gB is None else gB - weighted
    if gB is not None and vector:
        gB = gB.squeeze(-1)
    return gA, gB


# ---- matrix exponential, triangular solve, cross ---------------------------------------------

@derivative(decompositions.linalg_matrix_exp, "LinalgMatrixExpBackward0")
def _matrix_exp(grad, self):
    n = self.shape[-1]
    Ah = self.mH
    block = cat([cat([Ah, grad], -1), cat([zeros_like(Ah), Ah], -1)], -2)
    return (linalg_matrix_exp(block)[..., :n, n:],)


@derivative(decompositions.linalg_solve_triangular, "LinalgSolveTriangularBackward0")
def _solve_triangular(grad, self, upper, left, unitriangular, result):
    """Only the triangle of A is read: its gradient is the triangle of -gB X^H (left) or
    -X^H gB (right), without the diagonal when it is taken as ones."""
    gB = linalg_solve_triangular(self.mH, grad, upper=not upper, left=left,
                                 unitriangular=unitriangular)
    gA = -gB.matmul(result.mH) if left else -result.mH.matmul(gB)
    offset = 1 if unitriangular else 0
    gA = gA.triu(offset) if upper else gA.tril(-offset)
    return gA, gB


@derivative(decompositions.linalg_cross, "LinalgCrossBackward0")
def _cross(grad, self, other, dim):
    return (linalg_cross(other.conj(), grad, dim=dim), linalg_cross(grad, self.conj(), dim=dim))


derivative(decompositions.cholesky_op, "CholeskyBackward0")(_cholesky_ex)


@derivative(decompositions.triangular_solve_op, "TriangularSolveBackward0")
def _triangular_solve(grad, A, upper, transpose, unitriangular, result0):
    """As linalg.solve_triangular with A^T for transpose; the copy of A passes its gradient
    through."""
    g, g_clone = _grads(grad, 2)
    gb = gA = None
    if g is not None:
        At = A.mT if transpose else A
        gb = linalg_solve_triangular(At.mH, g, upper=upper == transpose,
                                     unitriangular=unitriangular)
        gA = -gb.matmul(result0.mH)
        if transpose:
            gA = gA.mT
        offset = 1 if unitriangular else 0
        gA = gA.triu(offset) if upper else gA.tril(-offset)
    if g_clone is not None:
        gA = g_clone if gA is None else gA + g_clone
    return gb, gA


@derivative(decompositions.cholesky_solve_op, "CholeskySolveBackward0")
def _cholesky_solve(grad, input2, upper, result):
    """X = (L L^H)^-1 B: gB = cholesky_solve(g, L); gL from gA = -gB X^H, A = L L^H."""
    gB = cholesky_solve_op(grad, input2, upper)
    common = -gB.matmul(result.mH)
    common = common + common.mH
    gL = input2.matmul(common) if upper else common.matmul(input2)
    return gB, gL


@derivative(decompositions.cholesky_inverse_op, "CholeskyInverseBackward0")
def _cholesky_inverse(grad, self, upper, result):
    common = -result.matmul((grad + grad.mH).matmul(result))
    return (self.matmul(common) if upper else common.matmul(self),)


# ---- LU --------------------------------------------------------------------------------------

def _lu_backward(gL, gU, P, L, U):
    """A = P L U (L unit lower m x k, U upper k x n). Square: gA = P L^-H Phi U^-H with
    Phi = tril(L^H gL, -1) + triu(gU U^H). A wide A = P L [U1 U2] adds gA2 = P L^-H gU2 and
    U2's dependence on L; a tall one P [L1; L2] U adds gA2 = gL2 U^-H and L2's on U."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    gL = zeros_like(L) if gL is None else gL
    gU = zeros_like(U) if gU is None else gU
    if m == n:
        phi = L.mH.matmul(gL).tril(-1) + gU.matmul(U.mH).triu()
        return P.matmul(_tri_sandwich(L, phi, U))
    if m < n:
        U1, U2, gU1, gU2 = U[..., :k], U[..., k:], gU[..., :k], gU[..., k:]
        phi = (L.mH.matmul(gL) - gU2.matmul(U2.mH)).tril(-1) + gU1.matmul(U1.mH).triu()
        gA2 = linalg_solve_triangular(L.mH, gU2, upper=True, unitriangular=True)
        return P.matmul(cat([_tri_sandwich(L, phi, U1), gA2], -1))
    L1, L2, gL1, gL2 = L[..., :k, :], L[..., k:, :], gL[..., :k, :], gL[..., k:, :]
    phi = L1.mH.matmul(gL1).tril(-1) + (gU.matmul(U.mH) - L2.mH.matmul(gL2)).triu()
    gA2 = linalg_solve_triangular(U.mH, gL2, upper=False, left=False)
    return P.matmul(cat([_tri_sandwich(L1, phi, U), gA2], -2))


def _tri_sandwich(L, phi, U):
    """L^-H phi U^-H for unit lower L and upper U."""
    x = linalg_solve_triangular(U.mH, phi, upper=False, left=False)
    return linalg_solve_triangular(L.mH, x, upper=True, unitriangular=True)


@derivative(decompositions.linalg_lu, "LinalgLuBackward0", outputs=(1, 2))
def _lu(grad, result0, result1, result2):
    _, gL, gU = _grads(grad, 3)
    if gL is None and gU is None:
        return (None,)
    return (_lu_backward(gL, gU, result0, result1, result2),)


@derivative(decompositions.linalg_lu_factor_ex, "LinalgLuFactorExBackward0")
def _lu_factor_ex(grad, result0, result1):
    gLU = _grads(grad, 3)[0]
    if gLU is None:
        return (None,)
    P, L, U = lu_unpack_op(result0, result1)
    k = min(result0.shape[-2:])
    return (_lu_backward(gLU[..., :k].tril(-1), gLU[..., :k, :].triu(), P, L, U),)


@derivative(decompositions.lu_unpack_op, "LuUnpackBackward0", outputs=(1, 2))
def _lu_unpack(grad, LU_data):
    """L and U are the strictly lower and the upper part of the packed LU."""
    _, gL, gU = _grads(grad, 3)
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    g = zeros_like(LU_data)
    if gL is not None:
        gl = gL.tril(-1)
        g = g + (gl if k == n else cat([gl, zeros_like(LU_data[..., k:])], -1))
    if gU is not None:
        gu = gU.triu()
        g = g + (gu if k == m else cat([gu, zeros_like(LU_data[..., k:, :])], -2))
    return g, None


@derivative(decompositions.linalg_lu_solve, "LinalgLuSolveBackward0")
def _lu_solve(grad, LU, pivots, left, adjoint, result):
    """gB by the adjoint solve; the op's A (A^H if adjoint) gets -gB X^H (left) or -X^H gB,
    which reaches the packed LU through A = P L U."""
    gB = linalg_lu_solve(LU, pivots, grad, left=left, adjoint=not adjoint)
    g_op = -gB.matmul(result.mH) if left else -result.mH.matmul(gB)
    gA = g_op.mH if adjoint else g_op
    P, L, U = lu_unpack_op(LU, pivots)
    PtgA = P.mT.matmul(gA)
    gLU = PtgA.matmul(U.mH).tril(-1) + L.mH.matmul(PtgA).triu()
    return gLU, None, gB
