"""Joining and rearranging ops against PyTorch: values, dtypes (promotion), shapes, strides,
views vs copies, the in-place and out= variants, and error texts."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from oracle import assert_same, oracle_torch

torch = oracle_torch()


def env(L):
    x = L.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    return {"L": L, "x": x, "y": L.tensor([0.0, 1.0, 2.0]), "c": x > 4,
            "z": L.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)),
            "s": L.tensor(5.0), "np": np}


def both(expr):
    out = []
    for L in (gt, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(eval(expr, env(L)))
    return out


def check(g, t):
    if isinstance(t, torch.Tensor):
        assert_same(g, t)
        assert g._is_view() == t._is_view()
        return
    assert isinstance(g, tuple) and len(g) == len(t)
    for a, b in zip(g, t):
        check(a, b)


def same_error(expr):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as expected:
            eval(expr, env(torch))
        with pytest.raises(type(expected.value)) as actual:
            eval(expr, env(gt))
    assert str(actual.value) == str(expected.value)


CASES = [
    # cat family
    "L.cat([x, x.long()])", "L.cat([x.long(), L.empty(0, dtype=L.float64)])",
    "L.cat([x.long(), L.empty(0)])", "L.cat([L.empty(0), L.empty(0)])",
    "L.cat([L.empty(0, 4), x])", "L.cat([x, L.ones(3, 3)], 1)", "L.cat((x, x), dim=-1)",
    "L.cat([x.t(), x.t()])", "L.cat([x.t(), x.t()], 1)", "L.cat([x[:, ::2], x[:, 1::2]], 1)",
    "L.cat([z, z], 2)",
    "L.cat([x.bool(), x.bool()])", "L.cat([L.tensor([True]), L.tensor([2])])",
    "L.cat([x, s.expand(3, 2)], 1)", "L.cat([x])", "L.concat([x, x])",
    "L.concatenate([x, x], axis=1)", "L.cat([x, x], out=L.empty(0))",
    "L.cat([x, x], 1, out=L.empty(0, dtype=L.float64))",
    # stack family
    "L.stack([x, x])", "L.stack([x, x], 2)", "L.stack([x, x], -1)", "L.stack([x, x.long()])",
    "L.stack([x.t(), x.t()])", "L.stack([L.tensor(1.0), L.tensor(2)])", "L.stack((y,))",
    "L.stack([x, x], out=L.empty(0))", "L.hstack([L.tensor(1), L.tensor([2, 3])])",
    "L.hstack([x, x])", "L.hstack((z, z))", "L.vstack([L.tensor([1, 2]), L.tensor([3, 4])])",
    "L.vstack([x, y.reshape(1, 3).expand(2, 3)[:, :2].repeat(1, 2)])",
    "L.row_stack([L.tensor(1), L.tensor(2)])", "L.dstack([L.tensor([1, 2]), L.tensor([3, 4])])",
    "L.dstack([x, x])",
    "L.column_stack([L.tensor([1, 2]), L.tensor([[3], [4]]), L.tensor([5, 6])])",
    "L.column_stack([L.tensor(1), L.tensor(2)])", "L.hstack([x, x], out=L.empty(0))",
    # where
    "L.where(c, x, 0)", "L.where(c, 1, 0)", "L.where(c, 1.0, 0)", "L.where(c, x.long(), 0.5)",
    "L.where(c, x.long(), L.tensor(0.5, dtype=L.float64))", "L.where(c.t(), x.t(), 0)",
    "L.where(c, x, L.zeros(4, 3).t())", "L.where(c[0], 1, x)", "x.where(c, 0)",
    "L.where(c.byte(), x, 0)", "L.where(L.tensor(True), 1, 2)", "L.where(c, True, False)",
    "L.where(c, 1, 2.5j)", "L.where(c, x.to(L.uint8), -3)", "L.where(c, x.half(), 1e-3)",
    "L.where(c[:, :1], y[None, :1], x)", "L.where(c, x, L.zeros(1), out=L.empty(0))",
    # tril / triu
    "x.tril()", "x.triu(1)", "x.tril(-1)", "L.tril(x.t())", "L.triu(z.transpose(0, 2), -1)",
    "x.clone().tril_(diagonal=1)", "x.clone().triu_(-5)", "L.triu(x, diagonal=-5)",
    "L.tril(x.bool())", "L.tril(x, out=L.empty(0))", "L.tril(L.ones(0, 3))",
    # flip / roll
    "L.flip(x, [0])", "x.flip(0, 1)", "x.flip((0, 1))", "x.t().flip(0)", "x[:, ::2].flip(1)",
    "L.flip(s, [0])", "L.flip(x, [])", "L.fliplr(x)", "L.flipud(x)", "x.fliplr()",
    "L.flipud(z.permute(2, 0, 1))", "L.roll(x, 1)", "L.roll(x, 1, 0)", "L.roll(x, (1, -1), (0, 1))",
    "L.roll(x.t(), 1, 0)", "L.roll(s, 1)", "L.roll(x, 5, -1)", "x.roll(-7)",
    "L.roll(L.ones(0, 2), 1, 0)",
    # repeat / tile / repeat_interleave
    "x.repeat(2, 1)", "x.repeat(2, 1, 2)", "x.repeat((2, 2))", "x.t().repeat(1, 1)",
    "L.tensor(1.0).repeat(2)", "s.repeat(())", "x.repeat(0, 2)", "x.repeat(L.Size([1, 2]))",
    "x.tile(2)", "L.tile(x, (2,))", "L.tile(x, (2, 1, 1))", "x.tile(())", "x.tile(2, 2)",
    "L.repeat_interleave(y, 2)", "y.repeat_interleave(2)", "x.repeat_interleave(2)",
    "x.repeat_interleave(2, dim=1)", "x.repeat_interleave(L.tensor([1, 2, 0]), dim=0)",
    "x.repeat_interleave(L.tensor([1, 2, 0, 3]), dim=1)",
    "x.repeat_interleave(L.tensor([2]), dim=0)",
    "L.repeat_interleave(L.tensor([1, 2, 3]))", "L.repeat_interleave(L.tensor([1, 2]).int())",
    "L.repeat_interleave(L.tensor(3.0), 2)", "x.repeat_interleave(2, dim=0, output_size=6)",
    "x.repeat_interleave(L.tensor(2), dim=0)", "x.t().repeat_interleave(2, dim=0)",
    "x.repeat_interleave(1, dim=-1)", "x.repeat_interleave(0, dim=1)",
    # atleast / meshgrid / broadcast_tensors
    "L.atleast_1d(s)", "L.atleast_1d(y, x)", "L.atleast_1d([y, x])", "L.atleast_1d((y,))",
    "L.atleast_2d(s)", "L.atleast_2d(y)", "L.atleast_2d(y, s, z)", "L.atleast_3d(s)",
    "L.atleast_3d(y)", "L.atleast_3d(x)", "L.atleast_3d(L.ones(2, 3, 4, 5))",
    "L.meshgrid(y, L.arange(2.0), indexing='ij')", "L.meshgrid(y, L.arange(2.0), indexing='xy')",
    "L.meshgrid([y, L.arange(2.0)], indexing='ij')", "L.meshgrid(s, y, indexing='ij')",
    "L.meshgrid(y, indexing='xy')", "L.meshgrid(y, y, L.arange(4.0), indexing='xy')",
    "L.meshgrid(y, x[0])", "L.broadcast_tensors(x, L.tensor([1.0, 2.0, 3.0, 4.0]))",
    "L.broadcast_tensors(x, L.ones(3, 1, 1))", "L.broadcast_tensors(x)", "L.broadcast_tensors()",
    "L.broadcast_tensors(s, y)",
]


@pytest.mark.parametrize("expr", CASES)
def test_matches_torch(expr):
    check(*both(expr))


def test_channels_last_inputs_give_channels_last_cat():
    for extra in ("cl", "contiguous"):
        outs = []
        for L in (gt, torch):
            a = L.ones(2, 3, 4, 5).to(memory_format=L.channels_last)
            b = a if extra == "cl" else L.ones(2, 3, 4, 5)
            outs.append(L.cat([a, b]))
        assert_same(*outs)


def test_identity_and_views():
    y = gt.zeros(3)
    x = gt.zeros(2, 3)
    assert gt.atleast_1d(y) is y and gt.atleast_2d(x) is x and gt.atleast_3d(gt.zeros(1, 2, 3)) \
        .shape == (1, 2, 3)
    a, b = gt.atleast_1d(y, x)
    assert a is y and b is x
    grid = gt.meshgrid(y, gt.zeros(2), indexing="ij")
    assert all(g._base is not None for g in grid)
    assert grid[0]._base is y
    bx, by = gt.broadcast_tensors(x, y)
    assert bx is x and by._base is y
    assert gt.flip(x, [0])._base is None and gt.roll(x, 1)._base is None


def test_in_place_tril_bumps_the_version_and_writes_through_views():
    g, t = gt.ones(4, 4), torch.ones(4, 4)
    g[1:].tril_()
    t[1:].tril_()
    assert_same(g, t)
    assert g._version == t._version == 1
    with pytest.raises(RuntimeError, match="more than one element"):
        gt.ones(1, 3).expand(3, 3).tril_()


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning, match="indexing argument"):
        gt.meshgrid(gt.zeros(2), gt.zeros(3))


def test_where_uint8_condition_warns():
    with pytest.warns(UserWarning, match="uint8 condition"):
        gt.where(gt.tensor([1, 0], dtype=gt.uint8), 1.0, 0.0)


CATS = [  # on the fast path (one float dtype, up to 3 dims), and past it
    "L.cat([x, x * 2], 0)", "L.cat([x, x[:, :1], x], -1)", "L.cat([z, z[:1]], 0)",
    "L.cat([z, z[:, :2] + 1, z], 1)", "L.cat([z, z], -1)", "L.cat([y, y, y])",
    "L.cat([x.t(), x.t()[::2]], 0)", "L.cat([x, x[:0]], 0)", "L.cat([x, L.empty(0)], 0)",
    "L.cat([x, x.double()], 1)", "L.cat([x.double(), x.double() / 3], 1)",
    "L.cat([z[None], z[None]], 3)", "L.cat([x.half(), x.half()], 0)", "L.cat([x], 1)",
]


@pytest.mark.parametrize("expr", CATS)
def test_cat_on_and_off_the_fast_path_matches_torch(expr):
    g, t = both(expr)
    assert_same(g, t)
    assert g.stride() == t.stride()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cat_fast_path_is_the_general_kernels_bit_for_bit(dtype):
    """The fast path's concatenate against the general kernel (the out= variant, meta
    function and piecewise copies), needing grad too: values, shape, strides, CatBackward0."""
    rng = np.random.default_rng(0)
    pieces = [gt.from_numpy(rng.standard_normal((4, k, 5)).astype(dtype)) for k in (3, 1, 2)]
    fast = gt.cat(pieces, 1)
    general = gt.empty(0, dtype=fast.dtype)
    gt.cat(pieces, 1, out=general)
    assert fast.shape == general.shape == (4, 6, 5) and fast.stride() == general.stride()
    assert np.array_equal(fast.numpy(), general.numpy())
    leaf = pieces[0].clone().requires_grad_()
    y = gt.cat([leaf, pieces[1]], -2)
    assert y.grad_fn.name() == "CatBackward0"
    y.sum().backward()
    assert np.array_equal(leaf.grad.numpy(), np.ones((4, 3, 5), dtype))


def test_cat_and_stack_on_meta_tensors():
    a = gt.empty(2, 3, device="meta")
    assert gt.cat([a, a], 1).shape == (2, 6) and gt.cat([a, a]).device.type == "meta"
    assert gt.stack([a, a], 1).shape == (2, 2, 3)
    assert gt.where(gt.empty(2, 3, dtype=gt.bool, device="meta"), a, 0).shape == (2, 3)
    assert gt.flip(a, [0]).shape == (2, 3) and a.repeat(2, 2).shape == (4, 6)


ERRORS = [
    "L.cat([L.empty(0, 3), x])", "L.cat([x, L.ones(4, 3)], 1)", "L.cat([x, L.ones(3, 3)])",
    "L.cat([x, L.ones(3)])", "L.cat([L.ones(3), x])", "L.cat([])", "L.cat([L.tensor(1.0)])",
    "L.cat([x, 1])", "L.cat(x)", "L.cat([x], 2)", "L.cat([x, x], out=L.empty(0, dtype=L.long))",
    "L.concat([])", "L.stack([x, L.ones(3, 5)])", "L.stack([x, L.ones(3, 4, 1)])", "L.stack([])",
    "L.stack([x, x], 3)", "L.stack(x)", "L.stack([x, x], out=L.empty(0, dtype=L.long))",
    "L.hstack([])", "L.hstack(x)", "L.vstack([])",
    "L.dstack([x, L.ones(3)])", "L.column_stack([])",
    "L.where(x, x, x)", "L.where(c, x, L.ones(2))", "L.where(c, x.to(L.uint8), 300)",
    "L.where(c, x.to(L.int8), 200)",
    "L.tril(L.ones(3))", "L.triu(s)",
    "x.flip(0, 0)", "x.flip(2)", "L.fliplr(L.ones(3))", "L.flipud(s)",
    "L.roll(x, (1, 2), 0)", "L.roll(x, [], [])", "L.roll(s, 1, 0)", "L.roll(x, 1, 2)",
    "L.roll(x, (1, 2))",
    "x.repeat(2)", "x.repeat(-1, 1)", "x.tile(-1)",
    "x.repeat_interleave(L.tensor([1, 2]))", "x.repeat_interleave(-1)",
    "x.repeat_interleave(L.tensor([-1, 2, 1]), dim=0)",
    "x.repeat_interleave(L.tensor([[1, 2]]), dim=0)",
    "x.repeat_interleave(L.tensor([1.0, 2.0, 1.0]), dim=0)", "L.repeat_interleave(L.tensor(2))",
    "x.repeat_interleave(2, dim=2)",
    "L.meshgrid(y, L.arange(2), indexing='ij')", "L.meshgrid(y, y, indexing='foo')",
    "L.meshgrid(indexing='ij')", "L.broadcast_tensors(x, L.ones(2))",
]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors_match_torch(expr):
    same_error(expr)


@pytest.mark.parametrize("expr", [
    "L.where(c, x, L.zeros(1), out=L.empty(0, dtype=L.float64))",
    "L.tril(x, out=L.empty(0, dtype=L.long))", "L.triu(x, out=L.empty(0, dtype=L.float64))",
    "L.index_select(x, 0, L.tensor([0]), out=L.empty(0, dtype=L.float64))",
    "L.take(x, L.tensor([0]), out=L.empty(0, dtype=L.float64))",
])
def test_out_must_have_the_result_dtype(expr):
    """Like PyTorch these out= variants refuse any other dtype (the wording differs)."""
    for L in (torch, gt):
        with pytest.raises(RuntimeError):
            eval(expr, env(L))


def test_meshgrid_rejects_matrices():
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        gt.meshgrid(gt.zeros(2, 3), gt.zeros(2), indexing="ij")


# ---- properties over random shapes -----------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), data=st.data())
def test_random_cat_split_roundtrip_and_rearrangements(shape, data):
    n = len(shape)
    dim = data.draw(st.integers(-n, n - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    shifts = data.draw(st.integers(-5, 5))
    diagonal = data.draw(st.integers(-3, 3))
    reps = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n + 1))
    transposed = data.draw(st.booleans())
    results = []
    for L in (gt, torch):
        pieces = []
        for k, s in enumerate(sizes):
            piece_shape = list(shape)
            piece_shape[dim] = s
            flip = transposed and n == 2        # same shape, column-major memory
            data = np.arange(np.prod(piece_shape)).reshape(piece_shape[::-1] if flip else
                                                           piece_shape)
            p = L.tensor(data.astype(np.float32) + 100 * k)
            pieces.append(p.t() if flip else p)
        joined = L.cat(pieces, dim)
        out = [joined, *joined.split(sizes, dim), L.roll(joined, shifts, dim),
               joined.flip(dim), joined.repeat(*reps), L.stack(pieces[:1] * 2, dim)]
        if n >= 2:
            out += [joined.tril(diagonal), joined.triu(diagonal)]
        results.append(out)
    for g, t in zip(*results):
        assert_same(g, t)
