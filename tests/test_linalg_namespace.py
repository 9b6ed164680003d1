"""glasstorch.linalg against PyTorch: values, dtypes, shapes, strides, errors, gradients.

Decompositions whose vectors are fixed only up to sign/phase are compared through
invariants (reconstruction, |U|) or through losses that do not depend on the phase.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glasstorch as gt
from glasstorch.autograd import gradcheck
from tests.oracle import assert_same, oracle_torch, to_numpy

torch = oracle_torch()
RNG = np.random.default_rng(0)


def _random(shape, dtype=np.float64):
    a = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dtype)


def _wellcond(shape, dtype=np.float64):
    """Random matrices with a strong diagonal: invertible, moderate condition number."""
    n = shape[-1]
    return (_random(shape, dtype) + 3 * np.eye(n)).astype(dtype)


def _spd(shape, dtype=np.float64):
    a = _random(shape, dtype)
    return (a @ np.swapaxes(a, -1, -2).conj() + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _both(a, requires_grad=False):
    g = gt.tensor(a, requires_grad=requires_grad)
    t = torch.tensor(a, requires_grad=requires_grad)
    return g, t


def _same(g, t, **kw):
    if isinstance(t, tuple):
        assert isinstance(g, tuple) and len(g) == len(t)
        assert type(g).__name__ == type(t).__name__
        for x, y in zip(g, t):
            _same(x, y, **kw)
        return
    kw.setdefault("rtol", 1e-5)
    kw.setdefault("atol", 1e-6)
    assert_same(g, t, **kw)


def _grads_match(fg, ft, arrays, weights_seed=1, rtol=1e-6, atol=1e-8):
    """Vector-Jacobian products with the same random output gradients (every floating
    output), glasstorch vs torch."""
    gs = [gt.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    og, ot = fg(*gs), ft(*ts)
    og = og if isinstance(og, tuple) else (og,)
    ot = ot if isinstance(ot, tuple) else (ot,)
    rng = np.random.default_rng(weights_seed)
    outs_g, outs_t, ws_g, ws_t = [], [], [], []
    for a, b in zip(og, ot):
        if not b.requires_grad:
            continue
        w = rng.standard_normal(tuple(b.shape))
        if b.is_complex():
            w = w + 1j * rng.standard_normal(tuple(b.shape))
        outs_g.append(a)
        outs_t.append(b)
        ws_g.append(gt.tensor(w, dtype=a.dtype))
        ws_t.append(torch.tensor(w, dtype=b.dtype))
    grads_t = torch.autograd.grad(outs_t, ts, ws_t)
    # one output at a time (the vector-Jacobian product is linear in the output gradients)
    grads_g = [0] * len(gs)
    for o, w in zip(outs_g, ws_g):
        part = gt.autograd.grad(o, gs, w, retain_graph=True, allow_unused=True)
        grads_g = [acc if p is None else acc + to_numpy(p) for acc, p in zip(grads_g, part)]
    for g, t in zip(grads_g, grads_t):
        np.testing.assert_allclose(g, to_numpy(t), rtol=rtol, atol=atol)


def _gradcheck(fn, *arrays):
    assert gradcheck(fn, tuple(gt.tensor(a, requires_grad=True) for a in arrays))


def _raises(exc, text, fn):
    with pytest.raises(exc) as info:
        fn()
    assert text in str(info.value), str(info.value)
    return info.value


# ---- norms ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3.5])
def test_vector_norm(ord):
    a = _random((3, 4))
    g, t = _both(a)
    _same(gt.linalg.vector_norm(g, ord), torch.linalg.vector_norm(t, ord))
    _same(gt.linalg.vector_norm(g.mT, ord, dim=(0,), keepdim=True),
          torch.linalg.vector_norm(t.mT, ord, dim=(0,), keepdim=True))
    if ord != 0:
        f = lambda x: gt.linalg.vector_norm(x, ord, dim=1)  # noqa: E731
        _grads_match(f, lambda x: torch.linalg.vector_norm(x, ord, dim=1), [a])
    assert gt.linalg.vector_norm(g.requires_grad_(), ord).grad_fn.name() == (
        "LinalgVectorNormBackward0")


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm(ord):
    a = _random((2, 3, 4))
    g, t = _both(a)
    _same(gt.linalg.matrix_norm(g, ord), torch.linalg.matrix_norm(t, ord))
    _same(gt.linalg.matrix_norm(g, ord, dim=(2, 0), keepdim=True),
          torch.linalg.matrix_norm(t, ord, dim=(2, 0), keepdim=True))
    _same(gt.linalg.norm(g[0], ord), torch.linalg.norm(t[0], ord))
    _grads_match(lambda x: gt.linalg.matrix_norm(x, ord),
                 lambda x: torch.linalg.matrix_norm(x, ord), [a])
    names = {"fro": "LinalgVectorNormBackward0", "nuc": "SumBackward1"}
    y = gt.linalg.matrix_norm(gt.tensor(a, requires_grad=True), ord)
    assert y.grad_fn.name() == names.get(ord, "AmaxBackward0" if ord in (2, 1, math.inf)
                                         else "AminBackward0")


def test_norm_variants_and_errors():
    a = _random((2, 3, 4)).astype(np.float32)
    g, t = _both(a)
    _same(gt.linalg.norm(g), torch.linalg.norm(t))
    _same(gt.linalg.norm(g, 3, dim=1), torch.linalg.norm(t, 3, dim=1))
    _same(gt.linalg.norm(g, dim=(0, 2)), torch.linalg.norm(t, dim=(0, 2)))
    _same(gt.linalg.norm(g, dtype=gt.float64), torch.linalg.norm(t, dtype=torch.float64))
    _same(gt.linalg.matrix_norm(g, dtype=gt.float64),
          torch.linalg.matrix_norm(t, dtype=torch.float64))
    _same(gt.norm(g, "fro", dim=(1, 2)), torch.norm(t, "fro", dim=(1, 2)))
    _same(g.norm(p=math.inf), t.norm(p=math.inf))
    _raises(RuntimeError, "linalg.norm: If dim is not specified but ord is, the input must be "
            "1D or 2D. Got 3D.", lambda: gt.linalg.norm(g, 2))
    _raises(RuntimeError, "linalg.matrix_norm: Order 3 not supported.",
            lambda: gt.linalg.matrix_norm(g, 3))
    _raises(RuntimeError, "linalg.matrix_norm: The input tensor A must have at least 2 "
            "dimensions.", lambda: gt.linalg.matrix_norm(g[0, 0]))
    _raises(RuntimeError, "Expected a floating point or complex tensor as input. Got Long",
            lambda: gt.linalg.matrix_norm(gt.ones(2, 2, dtype=gt.int64)))


# ---- determinants, inverse, solve ----------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_det_slogdet_inv_values(dtype):
    a = _wellcond((2, 3, 3), dtype)
    g, t = _both(a)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype in (np.float32, np.complex64) else {}
    _same(gt.linalg.det(g), torch.linalg.det(t), **tol)
    _same(gt.det(g.mT), torch.det(t.mT), **tol)
    _same(gt.linalg.slogdet(g), torch.linalg.slogdet(t), **tol)
    _same(g.slogdet(), t.slogdet(), **tol)
    _same(gt.linalg.inv(g), torch.linalg.inv(t), **tol)
    _same(gt.inverse(g[:, ::2, ::2]), torch.inverse(t[:, ::2, ::2]), **tol)
    _same(gt.linalg.inv_ex(g), torch.linalg.inv_ex(t), **tol)


def test_logdet_and_empty():
    a = np.array([[[2.0, 0], [0, 3]], [[-1.0, 0], [0, 2]], [[0.0, 0], [0, 1]]])
    g, t = _both(a)
    _same(gt.logdet(g), torch.logdet(t))
    e = np.zeros((2, 0, 0))
    _same(gt.linalg.det(gt.tensor(e)), torch.linalg.det(torch.tensor(e)))
    _same(gt.linalg.inv(gt.tensor(e)), torch.linalg.inv(torch.tensor(e)))


def test_inverse_errors():
    _raises(RuntimeError, "linalg.inv: Expected a floating point or complex tensor as input. "
            "Got Long", lambda: gt.linalg.inv(gt.ones(3, 3, dtype=gt.int64)))
    _raises(RuntimeError, "linalg.inv: Low precision dtypes not supported. Got Half",
            lambda: gt.linalg.inv(gt.ones(3, 3, dtype=gt.float16)))
    _raises(RuntimeError, "linalg.inv: A must be batches of square matrices, but they are 2 by "
            "3 matrices", lambda: gt.linalg.inv(gt.ones(2, 3)))
    _raises(RuntimeError, "linalg.inv: The input tensor A must have at least 2 dimensions.",
            lambda: gt.linalg.inv(gt.ones(3)))
    e = _raises(gt.linalg.LinAlgError, "linalg.inv: The diagonal element 3 is zero, the "
                "inversion could not be completed because the input matrix is singular.",
                lambda: gt.linalg.inv(gt.tensor([[1., 2, 3], [4, 5, 6], [7, 8, 9]])))
    assert isinstance(e, RuntimeError)
    batch = gt.stack([gt.eye(3), gt.zeros(3, 3)])
    _raises(gt.linalg.LinAlgError, "linalg.inv: (Batch element 1): The diagonal element 1 is "
            "zero", lambda: gt.linalg.inv(batch))
    _raises(gt.linalg.LinAlgError, "linalg.inv_ex: (Batch element 1)",
            lambda: gt.linalg.inv_ex(batch, check_errors=True))
    inv, info = gt.linalg.inv_ex(batch)
    _same(info, torch.linalg.inv_ex(torch.stack([torch.eye(3), torch.zeros(3, 3)])).info)
    _same(inv[0], torch.eye(3), check_stride=False)
    _raises(gt.linalg.LinAlgError, "torch.linalg.solve: (Batch "
            "element 1): The solver failed because the input matrix is singular.",
            lambda: gt.linalg.solve(batch, gt.ones(3)))


def test_det_slogdet_inv_grads():
    a = _wellcond((2, 3, 3))
    for fg, ft in [(gt.linalg.det, torch.linalg.det), (gt.linalg.slogdet, torch.linalg.slogdet),
                   (gt.linalg.inv, torch.linalg.inv), (gt.linalg.inv_ex, torch.linalg.inv_ex),
                   (gt.logdet, torch.logdet)]:
        x = _spd((2, 3, 3)) if fg is gt.logdet else a
        _grads_match(fg, ft, [x])
        _gradcheck(lambda x: fg(x)[0] if fg is gt.linalg.inv_ex else fg(x), x)
    c = _wellcond((3, 3), np.complex128)
    for fg, ft in [(gt.linalg.det, torch.linalg.det), (gt.linalg.slogdet, torch.linalg.slogdet),
                   (gt.linalg.inv, torch.linalg.inv)]:
        _grads_match(fg, ft, [c])
    _gradcheck(lambda x: gt.linalg.slogdet(x), c)
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.det(x).grad_fn.name() == "LinalgDetBackward0"
    assert gt.linalg.slogdet(x)[1].grad_fn.name() == "LinalgSlogdetBackward0"
    assert gt.linalg.inv(x).grad_fn.name() == "LinalgInvExBackward0"
    assert gt.linalg.inv_ex(x).info.grad_fn is None


@pytest.mark.parametrize("left", [True, False])
def test_solve(left):
    a = _wellcond((2, 3, 3))
    b = _random((4, 1, 3, 2) if left else (4, 1, 2, 3))
    g, t = _both(a)
    bg, bt = _both(b)
    _same(gt.linalg.solve(g, bg, left=left), torch.linalg.solve(t, bt, left=left))
    _same(gt.linalg.solve_ex(g, bg, left=left), torch.linalg.solve_ex(t, bt, left=left))
    fg = lambda x, y: gt.linalg.solve(x, y, left=left)  # noqa: E731
    _grads_match(fg, lambda x, y: torch.linalg.solve(x, y, left=left), [a, b])
    _gradcheck(fg, a, b[:1])
    assert fg(gt.tensor(a, requires_grad=True), bg).grad_fn.name() == "LinalgSolveExBackward0"


def test_solve_vectors_and_errors():
    a = _wellcond((2, 3, 3))
    for b in (_random((3,)), _random((2, 3))):
        g, t = _both(a)
        bg, bt = _both(b)
        _same(gt.linalg.solve(g, bg), torch.linalg.solve(t, bt))
        _grads_match(gt.linalg.solve, torch.linalg.solve, [a, b])
    _gradcheck(gt.linalg.solve, a, _random((3,)))
    _raises(RuntimeError, "linalg.solve: Incompatible shapes of A and B for the equation AX = B "
            "(3x3 and 2x1)", lambda: gt.linalg.solve(gt.eye(3), gt.ones(2)))
    _raises(RuntimeError, "linalg.solve: Expected A and B to have the same dtype, but found A "
            "of type Float and B of type Double instead",
            lambda: gt.linalg.solve(gt.eye(3), gt.ones(3, 3, dtype=gt.float64)))


# ---- Cholesky, QR ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_cholesky_values(dtype):
    a = _spd((2, 3, 3), dtype)
    g, t = _both(a)
    tol = dict(rtol=1e-4, atol=1e-5)
    for upper in (False, True):
        _same(gt.linalg.cholesky(g, upper=upper), torch.linalg.cholesky(t, upper=upper), **tol)
        _same(gt.linalg.cholesky_ex(g.mT, upper=upper),
              torch.linalg.cholesky_ex(t.mT, upper=upper), **tol)


def test_cholesky_errors_and_info():
    bad = gt.stack([gt.eye(3), -gt.eye(3)])
    _raises(gt.linalg.LinAlgError, "linalg.cholesky: (Batch element 1): The factorization "
            "could not be completed because the input is not positive-definite (the leading "
            "minor of order 1 is not positive-definite).", lambda: gt.linalg.cholesky(bad))
    a = np.diag([1.0, 2.0, -1.0])
    _raises(gt.linalg.LinAlgError, "(the leading minor of order 3 is not positive-definite)",
            lambda: gt.linalg.cholesky(gt.tensor(a)))
    _raises(gt.linalg.LinAlgError, "linalg.cholesky_ex: ",
            lambda: gt.linalg.cholesky_ex(gt.tensor(a), check_errors=True))
    L, info = gt.linalg.cholesky_ex(gt.tensor(a))
    _same(info, torch.linalg.cholesky_ex(torch.tensor(a)).info)
    L, info = gt.linalg.cholesky_ex(bad)
    _same(info, torch.linalg.cholesky_ex(torch.stack([torch.eye(3), -torch.eye(3)])).info)


def test_cholesky_grads():
    a = _spd((2, 3, 3))
    for upper in (False, True):
        fg = lambda x: gt.linalg.cholesky(x, upper=upper)  # noqa: E731
        _grads_match(fg, lambda x: torch.linalg.cholesky(x, upper=upper), [a])
        _gradcheck(lambda x: fg(x @ x.mT), a[0])
    c = _spd((3, 3), np.complex128)
    _grads_match(gt.linalg.cholesky, torch.linalg.cholesky, [c])
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.cholesky(x).grad_fn.name() == "LinalgCholeskyExBackward0"


@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 3), (2, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_values(shape, mode):
    a = _random(shape)
    g, t = _both(a)
    Qg, Rg = gt.linalg.qr(g, mode)
    Qt, Rt = torch.linalg.qr(t, mode)
    assert type(gt.linalg.qr(g, mode)).__name__ == "linalg_qr"
    # LAPACK's Householder QR in both: the same signs
    _same(Qg, Qt)
    _same(Rg, Rt)
    if mode != "r":
        np.testing.assert_allclose(to_numpy(Qg @ Rg), a, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4)])
def test_qr_grads(shape):
    a = _random((2,) + shape)
    _grads_match(gt.linalg.qr, torch.linalg.qr, [a])
    _gradcheck(gt.linalg.qr, a[0])
    c = _random(shape, np.complex128)
    _grads_match(gt.linalg.qr, torch.linalg.qr, [c])
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.qr(x)[0].grad_fn.name() == "LinalgQrBackward0"


def test_qr_errors():
    x = gt.tensor(_random((4, 3)), requires_grad=True)
    _raises(RuntimeError, "qr received unrecognized mode 'x'", lambda: gt.linalg.qr(x, "x"))
    _raises(RuntimeError, "linalg.qr: The input tensor A must have at least 2 dimensions.",
            lambda: gt.linalg.qr(x[0]))
    _raises(RuntimeError, "The derivative of linalg.qr depends on Q, which is not computed when"
            " mode='r'", lambda: gt.linalg.qr(x, "r")[1].sum().backward())
    _raises(RuntimeError, "The QR decomposition is not differentiable when mode='complete' and "
            "nrows > ncols.", lambda: gt.linalg.qr(x, "complete")[0].sum().backward())


# ---- SVD ------------------------------------------------------------------------------------

def _abs(x):
    return np.abs(to_numpy(x))


def _same_abs(x, y, rtol=1e-5, atol=1e-6):
    """Same shape, dtype and strides; the same values up to sign / phase."""
    assert x.shape == y.shape and str(x.dtype) == str(y.dtype), (x, y)
    assert x.stride() == y.stride() or x.numel() <= 1, (x.stride(), y.stride())
    np.testing.assert_allclose(_abs(x), y.abs().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 5), (0, 3), (2, 3, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_values(shape, full_matrices):
    a = _random(shape)
    g, t = _both(a)
    rg = gt.linalg.svd(g, full_matrices=full_matrices)
    rt = torch.linalg.svd(t, full_matrices=full_matrices)
    assert type(rg).__name__ == "linalg_svd"
    k = rg.S.shape[-1]
    for x, y in zip(rg, rt):
        assert x.shape == y.shape and (x.stride() == y.stride() or x.numel() <= 1)
    # the singular vectors are unique up to sign; the completion of a basis is not
    _same_abs(rg.U[..., :k], rt.U[..., :k])
    _same_abs(rg.S, rt.S)
    _same_abs(rg.Vh[..., :k, :], rt.Vh[..., :k, :])
    U, S, Vh = rg
    for q in (to_numpy(U), np.swapaxes(to_numpy(Vh), -1, -2)):    # orthonormal columns
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.eye(q.shape[-1]) +
                                   np.zeros(q.shape[:-2] + (1, 1)), atol=1e-12)
    rec = to_numpy(U[..., :k]) * to_numpy(S)[..., None, :] @ to_numpy(Vh[..., :k, :])
    np.testing.assert_allclose(rec, a, atol=1e-12)
    _same(gt.linalg.svdvals(g), torch.linalg.svdvals(t))


def test_svd_legacy_and_complex():
    a = _random((2, 4, 3), np.complex64)
    g, t = _both(a)
    for some in (True, False):
        U, S, V = gt.svd(g, some=some)
        Ut, St, Vt = torch.svd(t, some=some)
        assert U.shape == Ut.shape and V.shape == Vt.shape and V.stride() == Vt.stride()
        _same(S, St, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(_abs(V), Vt.abs().numpy(), atol=1e-5)
    r, rt = _both(a.real.copy())
    _same(gt.svd(r, compute_uv=False), torch.svd(rt, compute_uv=False), rtol=1e-4, atol=1e-5)
    _same(g.svd().S, t.svd().S, rtol=1e-4, atol=1e-5)


def _svd_invariants(lib, full):
    """|U|, S, |Vh| over the first k singular vectors: independent of their signs/phases,
    which LAPACK builds may choose differently."""
    def f(x):
        u, s, vh = lib.linalg.svd(x, full_matrices=full)
        k = s.shape[-1]
        return u[..., :k].abs(), s, vh[..., :k, :].abs()
    return f


def test_svd_grads():
    a = _random((2, 4, 3))
    for full in (False, True):
        for x in (a, a.swapaxes(-1, -2)):
            _grads_match(_svd_invariants(gt, full), _svd_invariants(torch, full), [x])
    _grads_match(gt.linalg.svdvals, torch.linalg.svdvals, [a])
    _gradcheck(lambda x: gt.linalg.svd(x, full_matrices=False), a[0])
    _gradcheck(lambda x: gt.linalg.svd(x, full_matrices=False), a[0].T)
    _gradcheck(gt.linalg.svdvals, a[0])
    # complex: a loss that does not depend on the phases of the singular vectors
    c = _random((4, 3), np.complex128)
    for x in (c, c.T):
        _grads_match(_svd_invariants(gt, False), _svd_invariants(torch, False), [x])
    _gradcheck(lambda x: (lambda u, s, vh: (u[:, :2] @ vh[:2]).abs())(
        *gt.linalg.svd(x, full_matrices=False)), c)
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.svd(x)[1].grad_fn.name() == "LinalgSvdBackward0"
    assert gt.linalg.svdvals(x).grad_fn.name() == "LinalgSvdBackward0"
    assert gt.svd(x).V.grad_fn.name() == "TransposeBackward0"


# ---- eigen decompositions --------------------------------------------------------------------

def _sym(shape, dtype=np.float64):
    a = _random(shape, dtype)
    return ((a + np.swapaxes(a, -1, -2).conj()) / 2).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_eigh_values(dtype):
    a = _random((2, 3, 3), dtype)       # not Hermitian: only the UPLO triangle is read
    g, t = _both(a)
    tol = dict(rtol=1e-4, atol=1e-5)
    for uplo in ("L", "U"):
        w, v = gt.linalg.eigh(g, UPLO=uplo)
        wt, vt = torch.linalg.eigh(t, UPLO=uplo)
        _same(w, wt, **tol)
        _same_abs(v, vt, **tol)
        _same(gt.linalg.eigvalsh(g, uplo), torch.linalg.eigvalsh(t, uplo), **tol)
    _raises(RuntimeError, "Expected UPLO argument to be 'L' or 'U', but got X",
            lambda: gt.linalg.eigh(g, "X"))


def test_eigh_grads():
    a = _sym((2, 3, 3))
    f = lambda lib: lambda x: (lambda w, v: (w, v.abs()))(*lib.linalg.eigh(x))  # noqa: E731
    _grads_match(f(gt), f(torch), [a])         # |V|: independent of the vectors' signs
    _grads_match(gt.linalg.eigvalsh, torch.linalg.eigvalsh, [a])
    _gradcheck(lambda x: gt.linalg.eigh(x + x.mT), a[0])
    _grads_match(f(gt), f(torch), [_sym((3, 3), np.complex128)])
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.eigh(x)[1].grad_fn.name() == "LinalgEighBackward0"


def test_eig():
    a = _random((2, 3, 3))
    g, t = _both(a)
    w, v = gt.linalg.eig(g)
    wt, vt = torch.linalg.eig(t)
    _same(w, wt)
    _same_abs(v, vt)
    _same(gt.linalg.eigvals(g.to(gt.float32)), torch.linalg.eigvals(t.float()), rtol=1e-4,
          atol=1e-5)
    np.testing.assert_allclose(to_numpy(g.to(gt.complex128) @ v), to_numpy(v * w.unsqueeze(-2)),
                               atol=1e-12)
    # gradients of phase-invariant functions of the eigenvectors, real and complex inputs
    f = lambda lib: lambda x: (lambda w, v: (w, v.abs()))(*lib.linalg.eig(x))  # noqa: E731
    _grads_match(f(gt), f(torch), [a])
    _grads_match(f(gt), f(torch), [_random((3, 3), np.complex128)])
    _grads_match(gt.linalg.eigvals, torch.linalg.eigvals, [a])
    _gradcheck(lambda x: gt.linalg.eigvals(x), a[0])
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.eig(x)[0].grad_fn.name() == "LinalgEigBackward0"
    assert gt.linalg.eigvals(x).grad_fn.name() == "LinalgEigBackward0"


# ---- pinv, lstsq, matrix_rank ------------------------------------------------------------------

def test_pinv():
    a = _random((2, 4, 3))
    g, t = _both(a)
    _same(gt.linalg.pinv(g), torch.linalg.pinv(t))
    _same(gt.linalg.pinv(g.mT), torch.linalg.pinv(t.mT))
    h = _sym((3, 3))
    _same(gt.linalg.pinv(gt.tensor(h), hermitian=True),
          torch.linalg.pinv(torch.tensor(h), hermitian=True))
    low = np.diag([1.0, 1e-3, 1e-9])
    for kw in ({}, {"rtol": 1e-2}, {"atol": 1e-2}, {"rcond": 1e-5}, {"atol": 1e-4, "rtol": 1e-2}):
        _same(gt.linalg.pinv(gt.tensor(low), **kw), torch.linalg.pinv(torch.tensor(low), **kw))
    c, ct = _both(_random((3, 3), np.complex64))
    _same(gt.linalg.pinv(c), torch.linalg.pinv(ct), rtol=1e-4, atol=1e-5)
    for x in (a, a.swapaxes(-1, -2)):
        _grads_match(gt.linalg.pinv, torch.linalg.pinv, [x])
    _gradcheck(gt.linalg.pinv, a[0])
    _gradcheck(gt.linalg.pinv, a[0].T)
    assert gt.linalg.pinv(gt.tensor(a, requires_grad=True)).grad_fn.name() == (
        "LinalgPinvBackward0")
    _raises(RuntimeError, "linalg.pinv(Long{[3, 3]}): expected a tensor with 2 or more "
            "dimensions of float, double, cfloat or cdouble types",
            lambda: gt.linalg.pinv(gt.ones(3, 3, dtype=gt.int64)))


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
def test_lstsq(driver):
    a, b = _random((2, 5, 3)), _random((2, 5, 2))
    g, t = _both(a)
    bg, bt = _both(b)
    rg = gt.linalg.lstsq(g, bg, driver=driver)
    rt = torch.linalg.lstsq(t, bt, driver=driver)
    assert type(rg).__name__ == "linalg_lstsq"
    _same(rg, rt)
    _same(gt.linalg.lstsq(g[0], bg[0, :, 0], driver=driver).solution,
          torch.linalg.lstsq(t[0], bt[0, :, 0], driver=driver).solution)


def test_lstsq_grads_and_errors():
    a, b = _random((2, 5, 3)), _random((2, 5, 2))
    _grads_match(lambda x, y: gt.linalg.lstsq(x, y).solution,
                 lambda x, y: torch.linalg.lstsq(x, y).solution, [a, b])
    _gradcheck(lambda x, y: gt.linalg.lstsq(x, y).solution, a[0], b[0])
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.lstsq(x, gt.tensor(b)).solution.grad_fn.name() == "LinalgLstsqBackward0"
    _raises(RuntimeError, "torch.linalg.lstsq: input.size(-2) should match other.size(-2)",
            lambda: gt.linalg.lstsq(gt.ones(3, 3), gt.ones(5, 3)))
    _raises(RuntimeError, "parameter `driver` should be one of (gels, gelsy, gelsd, gelss)",
            lambda: gt.linalg.lstsq(gt.ones(3, 3), gt.ones(3, 3), driver="foo"))
    _raises(RuntimeError, "torch.linalg.lstsq: Expected input and other to have the same dtype",
            lambda: gt.linalg.lstsq(gt.ones(3, 3), gt.ones(3, 3, dtype=gt.float64)))


def test_matrix_rank():
    a = _random((2, 4, 5))
    a[1] = a[1, :1].repeat(4, 0)
    g, t = _both(a)
    _same(gt.linalg.matrix_rank(g), torch.linalg.matrix_rank(t))
    h = _sym((2, 3, 3))
    _same(gt.linalg.matrix_rank(gt.tensor(h), hermitian=True),
          torch.linalg.matrix_rank(torch.tensor(h), hermitian=True))
    low = np.diag([1.0, 1e-3, 1e-9])
    for kw in ({}, {"atol": 1e-2}, {"rtol": 1e-4}, {"tol": 1e-2}):
        _same(gt.linalg.matrix_rank(gt.tensor(low), **kw),
              torch.linalg.matrix_rank(torch.tensor(low), **kw))


# ---- matrix functions ------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -3])
def test_matrix_power(n):
    a = _wellcond((2, 3, 3)) / 3
    g, t = _both(a)
    _same(gt.linalg.matrix_power(g, n), torch.linalg.matrix_power(t, n))
    _same(g.matrix_power(n), t.matrix_power(n))
    if n:
        _grads_match(lambda x: gt.linalg.matrix_power(x, n),
                     lambda x: torch.linalg.matrix_power(x, n), [a])


def test_matrix_power_ints_and_errors():
    a = np.arange(9).reshape(3, 3)
    _same(gt.linalg.matrix_power(gt.tensor(a), 3), torch.linalg.matrix_power(torch.tensor(a), 3))
    _raises(RuntimeError, "linalg.inv: Expected a floating point or complex tensor as input. "
            "Got Long", lambda: gt.linalg.matrix_power(gt.tensor(a), -1))
    _raises(RuntimeError, "linalg.matrix_power: A must be batches of square matrices, but they "
            "are 2 by 3 matrices", lambda: gt.linalg.matrix_power(gt.ones(2, 3), 2))


def test_matrix_exp():
    for a in (_random((2, 3, 3)), 20 * _random((4, 4)), _random((3, 3), np.complex128),
              np.zeros((0, 2, 2)), _random((1, 1))):
        g, t = _both(a)
        _same(gt.linalg.matrix_exp(g), torch.linalg.matrix_exp(t), rtol=1e-10)
    a32 = _random((3, 3), np.float32)
    _same(gt.matrix_exp(gt.tensor(a32)), torch.matrix_exp(torch.tensor(a32)), rtol=1e-5)
    a = _random((2, 3, 3))
    _grads_match(gt.linalg.matrix_exp, torch.linalg.matrix_exp, [a])
    _gradcheck(gt.linalg.matrix_exp, a[0])
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.matrix_exp(x).grad_fn.name() == "LinalgMatrixExpBackward0"
    _raises(RuntimeError, "linalg.matrix_exp: A must be batches of square matrices, but they are"
            " 2 by 3 matrices", lambda: gt.linalg.matrix_exp(gt.ones(2, 3)))


# ---- triangular solve ----------------------------------------------------------------------

@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular(upper, left, unitriangular):
    a = _wellcond((2, 3, 3))
    b = _random((3, 2) if left else (2, 3))
    kw = dict(upper=upper, left=left, unitriangular=unitriangular)
    g, t = _both(a)
    bg, bt = _both(b)
    _same(gt.linalg.solve_triangular(g, bg, **kw), torch.linalg.solve_triangular(t, bt, **kw))
    _same(gt.linalg.solve_triangular(g.mT, bg, **kw),
          torch.linalg.solve_triangular(t.mT, bt, **kw))
    fg = lambda x, y: gt.linalg.solve_triangular(x, y, **kw)  # noqa: E731
    _grads_match(fg, lambda x, y: torch.linalg.solve_triangular(x, y, **kw), [a, b])
    _gradcheck(fg, a[0], b)


def test_solve_triangular_errors():
    _raises(RuntimeError, "linalg.solve_triangular: Incompatible shapes of A and B for the "
            "equation AX = B (3x3 and 2x3)",
            lambda: gt.linalg.solve_triangular(gt.ones(3, 3), gt.ones(2, 3), upper=True))
    _raises(RuntimeError, "linalg.solve_triangular: The input tensor B must have at least 2 "
            "dimensions.", lambda: gt.linalg.solve_triangular(gt.ones(3, 3), gt.ones(3),
                                                              upper=True))
    _raises(TypeError, "upper", lambda: gt.linalg.solve_triangular(gt.eye(3), gt.ones(3, 1)))
    x = gt.linalg.solve_triangular(gt.zeros(2, 2), gt.ones(2, 1), upper=True)
    y = torch.linalg.solve_triangular(torch.zeros(2, 2), torch.ones(2, 1), upper=True)
    assert np.array_equal(np.isfinite(to_numpy(x)), np.isfinite(y.numpy()))


# ---- cross, vecdot, multi_dot, aliases ---------------------------------------------------------

def test_cross():
    a, b = _random((2, 3, 4)), _random((1, 3, 4))
    (g, t), (h, u) = _both(a), _both(b)
    _same(gt.linalg.cross(g, h, dim=1), torch.linalg.cross(t, u, dim=1))
    _same(gt.linalg.cross(g.mT, h.mT), torch.linalg.cross(t.mT, u.mT))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        _same(gt.cross(g, h), torch.cross(t, u))
    assert "Using torch.cross without specifying the dim arg is deprecated" in str(w[0].message)
    _same(g.cross(h, dim=1), t.cross(u, dim=1))
    ints = np.arange(6).reshape(2, 3)
    _same(gt.linalg.cross(gt.tensor(ints), gt.tensor(ints[::-1].copy())),
          torch.linalg.cross(torch.tensor(ints), torch.tensor(ints[::-1].copy())))
    f = lambda x, y: gt.linalg.cross(x, y, dim=1)  # noqa: E731
    _grads_match(f, lambda x, y: torch.linalg.cross(x, y, dim=1), [a, b])
    _gradcheck(f, a, b)
    assert f(gt.tensor(a, requires_grad=True), h).grad_fn.name() == "LinalgCrossBackward0"
    _raises(RuntimeError, "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2",
            lambda: gt.linalg.cross(gt.ones(3, 2), gt.ones(3, 2)))
    _raises(RuntimeError, "expected scalar type Float but found Double",
            lambda: gt.linalg.cross(gt.ones(3), gt.ones(3, dtype=gt.float64)))


def test_vecdot_multi_dot_aliases():
    a, b = _random((2, 3), np.complex128), _random((4, 1, 3), np.complex128)
    (g, t), (h, u) = _both(a), _both(b)
    _same(gt.linalg.vecdot(g, h), torch.linalg.vecdot(t, u))
    _same(gt.linalg.vecdot(h, g, dim=-1), torch.linalg.vecdot(u, t, dim=-1))
    _raises(RuntimeError, "linalg.vecdot: Expected x and y to have the same dtype, but found x "
            "of type Float and y of type Double instead",
            lambda: gt.linalg.vecdot(gt.ones(3), gt.ones(3, dtype=gt.float64)))
    mats = [_random(s) for s in ((3,), (3, 10), (10, 2), (2, 7), (7,))]
    gs = [gt.tensor(m) for m in mats]
    ts = [torch.tensor(m) for m in mats]
    for lo, hi in ((0, 5), (1, 4), (0, 2), (1, 5)):
        _same(gt.linalg.multi_dot(gs[lo:hi]), torch.linalg.multi_dot(ts[lo:hi]))
    _grads_match(lambda *xs: gt.linalg.multi_dot(xs), lambda *xs: torch.linalg.multi_dot(xs),
                 mats)
    x = gt.tensor(mats[1], requires_grad=True)
    assert gt.linalg.multi_dot([x, gs[2]]).grad_fn.name() == "ViewBackward0"
    _raises(RuntimeError, "multi_dot(): expected at least 2 tensors but got 1",
            lambda: gt.linalg.multi_dot([gs[0]]))
    _raises(RuntimeError, "multi_dot(): the first tensor must be 1D or 2D but got 3D",
            lambda: gt.linalg.multi_dot([gt.ones(2, 3, 3), gt.ones(3)]))
    c = _random((2, 3, 4))
    (g, t) = _both(c)
    _same(gt.linalg.diagonal(g), torch.linalg.diagonal(t))
    _same(gt.linalg.diagonal(g, offset=1, dim1=0, dim2=2),
          torch.linalg.diagonal(t, offset=1, dim1=0, dim2=2))
    _same(gt.linalg.matmul(g, g.mT), torch.linalg.matmul(t, t.mT))
    w = _wellcond((2, 3, 3))
    _same(gt.linalg.cond(gt.tensor(w)), torch.linalg.cond(torch.tensor(w)))
    _same(gt.linalg.cond(gt.tensor(w), "fro"), torch.linalg.cond(torch.tensor(w), "fro"))


# ---- torch.norm's nuclear norm, dtype errors, out=, double backward ------------------------------

def test_torch_norm_nuc():
    a = _random((2, 3, 4))
    g, t = _both(a)
    _same(gt.norm(g, "nuc", dim=(0, 2)), torch.norm(t, "nuc", dim=(0, 2)))
    _same(g[0].norm("nuc", keepdim=True), t[0].norm("nuc", keepdim=True))
    _raises(RuntimeError, "linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2",
            lambda: gt.norm(g, "nuc"))


@pytest.mark.parametrize("name,kernel", [("det", "lu_cpu"), ("cholesky", "cholesky_cpu"),
                                         ("qr", "geqrf_cpu"), ("svd", "linalg_svd_cpu"),
                                         ("eigh", "linalg_eigh_cpu"),
                                         ("eigvals", "linalg_eig_out_cpu")])
def test_low_precision_errors(name, kernel):
    half = gt.ones(2, 2, dtype=gt.float16)
    _raises(NotImplementedError, f'"{kernel}" not implemented for \'Half\'',
            lambda: getattr(gt.linalg, name)(half))
    with pytest.raises(NotImplementedError), warnings.catch_warnings():
        warnings.simplefilter("ignore")          # torch: "ComplexHalf support is experimental"
        getattr(torch.linalg, name)(torch.ones(2, 2, dtype=torch.float16))


def test_messages_name_the_function():
    _raises(RuntimeError, "linalg.eigvals: A must be batches of square matrices, but they are 2"
            " by 3 matrices", lambda: gt.linalg.eigvals(gt.ones(2, 3)))
    _raises(RuntimeError, "Unknown Complex ScalarType for Long",
            lambda: gt.linalg.eig(gt.ones(2, 2, dtype=gt.int64)))
    _raises(RuntimeError, "This function doesn't handle types other than float and double",
            lambda: gt.linalg.matrix_rank(gt.ones(2, 2, dtype=gt.int64)))
    _raises(RuntimeError, "linalg.slogdet: Low precision dtypes not supported. Got Half",
            lambda: gt.linalg.slogdet(gt.ones(2, 2, dtype=gt.float16)))
    _same(gt.linalg.cond(gt.zeros(2, 0, 0)), torch.linalg.cond(torch.zeros(2, 0, 0)))


def test_out_arguments():
    a = _wellcond((2, 3, 3))
    g, t = _both(a)
    o = gt.empty(0, dtype=gt.float64)
    assert gt.linalg.inv(g, out=o) is o
    _same(o, torch.linalg.inv(t), check_stride=False)
    outs = (gt.empty(0, dtype=gt.float64), gt.empty(0, dtype=gt.float64))
    r = gt.linalg.slogdet(g, out=outs)
    assert r[0] is outs[0] and r[1] is outs[1]
    _same(outs[1], torch.linalg.slogdet(t).logabsdet)


def test_double_backward():
    a = _wellcond((3, 3))
    x = gt.tensor(a, requires_grad=True)
    for f in (gt.linalg.det, gt.linalg.inv, lambda y: gt.linalg.solve(y, y[:, :1]),
              lambda y: gt.linalg.matrix_exp(y / 3), lambda y: gt.linalg.cholesky(y @ y.mT),
              lambda y: gt.linalg.svd(y[:, :2], full_matrices=False), gt.linalg.qr,
              lambda y: gt.linalg.eigh(y + y.mT), gt.linalg.pinv):
        assert gt.autograd.gradgradcheck(f, (x,))


def test_meta_backend():
    # compared with torch's CPU results (the layouts its CPU kernels choose)
    A, At = gt.empty(2, 4, 3, 3, device="meta"), torch.eye(3).repeat(2, 4, 1, 1)
    R, Rt = gt.empty(2, 5, 3, device="meta"), torch.ones(2, 5, 3)
    B, Bt = gt.empty(4, 3, 2, device="meta"), torch.ones(4, 3, 2)
    cases = [("det", (A,), (At,)), ("slogdet", (A,), (At,)), ("inv_ex", (A,), (At,)),
             ("solve_ex", (A, B), (At, Bt)), ("cholesky_ex", (A,), (At,)),
             ("qr", (R,), (Rt,)), ("svd", (R.mT,), (Rt.mT,)), ("svdvals", (R,), (Rt,)),
             ("eigh", (A,), (At,)), ("pinv", (R,), (Rt,)), ("matrix_exp", (A,), (At,)),
             ("cross", (A, A), (At, At)), ("inv", (A,), (At,)), ("lu_factor_ex", (R,), (Rt,)),
             ("lu", (R.mT,), (Rt.mT,))]
    for name, ga, ta in cases:
        rg, rt = getattr(gt.linalg, name)(*ga), getattr(torch.linalg, name)(*ta)
        for x, y in zip(rg if isinstance(rg, tuple) else (rg,),
                        rt if isinstance(rt, tuple) else (rt,)):
            assert x.device.type == "meta"
            assert (tuple(x.shape), x.stride(), str(x.dtype)) == (
                tuple(y.shape), y.stride(), str(y.dtype)), name
    x = gt.linalg.solve_triangular(A, B, upper=True)
    assert x.device.type == "meta" and x.stride() == torch.linalg.solve_triangular(
        At, Bt, upper=True).stride()


@pytest.mark.parametrize("shapes", [
    dict(A=(2, 3, 3), b=(2, 3, 4), lu=(2, 3, 3)), dict(A=(3, 3), b=(5, 3, 2), lu=(4, 2, 3)),
    dict(A=(2, 3, 3), b=(3, 4), lu=(3, 5))])
def test_meta_backend_of_the_deprecated_forms_and_lu_solve(shapes):
    """Compared with PyTorch's meta kernels: shapes, strides (column-major solutions) and
    dtypes of torch.cholesky, triangular_solve, cholesky_solve, cholesky_inverse, lu_unpack
    and linalg.lu_solve."""
    def results(lib):
        A, b, lu = (lib.empty(*shapes[k], device="meta") for k in ("A", "b", "lu"))
        piv = lib.empty(*shapes["lu"][:-1], dtype=lib.int32, device="meta")
        square_piv = lib.empty(*shapes["A"][:-1], dtype=lib.int32, device="meta")
        aten = lib.ops.aten
        calls = [lambda: aten.cholesky(A), lambda: aten.triangular_solve(b, A),
                 lambda: aten.cholesky_solve(b, A, True), lambda: aten.cholesky_inverse(A),
                 lambda: aten.lu_unpack(lu, piv), lambda: aten.lu_unpack(lu, piv, False),
                 lambda: aten.linalg_lu_solve(A, square_piv, b),
                 lambda: aten.linalg_lu_solve(A, square_piv, b.mT, left=False)]
        out = []
        for call in calls:
            r = call()
            out.append([(tuple(x.shape), x.stride(), str(x.dtype)) for x in
                        (r if isinstance(r, tuple) else (r,))])
        return out
    assert results(gt) == results(torch)


def test_lu_solve_checks_its_pivots():
    LU, B = gt.eye(3).expand(2, 3, 3), gt.ones(2, 3, 1)
    for device in ("cpu", "meta"):
        LU, B = LU.to(device), B.to(device)
        _raises(RuntimeError, "pivots should be a Tensor of scalar type torch.int32",
                lambda: gt.linalg.lu_solve(LU, gt.ones(2, 3, dtype=gt.int64, device=device), B))
        _raises(RuntimeError, "Number of pivots per batch should be same as the dimension",
                lambda: gt.linalg.lu_solve(LU, gt.ones(2, 2, dtype=gt.int32, device=device), B))
        _raises(RuntimeError, "Expected LU.shape[:-1] and pivots.shape to be the same, but "
                "got pivots with shape [3] instead",
                lambda: gt.linalg.lu_solve(LU, gt.ones(3, dtype=gt.int32, device=device), B))


def test_tensor_functions_and_vander():
    a, b = _random((2, 3, 6)), _random((2, 3))
    (g, t), (h, u) = _both(a), _both(b)
    _same(gt.linalg.tensorinv(g), torch.linalg.tensorinv(t))
    _same(gt.linalg.tensorsolve(g, h), torch.linalg.tensorsolve(t, u))
    a2 = _random((6, 2, 3))
    _same(gt.linalg.tensorsolve(gt.tensor(a2), h, dims=(0,)),
          torch.linalg.tensorsolve(torch.tensor(a2), u, dims=(0,)))
    _grads_match(gt.linalg.tensorinv, torch.linalg.tensorinv, [a])
    _raises(RuntimeError, "Expected a strictly positive integer for 'ind', but got 0",
            lambda: gt.linalg.tensorinv(g, ind=0))
    _raises(RuntimeError, "prod(self.shape[ind:]) == prod(self.shape[:ind]), but got 5 != 6",
            lambda: gt.linalg.tensorinv(gt.ones(2, 3, 5)))
    x = np.array([1, 2, 3], dtype=np.int32)
    _same(gt.linalg.vander(gt.tensor(x)), torch.linalg.vander(torch.tensor(x)))
    _same(gt.linalg.vander(gt.tensor(b), N=4), torch.linalg.vander(torch.tensor(b), N=4))
    _grads_match(lambda y: gt.linalg.vander(y, N=4), lambda y: torch.linalg.vander(y, N=4), [b])
    _raises(RuntimeError, "N must be greater than 1.", lambda: gt.linalg.vander(h, N=1))
    _same(gt.pinverse(h), torch.pinverse(u))
    _same(h.pinverse(rcond=0.1), u.pinverse(rcond=0.1))


def test_strided_and_broadcast_inputs():
    full = _wellcond((4, 3, 3)).repeat(2, axis=-1)           # (4, 3, 6)
    g = gt.tensor(full)[1:, :, ::2]                           # offset and a step
    t = torch.tensor(full)[1:, :, ::2]
    assert not g.is_contiguous() and g.storage_offset() > 0
    e_g = gt.tensor(full[0, :, ::2].copy()).expand(5, 3, 3)   # stride-0 batch dim
    e_t = torch.tensor(full[0, :, ::2].copy()).expand(5, 3, 3)
    for fg, ft in [(gt.linalg.inv, torch.linalg.inv), (gt.linalg.det, torch.linalg.det),
                   (gt.linalg.svdvals, torch.linalg.svdvals), (gt.linalg.eigvalsh,
                                                                torch.linalg.eigvalsh),
                   (lambda x: gt.linalg.solve(x, x[..., 0]),
                    lambda x: torch.linalg.solve(x, x[..., 0])),
                   (lambda x: gt.linalg.qr(x).R, lambda x: torch.linalg.qr(x).R)]:
        _same(fg(g), ft(t))
        _same(fg(g.mT), ft(t.mT))
        _same(fg(e_g), ft(e_t))


def test_det_gradient_of_singular_matrices_is_the_adjugate():
    # PyTorch scales A^-H by det(A) and so returns 0 when det is exactly 0; the derivative
    # of det is the adjugate, which is non-zero for rank n-1
    cases = [(np.diag([1.0, 2.0, 0.0]), np.diag([0.0, 0.0, 2.0])),
             (np.diag([0.0, 0.0, 3.0]), np.zeros((3, 3))),
             (np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[4.0, -2.0], [-2.0, 1.0]]))]
    for a, adj_t in cases:
        x = gt.tensor(a, requires_grad=True)
        (g,) = gt.autograd.grad(gt.linalg.det(x), x)
        np.testing.assert_allclose(to_numpy(g), adj_t, atol=1e-12)


def test_svd_of_non_finite_input():
    a = np.stack([np.eye(2), np.array([[1.0, np.nan], [0.0, 1.0]])])
    for name in ("svd", "svdvals", "pinv", "matrix_rank"):
        _raises(gt.linalg.LinAlgError, "linalg.svd: (Batch element 1): The algorithm failed to "
                "converge because the input matrix contained non-finite values.",
                lambda: getattr(gt.linalg, name)(gt.tensor(a)))


def test_phase_dependent_losses_are_rejected():
    c = gt.tensor(_random((3, 3), np.complex128), requires_grad=True)
    _raises(RuntimeError, "svd_backward: The singular vectors in the complex case are specified "
            "up to multiplication by e^{i phi}.", lambda: gt.autograd.grad(
                gt.linalg.svd(c).U.real.sum(), c))
    _raises(RuntimeError, "linalg_eig_backward: The eigenvectors in the complex case",
            lambda: gt.autograd.grad(gt.linalg.eig(c).eigenvectors.real.sum(), c))
    _raises(RuntimeError, "linalg_eigh_backward: The eigenvectors in the complex case",
            lambda: gt.autograd.grad(gt.linalg.eigh(c + c.mH).eigenvectors.real.sum(), c))


@settings(max_examples=30, deadline=None)
@given(batch=st.lists(st.integers(0, 3), max_size=2), n=st.integers(1, 4),
       k=st.integers(1, 3), transpose=st.booleans(), dtype=st.sampled_from(["float32",
                                                                             "complex128"]))
def test_batched_shapes_against_torch(batch, n, k, transpose, dtype):
    a = _wellcond(tuple(batch) + (n, n), np.dtype(dtype))
    b = _random((n, k), np.dtype(dtype))
    g, t = _both(a)
    bg, bt = _both(b)
    if transpose:
        g, t = g.mT, t.mT
    tol = dict(rtol=1e-3, atol=1e-4)
    _same(gt.linalg.inv(g), torch.linalg.inv(t), **tol)
    _same(gt.linalg.solve(g, bg), torch.linalg.solve(t, bt), **tol)
    _same(gt.linalg.det(g), torch.linalg.det(t), **tol)
    _same(gt.linalg.svdvals(g), torch.linalg.svdvals(t), **tol)
    _same(gt.linalg.matrix_exp(g / 4), torch.linalg.matrix_exp(t / 4), **tol)
    _same(gt.linalg.solve_triangular(g, bg, upper=transpose),
          torch.linalg.solve_triangular(t, bt, upper=transpose), **tol)


def test_out_with_autograd_is_refused():
    x = gt.tensor(_wellcond((3, 3)), requires_grad=True)
    for fn, op in [(lambda o: gt.linalg.inv(x, out=o), "linalg_inv_ex"),
                   (lambda o: gt.linalg.det(x, out=o), "_linalg_det"),
                   (lambda o: gt.linalg.svdvals(x, out=o), "_linalg_svd"),
                   (lambda o: gt.linalg.solve(x, x, out=o), "_linalg_solve_ex")]:
        _raises(RuntimeError, f"{op}(): functions with out=... arguments don't support "
                "automatic differentiation, but one of the arguments requires grad.",
                lambda: fn(gt.empty(0, dtype=gt.float64)))
    o = gt.empty(0, dtype=gt.float64)
    assert gt.linalg.matrix_norm(x, out=o) is o        # composite in PyTorch: allowed


def test_deprecated_qr_and_cholesky():
    a = _random((2, 4, 3))
    g, t = _both(a)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for some in (True, False):
            rg, rt = gt.qr(g, some=some), torch.qr(t, some=some)
            assert type(rg).__name__ == "qr"
            _same(rg, rt)
        _same(g.qr().R, t.qr().R)
        p = _spd((2, 3, 3))
        for upper in (False, True):
            _same(gt.cholesky(gt.tensor(p), upper), torch.cholesky(torch.tensor(p), upper))
            _grads_match(lambda x: gt.cholesky(x, upper), lambda x: torch.cholesky(x, upper), [p])
        assert gt.tensor(p, requires_grad=True).cholesky().grad_fn.name() == "CholeskyBackward0"
        _raises(gt.linalg.LinAlgError, "cholesky: (Batch element 1): The factorization could "
                "not be completed", lambda: gt.cholesky(gt.stack([gt.eye(3), -gt.eye(3)])))
    texts = {str(m.message).split("\n")[0] for m in w}
    assert any(m.filename == __file__ for m in w)
    assert {"torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future "
            "PyTorch release.", "torch.cholesky is deprecated in favor of torch.linalg.cholesky "
            "and will be removed in a future PyTorch release."} <= texts


@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
def test_triangular_solve_cholesky_solve_cholesky_inverse():
    with pytest.warns(UserWarning, match="torch.triangular_solve is deprecated in favor of "
                      "torch.linalg.solve_triangular"):
        gt.triangular_solve(gt.ones(3, 1), gt.eye(3))
    a = np.triu(_random((2, 3, 3))) + 3 * np.eye(3)
    b = _random((3, 2))
    (g, t), (h, u) = _both(a), _both(b)
    for kw in ({}, {"transpose": True}, {"unitriangular": True}):
        rg, rt = gt.triangular_solve(h, g, **kw), torch.triangular_solve(u, t, **kw)
        assert type(rg).__name__ == "triangular_solve"
        _same(rg, rt)
        f = lambda lib: lambda x, y: lib.triangular_solve(x, y, **kw)  # noqa: E731
        _grads_match(f(gt), f(torch), [b, a])
    _same(h.triangular_solve(g.mT, upper=False).solution,
          u.triangular_solve(t.mT, upper=False).solution)
    L = np.linalg.cholesky(_spd((2, 3, 3)))
    for upper, F in ((False, L), (True, np.swapaxes(L, -1, -2))):
        fg, ft = gt.tensor(F), torch.tensor(F)
        _same(gt.cholesky_solve(h, fg, upper), torch.cholesky_solve(u, ft, upper))
        _same(gt.cholesky_inverse(fg, upper), torch.cholesky_inverse(ft, upper))
        _same(fg[0].cholesky_inverse(upper), ft[0].cholesky_inverse(upper))
        _grads_match(lambda x, y: gt.cholesky_solve(x, y, upper),
                     lambda x, y: torch.cholesky_solve(x, y, upper), [b, F])
        _grads_match(lambda y: gt.cholesky_inverse(y, upper),
                     lambda y: torch.cholesky_inverse(y, upper), [F])
    x = gt.tensor(L, requires_grad=True)
    assert gt.cholesky_solve(h, x).grad_fn.name() == "CholeskySolveBackward0"
    assert gt.cholesky_inverse(x).grad_fn.name() == "CholeskyInverseBackward0"
    assert gt.triangular_solve(h, x, upper=False).solution.grad_fn.name() == (
        "TriangularSolveBackward0")
    _gradcheck(lambda x, y: gt.triangular_solve(x, y), b, a[0])
    # only the factor's triangle is read; PyTorch's gradient fills the other one as well
    _gradcheck(lambda x, y: gt.cholesky_solve(x, y.tril()), b, L[0])
    _gradcheck(lambda y: gt.cholesky_inverse(y.tril()), L[0])
    _raises(RuntimeError, "torch.triangular_solve: Expected b to have at least 2 dimensions, "
            "but it has 1 dimensions instead", lambda: gt.triangular_solve(gt.ones(3), gt.eye(3)))
    _raises(RuntimeError, "cholesky_inverse: A must be batches of square matrices, but they are"
            " 2 by 3 matrices", lambda: gt.cholesky_inverse(gt.ones(2, 3)))
    _raises(RuntimeError, "Expected b and A to have the same dtype, but found b of type Double "
            "and A of type Float instead.",
            lambda: gt.cholesky_solve(gt.ones(3, 2, dtype=gt.float64), gt.eye(3)))


# ---- LU ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 3), (2, 3, 5), (0, 3, 3), (3, 0)])
def test_lu_values(shape):
    a = _random(shape)
    g, t = _both(a)
    _same(gt.linalg.lu_factor_ex(g), torch.linalg.lu_factor_ex(t))
    _same(gt.linalg.lu_factor(g.mT), torch.linalg.lu_factor(t.mT))
    _same(gt.linalg.lu(g), torch.linalg.lu(t))
    if 0 not in shape:
        LU, piv = torch.linalg.lu_factor(t)
        _same(gt.lu_unpack(gt.tensor(LU.numpy()), gt.tensor(piv.numpy())),
              torch.lu_unpack(LU, piv))
        _same(gt.lu_unpack(gt.tensor(LU.numpy()), gt.tensor(piv.numpy()), False),
              torch.lu_unpack(LU, piv, False))


def test_lu_grads_and_errors():
    for shape in ((2, 3, 3), (3, 5), (5, 3)):
        a = _random(shape)
        _grads_match(gt.linalg.lu, torch.linalg.lu, [a])
        _grads_match(lambda x: gt.linalg.lu_factor(x).LU,
                     lambda x: torch.linalg.lu_factor(x).LU, [a])
        _gradcheck(lambda x: gt.linalg.lu(x)[1:], a if a.ndim == 2 else a[0])
        LU, piv = torch.linalg.lu_factor(torch.tensor(a))
        gpiv = gt.tensor(piv.numpy())
        _grads_match(lambda x: gt.lu_unpack(x, gpiv), lambda x: torch.lu_unpack(x, piv),
                     [LU.numpy()])
    a, b = _wellcond((2, 3, 3)), _random((3, 2))
    LU, piv = torch.linalg.lu_factor(torch.tensor(a))
    gpiv = gt.tensor(piv.numpy())
    for left in (True, False):
        for adjoint in (True, False):
            bb = b if left else b.T
            kw = dict(left=left, adjoint=adjoint)
            _same(gt.linalg.lu_solve(gt.tensor(LU.numpy()), gpiv, gt.tensor(bb), **kw),
                  torch.linalg.lu_solve(LU, piv, torch.tensor(bb), **kw))
            _grads_match(lambda x, y: gt.linalg.lu_solve(x, gpiv, y, **kw),
                         lambda x, y: torch.linalg.lu_solve(x, piv, y, **kw), [LU.numpy(), bb])
    _gradcheck(lambda x: gt.linalg.lu_factor(x).LU, a[0])
    x = gt.tensor(a, requires_grad=True)
    assert gt.linalg.lu(x).L.grad_fn.name() == "LinalgLuBackward0"
    assert gt.linalg.lu_factor(x).LU.grad_fn.name() == "LinalgLuFactorExBackward0"
    LUg, pg = gt.linalg.lu_factor(x)
    assert gt.lu_unpack(LUg, pg).U.grad_fn.name() == "LuUnpackBackward0"
    assert gt.linalg.lu_solve(LUg, pg, gt.tensor(b)).grad_fn.name() == "LinalgLuSolveBackward0"
    _raises(RuntimeError, "torch.linalg.lu_factor: (Batch element 1): U[1,1] is zero and using "
            "it on lu_solve would result in a division by zero.",
            lambda: gt.linalg.lu_factor(gt.stack([gt.eye(3), gt.zeros(3, 3)])))
    _same(gt.linalg.lu_factor_ex(gt.zeros(2, 3, 3)).info,
          torch.linalg.lu_factor_ex(torch.zeros(2, 3, 3)).info)
    _raises(RuntimeError, "linalg.lu_factor: LU without pivoting is not implemented on the CPU",
            lambda: gt.linalg.lu_factor(gt.eye(3), pivot=False))
    _raises(NotImplementedError, "\"lu_cpu\" not implemented for 'Long'",
            lambda: gt.linalg.lu_factor(gt.ones(3, 3, dtype=gt.int64)))
    _raises(RuntimeError, "linalg.lu_solve: Incompatible shapes of A and B for the equation "
            "AX = B (3x3 and 2x2)", lambda: gt.linalg.lu_solve(LUg, pg, gt.ones(2, 2)))
