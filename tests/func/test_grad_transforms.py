"""torch.func's reverse-mode transforms and functional_call against PyTorch's."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(20)


def both(*arrays):
    T = oracle_torch()
    arrays = [np.asarray(a, dtype=np.float32) for a in arrays]
    return [gt.tensor(a) for a in arrays], [T.tensor(a) for a in arrays]


def same_tree(actual, expected, **kw):
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            same_tree(a, e, **kw)
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for k in expected:
            same_tree(actual[k], expected[k], **kw)
    else:
        kw.setdefault("rtol", 1e-5)
        kw.setdefault("atol", 1e-5)
        assert_same(actual, expected, check_stride=False, **kw)


def cubic(L):
    return lambda x: (x ** 3).sum() + x.sin().prod()


def two_args(L):
    return lambda a, b: (a * b.exp()).sum() + (a @ b.T).tanh().sum()


def test_grad_single_and_argnums():
    T = oracle_torch()
    (x, y), (tx, ty) = both(rng.standard_normal((2, 3)), rng.standard_normal((2, 3)))
    same_tree(gt.func.grad(cubic(gt))(x), T.func.grad(cubic(T))(tx))
    for argnums in (0, 1, (0, 1), (1, 0), -1):
        same_tree(gt.func.grad(two_args(gt), argnums=argnums)(x, y),
                  T.func.grad(two_args(T), argnums=argnums)(tx, ty))


def test_grad_results_do_not_require_grad():
    x = gt.tensor([1.0, 2.0])
    g = gt.func.grad(lambda x: (x * x).sum())(x)
    assert not g.requires_grad and g.tolist() == [2.0, 4.0]


def test_grad_and_value_and_aux():
    T = oracle_torch()
    (x,), (tx,) = both(rng.standard_normal(4))

    def f(L):
        return lambda x: ((x * x).sum(), {"double": x * 2})
    ga, (va, auxa) = gt.func.grad_and_value(f(gt), has_aux=True)(x)
    ge, (ve, auxe) = T.func.grad_and_value(f(T), has_aux=True)(tx)
    same_tree((ga, va, auxa), (ge, ve, auxe))
    g, aux = gt.func.grad(f(gt), has_aux=True)(x)
    same_tree((g, aux), T.func.grad(f(T), has_aux=True)(tx))


def test_grad_pytree_input():
    T = oracle_torch()
    (a, b), (ta, tb) = both(rng.standard_normal(3), rng.standard_normal((2, 3)))

    def f(L):
        return lambda p, k: (p["w"] * p["v"][0]).sum() * k
    same_tree(gt.func.grad(f(gt))({"w": a, "v": [b]}, 2.0),
              T.func.grad(f(T))({"w": ta, "v": [tb]}, 2.0))


def test_nested_grad():
    T = oracle_torch()
    (x,), (tx,) = both(rng.standard_normal(()))

    def f(L):
        return lambda x: x.sin() * x ** 3
    for n in (2, 3):
        g, tg = f(gt), f(T)
        for _ in range(n):
            g, tg = gt.func.grad(g), T.func.grad(tg)
        same_tree(g(x), tg(tx))


def test_grad_of_closure_mixing_levels():
    # d/dx [x * d/dy (x * y)] = d/dx x^2 = 2x: no confusion between the two levels
    T = oracle_torch()
    for L, x in ((gt, gt.tensor(3.0)), (T, T.tensor(3.0))):
        inner = lambda x: L.func.grad(lambda y: x * y)(x)  # noqa: E731
        assert L.func.grad(lambda x: x * inner(x))(x).item() == 6.0


def test_grad_under_outer_autograd():
    T = oracle_torch()
    results = []
    for L in (gt, T):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        g = L.func.grad(lambda x: (x ** 3).sum())(x)
        g.sum().backward()
        results.append((g, x.grad))
    same_tree(results[0], results[1])


def test_vjp_and_aux():
    T = oracle_torch()
    (x, v), (tx, tv) = both(rng.standard_normal((2, 3)), rng.standard_normal((3, 2)))

    def f(L):
        return lambda x: (x.T.exp(), x.sum())
    out, fn = gt.func.vjp(f(gt), x)
    tout, tfn = T.func.vjp(f(T), tx)
    same_tree(out, tout)
    same_tree(fn((v, gt.tensor(2.0))), tfn((tv, T.tensor(2.0))))
    out, fn, aux = gt.func.vjp(lambda x: (x * 2, x.sum()), x, has_aux=True)
    tout, tfn, taux = T.func.vjp(lambda x: (x * 2, x.sum()), tx, has_aux=True)
    same_tree((out, aux, fn(gt.ones(2, 3))), (tout, taux, tfn(T.ones(2, 3))))


def test_jacrev():
    T = oracle_torch()
    (x, y), (tx, ty) = both(rng.standard_normal(3), rng.standard_normal((2, 3)))

    def f(L):
        return lambda x, y: (y @ x).sin()
    same_tree(gt.func.jacrev(f(gt))(x, y), T.func.jacrev(f(T))(tx, ty))
    same_tree(gt.func.jacrev(f(gt), argnums=(0, 1))(x, y),
              T.func.jacrev(f(T), argnums=(0, 1))(tx, ty))
    same_tree(gt.func.jacrev(f(gt), chunk_size=1)(x, y), T.func.jacrev(f(T))(tx, ty))

    def g(L):
        return lambda x: ({"a": x.exp(), "b": x[:2] * 2}, x.sum())
    same_tree(gt.func.jacrev(g(gt), has_aux=True)(x), T.func.jacrev(g(T), has_aux=True)(tx))


def test_hessian():
    T = oracle_torch()
    (x, y), (tx, ty) = both(rng.standard_normal(3), rng.standard_normal(3))
    same_tree(gt.func.hessian(cubic(gt))(x), T.func.hessian(cubic(T))(tx))
    same_tree(gt.func.hessian(lambda a, b: (a * a * b).sum(), argnums=(0, 1))(x, y),
              T.func.hessian(lambda a, b: (a * a * b).sum(), argnums=(0, 1))(tx, ty))


def test_errors_as_pytorch():
    T = oracle_torch()
    cases = [lambda L: L.func.grad(lambda x: x)(L.ones(2)),
             lambda L: L.func.grad(lambda x: x.sum(), has_aux=True)(L.ones(2)),
             lambda L: L.func.grad(lambda x: x.sum(), argnums=2)(L.ones(2)),
             lambda L: L.func.grad(lambda x: 3)(L.ones(2)),
             lambda L: L.func.grad(lambda x: x.sum())(3.0),
             lambda L: L.func.vjp(lambda x: x, L.ones(2))[1](L.ones(3))]
    for case in cases:
        with pytest.raises(Exception) as expected:
            case(T)
        with pytest.raises(type(expected.value)) as actual:
            case(gt)
        assert str(actual.value) == str(expected.value)


# ---- functional_call and stack_module_state ------------------------------------------------

def _linear_pair(seed=0):
    T = oracle_torch()
    T.manual_seed(seed)
    tm = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2))
    gm = gt.nn.Sequential(gt.nn.Linear(3, 4), gt.nn.Tanh(), gt.nn.Linear(4, 2))
    gm.load_state_dict({k: gt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return gm, tm


def test_functional_call_replaces_and_restores():
    gm, tm = _linear_pair()
    (x, w), (tx, tw) = both(rng.standard_normal((5, 3)), rng.standard_normal((4, 3)))
    before = gm[0].weight
    same_tree(gt.func.functional_call(gm, {"0.weight": w}, (x,)),
              oracle_torch().func.functional_call(tm, {"0.weight": tw}, (tx,)))
    assert gm[0].weight is before
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        same_tree(gt.nn.utils.stateless.functional_call(gm, {"0.weight": w}, x),
                  oracle_torch().nn.utils.stateless.functional_call(tm, {"0.weight": tw}, tx))


def test_functional_call_grad_matches_backward():
    T = oracle_torch()
    gm, tm = _linear_pair(1)
    (x,), (tx,) = both(rng.standard_normal((5, 3)))
    params = {k: v.detach() for k, v in gm.named_parameters()}
    tparams = {k: v.detach() for k, v in tm.named_parameters()}

    def loss(L, m):
        return lambda p, x: L.func.functional_call(m, p, (x,)).pow(2).mean()
    same_tree(gt.func.grad(loss(gt, gm))(params, x), T.func.grad(loss(T, tm))(tparams, tx))


def test_functional_call_errors():
    T = oracle_torch()
    cases = [lambda L, m, x: L.func.functional_call(m, {"0.weight": x}, (x,), strict=True),
             lambda L, m, x: L.func.functional_call(m, ({"0.weight": x}, {"0.weight": x}), x)]
    gm, tm = _linear_pair()
    for case in cases:
        with pytest.raises(Exception) as expected:
            case(T, tm, T.ones(4, 3))
        with pytest.raises(type(expected.value)) as actual:
            case(gt, gm, gt.ones(4, 3))
        assert str(actual.value) == str(expected.value)
    assert gm[0].weight.shape == (4, 3)


def test_functional_call_tied_weights():
    T = oracle_torch()
    outs = []
    for L in (gt, T):
        m = L.nn.Sequential(L.nn.Linear(2, 2, bias=False), L.nn.Linear(2, 2, bias=False))
        m[1].weight = m[0].weight
        x = L.ones(1, 2)
        w = L.tensor([[1.0, 2.0], [3.0, 4.0]])
        outs.append((L.func.functional_call(m, {"0.weight": w}, (x,)),
                     L.func.functional_call(m, {"0.weight": w}, (x,), tie_weights=False)))
    same_tree(outs[0][0], outs[1][0])
    assert outs[0][1].shape == outs[1][1].shape


def test_stack_module_state():
    T = oracle_torch()
    models = [_linear_pair(s) for s in range(3)]
    p, b = gt.func.stack_module_state([g for g, _ in models])
    tp, tb = T.func.stack_module_state([t for _, t in models])
    same_tree(p, {k: v.detach() for k, v in tp.items()})
    assert all(v.requires_grad and v.is_leaf for v in p.values()) and b == {} == tb
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        gt.func.stack_module_state([])


def test_public_names_and_signatures_match_pytorch():
    import inspect
    T = oracle_torch()
    missing = [n for n in dir(T.func) if not n.startswith("_") and not hasattr(gt.func, n)]
    assert missing == []
    for n in ("dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
              "UnpackedDualTensor"):
        assert hasattr(gt.autograd.forward_ad, n)
    for fn in ("grad", "grad_and_value", "vjp", "jacrev", "jacfwd", "jvp", "hessian",
               "linearize", "functionalize", "vmap", "functional_call", "stack_module_state",
               "rearrange"):
        ours = inspect.signature(getattr(gt.func, fn)).parameters
        theirs = inspect.signature(getattr(T.func, fn)).parameters
        assert list(ours) == list(theirs), fn
        assert [p.kind for p in ours.values()] == [p.kind for p in theirs.values()], fn
    assert gt.vmap is gt.func.vmap
