"""Forward-mode AD (torch.autograd.forward_ad) and torch.func.jvp / jacfwd / linearize /
hessian against PyTorch's, and the jvp rules against finite differences (gradcheck's
forward-mode counterpart)."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(3)


def arr(*shape):
    return rng.standard_normal(shape)


def same(actual, expected, tol=1e-6):
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            same(a, e, tol)
    else:
        assert_same(actual, expected, check_stride=False, rtol=tol, atol=tol)


# Functions over float64 inputs whose jvp goes through each kind of rule: hand-written (mul,
# mm, softmax), linear (views, add, sum, cat), element-wise from the backward formula (sin,
# pow, div, tanh), and the transposed vjp (amax, var, cumprod, conv, layer_norm, ...).
FUNCTIONS = [
    ("mul-add", lambda L: lambda x, y: x * y + x - 2 * y),
    ("mm", lambda L: lambda x, y: x @ y.T),
    ("addmm-bmm", lambda L: lambda x, y: (L.addmm(y[0, :3], x, y.T, beta=0.5, alpha=2)
                                          + L.bmm(x.view(1, 3, 4), y.T.reshape(1, 4, 3))[0]
                                          + x.mm(y.T))),
    ("pointwise", lambda L: lambda x, y: (x.sin() * y.exp() / (1 + y * y)).tanh() ** 2),
    ("views", lambda L: lambda x, y: (x.t()[1:, :2].reshape(-1) + y.flatten()[:6]).unsqueeze(0)),
    ("reductions", lambda L: lambda x, y: L.stack([x.sum(), x.mean(0).sum(), x.amax(),
                                                   x.var(1).sum(), y.norm()])),
    ("softmax", lambda L: lambda x, y: x.softmax(-1) + y.log_softmax(0)),
    ("scans-cat", lambda L: lambda x, y: L.cat([x.cumprod(1), y.cumsum(0)], 0)),
    ("where-clamp", lambda L: lambda x, y: L.where(x > 0, x, y).clamp(-0.5, 0.5) * y),
    ("nn", lambda L: lambda x, y: L.nn.functional.layer_norm(x @ y.T, (3,)).relu().sum(0)),
    ("conv", lambda L: lambda x, y: L.nn.functional.conv1d(x.view(1, 3, 4),
                                                           y[:, :3].reshape(3, 3, 1), padding=1)),
    ("index", lambda L: lambda x, y: x[[0, 2, 2]] * y[1] + x.gather(1, L.tensor([[0], [1], [3]]))),
]


@pytest.mark.parametrize("name,make", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_dual_tensors_match_pytorch(name, make):
    T = oracle_torch()
    x, y, tx, ty = arr(3, 4), arr(3, 4), arr(3, 4), arr(3, 4)
    results = []
    for L in (gt, T):
        fwAD = L.autograd.forward_ad
        with fwAD.dual_level():
            a = fwAD.make_dual(L.tensor(x), L.tensor(tx))
            b = fwAD.make_dual(L.tensor(y), L.tensor(ty))
            out = fwAD.unpack_dual(make(L)(a, b))
            results.append((out.primal, out.tangent))
    same(results[0], results[1])


def test_func_jvp_jacfwd_linearize_hessian():
    T = oracle_torch()
    x, t = arr(4), arr(4)

    def f(L):
        return lambda x: (x.sin() * x.sum(), x.exp().prod())
    out = gt.func.jvp(f(gt), (gt.tensor(x),), (gt.tensor(t),))
    same(out, T.func.jvp(f(T), (T.tensor(x),), (T.tensor(t),)))
    same(gt.func.jacfwd(f(gt))(gt.tensor(x)), T.func.jacfwd(f(T))(T.tensor(x)))
    same(gt.func.jacfwd(lambda a, b: a * b.sum(), argnums=(0, 1))(gt.tensor(x), gt.tensor(t)),
         T.func.jacfwd(lambda a, b: a * b.sum(), argnums=(0, 1))(T.tensor(x), T.tensor(t)))
    _, fn = gt.func.linearize(lambda x: x.tanh() * 3, gt.tensor(x))
    _, tfn = T.func.linearize(lambda x: x.tanh() * 3, T.tensor(x))
    same(fn(gt.tensor(t)), tfn(T.tensor(t)))

    def scalar(L):
        return lambda x: (x ** 3).sum() * x.sin().prod() + x.softmax(0)[0]
    same(gt.func.hessian(scalar(gt))(gt.tensor(x)), T.func.hessian(scalar(T))(T.tensor(x)))


def test_jvp_composes_with_grad_and_vmap():
    T = oracle_torch()
    x, t = arr(3), arr(3)
    f = {L: (lambda L: lambda x: (x.exp() * x.cos()).sum())(L) for L in (gt, T)}
    # forward over reverse: the Hessian-vector product
    same(gt.func.jvp(gt.func.grad(f[gt]), (gt.tensor(x),), (gt.tensor(t),)),
         T.func.jvp(T.func.grad(f[T]), (T.tensor(x),), (T.tensor(t),)))
    # reverse over forward
    same(gt.func.grad(lambda x: gt.func.jvp(f[gt], (x,), (gt.tensor(t),))[1])(gt.tensor(x)),
         T.func.grad(lambda x: T.func.jvp(f[T], (x,), (T.tensor(t),))[1])(T.tensor(x)))
    # per-example jvps
    xs, ts = arr(5, 3), arr(5, 3)
    same(gt.vmap(lambda a, b: gt.func.jvp(f[gt], (a,), (b,)))(gt.tensor(xs), gt.tensor(ts)),
         T.vmap(lambda a, b: T.func.jvp(f[T], (a,), (b,)))(T.tensor(xs), T.tensor(ts)))


def test_against_finite_differences():
    # J t by central differences, for rules PyTorch's tests do not pin down here
    x, t = arr(5), arr(5)
    eps = 1e-6
    funcs = [lambda v: v.cumprod(0) * v.logsumexp(0), lambda v: v.sort().values * v.median(),
             lambda v: gt.nn.functional.gelu(v) / (1 + v.abs()), lambda v: v.std() * v.amin()]
    for fn in funcs:
        _, jt = gt.func.jvp(fn, (gt.tensor(x),), (gt.tensor(t),))
        fd = (fn(gt.tensor(x + eps * t)) - fn(gt.tensor(x - eps * t))) / (2 * eps)
        np.testing.assert_allclose(jt.numpy(), fd.numpy(), rtol=1e-5, atol=1e-6)


def test_complex_tangents_against_finite_differences():
    # for complex inputs J t is the real directional derivative (f(z + e t) - f(z - e t)) / 2e,
    # also for functions that are not holomorphic (abs, angle, conj) or complex -> real
    z = arr(2, 3) + 1j * arr(2, 3)
    t = arr(2, 3) + 1j * arr(2, 3)
    eps = 1e-6
    funcs = [lambda v: v.clone(), lambda v: (v * 2).exp(), lambda v: v.abs(),
             lambda v: v.angle(), lambda v: v.sin() * v.conj(), lambda v: v.real * v.imag,
             lambda v: (v @ v.mT).sum(-1), lambda v: v.cumprod(1) / (1 + v.abs()),
             lambda v: v.reciprocal().sqrt()]
    for fn in funcs:
        _, jt = gt.func.jvp(fn, (gt.tensor(z),), (gt.tensor(t),))
        fd = (fn(gt.tensor(z + eps * t)) - fn(gt.tensor(z - eps * t))) / (2 * eps)
        assert jt.dtype == fd.dtype
        np.testing.assert_allclose(jt.numpy(), fd.numpy(), rtol=1e-5, atol=1e-6)


def test_unpack_and_levels():
    fwAD = gt.autograd.forward_ad
    x = gt.ones(2)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, gt.full((2,), 3.0))
        primal, tangent = fwAD.unpack_dual(d)
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
        assert fwAD.unpack_dual(primal).tangent is None and tangent.tolist() == [3.0, 3.0]
        assert fwAD.unpack_dual(d.detach()).tangent is None            # as PyTorch's
        assert fwAD.unpack_dual(x).tangent is None
    assert fwAD.unpack_dual(d).tangent is None                       # dropped on exit


def test_errors_as_pytorch():
    T = oracle_torch()

    def no_level(L):
        L.autograd.forward_ad.make_dual(L.ones(2), L.ones(2))

    def wrong_size(L):
        with L.autograd.forward_ad.dual_level():
            L.autograd.forward_ad.make_dual(L.ones(2), L.ones(3))

    def not_implemented(L):
        with L.autograd.forward_ad.dual_level():
            L.floor_divide(L.autograd.forward_ad.make_dual(L.ones(2), L.ones(2)), 2)

    for case in (no_level, wrong_size, not_implemented):
        with pytest.raises(Exception) as expected:
            case(T)
        with pytest.raises(type(expected.value)) as actual:
            case(gt)
        assert str(actual.value) == str(expected.value)


def test_gradcheck_through_transforms():
    x = gt.tensor(arr(3, 4), requires_grad=True)
    t = gt.tensor(arr(3, 4))

    def f(v):
        return (v.sin() * v.exp()).cumsum(-1).softmax(-1)
    # reverse over forward, reverse over vmap, reverse over a reverse transform
    assert gt.autograd.gradcheck(lambda v: gt.func.jvp(f, (v,), (t,))[1], (x,))
    assert gt.autograd.gradcheck(gt.vmap(f), (x,))
    assert gt.autograd.gradcheck(gt.func.grad(lambda v: f(v).pow(2).sum()), (x,))


def test_op_without_any_derivative_raises():
    lib = gt.library.Library("fwad_test", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    fwAD = gt.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(gt.ones(2), gt.ones(2))
        with pytest.raises(NotImplementedError, match=r"Trying to use forward AD with twice that "
                                                      r"does not support it because it has not "
                                                      r"been implemented yet"):
            gt.ops.fwad_test.twice(d)


def test_in_place_writes_match_pytorch():
    T = oracle_torch()
    results = []
    for L in (gt, T):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(L.tensor([1.0, 2.0]), L.tensor([1.0, 0.5]))
            e = d.clone()
            e.mul_(e)
            e.add_(1)
            f = L.zeros(2)
            f.copy_(d)
            g = L.ones(2) * 3
            g.mul_(d)
            h = d.clone()
            h.fill_(3.0)
            k = L.zeros(2, 2)
            k[0] = d                      # through a view: the base's tangent too
            m = L.ones(3, 2)
            m[1:].mul_(d)
            results.append([fw.unpack_dual(t).tangent for t in (e, f, g, h, k, m)])
    same(results[0], results[1])


def test_nested_forward_levels_as_torch_func():
    """jacfwd(jacfwd(f)) and jvp inside jvp: each jvp opens a level of its own, and the inner
    level's tangent computations carry the outer level's tangents (forward over forward);
    the public forward_ad API still opens one level at a time, as PyTorch's."""
    T = oracle_torch()
    x, t, u = arr(4), arr(4), arr(4)

    def f(L):
        return lambda v: (v.sin() * v.exp()).sum() + (v ** 3).prod() + v.softmax(0)[1]
    same(gt.func.jacfwd(gt.func.jacfwd(f(gt)))(gt.tensor(x)),
         T.func.jacfwd(T.func.jacfwd(f(T)))(T.tensor(x)))
    same(gt.func.jacfwd(gt.func.jacfwd(gt.func.jacfwd(f(gt))))(gt.tensor(x)),
         T.func.jacfwd(T.func.jacfwd(T.func.jacfwd(f(T))))(T.tensor(x)))

    def nested(L):
        return lambda v: L.func.jvp(lambda w: L.func.jvp(f(L), (w,), (L.tensor(t),))[1],
                                    (v,), (L.tensor(u),))
    same(nested(gt)(gt.tensor(x)), nested(T)(T.tensor(x)))
    same(gt.func.jacrev(gt.func.jacfwd(f(gt)))(gt.tensor(x)),
         T.func.jacrev(T.func.jacfwd(f(T)))(T.tensor(x)))
    fwAD = gt.autograd.forward_ad
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
