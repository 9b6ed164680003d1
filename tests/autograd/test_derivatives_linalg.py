"""Derivative formulas of the matrix products (ops/derivatives_linalg.py) against PyTorch:
float64 gradients with contiguous and transposed operands and broadcast `input`, grad_fn
names (PyTorch's, including the decomposed ops' final node), and double backward."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import oracle_torch

rng = np.random.default_rng(4321)


def leaves(lib, arrays, transposed):
    """Leaf tensors of `lib` over the arrays; the transposed ones are built as a
    contiguous transpose then .t()/.mT, so the leaf itself has swapped strides."""
    out = []
    for a in arrays:
        if transposed and a.ndim >= 2:
            base = lib.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
            t = base.transpose(-1, -2).detach()
            t.requires_grad_(True)
        else:
            t = lib.tensor(a, requires_grad=True)
        out.append(t)
    return out


def check(fn, shapes, transposed=False, kwargs=None, double=False):
    """fn(lib, *tensors, **kwargs) in both libraries: same value, grad_fn name, gradients
    (and, with `double`, the gradients of sum(grad * v) with respect to the inputs)."""
    torch = oracle_torch()
    kwargs = kwargs or {}
    arrays = [rng.standard_normal(s) for s in shapes]
    g_in = leaves(gt, arrays, transposed)
    t_in = leaves(torch, arrays, transposed)
    g_out = fn(gt, *g_in, **kwargs)
    t_out = fn(torch, *t_in, **kwargs)
    np.testing.assert_allclose(g_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    assert g_out.grad_fn.name() == t_out.grad_fn.name()
    seed = rng.standard_normal(tuple(t_out.shape))
    g_grads = gt.autograd.grad(g_out, g_in, gt.tensor(seed), create_graph=double)
    t_grads = torch.autograd.grad(t_out, t_in, torch.tensor(seed), create_graph=double)
    for a, b in zip(g_grads, t_grads):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    if double:
        vs = [rng.standard_normal(tuple(b.shape)) for b in t_grads]
        g_s = sum((a * gt.tensor(v)).sum() for a, v in zip(g_grads, vs))
        t_s = sum((b * torch.tensor(v)).sum() for b, v in zip(t_grads, vs))
        g_2 = gt.autograd.grad(g_s, g_in, allow_unused=True)
        t_2 = torch.autograd.grad(t_s, t_in, allow_unused=True)
        for a, b in zip(g_2, t_2):
            if b is None:
                assert a is None or not np.any(a.detach().numpy())
            else:
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                           rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("fn, shapes", [
    (lambda lib, a, b: lib.mv(a, b), [(3, 4), (4,)]),
    (lambda lib, a, b: lib.dot(a, b), [(5,), (5,)]),
    (lambda lib, a, b: lib.vdot(a, b), [(5,), (5,)]),
    (lambda lib, a, b: lib.outer(a, b), [(3,), (4,)]),
    (lambda lib, a, b: lib.ger(a, b), [(3,), (4,)]),
    (lambda lib, a, b: lib.inner(a, b), [(5,), (5,)]),
    (lambda lib, a, b: lib.inner(a, b), [(2, 3), (4, 3)]),
    (lambda lib, a, b: lib.inner(a, b), [(2, 5, 3), (4, 3)]),
    (lambda lib, a, b: lib.inner(a, b), [(), (4, 3)]),
    (lambda lib, a, b: lib.tensordot(a, b), [(2, 3, 4), (3, 4, 5)]),
    (lambda lib, a, b: lib.tensordot(a, b, dims=1), [(2, 3, 4), (4, 5)]),
    (lambda lib, a, b: lib.tensordot(a, b, dims=0), [(2, 3), (4,)]),
    (lambda lib, a, b: lib.tensordot(a, b, dims=([0, 2], [2, 1])), [(2, 3, 4), (5, 4, 2)]),
    (lambda lib, a, b: lib.tensordot(a, b, dims=2), [(2, 3), (2, 3)]),
], ids=["mv", "dot", "vdot", "outer", "ger", "inner11", "inner22", "inner32", "inner0",
        "tensordot2", "tensordot1", "tensordot0", "tensordot_perm", "tensordot_all"])
def test_products(fn, shapes, transposed):
    check(fn, shapes, transposed)


ADD_OPS = {
    "addmm": ((lambda lib, i, a, b, **k: lib.addmm(i, a, b, **k)), [(2, 3), (2, 4), (4, 3)]),
    "addmv": ((lambda lib, i, a, b, **k: lib.addmv(i, a, b, **k)), [(3,), (3, 4), (4,)]),
    "addr": ((lambda lib, i, a, b, **k: lib.addr(i, a, b, **k)), [(3, 4), (3,), (4,)]),
    "addbmm": ((lambda lib, i, a, b, **k: lib.addbmm(i, a, b, **k)),
               [(3, 4), (2, 3, 5), (2, 5, 4)]),
    "baddbmm": ((lambda lib, i, a, b, **k: lib.baddbmm(i, a, b, **k)),
                [(2, 3, 4), (2, 3, 5), (2, 5, 4)]),
}
BROADCAST_INPUT = {"addmm": [(3,), (1, 1), ()], "addmv": [(1,), ()], "addr": [(4,), (3, 1)],
                   "addbmm": [(4,), (3, 1)], "baddbmm": [(3, 4), (1, 1, 4), ()]}


@pytest.mark.parametrize("name", sorted(ADD_OPS))
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("kwargs", [{}, {"beta": 0.5, "alpha": -2.0}, {"beta": 0}])
def test_add_products(name, transposed, kwargs):
    fn, shapes = ADD_OPS[name]
    check(fn, shapes, transposed, kwargs)


@pytest.mark.parametrize("name", sorted(ADD_OPS))
def test_add_products_broadcast_input(name):
    fn, shapes = ADD_OPS[name]
    for shape in BROADCAST_INPUT[name]:
        check(fn, [shape] + shapes[1:], kwargs={"beta": 1.5})


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("ijk,jl->ilk", [(2, 3, 4), (3, 5)]),
    ("bij,bj->bi", [(2, 3, 4), (2, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,kj->k", [(2, 3), (4, 3)]),          # i occurs only in the first operand
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,jk->ik", [(2, 3, 4), (4, 5)]),   # the ellipsis is summed away
    ("ij,jk->ik", [(2, 1), (3, 4)]),          # a size-1 label broadcasts
    ("ij->j", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("bij,bkj->bik", [(3, 2, 4), (3, 5, 4)]),
]


@pytest.mark.parametrize("eq, shapes", EINSUM, ids=[e for e, _ in EINSUM])
@pytest.mark.parametrize("transposed", [False, True])
def test_einsum(eq, shapes, transposed):
    check(lambda lib, *ops: lib.einsum(eq, *ops), shapes, transposed)


@pytest.mark.parametrize("fn, shapes", [
    (lambda lib, a, b: lib.mv(a, b), [(3, 4), (4,)]),
    (lambda lib, i, a, b: lib.addmm(i, a, b, beta=0.5, alpha=2.0), [(3,), (2, 4), (4, 3)]),
    (lambda lib, a, b: lib.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    (lambda lib, a, b: lib.einsum("bij,bj->bi", a, b), [(2, 3, 4), (2, 4)]),
    (lambda lib, a, b: lib.einsum("ij,kj->k", a, b), [(2, 3), (4, 3)]),
    (lambda lib, a, b: lib.tensordot(a, b, dims=([0, 2], [2, 1])), [(2, 3, 4), (5, 4, 2)]),
    (lambda lib, a, b: lib.dot(a, b), [(4,), (4,)]),
], ids=["mv", "addmm", "einsum_mm", "einsum_bmv", "einsum_sum_only", "tensordot", "dot"])
def test_double_backward(fn, shapes):
    check(fn, shapes, double=True)


def test_tensordot_size1_contracted_dim_broadcasts():
    check(lambda lib, a, b: lib.tensordot(a, b, dims=([1], [0])), [(2, 1), (3, 4)])


@pytest.mark.parametrize("eq, shapes", [
    ("...i,...i->i", [(2, 3), (3,)]),          # ellipsis summed: a view ends it
    ("...i,...j->ij", [(3,), (4,)]),          # empty ellipsis: no sum, a product
    ("...i,j->...ij", [(2, 3), (4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("...i,...i->i", [(2, 5, 3), (5, 3)]),    # the first operand's ellipsis is longer
    ("i...j,j->i...", [(2, 3, 4, 5), (5,)]),
    ("i...j,kj->ik", [(2, 3, 5), (4, 5)]),
])
def test_einsum_final_node(eq, shapes):
    check(lambda lib, *ops: lib.einsum(eq, *ops), shapes)
