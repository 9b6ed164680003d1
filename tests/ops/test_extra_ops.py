"""Operators of PyTorch's OpInfo database added late, against PyTorch: statistics (cov,
corrcoef, quantile, nanquantile, histogramdd), scatters into views and the *_copy view ops,
and the misc math (gcd, lcm, ldexp, frexp, nextafter, deg2rad, rad2deg, isin, trapezoid,
trapz, cumulative_trapezoid, unravel_index, combinations, index_reduce); values, dtypes,
shapes, strides, errors and float64 gradients (against torch and gradcheck), and the complex
gradient of logcumsumexp."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

torch = oracle_torch()

NAN = float("nan")


def env(L):
    rng = np.random.default_rng(0)
    m = rng.standard_normal((3, 5))
    return {"L": L, "np": np, "NAN": NAN,
            "m": L.tensor(m, dtype=L.float32),
            "mt": L.tensor(m.T.copy(), dtype=L.float32).t(),           # transposed storage
            "d": L.tensor(m),
            "step": L.tensor(rng.standard_normal((4, 8)))[:, ::2],     # sliced with a step
            "nan": L.tensor([[1.0, NAN, 3.0, 0.5], [NAN, NAN, NAN, NAN]]),
            "i": L.tensor([[12, -18, 0, 7], [8, 27, 0, -5]]),
            "j": L.tensor([4, 6, 0, 21]),
            "e": L.zeros(0, 3),
            "h": L.tensor([1.0, -2.5, 0.0, 3e-5], dtype=L.float16),
            "bf": L.tensor([1.0, -2.5, 0.0, 3e-5], dtype=L.bfloat16),
            "x": L.arange(12.0).view(3, 4),
            "ix": L.tensor([0, 2, 0]),
            "src": L.tensor(rng.integers(-2, 3, (3, 4)).astype(np.float32)),
            "w": L.tensor([1, 2, 0, 3, 1]), "aw": L.tensor([0.5, 1.0, 2.0, 0.1, 1.0])}


def both(expr):
    out = []
    for L in (gt, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(eval(expr, env(L)))
    return out


def check(g, t, **tol):
    if isinstance(t, torch.Tensor):
        assert_same(g, t, **tol)
    elif isinstance(t, (tuple, list)):
        assert isinstance(g, (tuple, list)) and len(g) == len(t)
        for a, b in zip(g, t):
            check(a, b, **tol)
    else:
        assert g == t


VALUES = [
    # statistics
    "L.cov(m)", "L.cov(mt)", "L.cov(d, correction=0)", "L.cov(d[0])", "m.cov(correction=2)",
    "L.cov(d, fweights=w)", "L.cov(d, aweights=aw.double())",
    "L.cov(d, fweights=w, aweights=aw.double(), correction=3)", "L.cov(i)", "L.cov(e.t())",
    "L.corrcoef(m)", "L.corrcoef(step)", "L.corrcoef(d[1])", "L.corrcoef(i)",
    "L.corrcoef(L.tensor([[1.0, 2j, 3.0], [0.5, 1 + 1j, -2.0]]))",
    "L.quantile(m, 0.3)", "L.quantile(mt, 0.3, dim=1, keepdim=True)",
    "L.quantile(d, L.tensor([0.0, 0.25, 0.9, 1.0], dtype=L.float64), dim=0)",
    "L.quantile(m, L.tensor([0.3, 0.5]), keepdim=True)", "m.quantile(0.5, dim=-1)",
    "L.quantile(L.tensor(3.0), 0.5, dim=0, keepdim=True)", "L.quantile(nan, 0.5, dim=1)",
    "L.nanquantile(nan, 0.5, dim=1)", "L.nanquantile(nan, L.tensor([0.2, 1.0]))",
    "L.nanquantile(step, 0.4, dim=0, keepdim=True)",
    *[f"L.quantile(step, 0.4, dim=1, interpolation='{m}')"
      for m in ("linear", "lower", "higher", "midpoint", "nearest")],
    *[f"L.nanquantile(nan, L.tensor([0.25, 0.5]), dim=1, interpolation='{m}')"
      for m in ("lower", "higher", "midpoint", "nearest")],
    "L.histogramdd(L.tensor([[0.0, 1.0], [1.0, 1.0], [2.0, 0.5], [1.0, 1.0]]), bins=[2, 3])",
    "L.histogramdd(d.t().reshape(5, 1, 3), bins=3)", "L.histogramdd(mt.t(), bins=(2, 1, 4))",
    "L.histogramdd(d.t(), bins=2, range=[0.0, 1.0, -1.0, 0.0, -2.0, 2.0], "
    "weight=L.arange(5.0, dtype=L.float64), density=True)",
    "L.histogramdd(m.t()[:, :2], bins=[L.tensor([-1.0, 0.0, 3.0]), L.tensor([-3.0, 0.5])])",
    "L.histogramdd(L.ones(2, 3, 2), bins=2)", "L.histogramdd(L.zeros(0, 2), bins=2)",
    "L.histogramdd(L.ones(2, 2), bins=2, density=True, range=[5.0, 6.0, 5.0, 6.0])",
    # scatters into views: strides preserved from input
    "L.diagonal_scatter(x, L.ones(3))", "L.diagonal_scatter(x.t(), -L.ones(3), 1, 1, 0)",
    "x.select_scatter(L.ones(4), 0, 1)", "L.select_scatter(mt, L.zeros(3), 1, -1)",
    "L.slice_scatter(x, L.zeros(3, 2), 1, 1, None, 2)", "L.slice_scatter(x, L.zeros(1, 4), 0, 2)",
    "L.slice_scatter(x.t(), L.zeros(4, 3))", "L.slice_scatter(e, L.ones(0, 3), 0)",
    "L.as_strided_scatter(x, L.ones(2, 2), (2, 2), (1, 2), 1)",
    "L.diagonal_scatter(x, L.ones(3, dtype=L.float64))",
    # *_copy: contiguous copies of the views
    "L.alias_copy(mt)", "L.as_strided_copy(x, (2, 2), (1, 4), 2)", "L.diagonal_copy(mt, -1)",
    "L.expand_copy(L.ones(3, 1), (2, 3, 4))", "L.narrow_copy(mt, 1, 1, 2)",
    "L.permute_copy(x, (1, 0))", "L.select_copy(x, 1, -1)", "L.slice_copy(x, 1, 0, 4, 2)",
    "L.squeeze_copy(L.ones(1, 3, 1))", "L.squeeze_copy(L.ones(1, 3, 1), 2)", "L.t_copy(x)",
    "L.transpose_copy(x, 0, 1)", "L.unbind_copy(mt, 1)", "L.unfold_copy(x, 1, 2, 1)",
    "L.unsqueeze_copy(mt, 0)", "L.view_copy(x, (2, 6))", "L.view_copy(x, L.int32)",
    "L.split_with_sizes_copy(x, [1, 2])", "L.split_copy(x.t(), 3)",
    # gcd, lcm, nextafter, frexp, ldexp, angles
    "L.gcd(i, j)", "L.lcm(i, j)", "L.gcd(i.int(), j.to(L.int16))", "i.gcd(L.tensor(6))",
    "L.lcm(i[:, ::2], j[::2])",
    "L.nextafter(m, L.zeros(()))", "L.nextafter(d.t(), d.t() + 1)", "L.nextafter(h, -h)",
    "L.nextafter(bf, L.tensor([2.0, -3.0, -1.0, 1.0], dtype=L.bfloat16))",
    "L.nextafter(L.tensor([NAN, 1.0, 0.0]), L.tensor([0.0, 1.0, 0.0]))",
    "L.frexp(mt)", "L.frexp(d)", "L.frexp(h)", "L.frexp(bf)",
    "L.frexp(L.tensor([0.0, float('inf'), NAN, -3.0]))",
    "L.ldexp(m, L.tensor([1, -2, 3, 0, 4]))", "L.ldexp(j, j)", "L.ldexp(d, L.tensor([200]))",
    "L.ldexp(h, L.tensor(3))", "m.clone().ldexp_(L.tensor(2))",
    "L.deg2rad(i)", "L.rad2deg(mt)", "L.deg2rad(h)", "d.clone().rad2deg_()",
    # isin
    "L.isin(i, j)", "L.isin(i.t(), 0)", "L.isin(7, i)", "L.isin(i, j, invert=True)",
    "L.isin(L.tensor([1, 2, 3]), L.tensor([2.0, 5.5]))",
    "L.isin(L.tensor([1, 2, 3]), L.tensor([3, 1]), assume_unique=True)",
    "L.isin(e, m)",
    # trapezoid family
    "L.trapezoid(mt)", "L.trapezoid(i, dx=2)", "L.trapezoid(d, dim=0)",
    "L.trapezoid(m, L.tensor([0.0, 1.0, 3.0, 3.5, 6.0]))", "L.trapezoid(d, d, dim=0)",
    "L.trapezoid(e.t())", "L.trapezoid(L.ones(2, 1))", "L.trapz(step, dx=0.5)",
    "L.trapz(m, L.tensor([0.0, 1.0, 3.0, 3.5, 6.0]))",
    "L.cumulative_trapezoid(mt)", "L.cumulative_trapezoid(i, dx=3)",
    "L.cumulative_trapezoid(d, L.tensor([0.0, 1.0, 3.0, 3.5, 6.0]))",
    "L.cumulative_trapezoid(e, dim=0)",
    # unravel_index, combinations
    "L.unravel_index(L.tensor([4, 1, 7, 6, -1]), (2, 3))", "L.unravel_index(L.tensor(5), 7)",
    "L.unravel_index(L.tensor([[3, 11]]), (2, 2, 3))", "L.unravel_index(L.tensor([1]), ())",
    "L.combinations(j)", "L.combinations(j, 3)", "L.combinations(j, 0)",
    "L.combinations(j, 5)", "L.combinations(j[:3], 2, with_replacement=True)",
    "L.combinations(L.zeros(0))",
    # index_reduce
    *[f"x.index_reduce(0, ix, src, '{r}')" for r in ("prod", "mean", "amax", "amin")],
    *[f"x.t().index_reduce(1, ix, src.t(), '{r}', include_self=False)"
      for r in ("prod", "mean", "amax", "amin")],
    "x.long().index_reduce(0, ix, src.long() + 1, 'mean')",
    "x.cfloat().index_reduce(0, ix, src.cfloat() * 1j, 'mean')",
    "x.half().index_reduce(0, ix, src.half(), 'prod', include_self=False)",
    "(x / 7).index_reduce(1, L.tensor([1, 1, 1]), src[:, :3] / 3, 'mean')",
    "x.long().index_reduce(0, ix, src.long(), 'amin', include_self=False)",
    "x.clone().index_reduce_(1, ix.int(), src[:, :3], 'prod')",
    "L.tensor(3.0).index_reduce(0, L.tensor([0]), L.tensor(5.0), 'amax')",
    "e.index_reduce(1, ix, L.zeros(0, 3), 'mean')",
]


@pytest.mark.parametrize("expr", VALUES)
def test_values(expr):
    g, t = both(expr)
    check(g, t, rtol=1e-5, atol=1e-6)


ERRORS = [
    "L.cov(L.ones(2, 2, 2))", "L.cov(x, fweights=L.ones(4))",
    "L.cov(x, fweights=L.ones(4, 1).long())", "L.cov(x, fweights=L.ones(3).long())",
    "L.cov(x, fweights=-L.ones(4).long())", "L.cov(x, aweights=L.ones(4).long())",
    "L.cov(x, aweights=-L.ones(4))", "L.corrcoef(L.ones(2, 2, 2))",
    "L.quantile(x, 1.5)", "L.quantile(x, L.tensor([1.5]))",
    "L.quantile(x, L.tensor([0.5], dtype=L.float64))", "L.quantile(x.long(), 0.5)",
    "L.quantile(L.ones(0), 0.5)", "L.quantile(x, L.ones(2, 2) * 0.5)",
    "L.quantile(x, 0.5, interpolation='foo')", "L.quantile(x, 0.5, dim=2)",
    "L.nanquantile(x, -0.1)", "L.histogramdd(x.long(), 2)", "L.histogramdd(x[0], 2)",
    "L.histogramdd(x, bins=(2, 2))", "L.histogramdd(x, bins=(2, 2, 2, -2))",
    "L.histogramdd(x, bins=(2, 0, 2, 2))", "L.histogramdd(x[:, :2], 2, range=[1.0, 0.0, 0.0, 1.0])",
    "L.histogramdd(x[:, :2], 2, range=[0.0, 1.0])",
    "L.histogramdd(L.tensor([[NAN, 1.0]]), bins=2)",
    "L.histogramdd(x[:, :2], 2, range=[0.0, float('inf'), 0.0, 1.0])",
    "L.histogramdd(x[:, :2], 2, weight=L.ones(2))",
    "L.histogramdd(x[:, :2], 2, weight=L.ones(3, dtype=L.float64))",
    "L.histogramdd(x[:, :1], [L.tensor([0.0, 1.0], dtype=L.float64)])",
    "L.histogramdd(x[:, :1], [L.tensor([[0.0, 1.0]])])", "L.histogramdd(x[:, :1], [L.ones(1)])",
    "L.diagonal_scatter(x, L.ones(2))", "L.select_scatter(x, L.ones(3), 0, 1)",
    "L.select_scatter(x, L.ones(4), 0, 9)", "L.slice_scatter(x, L.ones(2), 0, 0, 2)",
    "L.as_strided_scatter(x, L.ones(3), (2,), (1,))", "L.slice_scatter(x, x, 5)",
    "L.slice_copy(x, -3)", "L.slice_scatter(x, x, 0, step=0)",
    "L.slice_scatter(L.tensor(1.0), L.tensor(1.0))",
    "L.gcd(m, m)", "L.lcm(L.tensor([True]), L.tensor([True]))", "L.nextafter(j, j)",
    "L.frexp(j)", "L.deg2rad(L.ones(2, dtype=L.complex64))", "L.ldexp(m, 2)",
    "L.trapezoid(L.tensor(1.0))", "L.trapezoid(x, L.tensor([1.0, 2.0]))",
    "L.cumulative_trapezoid(x, L.tensor([1.0, 2.0]))",
    "L.unravel_index(L.tensor([1.0]), (2, 3))", "L.unravel_index(L.tensor([1]), (2, -3))",
    "L.unravel_index(L.tensor([0]), (2, 0))",
    "L.combinations(L.ones(2, 2))", "L.combinations(L.ones(2), r=-1)",
    "x.index_reduce(0, ix, src, 'sum')", "x.index_reduce(0, ix.float(), src, 'prod')",
    "x.index_reduce(0, L.tensor([[0]]), src, 'prod')",
    "x.index_reduce(0, L.tensor([0, 5, 1]), src, 'prod')",
    "x.index_reduce(0, L.tensor([-1, 0, 0]), src, 'amax')",
    "x.index_reduce(0, L.tensor([0, 1]), src, 'prod')",
    "x.index_reduce(0, ix, src.double(), 'prod')", "x.index_reduce(0, ix, src[:, :3], 'prod')",
    "x.index_reduce(2, ix, src, 'prod')",
    "x.cfloat().index_reduce(0, ix, src.cfloat(), 'amin')",
]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors(expr):
    errors = []
    for L in (torch, gt):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                eval(expr, env(L))
        errors.append(info)
    theirs, ours = errors
    assert ours.type is theirs.type, (ours.value, theirs.value)
    assert str(ours.value) == str(theirs.value) or \
        str(theirs.value).split(" (Triggered")[0] == str(ours.value)


def test_cov_warns_on_no_degrees_of_freedom():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = gt.cov(gt.ones(3, 1))
    assert any(w.category is UserWarning and "degrees of freedom is <= 0" in str(w.message)
               for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(r, torch.cov(torch.ones(3, 1)), equal_nan=True)


def test_out_variants():
    x = gt.arange(12.0).view(3, 4)
    out = gt.empty(0)
    assert gt.quantile(x, 0.5, dim=0, out=out) is out
    assert_same(out, torch.quantile(torch.arange(12.0).view(3, 4), 0.5, dim=0))
    out = gt.empty(0, dtype=gt.int64)
    gt.gcd(gt.tensor([4, 6]), gt.tensor([6, 9]), out=out)
    assert out.tolist() == [2, 3]
    m, e = gt.empty(0), gt.empty(0, dtype=gt.int32)
    r = gt.frexp(gt.tensor([8.0]), out=(m, e))
    assert r.mantissa is m and r.exponent is e and e.tolist() == [4]
    outs = [gt.empty(0), gt.empty(0)]
    assert gt.unbind_copy(x[:2], 0, out=outs) is None
    assert outs[1].tolist() == [4.0, 5.0, 6.0, 7.0]
    with pytest.raises(RuntimeError, match="dtype"):
        gt.t_copy(x, out=gt.empty(0, dtype=gt.int64))


def test_copies_do_not_alias():
    x = gt.arange(6.0).view(2, 3)
    for y in (gt.alias_copy(x), gt.t_copy(x), gt.view_copy(x, (6,)), gt.diagonal_scatter(
            x, gt.zeros(2))):
        assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


# ---- gradients ---------------------------------------------------------------------------

def _grad_inputs(rng):
    return {"a": rng.standard_normal((3, 5)), "b": rng.standard_normal((4, 4)),
            "v": rng.standard_normal(4), "s": rng.standard_normal((3, 4)),
            "ties": rng.integers(-2, 3, (4, 3)).astype(float),
            "tsrc": rng.integers(-2, 3, (5, 3)).astype(float)}


GRADS = [
    ("lambda L, a: L.cov(a)", ["a"]),
    ("lambda L, a: L.cov(a, fweights=L.tensor([1, 2, 0, 3, 1]), "
     "aweights=L.tensor([0.5, 1.0, 2.0, 0.1, 1.0], dtype=L.float64))", ["a"]),
    ("lambda L, a: L.corrcoef(a)", ["a"]),
    ("lambda L, a: L.quantile(a, L.tensor([0.2, 0.7], dtype=L.float64), dim=1)", ["a"]),
    ("lambda L, a: L.quantile(a.t(), 0.4, interpolation='midpoint')", ["a"]),
    ("lambda L, a: L.nanquantile(a, 0.6, dim=0, keepdim=True, interpolation='nearest')",
     ["a"]),
    ("lambda L, b, v: L.diagonal_scatter(b, v)", ["b", "v"]),
    ("lambda L, b, v: L.select_scatter(b.t(), v, 1, 2)", ["b", "v"]),
    ("lambda L, b, s: L.slice_scatter(b, s.t()[:, ::2], 1, 0, 4, 2)", ["b", "s"]),
    ("lambda L, a: L.t_copy(a) * 2", ["a"]),
    ("lambda L, a: L.unbind_copy(a, 1)", ["a"]),
    ("lambda L, a: L.split_with_sizes_copy(a, [2, 3], 1)", ["a"]),
    ("lambda L, a: L.unfold_copy(a, 1, 2, 2)", ["a"]),
    ("lambda L, a: L.frexp(a)[0]", ["a"]),
    ("lambda L, a: L.ldexp(a, L.tensor([1, 4, 0, 2, 3]))", ["a"]),
    ("lambda L, a, v: L.ldexp(a[:, :4], v)", ["a", "v"]),
    ("lambda L, a: L.deg2rad(a) + L.rad2deg(a.t()).t()", ["a"]),
    ("lambda L, a, v: L.nextafter(a[:, :4], v)", ["a", "v"]),
    ("lambda L, a: L.trapezoid(a, dx=0.5)", ["a"]),
    ("lambda L, a, v: L.trapezoid(a[:, :4], v.cumsum(0), dim=1)", ["a", "v"]),
    ("lambda L, a, v: L.cumulative_trapezoid(a[:, :4], v.exp().cumsum(0))", ["a", "v"]),
    ("lambda L, v: L.combinations(v, 2)", ["v"]),
    *[(f"lambda L, s, ties: s.index_reduce(0, L.tensor([0, 2, 0]), ties[:3, :].t()[:, :3]"
       f".t().contiguous().repeat(1, 2)[:, :4] + 0.5, '{r}', include_self={inc})",
       ["s", "ties"]) for r in ("prod", "mean", "amax", "amin") for inc in (True, False)],
]


def _run(L, fn, arrays, names, weights):
    leaves = [L.tensor(arrays[n], dtype=L.float64, requires_grad=True) for n in names]
    outs = fn(L, *leaves)
    outs = outs if isinstance(outs, (tuple, list)) else [outs]
    loss = sum((o * L.tensor(w)).sum() for o, w in zip(outs, weights))
    return [g for g in (L.autograd.grad(loss, leaves, allow_unused=True))], leaves


@pytest.mark.parametrize("src,names", GRADS, ids=[g[0][10:60] for g in GRADS])
def test_gradients(src, names):
    fn = eval(src)
    rng = np.random.default_rng(1)
    arrays = _grad_inputs(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe = fn(torch, *[torch.tensor(arrays[n]) for n in names])
        probe = probe if isinstance(probe, (tuple, list)) else [probe]
        weights = [rng.standard_normal(tuple(p.shape)) for p in probe]
        t_grads, _ = _run(torch, fn, arrays, names, weights)
        g_grads, leaves = _run(gt, fn, arrays, names, weights)
    for g, t in zip(g_grads, t_grads):
        if t is None or g is None:
            assert (g is None or float(g.abs().max()) == 0) and \
                (t is None or float(t.abs().max()) == 0)
        else:
            np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-7, atol=1e-9)
    if "nextafter" not in src and "frexp" not in src:    # piecewise constant steps
        def f(*xs):
            r = fn(gt, *xs)
            return tuple(r) if isinstance(r, list) else r
        assert gt.autograd.gradcheck(f, tuple(leaves))


def test_gradients_where_torch_is_wrong():
    """torch's own gradcheck fails on these (as_strided_scatter gives the overwritten input
    a gradient; ldexp gives 0 for negative integer exponents): glasstorch's gradients are
    the numerical ones."""
    x = gt.tensor([2.0], dtype=gt.float64, requires_grad=True)
    s = gt.tensor(5.0, dtype=gt.float64, requires_grad=True)
    gt.as_strided_scatter(x, s, (), (), 0).sum().backward()
    assert x.grad.tolist() == [0.0] and s.grad.item() == 1.0
    assert gt.autograd.gradcheck(lambda a, b: gt.as_strided_scatter(a, b, (), (), 0), (x, s))
    b = gt.tensor(np.random.default_rng(3).standard_normal((4, 4)), requires_grad=True)
    v = gt.tensor([1.0, -2.0], dtype=gt.float64, requires_grad=True)
    assert gt.autograd.gradcheck(lambda a, c: gt.as_strided_scatter(a, c, (2,), (5,), 1),
                                 (b, v))
    e = gt.tensor([1, -1, -3])
    assert gt.autograd.gradcheck(lambda a: gt.ldexp(a, e), (b[0, :3].detach().requires_grad_(),))
    y = gt.ones(3, dtype=gt.float64, requires_grad=True)
    gt.ldexp(y, e).sum().backward()
    assert y.grad.tolist() == [2.0, 0.5, 0.125]


def test_logcumsumexp_complex_gradient():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    w = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    g = gt.tensor(x, requires_grad=True)
    (gt.logcumsumexp(g, 1) * gt.tensor(w)).real.sum().backward()
    t = torch.tensor(x, requires_grad=True)
    (torch.logcumsumexp(t, 1) * torch.tensor(w)).real.sum().backward()
    np.testing.assert_allclose(g.grad.resolve_conj().numpy(), t.grad.resolve_conj().numpy(),
                               rtol=1e-10)
    assert gt.autograd.gradcheck(lambda a: gt.logcumsumexp(a, 0),
                                 (gt.tensor(x, requires_grad=True),))
