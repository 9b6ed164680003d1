"""autograd.functional against torch.autograd.functional."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(1)


def f_single(L):
    return lambda x: (x.exp() * x).sum(0) if x.dim() else x.exp() * x


def f_scalar(L):
    return lambda x: (x * x * x).sum() + (x.sin() if hasattr(x, "sin") else x).sum()


def f_two(L):
    return lambda a, b: (a * b.exp()).sum() + (a * a).sum()


@pytest.fixture
def data():
    return rng.standard_normal((2, 3)), rng.standard_normal((2, 3))


def _both(values):
    T = oracle_torch()
    return ([gt.tensor(v) for v in values], [T.tensor(v) for v in values])


def test_vjp_and_jvp(data):
    T = oracle_torch()
    (x, v), (tx, tv) = _both([data[0], data[1][0]])
    out, g = gt.autograd.functional.vjp(f_single(gt), x, v)
    tout, tg = T.autograd.functional.vjp(f_single(T), tx, tv)
    assert_same(out, tout, check_stride=False)
    assert_same(g, tg, rtol=1e-10, check_stride=False)
    (x, u), (tx, tu) = _both([data[0], data[1]])
    out, jv = gt.autograd.functional.jvp(f_single(gt), x, u)
    tout, tjv = T.autograd.functional.jvp(f_single(T), tx, tu)
    assert_same(jv, tjv, rtol=1e-10, check_stride=False)


def test_jacobian_shapes_and_values(data):
    T = oracle_torch()
    (x,), (tx,) = _both([data[0]])
    assert_same(gt.autograd.functional.jacobian(f_single(gt), x),
                T.autograd.functional.jacobian(f_single(T), tx), rtol=1e-10,
                check_stride=False)
    (a, b), (ta, tb) = _both(list(data))
    ours = gt.autograd.functional.jacobian(f_two(gt), (a, b))
    theirs = T.autograd.functional.jacobian(f_two(T), (ta, tb))
    for o, t in zip(ours, theirs):
        assert_same(o, t, rtol=1e-10, check_stride=False)


def test_hessian_vhp_hvp(data):
    T = oracle_torch()
    (x, v), (tx, tv) = _both(list(data))
    assert_same(gt.autograd.functional.hessian(f_scalar(gt), x),
                T.autograd.functional.hessian(f_scalar(T), tx), rtol=1e-10,
                check_stride=False)
    for name in ("vhp", "hvp"):
        out, h = getattr(gt.autograd.functional, name)(f_scalar(gt), x, v)
        tout, th = getattr(T.autograd.functional, name)(f_scalar(T), tx, tv)
        assert_same(out, tout, rtol=1e-12, check_stride=False)
        assert_same(h, th, rtol=1e-10, check_stride=False)
    (a, b), (ta, tb) = _both(list(data))
    ours = gt.autograd.functional.hessian(f_two(gt), (a, b))
    theirs = T.autograd.functional.hessian(f_two(T), (ta, tb))
    for row, trow in zip(ours, theirs):
        for o, t in zip(row, trow):
            assert_same(o, t, rtol=1e-10, check_stride=False)


def test_results_are_detached_unless_create_graph(data):
    (x, v), _ = _both(list(data))
    _, g = gt.autograd.functional.vjp(f_single(gt), x, v[0])
    assert g.grad_fn is None and not x.requires_grad
