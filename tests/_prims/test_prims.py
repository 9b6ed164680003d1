"""The primitives: NumPy implementations and meta functions against PyTorch's prims (the
same names and schemas) and glasstorch's direct ops; errors; dispatch."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
import glasstorch._prims as P
from glasstorch._prims import prims
from glasstorch.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.7, 1e-30, 1e30, np.inf, -np.inf, np.nan]
ELEMENTWISE = [p for p in prims.values() if p.kind == "elementwise"]
FLOAT_ONLY = {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1",
              "exp2", "log", "log1p", "log2", "log10", "sin", "sinh", "sqrt", "tan", "tanh",
              "ceil", "floor", "trunc", "round", "erf", "erfc", "lgamma", "rsqrt",
              "reciprocal", "atan2", "fmax", "fmin", "fmod", "hypot", "nextafter", "pow",
              "remainder"}
INTEGER_ONLY = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                "shift_right_arithmetic"}


def _arity(p):
    return sum(a.type == "Tensor" for a in p.schema.arguments)


def _inputs(p, dtype, rng):
    """Operands for an elementwise prim: the special values (and their pairs) for floating
    ops, small integers for integer ops."""
    n = _arity(p)
    if p.name == "where":
        return [gt.tensor(rng.random(24) > 0.5)] + [
            gt.tensor(rng.standard_normal(24)).to(dtype) for _ in range(2)]
    if dtype.is_floating_point:
        values = SPECIAL
        if p.name in ("fmod", "remainder"):
            # PyTorch's vectorised fmod computes a - trunc(a / b) * b, nan where a / b
            # overflows (1e30 / 1e-30 in float32); the IEEE answer is finite
            values = [v for v in SPECIAL if v not in (1e30, 1e-30)]
        grid = np.array(np.meshgrid(*[values] * n)).reshape(n, -1)
        return [gt.tensor(row).to(dtype) for row in grid]
    hi = 8 if "shift" in p.name else 50
    return [gt.tensor(rng.integers(-50 if "shift" not in p.name else 0, hi, 30)).to(dtype)
            for _ in range(n)]


def _dtypes(p):
    if p.name in INTEGER_ONLY:
        return [gt.int64, gt.int32]
    if p.name in FLOAT_ONLY:
        return [gt.float64, gt.float32]
    return [gt.float64, gt.float32, gt.int64]


def _torch(t):
    return torch.from_numpy(np.array(t.numpy()))


def _assert_same(ours, theirs, what, rtol=1e-6, atol=1e-12):
    assert tuple(ours.shape) == tuple(theirs.shape), what
    assert str(ours.dtype) == str(theirs.dtype), f"{what}: {ours.dtype} vs {theirs.dtype}"
    a, b = ours.numpy(), theirs.numpy()
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


# ---- elementwise -------------------------------------------------------------------------------

@pytest.mark.parametrize("p", ELEMENTWISE, ids=lambda p: p.name)
def test_elementwise_against_torch_prims(p):
    """Each elementwise prim computes what PyTorch's prim of that name does, dtype included,
    at the special values too; the meta function describes the output."""
    rng = np.random.default_rng(0)
    theirs_op = getattr(torch.ops.prims, p.name)
    for dtype in _dtypes(p):
        args = _inputs(p, dtype, rng)
        extra = [gt.int32] if p.name == "convert_element_type" else []
        ours = p(*args, *extra)
        theirs = theirs_op(*[_torch(a) for a in args],
                           *([torch.int32] if extra else []))
        if p.name in ("lgamma", "erfc", "tan", "pow") and dtype is gt.float32:
            _assert_same(ours, theirs, f"{p.name} {dtype}", rtol=1e-5, atol=1e-6)
        elif p.name == "convert_element_type":
            finite = np.isfinite(args[0].numpy())       # nan/inf to int is undefined in C
            np.testing.assert_array_equal(ours.numpy()[finite], theirs.numpy()[finite])
        else:
            _assert_same(ours, theirs, f"{p.name} {dtype}")
        meta = p(*[a.to("meta") for a in args], *extra)
        assert meta.device.type == "meta"
        assert (meta.shape, meta.dtype, meta.stride()) == (ours.shape, ours.dtype,
                                                           ours.stride())


DIRECT = [p for p in ELEMENTWISE if hasattr(gt, p.name) and p.name != "convert_element_type"]


@pytest.mark.parametrize("p", DIRECT, ids=lambda p: p.name)
def test_elementwise_against_direct_ops(p):
    """Where glasstorch has the op of the same name (`glasstorch.exp`, ...), it agrees with
    the prim on operands both accept (same shape and dtype), special values included."""
    rng = np.random.default_rng(1)
    for dtype in _dtypes(p):
        if p.name == "div" and not dtype.is_floating_point:
            continue                 # glasstorch.div divides ints truly; the prim truncates
        args = _inputs(p, dtype, rng)
        _assert_same(p(*args), getattr(gt, p.name)(*args), f"{p.name} {dtype}")


def test_composite_ops_are_not_prims():
    assert "sigmoid" not in prims and "softmax" not in prims


def test_impl_dtype_matches_meta():
    """The NumPy implementation itself (before the kernel's store converts it) gives the
    dtype the meta function promises."""
    rng = np.random.default_rng(2)
    for p in ELEMENTWISE:
        if p.name == "convert_element_type":
            continue
        for dtype in _dtypes(p):
            args = _inputs(p, dtype, rng)
            with np.errstate(all="ignore"):
                raw = np.asarray(p.impl(*[a.numpy() for a in args]))
            assert gt.from_numpy(raw).dtype is p.meta(*args).dtype, (p.name, dtype)


def test_no_broadcasting_or_promotion():
    with pytest.raises(RuntimeError, match="is not the expected shape"):
        P.add(gt.ones(2), gt.ones(3))
    with pytest.raises(RuntimeError, match="is not the expected dtype"):
        P.add(gt.ones(2), gt.ones(2, dtype=gt.float64))
    with pytest.raises(RuntimeError, match="does not support"):
        P.exp(gt.ones(2, dtype=gt.int64))
    with pytest.raises(RuntimeError, match="pred must be a bool"):
        P.where(gt.ones(2), gt.ones(2), gt.ones(2))


# ---- reductions --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "var"])
@pytest.mark.parametrize("dims", [[0], [1, 2], [0, 2], [0, 1, 2]])
def test_reductions_against_torch(name, dims):
    x = np.random.default_rng(3).standard_normal((3, 4, 5))
    extra = (1,) if name == "var" else ()          # correction
    ours = getattr(P, name)(gt.tensor(x), dims, *extra)
    theirs = getattr(torch.ops.prims, name)(torch.tensor(x), dims, *extra)
    _assert_same(ours, theirs, f"{name} {dims}")
    meta = getattr(P, name)(gt.tensor(x).to("meta"), dims, *extra)
    assert (meta.shape, meta.dtype) == (ours.shape, ours.dtype)


@pytest.mark.parametrize("correction", [0, 1, 2.5])
def test_var_correction(correction):
    x = np.random.default_rng(4).standard_normal((6, 7))
    ours = P.var(gt.tensor(x), [1], correction=correction)
    np.testing.assert_allclose(ours.numpy(), np.var(x, axis=1, ddof=correction))
    _assert_same(ours, gt.var(gt.tensor(x), 1, correction=correction), "var")


def test_reduction_output_dtype_and_all_dims():
    x = gt.arange(6, dtype=gt.int32).view(2, 3)
    assert P.sum(x, [1], output_dtype=gt.int64).dtype is gt.int64
    assert P.sum(x, None).item() == 15
    with pytest.raises(IndexError, match="out of range"):
        P.sum(x, [2])


# ---- views and shapes --------------------------------------------------------------------------

def _geometry(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


VIEWS = [
    ("broadcast_in_dim", (3,), ([2, 3, 4], [1])),
    ("broadcast_in_dim", (1, 4), ([3, 2, 4], [1, 2])),
    ("squeeze", (1, 3, 1), ([0, 2],)),
    ("transpose", (2, 3, 4), ([2, 0, 1],)),
    ("collapse_view", (2, 3, 4), (0, 1)),
    ("collapse_view", (2, 3, 4), (1, 2)),
    ("split_dim", (2, 6, 4), (1, 3)),
    ("as_strided", (4, 5), ([3, 2], [5, 2], 1)),
    ("view_of", (2, 3), ()),
    ("slice_in_dim", (6, 4), (1, 5, 2, 0)),
]


@pytest.mark.parametrize("name,shape,args", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_against_torch(name, shape, args):
    """A view prim gives PyTorch's shape, strides and offset, and shares the storage."""
    x = np.random.default_rng(5).standard_normal(shape)
    ours_in = gt.tensor(x)
    ours = getattr(P, name)(ours_in, *args)
    if name == "slice_in_dim":        # no longer a prim in PyTorch: the same slice in Python
        theirs = torch.tensor(x)[1:5:2]
    else:
        theirs = getattr(torch.ops.prims, name)(torch.tensor(x), *args)
    assert _geometry(ours) == _geometry(theirs)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.untyped_storage().data_ptr() == ours_in.untyped_storage().data_ptr()
    assert ours._base is ours_in
    meta = getattr(P, name)(ours_in.to("meta"), *args)
    assert _geometry(meta) == _geometry(ours)


def test_slice_with_strides():
    x = gt.arange(24.).view(4, 6)
    ours = P.slice(x, [1, 0], [4, 6], [2, 3])
    np.testing.assert_array_equal(ours.numpy(), x.numpy()[1:4:2, 0:6:3])
    assert ours._base is x._base


def test_view_errors():
    with pytest.raises(RuntimeError, match="cannot be collapsed without a copy"):
        P.collapse_view(gt.ones(3, 4).t(), 0, 1)
    with pytest.raises(RuntimeError, match="cannot broadcast"):
        P.broadcast_in_dim(gt.ones(3), [2, 4], [1])
    with pytest.raises(RuntimeError, match="not 1"):
        P.squeeze(gt.ones(2, 3), [0])
    with pytest.raises(RuntimeError, match="not a permutation"):
        P.transpose(gt.ones(2, 3), [0, 0])
    with pytest.raises(RuntimeError, match="cannot be split"):
        P.split_dim(gt.ones(2, 5), 1, 2)


@pytest.mark.parametrize("name,shape,args", [
    ("reshape", (2, 3, 4), ([4, 6],)), ("collapse", (2, 3, 4), (1, 2)),
    ("rev", (2, 3, 4), ([0, 2],))])
def test_copying_shape_prims_against_torch(name, shape, args):
    x = np.random.default_rng(6).standard_normal(shape)
    src = gt.tensor(x).transpose(0, 1).contiguous().transpose(0, 1)   # not row-major
    ours = getattr(P, name)(src, *args)
    theirs = getattr(torch.ops.prims, name)(torch.tensor(x), *args)
    _assert_same(ours, theirs, name)
    assert ours.is_contiguous()


def test_cat():
    a, b = gt.ones(2, 3), gt.zeros(1, 3)
    _assert_same(P.cat([a, b], 0), torch.ops.prims.cat([torch.ones(2, 3), torch.zeros(1, 3)], 0),
                 "cat")
    with pytest.raises(RuntimeError, match="cannot be joined"):
        P.cat([a, gt.ones(2, 4)], 0)


# ---- factories and random ----------------------------------------------------------------------

def test_factories_against_torch():
    kw = dict(device="cpu", requires_grad=False)
    _assert_same(P.iota(5, start=2, step=3, dtype=gt.int64, **kw),
                 torch.ops.prims.iota(5, start=2, step=3, dtype=torch.int64, **kw), "iota")
    _assert_same(P.full([2, 3], 1.5, dtype=gt.float32, **kw),
                 torch.ops.prims.full([2, 3], 1.5, dtype=torch.float32, **kw), "full")
    e = P.empty_strided([2, 3], [1, 2], dtype=gt.float32, **kw)
    assert (e.shape, e.stride()) == ((2, 3), (1, 2))
    m = gt.ops.prims.full.default([4], 0, dtype=gt.int32, device="meta", requires_grad=False)
    assert (m.device.type, m.shape, m.dtype) == ("meta", (4,), gt.int32)


def test_factory_prims_reach_a_dispatch_mode_and_run_from_its_handler():
    seen = []

    class Names(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Names():
        out = P.full([2], 7.0, dtype=gt.float64, device="cpu", requires_grad=False)
    assert seen == ["prims.full.default"]
    assert out.tolist() == [7.0, 7.0]


def test_philox_known_answers():
    """Random123's known-answer vectors for Philox4x32-10."""
    from glasstorch._prims.factories import philox4x32
    cases = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
             ((0xffffffff,) * 4, (0xffffffff,) * 2,
              (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
             ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
              (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for counter, key, expected in cases:
        got = philox4x32(np.array([counter], np.uint32), key)[0]
        assert tuple(int(v) for v in got) == expected


@pytest.mark.parametrize("name", ["philox_rand", "philox_randn"])
def test_random_is_a_function_of_seed_and_offset(name):
    fn = getattr(P, name)
    kw = dict(dtype=gt.float64, device="cpu")
    whole = fn([100], seed=7, offset=0, **kw).numpy()
    np.testing.assert_array_equal(fn([100], seed=7, offset=0, **kw).numpy(), whole)
    np.testing.assert_array_equal(fn([60], seed=7, offset=40, **kw).numpy(), whole[40:])
    np.testing.assert_array_equal(fn([4, 25], seed=7, offset=0, **kw).numpy().ravel(), whole)
    assert not np.array_equal(fn([100], seed=8, offset=0, **kw).numpy(), whole)
    big = fn([200_000], seed=1, offset=0, **kw).numpy()
    if name == "philox_rand":
        assert big.min() >= 0 and big.max() < 1
        assert abs(big.mean() - 0.5) < 0.005 and abs(big.var() - 1 / 12) < 0.002
    else:
        assert np.isfinite(big).all()
        assert abs(big.mean()) < 0.01 and abs(big.std() - 1) < 0.01


# ---- extern ------------------------------------------------------------------------------------

def test_matmul_prims():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    _assert_same(P.mm(gt.tensor(a), gt.tensor(b)), torch.mm(torch.tensor(a), torch.tensor(b)),
                 "mm")
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    _assert_same(P.bmm(gt.tensor(a), gt.tensor(b)),
                 torch.bmm(torch.tensor(a), torch.tensor(b)), "bmm")
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        P.mm(gt.ones(2, 3), gt.ones(2, 3))


# input shape, weight shape, stride, padding, dilation, transposed, output_padding, groups
CONVS = [
    ((2, 4, 9), (6, 2, 3), [2], [1], [1], False, [0], 2),
    ((1, 3, 7, 6), (4, 3, 3, 2), [1, 2], [1, 0], [2, 1], False, [0, 0], 1),
    ((2, 4, 5), (4, 3, 3), [2], [1], [1], True, [1], 2),
    ((1, 2, 4, 3), (2, 3, 2, 3), [2, 1], [0, 1], [1, 2], True, [1, 0], 1),
]


@pytest.mark.parametrize("case", CONVS)
def test_convolution_against_torch(case):
    xs, ws, stride, padding, dilation, transposed, output_padding, groups = case
    rng = np.random.default_rng(8)
    x, w, bias = rng.standard_normal(xs), rng.standard_normal(ws), None
    out_channels = ws[1] * groups if transposed else ws[0]
    bias = rng.standard_normal(out_channels)
    args = (stride, padding, dilation, transposed, output_padding, groups)
    ours = P.convolution(gt.tensor(x), gt.tensor(w), gt.tensor(bias), *args)
    theirs = torch.ops.aten.convolution(torch.tensor(x), torch.tensor(w), torch.tensor(bias),
                                        *args)
    _assert_same(ours, theirs, "convolution", rtol=1e-10, atol=1e-10)
    meta = P.convolution(gt.tensor(x).to("meta"), gt.tensor(w).to("meta"), None, *args)
    assert meta.shape == ours.shape


@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable(descending):
    x = np.array([[3., 1., 3., np.nan, 1., 2.], [0., 0., -1., 5., 5., 0.]])
    values, indices = P.sort(gt.tensor(x), 1, descending, True)
    t_values, t_indices = torch.sort(torch.tensor(x), dim=1, descending=descending,
                                     stable=True)
    _assert_same(values, t_values, "values")
    _assert_same(indices, t_indices, "indices")


def test_fft_prims_against_torch():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 6))
    z = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    for onesided in (True, False):
        _assert_same(P.fft_r2c(gt.tensor(x), dim=[0, 1], onesided=onesided),
                     torch.ops.prims.fft_r2c(torch.tensor(x), dim=[0, 1], onesided=onesided),
                     "r2c", atol=1e-10)
    for forward in (True, False):
        _assert_same(P.fft_c2c(gt.tensor(z), dim=[1], forward=forward),
                     torch.ops.prims.fft_c2c(torch.tensor(z), dim=[1], forward=forward), "c2c",
                     atol=1e-10)
    half = z[:, :4]
    _assert_same(P.fft_c2r(gt.tensor(half), dim=[0, 1], last_dim_size=6),
                 torch.ops.prims.fft_c2r(torch.tensor(half), dim=[0, 1], last_dim_size=6),
                 "c2r", atol=1e-10)


def test_lapack_prims():
    rng = np.random.default_rng(10)
    a = rng.standard_normal((2, 4, 3))
    for full in (True, False):
        u, s, vh = P.svd(gt.tensor(a), full_matrices=full)
        tu, ts, tvh = torch.ops.prims.svd(torch.tensor(a), full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (tu.shape, ts.shape, tvh.shape)
        np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-12)
        k = s.shape[-1]
        rebuilt = u.numpy()[..., :k] * s.numpy()[..., None, :] @ vh.numpy()[..., :k, :]
        np.testing.assert_allclose(rebuilt, a, atol=1e-12)
    spd = a[0].T @ a[0] + np.eye(3)
    for upper in (False, True):
        _assert_same(P.cholesky(gt.tensor(spd), upper),
                     torch.linalg.cholesky(torch.tensor(spd), upper=upper), "cholesky")


# ---- the set -----------------------------------------------------------------------------------

def test_every_prim_is_an_operator_with_meta_and_implementation():
    assert len(prims) >= 50
    for name, p in prims.items():
        assert gt.ops.prims.__getattr__(name).default is p.overload
        assert str(p.overload) == f"prims.{name}.default"
        assert p.meta is not None
        assert (p.impl is not None) == (p.kind != "view"), name
        assert (p.expr is not None) == (p.kind == "elementwise"), name
        theirs = getattr(torch.ops.prims, name, None)
        if theirs is not None:       # PyTorch's schema, where PyTorch has the prim
            assert str(p.overload._schema) == str(theirs.default._schema), name


def test_prims_have_no_derivatives():
    x = gt.ones(2, requires_grad=True)
    y = P.exp(x)
    with pytest.raises(RuntimeError, match="derivative for 'prims::exp' is not implemented"):
        y.sum().backward()


# ---- meta against the CPU kernels, every non-elementwise prim -----------------------------------

def _calls():
    """One sample call per non-elementwise prim: (name, args, kwargs)."""
    x = gt.tensor(np.random.default_rng(11).standard_normal((3, 4, 5)))
    m = gt.tensor(np.random.default_rng(12).standard_normal((4, 3)))
    z = gt.tensor(np.random.default_rng(13).standard_normal((4, 6)) + 1j)
    spd = m.t() @ m + gt.eye(3, dtype=gt.float64)
    factory = dict(dtype=gt.float32, device="cpu", requires_grad=False)
    return [
        ("sum", (x, [1]), {}), ("prod", (x, [0, 2]), {}), ("amax", (x, [2]), {}),
        ("amin", (x, None), {}), ("var", (x, [0, 1], 0.5), {}),
        ("sum", (x, [1]), {"output_dtype": gt.float32}),
        ("as_strided", (x, [2, 2], [3, 1], 4), {}),
        ("broadcast_in_dim", (m, [2, 4, 3], [1, 2]), {}),
        ("squeeze", (x[:1], [0]), {}), ("transpose", (x, [1, 2, 0]), {}),
        ("slice", (x, [0, 1, 0], [3, 4, 5], [2, 1, 3]), {}),
        ("slice_in_dim", (x, 1, 3, 1, 2), {}), ("collapse_view", (x, 1, 2), {}),
        ("split_dim", (x, 1, 2), {}), ("view_of", (x,), {}),
        ("reshape", (x, [12, 5]), {}), ("collapse", (x.transpose(0, 2), 0, 1), {}),
        ("rev", (x, [1]), {}), ("cat", ([x, x], 2), {}),
        ("iota", (4,), dict(start=1, step=2, dtype=gt.int64, device="cpu",
                            requires_grad=False)),
        ("full", ([2, 3], 2.5), factory), ("empty_strided", ([2, 3], [1, 2]), factory),
        ("philox_rand", ([3, 2],), dict(seed=3, offset=5, dtype=gt.float64, device="cpu")),
        ("philox_randn", ([3, 2],), dict(seed=3, offset=5, dtype=gt.float32, device="cpu")),
        ("mm", (m, m.t()), {}), ("bmm", (x, x.transpose(1, 2)), {}),
        ("convolution", (x, gt.ones(2, 4, 3, dtype=gt.float64), None, [1], [1], [1], False,
                         [0], 1), {}),
        ("sort", (x, 1, True, True), {}),
        ("fft_r2c", (m,), dict(dim=[0, 1], onesided=True)),
        ("fft_c2c", (z,), dict(dim=[1], forward=False)),
        ("fft_c2r", (z,), dict(dim=[1], last_dim_size=10)),
        ("svd", (m,), dict(full_matrices=False)), ("cholesky", (spd, False), {}),
    ]


def _to_meta(x):
    if isinstance(x, gt.Tensor):
        return x.to("meta")
    if isinstance(x, list):
        return [_to_meta(v) for v in x]
    return x


def test_every_non_elementwise_prim_has_a_sample_call():
    covered = {name for name, _, _ in _calls()}
    assert covered == {p.name for p in prims.values() if p.kind != "elementwise"}


@pytest.mark.parametrize("name,args,kwargs", _calls(), ids=[c[0] for c in _calls()])
def test_meta_describes_the_cpu_result(name, args, kwargs):
    """Run on the meta device, a prim gives the shapes, dtypes and strides its CPU kernel
    produces."""
    real = getattr(P, name)(*args, **kwargs)
    if kwargs.get("device") == "cpu":
        kwargs = {**kwargs, "device": "meta"}
    meta = getattr(P, name)(*[_to_meta(a) for a in args], **kwargs)
    real, meta = _outputs(real), _outputs(meta)
    assert len(real) == len(meta)
    for r, m in zip(real, meta):
        assert m.device.type == "meta" and r.device.type == "cpu"
        assert (m.shape, m.dtype, m.stride()) == (r.shape, r.dtype, r.stride()), name


def _outputs(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


# ---- views on varied shapes --------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_views_on_varied_shapes_against_torch(shape, data):
    """On a permuted (non-contiguous) input: transpose, collapse_view (a view, or an error
    in both libraries), split_dim and broadcast_in_dim give PyTorch's geometry (strides of
    size-1 dimensions, which address nothing, aside) and values."""
    x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    n = len(shape)

    def _geometry(t):
        return (tuple(t.shape), tuple(st for size, st in zip(t.shape, t.stride()) if size > 1),
                t.storage_offset())

    perm = data.draw(st.permutations(range(n)))
    ours, theirs = P.transpose(gt.tensor(x), perm), torch.ops.prims.transpose(torch.tensor(x),
                                                                              perm)
    start = data.draw(st.integers(0, n - 1))
    end = data.draw(st.integers(start, n - 1))
    try:
        expected = torch.ops.prims.collapse_view(theirs, start, end)
    except Exception:
        with pytest.raises(RuntimeError, match="cannot be collapsed without a copy"):
            P.collapse_view(ours, start, end)
    else:
        got = P.collapse_view(ours, start, end)
        assert _geometry(got) == _geometry(expected)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    dim = data.draw(st.integers(0, n - 1))
    outer = data.draw(st.sampled_from([d for d in range(1, ours.shape[dim] + 1)
                                       if ours.shape[dim] % d == 0]))
    got, expected = P.split_dim(ours, dim, outer), torch.ops.prims.split_dim(theirs, dim, outer)
    assert _geometry(got) == _geometry(expected)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    placed = sorted(data.draw(st.lists(st.integers(0, n), min_size=n, max_size=n, unique=True)))
    result_shape = [2] * (n + 1)
    for j, d in enumerate(placed):
        result_shape[d] = ours.shape[j]
    got = P.broadcast_in_dim(ours, result_shape, placed)
    expected = torch.ops.prims.broadcast_in_dim(theirs, result_shape, placed)
    assert _geometry(got) == _geometry(expected)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_elementwise_against_torch_prims(dtype):
    """float16 and bfloat16 too, within their precision."""
    rng = np.random.default_rng(14)
    for p in ELEMENTWISE:
        if p.name in INTEGER_ONLY or p.name in ("convert_element_type", "nextafter",
                                                "signbit"):    # a nan's sign: the converter's
            continue
        args = [a.to(getattr(gt, dtype)) if a.dtype.is_floating_point else a
                for a in _inputs(p, gt.float64, rng)]
        theirs = getattr(torch.ops.prims, p.name)(
            *[torch.from_numpy(np.array(a.float().numpy())).to(getattr(torch, dtype))
              if a.dtype.is_floating_point else _torch(a) for a in args])
        ours = p(*args)
        assert str(ours.dtype) == str(theirs.dtype), p.name
        np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-2,
                                   atol=1e-2, equal_nan=True, err_msg=f"{p.name} {dtype}")
