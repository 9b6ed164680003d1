"""Randomized low-rank decompositions and a block eigensolver, written in other ops:
svd_lowrank and pca_lowrank (Halko, Martinsson and Tropp's range finder with subspace
iterations) and lobpcg (Knyazev's locally optimal block preconditioned conjugate gradient,
for symmetric positive-definite generalized problems). The random start draws from the
default generator exactly as PyTorch's does, so a seeded call gives PyTorch's numbers."""
from __future__ import annotations

import math

from ...core import dtype as dt
from ...core.tensor import Tensor
from ..random.samplers import randn
from ..registry import composite
from ..shape.joining import cat
from .decompositions import linalg_eigh, linalg_qr, svd


def _floating(A: Tensor):
    return A.dtype if A.dtype.is_floating_point or A.dtype.is_complex else dt.float32


def _approximate_basis(A: Tensor, q: int, niter: int, M) -> Tensor:
    """An orthonormal (m, q) basis whose span approximately holds A's range (A - M's)."""
    R = randn(A.shape[-1], q, dtype=_floating(A), device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = linalg_qr(X)[0]
    for _ in range(niter):
        X = A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q
        Q = linalg_qr(X)[0]
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = linalg_qr(X)[0]
    return Q


def _svd_lowrank(A, q, niter, M):
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    if m < n:                          # work on the tall one: the small factor stays small
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if m < n else (U, S, V)


@composite()
def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V), A ~ U diag(S) V^H of rank q, from q random probes and `niter` subspace
    iterations (of A - M when M is given)."""
    return _svd_lowrank(A, q, niter, M)


@composite()
def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V): the principal directions V of A's rows (centred unless center=False) by
    svd_lowrank; q defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A, q, niter, None)


def _b_orthonormalize(V: Tensor, B) -> Tensor:
    """Columns spanning V's range, orthonormal in the B inner product (dropping none: the
    caller keeps the block well conditioned)."""
    BV = V if B is None else B @ V
    gram = V.mH @ BV
    gram = (gram + gram.mH) / 2
    w, Z = linalg_eigh(gram)
    keep = w > w.abs().max() * 1e-12 * V.shape[-2]
    Z, w = Z[:, keep], w[keep]
    return (V @ Z) / w.sqrt()


@composite()
def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """(E, X): the k largest (or smallest) eigenpairs of the symmetric generalized problem
    A X = B X diag(E), by LOBPCG with preconditioner iK. The eigenvalues are differentiable
    in A (their gradient is the Rayleigh quotient's); the eigenvectors are returned detached."""
    m = A.shape[-1]
    if A.dim() != 2 or A.shape[-2] != m:
        raise ValueError(f"A must be a square matrix, got shape {tuple(A.shape)}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise ValueError(f"A and B must have the same shapes, got {tuple(A.shape)} and "
                         f"{tuple(B.shape)}")
    dtype = _floating(A)
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if X is None else X.shape[-1]) if n is None else n
    if m < 3 * n:
        raise ValueError(f"LPBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    niter = 1000 if niter is None else niter
    largest = True if largest is None else largest
    if tol is None:
        tol = math.sqrt(1.2e-07 if dtype is dt.float32 else 2.23e-16)
    A_ = A.detach()
    B_ = None if B is None else B.detach()
    V = randn(m, n, dtype=dtype, device=A.device) if X is None else X.detach().to(dtype)
    V = _b_orthonormalize(V, B_)
    P = None
    for _ in range(max(niter, 1)):
        AV = A_ @ V
        BV = V if B_ is None else B_ @ V
        theta = (V.mH @ AV).diagonal()
        R = AV - BV * theta
        norms = R.norm(dim=0)
        scale = (AV.norm(dim=0) + theta.abs() * BV.norm(dim=0)).clamp(min=1e-300)
        if bool((norms[:k] / scale[:k] < tol).all()) and niter > 0:
            break
        W = R if iK is None else iK @ R
        # Directions B-orthogonal to V, each scaled to unit length, so that the Gram matrix
        # stays well conditioned as the residuals shrink.
        extra = cat([W] + ([P] if P is not None else []), -1)
        extra = extra - V @ (V.mH @ (extra if B_ is None else B_ @ extra))
        extra = extra / extra.norm(dim=0).clamp(min=1e-300)
        S = cat([V, _b_orthonormalize(extra, B_)], -1)
        small = S.mH @ (A_ @ S)
        w, Z = linalg_eigh((small + small.mH) / 2)
        order = w.argsort(descending=largest)[:n]
        new_V = S @ Z[:, order]
        P = new_V - V @ (V.mH @ (new_V if B_ is None else B_ @ new_V))
        V = new_V
    V = V[:, :k]
    E = ((V.mH @ A @ V).diagonal() if B is None
         else (V.mH @ A @ V).diagonal() / (V.mH @ B @ V).diagonal())
    return E.real if E.dtype.is_complex else E, V
