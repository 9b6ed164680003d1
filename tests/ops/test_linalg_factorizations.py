"""geqrf, householder_product/orgqr, ormqr, ldl_factor(_ex)/ldl_solve, lu/lu_solve, the
low-rank decompositions, lobpcg and the legacy norms against PyTorch; gradients by gradcheck
in float64 and against PyTorch's."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)


def _pair(a):
    return gt.tensor(a), torch.tensor(a)


def _close(ours, theirs, tol=1e-10):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol,
                               atol=tol)


def _matrix(*shape, complex_=False):
    a = RNG.standard_normal(shape)
    return a + 1j * RNG.standard_normal(shape) if complex_ else a


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3)])
@pytest.mark.parametrize("complex_", [False, True])
def test_geqrf_equals_lapack(shape, complex_):
    ours, theirs = _pair(_matrix(*shape, complex_=complex_))
    (a, tau), (ta, ttau) = gt.geqrf(ours), torch.geqrf(theirs)
    _close(a, ta), _close(tau, ttau)
    assert a.stride() == ta.stride()                 # column-major, as LAPACK writes it
    x = gt.tensor(_matrix(3, 3), requires_grad=True)
    with pytest.raises((RuntimeError, NotImplementedError),
                       match="derivative for '(aten::)?geqrf' is not implemented"):
        gt.geqrf(x)[0].sum().backward()


@pytest.mark.parametrize("complex_", [False, True])
def test_householder_product(complex_):
    A = _matrix(2, 5, 3, complex_=complex_)
    a, tau = torch.geqrf(torch.tensor(A))
    for k in (3, 2):
        ours = gt.linalg.householder_product(gt.tensor(a.numpy()), gt.tensor(tau.numpy()[..., :k]))
        _close(ours, torch.linalg.householder_product(a, tau[..., :k]))
    Q = gt.orgqr(gt.tensor(a.numpy()), gt.tensor(tau.numpy()))
    _close(Q, torch.linalg.qr(torch.tensor(A))[0] * 0 + torch.orgqr(a, tau))
    x, t = gt.tensor(A, requires_grad=True), gt.tensor(tau.numpy(), requires_grad=True)
    assert gt.autograd.gradcheck(gt.linalg.householder_product, (x, t))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr(left, transpose):
    A = _matrix(5, 3)
    a, tau = torch.geqrf(torch.tensor(A))
    C = _matrix(5, 2) if left else _matrix(2, 5)
    ours = gt.ormqr(gt.tensor(a.numpy()), gt.tensor(tau.numpy()), gt.tensor(C), left, transpose)
    _close(ours, torch.ormqr(a, tau, torch.tensor(C), left, transpose))
    args = [gt.tensor(v, requires_grad=True) for v in (a.numpy(), tau.numpy(), C)]
    assert gt.autograd.gradcheck(lambda x, t, c: gt.ormqr(x, t, c, left, transpose), args)


def test_householder_errors():
    a, tau = gt.tensor(_matrix(5, 3)), gt.tensor(_matrix(3))
    cases = [
        (lambda L, a, t: L.linalg.householder_product(a, t[:0].new_zeros(4)),
         "input.shape[-1] must be greater than or equal to tau.shape[-1]"),
        (lambda L, a, t: L.linalg.householder_product(a.mT, t[:2]),
         "input.shape[-2] must be greater than or equal to input.shape[-1]"),
        (lambda L, a, t: L.linalg.householder_product(a, t.float()),
         "tau dtype Float does not match input dtype Double"),
        (lambda L, a, t: L.ormqr(a, t[:2], a[:4, :2]),
         "other.shape[-2] must be equal to input.shape[-2]"),
        (lambda L, a, t: L.ormqr(a, t[:2], a[:, :2]),
         "tau.shape[-1] must be equal to min(other.shape[-2], input.shape[-1])"),
    ]
    for f, message in cases:
        for lib, x, t in ((gt, a, tau), (torch, torch.tensor(a.numpy()),
                                          torch.tensor(tau.numpy()))):
            with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(
                    ")", r"\)").replace("[", r"\[").replace("]", r"\]")):
                f(lib, x, t)


def _symmetric(n, hermitian=False, complex_=False, batch=()):
    a = _matrix(*batch, n, n, complex_=complex_)
    a[..., np.arange(n), np.arange(n)] *= 0.05          # small diagonals force 2x2 pivots
    return a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("hermitian,complex_", [(False, False), (False, True), (True, True)])
def test_ldl_factor_and_solve_equal_lapack(hermitian, complex_):
    A = _symmetric(6, hermitian, complex_, batch=(3,))
    ours, theirs = _pair(A)
    LD, pivots, info = gt.linalg.ldl_factor_ex(ours, hermitian=hermitian)
    tLD, tpivots, tinfo = torch.linalg.ldl_factor_ex(theirs, hermitian=hermitian)
    np.testing.assert_array_equal(pivots.numpy(), tpivots.numpy())
    assert (pivots.numpy() < 0).any()                    # 2x2 blocks were exercised
    _close(LD, tLD), _close(info, tinfo)
    assert LD.stride() == tLD.stride()
    B = _matrix(3, 6, 2, complex_=complex_)
    X = gt.linalg.ldl_solve(LD, pivots, gt.tensor(B), hermitian=hermitian)
    _close(X, torch.linalg.ldl_solve(tLD, tpivots, torch.tensor(B), hermitian=hermitian), 1e-8)
    np.testing.assert_allclose(A @ X.numpy(), B, atol=1e-8)
    LD2, pivots2 = gt.linalg.ldl_factor(ours[0], hermitian=hermitian)
    _close(LD2, tLD[0])


def test_ldl_errors_and_no_gradient():
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
            lib.linalg.ldl_factor(lib.zeros(3, 2))
        LD, pivots = lib.linalg.ldl_factor(lib.eye(3, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="each A matrix is 3 by 3 but each b matrix is 4"):
            lib.linalg.ldl_solve(LD, pivots, lib.zeros(4, 1, dtype=lib.float64))
    _, _, info = gt.linalg.ldl_factor_ex(gt.zeros(2, 3, 3))
    np.testing.assert_array_equal(info.numpy(), torch.linalg.ldl_factor_ex(
        torch.zeros(2, 3, 3)).info.numpy())
    with pytest.raises(gt.linalg.LinAlgError, match="Batch element 0"):
        gt.linalg.ldl_factor_ex(gt.zeros(2, 3, 3), check_errors=True)
    x = gt.tensor(_symmetric(3), requires_grad=True)
    with pytest.raises((RuntimeError, NotImplementedError), match="not implemented"):
        gt.linalg.ldl_factor(x)[0].sum().backward()


def test_lu_and_lu_solve():
    A, b = _matrix(2, 4, 4), _matrix(2, 4, 3)
    (LU, piv), (tLU, tpiv) = gt.lu(gt.tensor(A)), torch.lu(torch.tensor(A))
    _close(LU, tLU), _close(piv, tpiv)
    _close(gt.tensor(A).lu()[0], torch.tensor(A).lu()[0])
    info = gt.lu(gt.tensor(A), get_infos=True)
    assert type(info).__name__ == "_lu_with_info" and info.info.tolist() == [0, 0]
    _close(gt.lu_solve(gt.tensor(b), LU, piv), torch.lu_solve(torch.tensor(b), tLU, tpiv))
    _close(gt.tensor(b).lu_solve(LU, piv), torch.lu_solve(torch.tensor(b), tLU, tpiv))


@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (2, 7, 6)])
def test_svd_lowrank_and_pca_lowrank_follow_pytorch_seeded(shape):
    A = _matrix(*shape)
    for f, kw in ((lambda L, x: L.svd_lowrank(x, q=3), {}),
                  (lambda L, x: L.pca_lowrank(x, q=3, niter=1), {}),
                  (lambda L, x: L.svd_lowrank(x, q=3, M=x[..., :1, :]), {})):
        gt.manual_seed(3), torch.manual_seed(3)
        (U, S, V), (tU, tS, tV) = f(gt, gt.tensor(A)), f(torch, torch.tensor(A))
        _close(S, tS, 1e-8)
        # The same random probes give the same subspace; singular vectors agree up to the
        # sign LAPACK's SVD gives each pair (NumPy's and PyTorch's calls may differ).
        signs = np.sign((U.numpy() * tU.numpy()).sum(-2, keepdims=True))
        np.testing.assert_allclose(U.numpy() * signs, tU.numpy(), atol=1e-8)
        np.testing.assert_allclose(V.numpy() * signs, tV.numpy(), atol=1e-8)
    with pytest.raises(ValueError, match=r"q\(=9\) must be non-negative integer and not greater"):
        gt.pca_lowrank(gt.tensor(A), q=9)


def test_svd_lowrank_is_exact_at_full_rank_and_differentiable():
    A = _matrix(6, 4)
    U, S, V = gt.svd_lowrank(gt.tensor(A), q=4)
    np.testing.assert_allclose((U @ gt.diag_embed(S) @ V.mT).numpy(), A, atol=1e-10)
    x = gt.tensor(A, requires_grad=True)
    gt.manual_seed(0)
    gt.svd_lowrank(x, q=4)[1].sum().backward()
    t = torch.tensor(A, requires_grad=True)
    torch.manual_seed(0)
    torch.svd_lowrank(t, q=4)[1].sum().backward()
    _close(x.grad, t.grad, 1e-8)


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_finds_the_extreme_eigenpairs(largest):
    Q = np.linalg.qr(_matrix(20, 20))[0]            # a spectrum with gaps at both ends
    A = (Q * np.concatenate([[1, 2], np.linspace(10, 20, 16), [40, 50]])) @ Q.T
    B = np.eye(20) + 0.05 * np.diag(RNG.random(20))
    for b in (None, B):
        gt.manual_seed(0)
        E, X = gt.lobpcg(gt.tensor(A), k=2, B=None if b is None else gt.tensor(b),
                         largest=largest, niter=100, tol=1e-10)
        w = np.linalg.eigvals(np.linalg.solve(np.eye(20) if b is None else b, A)).real
        expected = np.sort(w)[::-1][:2] if largest else np.sort(w)[:2]
        np.testing.assert_allclose(E.numpy(), expected, rtol=1e-7)
        np.testing.assert_allclose(A @ X.numpy(), ((np.eye(20) if b is None else b)
                                                   @ X.numpy()) * E.numpy(), atol=1e-5)
    x = gt.tensor(A, requires_grad=True)
    E, X = gt.lobpcg(x, k=1, largest=largest, tol=1e-10, niter=100)
    E.sum().backward()                       # d(lambda) / dA = v v^T
    np.testing.assert_allclose(x.grad.numpy(), X.numpy() @ X.numpy().T, atol=1e-6)
    with pytest.raises(ValueError, match="LPBPCG algorithm is not applicable"):
        gt.lobpcg(gt.tensor(A[:5, :5]), k=2)


def test_legacy_norms():
    X = _matrix(2, 3, 4)
    cases = [lambda L, x: L.nuclear_norm(x[0]), lambda L, x: L.nuclear_norm(x[0], True),
             lambda L, x: L.nuclear_norm(x, (0, 2)), lambda L, x: L.nuclear_norm(x, (0, 2), True),
             lambda L, x: L.frobenius_norm(x, (0, 2)), lambda L, x: L.frobenius_norm(x, 1, True),
             lambda L, x: L.norm_except_dim(x, 2, 1), lambda L, x: L.norm_except_dim(x, 3, -1),
             lambda L, x: L.norm_except_dim(x)]
    for f in cases:
        x, t = gt.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
        ours, theirs = f(gt, x), f(torch, t)
        _close(ours, theirs)
        ours.sum().backward(), theirs.sum().backward()
        _close(x.grad, t.grad)
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="Expected at most 2 dimensions"):
            lib.frobenius_norm(lib.tensor(X), (0, 1, 2))


def test_gradients_on_non_contiguous_inputs():
    """householder_product and ormqr differentiate strided inputs (a transposed reflector
    matrix, every other tau, a transposed C) as they do contiguous ones."""
    A = _matrix(3, 5)
    x = gt.tensor(A, requires_grad=True)
    taus = gt.tensor(_matrix(6), requires_grad=True)
    assert not x.mT.is_contiguous()
    assert gt.autograd.gradcheck(lambda a, t: gt.linalg.householder_product(a.mT, t[::2]),
                                 (x, taus))
    C = gt.tensor(_matrix(2, 5), requires_grad=True)
    assert gt.autograd.gradcheck(lambda a, t, c: gt.ormqr(a.mT, t[::2], c.mT), (x, taus, C))
