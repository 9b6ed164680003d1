"""pad, interpolate, grid_sample, affine_grid and pixel_shuffle against PyTorch: values,
dtypes, layouts, gradients (gradcheck and torch's, first and second order), errors."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as GF
from oracle import assert_same, oracle_torch

RNG = np.random.default_rng(2024)


def pair(shape, dtype="float64", requires_grad=False, layout=None):
    """The same random tensor in glasstorch and torch; layout 'cl' makes it channels-last,
    't' transposes its last two dims (non-contiguous)."""
    torch = oracle_torch()
    a = RNG.standard_normal(shape)
    g = gt.tensor(a).to(getattr(gt, dtype))
    t = torch.tensor(a).to(getattr(torch, dtype))
    if layout == "cl":
        fmt = "channels_last" if len(shape) == 4 else "channels_last_3d"
        g, t = g.contiguous(memory_format=getattr(gt, fmt)), t.contiguous(
            memory_format=getattr(torch, fmt))
    elif layout == "t":
        g, t = g.transpose(-1, -2).contiguous().transpose(-1, -2), t.transpose(
            -1, -2).contiguous().transpose(-1, -2)
    if requires_grad:
        g.requires_grad_()
        t.requires_grad_()
    return g, t


def check_grads(gt_fn, torch_fn, *pairs, rtol=1e-10, atol=1e-10, second=True):
    """Forward values, node names, first gradients (against torch and by gradcheck) and
    (with `second`) double backward through a random grad_output, in float64."""
    torch = oracle_torch()
    gs = [g for g, _ in pairs]
    ts = [t for _, t in pairs]
    go, to = gt_fn(*gs), torch_fn(*ts)
    assert_same(go, to, rtol=rtol, atol=atol)
    assert go.grad_fn.name() == to.grad_fn.name()
    w = RNG.standard_normal(tuple(to.shape))
    gw, tw = gt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    ggrads = gt.autograd.grad(go, gs, gw, create_graph=second)
    tgrads = torch.autograd.grad(to, ts, tw, create_graph=second)
    for a, e in zip(ggrads, tgrads):
        assert_same(a, e, rtol=rtol, atol=atol, check_stride=False)
    assert gt.autograd.gradcheck(gt_fn, tuple(gs))
    if second:
        tot_g = sum((a * gt.tensor(np.cos(np.arange(a.numel())).reshape(a.shape))).sum()
                    for a in ggrads if a.grad_fn is not None)
        tot_t = sum((a * torch.tensor(np.cos(np.arange(a.numel())).reshape(tuple(a.shape)))
                     ).sum() for a in tgrads if a.grad_fn is not None)
        if isinstance(tot_t, int):
            return
        for a, e in zip(gt.autograd.grad(tot_g, [gw] + gs, allow_unused=True),
                        torch.autograd.grad(tot_t, [tw] + ts, allow_unused=True)):
            if e is None or a is None:
                other = e if a is None else a
                assert other is None or not other.abs().sum().item()
            else:
                assert_same(a, e, rtol=rtol, atol=atol, check_stride=False)


def raises_like(gt_call, torch_call, match=None):
    """Both raise the same exception type with the same message (or `match` in both)."""
    with pytest.raises(Exception) as te:
        torch_call()
    with pytest.raises(type(te.value)) as ge:
        gt_call()
    if match is None:
        assert str(ge.value) == str(te.value)
    else:
        assert match in str(ge.value) and match in str(te.value)


# ---- pad ---------------------------------------------------------------------------------

PAD_CASES = [  # shape, pad, mode
    ((2, 3, 5), (2, 1), "constant"),
    ((2, 3, 5), (-1, 2, 1, 0, 0, 1), "constant"),
    ((2, 3, 5), (-1, -2), "constant"),
    ((3, 5), (2, 3), "reflect"),
    ((2, 3, 5), (4, -1), "reflect"),
    ((2, 2, 4, 5), (1, 2, 3, 0), "reflect"),
    ((2, 2, 4, 5), (-1, 2, 3, -2), "reflect"),
    ((1, 1, 2, 3, 3), (1, 2, 2, 1, 0, 1), "reflect"),
    ((2, 4, 5, 3), (1, 2, 0, 2, 1, 1), "reflect"),
    ((2, 3, 5), (4, 6), "replicate"),
    ((2, 2, 4, 5), (3, -2, 1, 4), "replicate"),
    ((1, 1, 3, 2, 2), (1, 2, 2, 1, 3, 2), "replicate"),
    ((2, 3, 5), (2, 3), "circular"),
    ((2, 2, 4, 5), (1, -2, 4, 3), "circular"),
    ((1, 1, 2, 3, 3), (1, 2, 2, 1, 1, 0), "circular"),
    ((3, 4, 5), (1, 2, 2, 1), "circular"),
]


@pytest.mark.parametrize("shape,pad,mode", PAD_CASES)
def test_pad_matches_torch(shape, pad, mode):
    torch = oracle_torch()
    for layout in (None, "t") + (("cl",) if len(shape) in (4, 5) else ()):
        for dtype in ("float32", "float64"):
            g, t = pair(shape, dtype, layout=layout)
            assert_same(GF.pad(g, pad, mode), torch.nn.functional.pad(t, pad, mode))
    value = {"constant": 2.5}.get(mode)
    check_grads(lambda x: GF.pad(x, pad, mode, value),
                lambda x: torch.nn.functional.pad(x, pad, mode, value),
                pair(shape, requires_grad=True))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "uint8", "complex64", "bool"])
def test_pad_dtypes(mode, dtype):
    torch = oracle_torch()
    g, t = pair((2, 3, 4, 5), "float32")
    g, t = g.mul(3).to(getattr(gt, dtype)), t.mul(3).to(getattr(torch, dtype))
    args = ((1, 2, 2, 1), mode) + ((1.5,) if mode == "constant" else ())
    try:
        expected = torch.nn.functional.pad(t, *args)
    except NotImplementedError:
        raises_like(lambda: GF.pad(g, *args), lambda: torch.nn.functional.pad(t, *args))
        return
    assert_same(GF.pad(g, *args), expected)


def test_pad_views_and_copies():
    torch = oracle_torch()
    g, t = pair((2, 3, 4, 5))
    for p in ((0, 0), (-1, 0, 0, -2), (0, 0, 1, 0)):
        gi, ti = g.transpose(1, 3), t.transpose(1, 3)
        go, to = GF.pad(gi, p), torch.nn.functional.pad(ti, p)
        assert_same(go, to)
        assert go.data_ptr() != gi.data_ptr()
    assert_same(gt.constant_pad_nd(g, (1, 1), 3), torch.constant_pad_nd(t, (1, 1), 3))
    assert_same(GF.pad(g[:0], (1, 1, 1, 1), "reflect"),
                torch.nn.functional.pad(t[:0], (1, 1, 1, 1), "reflect"))
    assert_same(GF.pad(gt.tensor(1.5), ()), torch.nn.functional.pad(torch.tensor(1.5), ()))


PAD_ERRORS = [
    ((1, 2, 3), (3, 3), "reflect", None),
    ((2, 3), (2, 3), "reflect", None),
    ((1, 2, 3, 4), (1, 1, 3, 1), "reflect", None),
    ((1, 2, 3, 4, 5), (1, 1, 1, 1, 3, 1), "reflect", None),
    ((1, 2, 3), (1,), "constant", None),
    ((1, 2, 3), (1, 1) * 4, "constant", None),
    ((1, 2, 3), (1, 1), "reflect", 1.0),
    ((1, 2, 3), (1, 1), "foo", None),
    ((1, 2, 3), (1, 1) * 3, "reflect", None),
    ((3,), (1, 1), "replicate", None),
    ((2, 0, 3), (1, 1), "reflect", None),
    ((1, 2, 3, 4), (-2, -2, -2, -1), "reflect", None),
    ((1, 2, 3, 4), (-2, -2, -2, -1), "replicate", None),
    ((1, 2, 3, 4, 5), (-2, -3, -2, -2, -2, -1), "replicate", None),
    ((1, 2, 3), (-2, -1), "reflect", None),
    ((1, 2, 3), (4, 1), "circular", None),
    ((1, 2, 3), (-4, 1), "constant", None),
    ((2, 2, 3), (1, 1), "reflect", None),
]


@pytest.mark.parametrize("shape,pad,mode,value", PAD_ERRORS)
def test_pad_errors(shape, pad, mode, value):
    torch = oracle_torch()
    g, t = pair(shape)
    if shape == (2, 2, 3):
        g, t = g.bool(), t.bool()
    raises_like(lambda: GF.pad(g, pad, mode, value),
                lambda: torch.nn.functional.pad(t, pad, mode, value))


# ---- interpolate -------------------------------------------------------------------------

INTERP_MODES = [("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 1),
                ("nearest-exact", 2), ("nearest-exact", 3), ("linear", 1), ("bilinear", 2),
                ("bicubic", 2), ("trilinear", 3), ("area", 1), ("area", 2)]
RESIZES = [dict(scale_factor=1.7), dict(scale_factor=0.6), dict(scale_factor=2),
           dict(scale_factor=1.7, recompute_scale_factor=True), dict(size=7), dict(size=3),
           dict(size=5)]


def _shape(nd, n=5):
    return (2, 3) + (n, 4, 6)[:nd] if nd > 1 else (2, 3, n)


@pytest.mark.parametrize("mode,nd", INTERP_MODES)
def test_interpolate_values(mode, nd):
    torch = oracle_torch()
    corners = (None,) if mode in ("nearest", "nearest-exact", "area") else (False, True)
    for resize in RESIZES:
        for ac in corners:
            for dtype, tol in (("float32", 1e-5), ("float64", 1e-12)):
                g, t = pair(_shape(nd), dtype)
                assert_same(GF.interpolate(g, mode=mode, align_corners=ac, **resize),
                            torch.nn.functional.interpolate(t, mode=mode, align_corners=ac,
                                                            **resize), rtol=tol, atol=tol)


@pytest.mark.parametrize("mode,nd", [m for m in INTERP_MODES if m[0] != "area"])
def test_interpolate_layouts_and_low_precision(mode, nd):
    torch = oracle_torch()
    ac = None if mode.startswith("nearest") else False
    layouts = ("t",) + (("cl",) if nd > 1 else ())
    for layout in layouts:
        g, t = pair(_shape(nd), "float32", layout=layout)
        assert_same(GF.interpolate(g, scale_factor=1.5, mode=mode, align_corners=ac),
                    torch.nn.functional.interpolate(t, scale_factor=1.5, mode=mode,
                                                    align_corners=ac), rtol=1e-5, atol=1e-5)
    for dtype, tol in (("float16", 2e-3), ("bfloat16", 2e-2)):
        g, t = pair(_shape(nd), dtype)
        assert_same(GF.interpolate(g, size=7, mode=mode, align_corners=ac),
                    torch.nn.functional.interpolate(t, size=7, mode=mode, align_corners=ac),
                    rtol=tol, atol=tol)
    if mode.startswith("nearest"):
        g, t = pair(_shape(nd), "float32")
        g, t = (g * 50).abs().to(gt.uint8), (t * 50).abs().to(torch.uint8)
        assert_same(GF.interpolate(g, scale_factor=1.5, mode=mode),
                    torch.nn.functional.interpolate(t, scale_factor=1.5, mode=mode))
    g, t = pair((0,) + _shape(nd)[1:], "float32")
    assert_same(GF.interpolate(g, size=3, mode=mode, align_corners=ac),
                torch.nn.functional.interpolate(t, size=3, mode=mode, align_corners=ac))


@pytest.mark.parametrize("mode,nd", [m for m in INTERP_MODES if m[0] != "area"])
@pytest.mark.parametrize("resize", [dict(scale_factor=1.5), dict(size=3)])
def test_interpolate_gradients(mode, nd, resize):
    torch = oracle_torch()
    ac = None if mode.startswith("nearest") else (nd == 2)
    check_grads(lambda x: GF.interpolate(x, mode=mode, align_corners=ac, **resize),
                lambda x: torch.nn.functional.interpolate(x, mode=mode, align_corners=ac,
                                                          **resize),
                pair(_shape(nd, 3)[:2] and (1, 2) + _shape(nd, 3)[2:], requires_grad=True))


def test_upsample_aliases_warn():
    torch = oracle_torch()
    g, t = pair((1, 2, 3, 4))
    with pytest.warns(UserWarning, match="deprecated"):
        go = GF.upsample(g, scale_factor=2, mode="bilinear")
    assert_same(go, torch.nn.functional.interpolate(t, scale_factor=2, mode="bilinear"))
    with pytest.warns(UserWarning):
        assert_same(GF.upsample_bilinear(g, size=(5, 5)),
                    torch.nn.functional.interpolate(t, size=(5, 5), mode="bilinear",
                                                    align_corners=True))
    with pytest.warns(UserWarning):
        assert_same(GF.upsample_nearest(g, size=(5, 5)),
                    torch.nn.functional.interpolate(t, size=(5, 5)))


INTERP_ERRORS = [
    ((2, 3, 4, 5), dict(size=(0, 3))),
    ((2, 3, 0, 5), dict(size=(2, 3), mode="bilinear")),
    ((2, 0, 2, 5), dict(size=(2, 3), mode="bicubic")),
    ((3, 4, 5), dict(size=(2, 3))),
    ((3, 4, 5), dict(scale_factor=0.1)),
    ((3, 4, 5), dict(scale_factor=(2, 3))),
    ((3, 4, 5), dict(size=2, scale_factor=2)),
    ((3, 4, 5), dict()),
    ((3, 4, 5), dict(size=4, mode="nearest", align_corners=True)),
    ((3, 4, 5), dict(size=4, mode="bilinear")),
    ((3, 4, 5, 6, 7), dict(size=4, mode="bilinear")),
    ((3, 4, 5), dict(size=4, mode="foo")),
    ((3, 4), dict(size=4)),
    ((3, 4, 5), dict(size=4, mode="linear", antialias=True)),
    ((3, 4, 5), dict(size=4, recompute_scale_factor=True)),
    ((3, 4, 5), dict(size=(2.5,))),
]


@pytest.mark.parametrize("shape,kwargs", INTERP_ERRORS)
def test_interpolate_errors(shape, kwargs):
    torch = oracle_torch()
    g, t = pair(shape, "float32")
    match = "expected size" if kwargs.get("size") == (2.5,) else None
    raises_like(lambda: GF.interpolate(g, **kwargs),
                lambda: torch.nn.functional.interpolate(t, **kwargs), match)


def test_interpolate_unsupported():
    torch = oracle_torch()
    g, t = pair((1, 2, 3, 4), "float32")
    with pytest.raises(NotImplementedError, match="antialias"):
        GF.interpolate(g, size=5, mode="bilinear", antialias=True)
    raises_like(lambda: GF.interpolate(g.long(), size=5),
                lambda: torch.nn.functional.interpolate(t.long(), size=5),
                "not implemented for 'Long'")
    raises_like(lambda: GF.interpolate(g.to(gt.uint8)[0], size=5, mode="linear"),
                lambda: torch.nn.functional.interpolate(t.to(torch.uint8)[0], size=5,
                                                        mode="linear"),
                "not implemented for 'Byte'")


# ---- pixel shuffle and channel shuffle ---------------------------------------------------

SHUFFLES = [  # function, shape, factor
    ("pixel_shuffle", (2, 8, 3, 3), 2), ("pixel_shuffle", (18, 2, 3), 3),
    ("pixel_shuffle", (2, 2, 4, 3, 2), 2), ("pixel_shuffle", (2, 4, 3, 3), 1),
    ("pixel_unshuffle", (2, 2, 4, 6), 2), ("pixel_unshuffle", (3, 6, 3), 3),
    ("pixel_unshuffle", (2, 1, 2, 4, 2), 2),
    ("channel_shuffle", (2, 6, 3, 3), 3), ("channel_shuffle", (2, 6, 3), 2),
    ("channel_shuffle", (2, 6, 2, 1, 2), 3),
]


@pytest.mark.parametrize("name,shape,factor", SHUFFLES)
def test_shuffles(name, shape, factor):
    torch = oracle_torch()
    gf, tf = getattr(GF, name), getattr(torch.nn.functional, name)
    for layout in (None, "t") + (("cl",) if len(shape) == 4 else ()):
        for dtype in ("float32", "int64", "bfloat16"):
            g, t = pair(shape, dtype, layout=layout)
            assert_same(gf(g, factor), tf(t, factor))
    check_grads(lambda x: gf(x, factor), lambda x: tf(x, factor),
                pair(shape, requires_grad=True))
    if name != "channel_shuffle":
        g, t = pair(shape)
        assert_same(getattr(gt, name)(g, factor), getattr(torch, name)(t, factor))


SHUFFLE_ERRORS = [("pixel_shuffle", (8, 3), 2), ("pixel_shuffle", (7, 3, 3), 2),
                  ("pixel_shuffle", (8, 3, 3), 0), ("pixel_unshuffle", (8, 3, 3), 2),
                  ("pixel_unshuffle", (8, 4, 3), 2), ("pixel_unshuffle", (8, 4, 4), -1),
                  ("pixel_unshuffle", (8, 4), 2), ("channel_shuffle", (2, 6, 3, 3), 4),
                  ("channel_shuffle", (2, 6, 3, 3), 0), ("channel_shuffle", (2, 6), 3)]


@pytest.mark.parametrize("name,shape,factor", SHUFFLE_ERRORS)
def test_shuffle_errors(name, shape, factor):
    torch = oracle_torch()
    g, t = pair(shape, "float32")
    raises_like(lambda: getattr(GF, name)(g, factor),
                lambda: getattr(torch.nn.functional, name)(t, factor))


# ---- grid_sample and affine_grid ---------------------------------------------------------

GRID_CASES = [(nd, mode, padding, ac)
              for nd in (2, 3) for mode in ("bilinear", "nearest", "bicubic")
              for padding in ("zeros", "border", "reflection") for ac in (False, True)
              if not (nd == 3 and mode == "bicubic")]


def grid_pair(nd, out=(3, 2, 2), dtype="float64", requires_grad=False):
    """Grid points in [-1.3, 1.3] (some outside), none within 1e-3 of a pixel border so
    that the piecewise gradients are well defined."""
    torch = oracle_torch()
    a = RNG.uniform(-1.3, 1.3, (2,) + out[:nd] + (nd,))
    g, t = gt.tensor(a).to(getattr(gt, dtype)), torch.tensor(a).to(getattr(torch, dtype))
    if requires_grad:
        g.requires_grad_()
        t.requires_grad_()
    return g, t


@pytest.mark.parametrize("nd,mode,padding,ac", GRID_CASES)
def test_grid_sample(nd, mode, padding, ac):
    torch = oracle_torch()
    shape = (2, 3) + (4, 5, 3)[:nd]

    def gf(x, g):
        return GF.grid_sample(x, g, mode, padding, ac)

    def tf(x, g):
        return torch.nn.functional.grid_sample(x, g, mode, padding, ac)
    for dtype, tol in (("float32", 1e-5), ("float16", 5e-3), ("bfloat16", 5e-2)):
        (x, tx), (g, tg) = pair(shape, dtype), grid_pair(nd, dtype=dtype)
        assert_same(gf(x, g), tf(tx, tg), rtol=tol, atol=tol)
    (x, tx), (g, tg) = pair(shape, "float32", layout="cl"), grid_pair(nd, dtype="float32")
    assert_same(gf(x, g), tf(tx, tg), rtol=1e-5, atol=1e-5)
    assert_same(gf(x, g.transpose(1, 2)), tf(tx, tg.transpose(1, 2)), rtol=1e-5, atol=1e-5)
    x, tx = pair((2, 2) + (3, 4, 2)[:nd], requires_grad=True)
    g, tg = grid_pair(nd, (2, 2, 1), requires_grad=True)
    check_grads(gf, tf, (x, tx), (g, tg))


def test_grid_sample_special_points():
    torch = oracle_torch()
    x, tx = pair((1, 2, 3, 4), "float32")
    pts = np.array([[[[-1, -1], [1, 1], [0, 0], [np.inf, 0], [np.nan, 0.5], [-np.inf, 0.5],
                      [-1.0, 1.0], [0.25, -0.75]]]], dtype=np.float32)
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for ac in (False, True):
                assert_same(GF.grid_sample(x, gt.tensor(pts), mode, padding, ac),
                            torch.nn.functional.grid_sample(tx, torch.tensor(pts), mode,
                                                            padding, ac),
                            rtol=1e-5, atol=1e-5)
    assert_same(GF.grid_sample(x[:0], gt.zeros(0, 2, 2, 2), align_corners=True),
                torch.nn.functional.grid_sample(tx[:0], torch.zeros(0, 2, 2, 2),
                                                align_corners=True))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        GF.grid_sample(x, gt.tensor(pts))


GRID_ERRORS = [((2, 3, 4, 5), (1, 3, 2, 2), {}), ((2, 3, 4, 5), (2, 3, 2, 3), {}),
               ((2, 3, 0, 5), (2, 3, 2, 2), {}), ((3, 4, 5), (3, 2, 2), {}),
               ((2, 3, 4, 5, 6), (2, 1, 2, 2, 3), dict(mode="bicubic")),
               ((2, 3, 4, 5, 6), (2, 2, 2, 3), {}), ((2, 3, 4, 5), (2, 3, 2, 2),
                                                     dict(mode="foo")),
               ((2, 3, 4, 5), (2, 3, 2, 2), dict(padding_mode="foo"))]


@pytest.mark.parametrize("shape,grid,kwargs", GRID_ERRORS)
def test_grid_sample_errors(shape, grid, kwargs):
    torch = oracle_torch()
    (x, tx), (g, tg) = pair(shape, "float32"), pair(grid, "float32")
    raises_like(lambda: GF.grid_sample(x, g, align_corners=False, **kwargs),
                lambda: torch.nn.functional.grid_sample(tx, tg, align_corners=False, **kwargs))
    raises_like(lambda: GF.grid_sample(x.double(), g, align_corners=False),
                lambda: torch.nn.functional.grid_sample(tx.double(), tg, align_corners=False))


@pytest.mark.filterwarnings("ignore:Since version 1.3.0")
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 1, 5), (2, 1, 3, 4, 2)])
@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid(size, ac):
    torch = oracle_torch()
    k = len(size) - 2
    th, tth = pair((2, k, k + 1), "float32")
    if ac and 1 in size[2:]:
        with pytest.warns(UserWarning, match="unit-size grids"):
            got = GF.affine_grid(th, size, ac)
    else:
        got = GF.affine_grid(th, size, ac)
    assert_same(got, torch.nn.functional.affine_grid(tth, size, ac), rtol=1e-5, atol=1e-5)
    check_grads(lambda t: GF.affine_grid(t, size, ac),
                lambda t: torch.nn.functional.affine_grid(t, size, ac),
                pair((2, k, k + 1), requires_grad=True))
    assert_same(gt.affine_grid_generator(th, size, ac),
                torch.affine_grid_generator(tth, size, ac), rtol=1e-5, atol=1e-5)


AFFINE_ERRORS = [((2, 2, 3), (2, 3, 4)), ((2, 2, 3), (2, 3, 0, 5)), ((2, 2, 4), (2, 3, 4, 5)),
                 ((2, 2, 3), (2, 3, 4, 5, 6)), ((2, 2, 3), (3, 3, 4, 5))]


@pytest.mark.parametrize("theta,size", AFFINE_ERRORS)
def test_affine_grid_errors(theta, size):
    torch = oracle_torch()
    th, tth = pair(theta, "float32")
    raises_like(lambda: GF.affine_grid(th, size, False),
                lambda: torch.nn.functional.affine_grid(tth, size, False))
    raises_like(lambda: GF.affine_grid(th.long(), size, False),
                lambda: torch.nn.functional.affine_grid(tth.long(), size, False))


def test_meta_shapes():
    """The Meta backend gives every op's output shape and layout without computing."""
    x = gt.empty(2, 8, 4, 6, device="meta").contiguous(memory_format=gt.channels_last)
    assert GF.interpolate(x, scale_factor=1.5, mode="bicubic").shape == (2, 8, 6, 9)
    assert GF.interpolate(x, size=(3, 5)).is_contiguous(memory_format=gt.channels_last)
    assert GF.pad(x, (1, 2, 2, 3), mode="reflect").shape == (2, 8, 9, 9)
    assert GF.pixel_shuffle(x, 2).shape == (2, 2, 8, 12)
    g = gt.empty(2, 3, 5, 2, device="meta")
    assert GF.grid_sample(x, g, align_corners=False).shape == (2, 8, 3, 5)
