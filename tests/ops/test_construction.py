"""Construction ops against PyTorch: rot90, diag, diag_embed, diagflat, block_diag,
cartesian_prod, tril/triu_indices (values, dtypes, shapes, strides, errors, gradients)."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

torch = oracle_torch()


def env(L):
    x = L.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    return {"L": L, "x": x, "v": L.tensor([1.0, -2.0, 3.0]),
            "z": L.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)),
            "s": L.tensor(5.0), "i": L.tensor([[1, 2], [3, 4]]), "np": np}


def both(expr):
    out = []
    for L in (gt, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(eval(expr, env(L)))
    return out


def same_error(expr):
    with pytest.raises(Exception) as expected:
        eval(expr, env(torch))
    with pytest.raises(type(expected.value)) as actual:
        eval(expr, env(gt))
    assert str(actual.value) == str(expected.value)


CASES = [
    # rot90: copies whose strides are those of a transposed flip
    *[f"L.rot90(z, {k}, (0, 2))" for k in range(-1, 6)],
    "L.rot90(x)", "x.rot90(1, [1, 0])", "L.rot90(z.transpose(0, 2), 1, (0, 1))",
    "L.rot90(z[:, ::2], 3, (0, 1))", "L.rot90(x.bool())", "L.rot90(L.empty(0, 3))",
    "L.rot90(x, -1, (-1, -2))",
    # diag_embed, diag, diagflat
    "L.diag_embed(x)", "L.diag_embed(z, 1, 0, 2)", "z.diag_embed(-2)", "L.diag_embed(x.t(), 2)",
    "L.diag_embed(z, 0, 2, 0)", "L.diag_embed(v.long())",
    "L.diag_embed(L.empty(2, 0))", "L.diag_embed(x[:, ::2], -1, 1, 0)",
    "L.diag(v)", "L.diag(v, 2)", "L.diag(v, -1)", "v.diag(-3)", "L.diag(x)", "L.diag(x, 1)",
    "L.diag(x, -2)", "L.diag(x.t(), 1)", "L.diag(x, 7)", "L.diag(i)",
    "L.diagflat(x)", "L.diagflat(x, -1)", "x.diagflat(2)", "L.diagflat(s)",
    "L.diagflat(x.t())", "L.diagflat(L.empty(0))",
    # block_diag, cartesian_prod
    "L.block_diag(x, v, s)", "L.block_diag(i, v)", "L.block_diag(i, i.bool())",
    "L.block_diag(L.empty(2, 0), L.empty(0, 3), v)", "L.block_diag(x.t())", "L.block_diag()",
    "L.block_diag(s.double(), i)",
    "L.cartesian_prod(v, v)", "L.cartesian_prod(v, v[:2], v[1:])", "L.cartesian_prod(v)",
    "L.cartesian_prod(v, L.empty(0))",
    # tril_indices, triu_indices
    "L.tril_indices(3, 4)", "L.tril_indices(3, 4, 1)", "L.tril_indices(4, 3, -1)",
    "L.tril_indices(3, 3, 5)", "L.tril_indices(3, 3, -5)", "L.tril_indices(0, 3)",
    "L.triu_indices(3, 4)", "L.triu_indices(4, 5, 2, dtype=L.int32)", "L.triu_indices(4, 3, -10)",
    "L.triu_indices(1, 0)",
]


@pytest.mark.parametrize("expr", CASES)
def test_matches_torch(expr):
    g, t = both(expr)
    assert_same(g, t)
    assert g._is_view() == t._is_view()


ERRORS = [
    "L.rot90(x, 1, (0,))", "L.rot90(v)", "L.rot90(x, 1, (1, 1))", "L.rot90(z, 1, (0, -3))",
    "L.rot90(x, 1, (0, 5))",
    "L.diag_embed(x, 0, 0, 0)", "L.diag_embed(x, 0, 0, 3)", "L.diag_embed(s)",
    "L.diag(z)", "L.diag(s)",
    "L.block_diag(z)", "L.cartesian_prod(v, x)",
    "L.tril_indices(-1, 3)", "L.triu_indices(3, -2)", "L.tril_indices(3, 3, dtype=L.float32)",
]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors_match_torch(expr):
    same_error(expr)


def test_out_variants():
    for L in (gt, torch):
        out = L.empty(0)
        assert L.diag(L.tensor([1.0, 2.0]), out=out) is out
        assert out.tolist() == [[1.0, 0.0], [0.0, 2.0]]
        with pytest.warns(UserWarning, match="was resized"):
            L.diag(L.tensor([[1.0, 2.0], [3.0, 4.0]]), 1, out=out)
        assert out.tolist() == [2.0]


GRADS = [
    ("lambda L, a: L.rot90(a, 1, (0, 2))", (2, 3, 4)),
    ("lambda L, a: L.rot90(a, -3, (2, 1))", (2, 3, 4)),
    ("lambda L, a: L.rot90(a, 2)", (3, 4)),
    ("lambda L, a: L.diag_embed(a, 1, 0, 2)", (3, 4)),
    ("lambda L, a: L.diag_embed(a.t(), -2)", (3, 4)),
    ("lambda L, a: L.diag(a, 1)", (3, 4)),
    ("lambda L, a: L.diag(a, -1)", (4,)),
    ("lambda L, a: L.diagflat(a, 2)", (2, 3)),
    ("lambda L, a: L.block_diag(a, a[0], a[1, 1], a.t())", (2, 3)),
    ("lambda L, a: L.cartesian_prod(a[0], a[1], a[0, :2])", (2, 3)),
]


@pytest.mark.parametrize("fn, shape", GRADS)
def test_gradients(fn, shape):
    f = eval(fn)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    a = gt.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    ra, rb = f(gt, a), f(torch, b)
    w = rng.standard_normal(tuple(rb.shape))
    (ra * gt.tensor(w)).sum().backward()
    (rb * torch.tensor(w)).sum().backward()
    assert_same(a.grad, b.grad, rtol=1e-10, atol=1e-12)
    if rb.grad_fn.name() != "DiagonalBackward0_copy":     # diag of a matrix: a clone here
        assert ra.grad_fn.name() == rb.grad_fn.name()
    assert gt.autograd.gradcheck(lambda t: f(gt, t), (gt.tensor(x, requires_grad=True),))
