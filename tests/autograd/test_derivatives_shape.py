"""Gradients of the shape, indexing and joining ops, against PyTorch (float64)."""
import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch

torch = oracle_torch()


def _pair(shape, seed, transpose=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    g, t = gt.tensor(a).requires_grad_(), torch.tensor(a).requires_grad_()
    if transpose:          # a non-contiguous input (the leaf is the original)
        return (g, t), (g.transpose(0, 1), t.transpose(0, 1))
    return (g, t), (g, t)


def _idx(lib, v):
    return lib.tensor(v)


# (name, shape, function(lib, x) -> output or tuple of outputs)
CASES = [
    ("unfold", (5, 4), lambda L, x: x.unfold(0, 2, 1)),
    ("unfold_step", (7, 4), lambda L, x: x.unfold(0, 3, 2)),
    ("diagonal", (4, 5), lambda L, x: x.diagonal(1)),
    ("as_strided", (4, 5), lambda L, x: x.as_strided((3, 2), (1, 2), 1)),
    ("split", (5, 4), lambda L, x: x.split(2, 0)),
    ("split_sizes", (5, 4), lambda L, x: x.split([1, 3], 1)),
    ("unbind", (3, 4), lambda L, x: x.unbind(1)),
    ("chunk", (5, 4), lambda L, x: x.chunk(3, 0)),
    ("cat", (3, 4), lambda L, x: L.cat([x, x * 2, x[:1]], 0)),
    ("stack", (3, 4), lambda L, x: L.stack([x, x * 3], 1)),
    ("flip", (3, 4), lambda L, x: x.flip(0, 1)),
    ("roll", (3, 4), lambda L, x: x.roll((1, -2), (0, 1))),
    ("roll_flat", (3, 4), lambda L, x: x.roll(5)),
    ("repeat", (3, 4), lambda L, x: x.repeat(2, 1, 3)),
    ("tile", (3, 4), lambda L, x: x.tile(2)),
    ("tril", (4, 4), lambda L, x: x.tril(-1)),
    ("triu", (4, 3), lambda L, x: x.triu(1)),
    ("masked_fill", (3, 4), lambda L, x: x.masked_fill(x > 0, 1.5)),
    ("masked_select", (3, 4), lambda L, x: x.masked_select(x > 0)),
    ("index", (4, 5), lambda L, x: x[_idx(L, [0, 2, 0]), _idx(L, [1, 1, 4])]),
    ("index_mid", (4, 5), lambda L, x: x[:, _idx(L, [0, 3, 3])]),
    ("index_bool", (4, 5), lambda L, x: x[x > 0.2]),
    ("index_select", (4, 5), lambda L, x: x.index_select(1, _idx(L, [4, 0, 4]))),
    ("index_apart", (4, 5), lambda L, x: x.unsqueeze(1).expand(4, 2, 5)[
        _idx(L, [1, 1]), :, _idx(L, [[0], [2]])]),
    ("cat_legacy_empty", (3, 4), lambda L, x: L.cat([x, L.zeros(0, dtype=x.dtype), x], 1)),
    ("unbind_single", (1, 4), lambda L, x: x.unbind(0)),
    ("take", (4, 5), lambda L, x: x.take(_idx(L, [[0, -1], [7, 7]]))),
]


def _grads(lib, leaf, x, fn):
    out = fn(lib, x)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o * (i + 1.5)).sum() for i, o in enumerate(outs))
    return outs[0].grad_fn.name(), lib.autograd.grad(loss, leaf)[0]


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("name,shape,fn", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_torch(name, shape, fn, transpose):
    if transpose:
        shape = shape[::-1]
    (gl, tl), (gx, tx) = _pair(shape, 7, transpose)
    gname, gg = _grads(gt, gl, gx, fn)
    tname, tg = _grads(torch, tl, tx, fn)
    assert gname == tname
    np.testing.assert_allclose(gg.numpy(), tg.numpy())


def test_split_unused_outputs_get_zeros():
    (gl, tl), _ = _pair((6, 2), 1)
    gg = gt.autograd.grad(gl.split(2)[1].sum(), gl)[0]
    tg = torch.autograd.grad(tl.split(2)[1].sum(), tl)[0]
    np.testing.assert_allclose(gg.numpy(), tg.numpy())


def test_view_as_real_and_complex():
    a = np.random.default_rng(3).standard_normal((3, 2))
    g, t = gt.tensor(a).requires_grad_(), torch.tensor(a).requires_grad_()
    gc, tc = gt.view_as_complex(g), torch.view_as_complex(t)
    assert gc.grad_fn.name() == tc.grad_fn.name()
    gr, tr = gt.view_as_real(gc * 1), torch.view_as_real(tc * 1)
    assert gr.grad_fn.name() == tr.grad_fn.name()
    w = np.arange(6.0).reshape(3, 2)
    gg = gt.autograd.grad((gr * gt.tensor(w)).sum(), g)[0]
    tg = torch.autograd.grad((tr * torch.tensor(w)).sum(), t)[0]
    np.testing.assert_allclose(gg.numpy(), tg.numpy())


DOUBLE_CASES = dict({c[0]: c[2] for c in CASES}, cat=lambda L, x: L.cat([x, x * 2], 1))
DOUBLE = ["cat", "stack", "split", "unbind", "flip", "roll", "repeat", "tril",
          "masked_fill"]


@pytest.mark.parametrize("name", DOUBLE)
def test_double_backward(name):
    _, shape, _ = next(c for c in CASES if c[0] == name)
    fn = DOUBLE_CASES[name]
    res = []
    for lib in (gt, torch):
        a = np.random.default_rng(5).standard_normal(shape)
        x = lib.tensor(a).requires_grad_()
        out = fn(lib, x)
        outs = out if isinstance(out, tuple) else (out,)
        loss = sum((o * o * (i + 1.0)).sum() for i, o in enumerate(outs))
        g = lib.autograd.grad(loss, x, create_graph=True)[0]
        res.append(lib.autograd.grad((g * g).sum(), x)[0].numpy())
    np.testing.assert_allclose(res[0], res[1])
