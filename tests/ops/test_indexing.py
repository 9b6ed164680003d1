"""Indexing against PyTorch: basic indices are views, advanced indices copy, __setitem__
writes through to the base with one version bump, and the index ops and their errors."""
import warnings
from math import prod

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from oracle import assert_same, oracle_torch

torch = oracle_torch()


def make(lib, shape, layout="contiguous", dtype="float32"):
    """(root, x): a fresh tensor and a view of it with the asked layout and `shape`."""
    def data(s):
        # torch.tensor(ndarray) gives empty arrays odd strides; zeros() has the usual ones
        if not prod(s):
            return lib.zeros(s, dtype=getattr(lib, dtype))
        return lib.tensor(np.arange(prod(s)).reshape(s).astype(dtype))
    if layout == "contiguous":
        root = data(shape)
        return root, root
    if layout == "transposed":
        root = data(shape[::-1])
        return root, root.permute(tuple(range(len(shape) - 1, -1, -1)))
    if layout == "strided":
        root = data(tuple(2 * s + 1 for s in shape))
        return root, root.as_strided(shape, tuple(2 * st for st in root.stride()),
                                     sum(root.stride()))
    raise ValueError(layout)


def check_view(g, t, g_root, t_root):
    assert_same(g, t)
    assert g.storage_offset() == t.storage_offset()
    assert (g.untyped_storage().data_ptr() == g_root.untyped_storage().data_ptr()) == \
        (t.untyped_storage().data_ptr() == t_root.untyped_storage().data_ptr())
    assert g._is_view() == t._is_view()
    assert (g._base is g_root) == (t._base is t_root)


def same_error(fn):
    """fn(lib) raises the same exception type and message in both libraries."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as expected:
            fn(torch)
        with pytest.raises(type(expected.value)) as actual:
            fn(gt)
    assert str(actual.value) == str(expected.value)


def convert(lib, index):
    """The same index expression for either library (tensors are built per library)."""
    if isinstance(index, tuple):
        return tuple(convert(lib, i) for i in index)
    if isinstance(index, Idx):
        return lib.tensor(index.data, dtype=getattr(lib, index.dtype))
    if isinstance(index, slice):
        return slice(convert(lib, index.start), convert(lib, index.stop), index.step)
    return index


class Idx:
    """An index tensor written once for both libraries."""

    def __init__(self, data, dtype="int64"):
        self.data, self.dtype = data, dtype

    def __repr__(self):
        return f"Idx({self.data!r}, {self.dtype})"


# ---- basic indexing: views -------------------------------------------------------------

@st.composite
def basic_indices(draw, shape):
    """Random ints/slices (with steps)/None/Ellipsis for `shape`, always valid."""
    items = []
    for size in shape[:draw(st.integers(0, len(shape)))]:
        if size and draw(st.booleans()):
            items.append(draw(st.integers(-size, size - 1)))
        else:
            bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
            items.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3]))))
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if draw(st.booleans()):
        i = draw(st.integers(0, len(items)))
        j = draw(st.integers(i, len(items)))
        items[i:j] = [Ellipsis]
    return items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
layouts = st.sampled_from(["contiguous", "transposed", "strided"])


@settings(max_examples=50, deadline=None)
@given(shape=shapes, layout=layouts, data=st.data())
def test_random_basic_indexing_is_a_view_like_torch(shape, layout, data):
    index = data.draw(basic_indices(shape))
    g_root, g = make(gt, shape, layout)
    t_root, t = make(torch, shape, layout)
    try:
        expected = t[index]
    except IndexError:          # only 0-dim tensors refuse these (x[0], x[:])
        same_error(lambda L: (g if L is gt else t)[index])
        return
    check_view(g[index], expected, g_root, t_root)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, layout=layouts, data=st.data())
def test_random_basic_setitem_writes_through_like_torch(shape, layout, data):
    index = data.draw(basic_indices(shape))
    g_root, g = make(gt, shape, layout)
    t_root, t = make(torch, shape, layout)
    try:
        t[index] = -1.5
    except IndexError:
        return
    g[index] = -1.5
    assert_same(g_root, t_root)
    assert g_root._version == t_root._version == 1
    g[index] = gt.tensor(2.0, dtype=gt.float64)     # a 0-dim tensor of another dtype
    t[index] = torch.tensor(2.0, dtype=torch.float64)
    assert_same(g_root, t_root)


BASIC_CASES = [
    0, -1, (1, 2), (slice(None), 0), (slice(1, None), slice(None, None, 2)),
    (None, 0, None), (Ellipsis, 1), (0, Ellipsis, None, 2), (Ellipsis, 0, Ellipsis),
    (None, Ellipsis, None), slice(5, None), (slice(None), slice(7, None)), (slice(2, 1),),
    (), Ellipsis, slice(None), (0, 0, 0), (0, 0, 0, Ellipsis), (0, 0, 0, None),
    (slice(-100, 1), slice(-2, None), slice(-3, -1)), (slice(None), slice(1, 10, 3)),
    np.int64(1), (np.int32(1), np.int64(0)), Idx(1), (Idx(1), Idx(2)), slice(Idx(1), None),
    [0, slice(None)],
]


@pytest.mark.parametrize("index", BASIC_CASES, ids=repr)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_basic_index_cases(index, layout):
    g_root, g = make(gt, (2, 3, 4), layout)
    t_root, t = make(torch, (2, 3, 4), layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_view(g[convert(gt, index)], t[convert(torch, index)], g_root, t_root)


def test_full_index_returns_a_new_view():
    x = gt.zeros(2, 3)
    for v in (x[:], x[...], x[()]):
        assert v is not x and v._base is x and v.shape == x.shape
    s = gt.tensor(3.0)
    assert s[...]._base is s and s[None].shape == (1,) and s[..., None].shape == (1,)


def test_zero_dim_integer_tensor_index_is_a_select_view():
    x = gt.zeros(3, 4)
    v = x[gt.tensor(1)]
    assert v._base is x and v.storage_offset() == 4


# ---- advanced indexing: copies ---------------------------------------------------------

M = Idx([[True, False, True], [False, False, True]], "bool")
ADVANCED_CASES = [
    Idx([1, 0]), Idx([[1], [0]]), [1, 0, 1], [[1, 0]], Idx([1, 0], "int32"),
    (slice(None), Idx([0, 2])), (slice(None), slice(None), Idx([[0, 1], [2, 3]])),
    (Idx([0, 1]), Idx([1, 2])), (Idx([0, 1]), slice(None), Idx([1, 2])),
    (slice(None), Idx([0, 1]), Idx([1, 2])), (Idx([[0], [1]]), Idx([0, 2])),
    (0, slice(None), Idx([1, 2])), (Idx([0, 1]), 0), (Idx([0, 1]), None, Idx([1, 2])),
    (slice(1, 2), Idx([0]), slice(1, None)), (Ellipsis, Idx([1, 2])),
    (Idx([1, 0]), Ellipsis, Idx([0, 1])), (Idx([[0, 1]]), Idx([[0], [2]]), slice(1, None)),
    (slice(None), Idx([[0, 1]]), Idx([[0], [2]])), Idx([-1, -2]),
    M, (M, 0), (M, Ellipsis, 0), (M, Idx([0, 1, 2])), (M, slice(None)),
    (0, Idx([True, False, True], "bool")), (slice(None), Idx([True, False, True], "bool")),
    Idx([True, False], "bool"), [True, False],
    (Idx([True, True], "bool"), [0, 2]), (Idx([True, False], "bool"), [0, 1, 2]), True, False,
    (None, True), (0, True), (0, False),
    (Ellipsis, True), (True, True), Idx(True, "bool"), Idx(1, "uint8"),
    Idx([1, 0], "uint8"), [], Idx([], "int64"), (slice(None), []), [1.7, 0.2],
    np.array([1, 0]), np.array([True, False]), np.array(1), (Idx([0]), Idx(1)), range(2),
]


@pytest.mark.parametrize("index", ADVANCED_CASES, ids=repr)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_advanced_index_cases(index, layout):
    g_root, g = make(gt, (2, 3, 4), layout)
    t_root, t = make(torch, (2, 3, 4), layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = t[convert(torch, index)]
        actual = g[convert(gt, index)]
    check_view(actual, expected, g_root, t_root)


def test_permuted_sources_keep_torch_output_strides():
    for perm, index in [((2, 0, 1), (slice(None), slice(None), [0, 1])), ((2, 0, 1), [0, 1]),
                        ((1, 0, 2), (slice(None), [1, 0])), ((2, 1, 0), ([0, 1], [1, 0]))]:
        g = gt.tensor(np.arange(24.0).reshape(2, 3, 4)).permute(*perm)
        t = torch.tensor(np.arange(24.0).reshape(2, 3, 4)).permute(*perm)
        assert_same(g[index], t[index])


def _idx_strategy(size):
    return st.lists(st.integers(-size, size - 1), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), layout=layouts,
       data=st.data())
def test_random_advanced_indexing_like_torch(shape, layout, data):
    length = data.draw(st.integers(1, 3))
    index = []
    for size in shape:
        kind = data.draw(st.sampled_from(["slice", "int", "tensor", "mask", "none"]))
        if kind == "slice":
            index.append(slice(data.draw(st.integers(0, size)), None))
        elif kind == "int":
            index.append(data.draw(st.integers(-size, size - 1)))
        elif kind == "tensor":
            index.append(Idx(data.draw(st.lists(st.integers(-size, size - 1), min_size=length,
                                                max_size=length))))
        elif kind == "mask":
            index.append(Idx(data.draw(st.lists(st.booleans(), min_size=size, max_size=size)),
                             "bool"))
        else:
            index.append(None)
    index = tuple(index)
    g_root, g = make(gt, shape, layout)
    t_root, t = make(torch, shape, layout)
    try:
        expected = t[convert(torch, index)]
    except IndexError:            # masks and lists whose lengths don't broadcast
        same_error(lambda L: (g if L is gt else t)[convert(L, index)])
        return
    check_view(g[convert(gt, index)], expected, g_root, t_root)
    t[convert(torch, index)] = -1.0
    g[convert(gt, index)] = -1.0
    assert_same(g_root, t_root)


def test_index_on_meta_tensors_gives_shapes():
    for L in (gt, torch):
        x = L.empty(2, 3, 4, device="meta")
        y = x[L.tensor([0, 1]), :, L.tensor([1, 2])]      # CPU indices are allowed
        assert y.device.type == "meta" and y.shape == (2, 3)
        assert x[L.tensor([True, False])].shape == (1, 3, 4)
        x[L.tensor([0, 1])] = 1.0
    with pytest.raises(NotImplementedError):
        x = gt.empty(2, 3, 4, device="meta")
        x[gt.empty(2, dtype=gt.bool, device="meta")]


# ---- __setitem__ -----------------------------------------------------------------------

SETITEM_CASES = [
    "y[0] = 5", "y[0, 1] = 7.5", "y[:, 1:3] = -1", "y[..., 0] = 100", "y[None] = 4",
    "y[0] = L.tensor([1.0, 2.0, 3.0, 4.0])", "y[0] = L.ones(1, 1, 4)", "y[y > 3] = y[0, 0, 1]",
    "y[0:1] = y[1:2]",
    "y[0] = L.tensor([1, 2, 3, 4])", "y[1] = L.tensor(2.5, dtype=L.float64)",
    "y[0, 0, 0] = L.tensor([9.0])", "y[[0]] = 5", "y[[0]] = L.ones(1, 1, 1, 4)",
    "y[[0, 1], :, [1, 2]] = L.tensor([[1.0], [2.0]])", "y[y > 5] = 0",
    "y[y > 5] = L.tensor(1)", "y[y > 5] = L.tensor([1.0], dtype=L.float64)",
    "y[L.tensor([True, False])] = L.arange(12.0).view(3, 4)", "y[True] = 2", "y[False] = 2",
    "y[L.tensor([0, 0])] = L.tensor([[[1.0]], [[2.0]]])", "y[0][1] = 1",
    "y[L.tensor(1)] = 6", "y[0] = True", "y[0] = np.float64(2.5)",
    "y[[0, 0], [0, 0], [0, 1]] = L.tensor([1.0, 2.0])", "y.t_view[[0, 1]] = 3",
    "y[:, [0, 2]] = L.tensor([[1.0], [2.0]]).view(2, 1, 1)", "y[1:, ::2, [0, 3]] = -2",
]


@pytest.mark.parametrize("stmt", SETITEM_CASES)
def test_setitem_cases(stmt):
    results = {}
    for L in (torch, gt):
        y = L.tensor(np.arange(24.0).reshape(2, 3, 4).astype(np.float32))
        env = {"L": L, "np": np, "y": y}
        code = stmt.replace("y.t_view", "y.transpose(0, 2)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(code, env)
        results[L] = y
    assert_same(results[gt], results[torch])
    assert results[gt]._version == results[torch]._version


def test_setitem_through_a_view_reaches_the_base_and_bumps_once():
    for L in (gt, torch):
        base = L.zeros(3, 4)
        v = base[1:]
        v[0, ::2] = 1
        v[[1], [0, 3]] = L.tensor([2.0, 3.0])
        assert base._version == v._version == 2
    g, t = gt.zeros(3, 4), torch.zeros(3, 4)
    for y in (g, t):
        y[1:][0, ::2] = 1
        y.t()[[0, 1]] = 5
    assert_same(g, t)


SETITEM_ERRORS = [
    "y[[0]] = L.tensor([1])", "y[0] = L.ones(2, 4)", "y[[0, 1]] = L.ones(3)",
    "y[0] = [1, 2, 3, 4]", "y[0] = None", "y[0] = np.ones(4)", "y[0] = 1j",
    "y[[0, 1]] = L.tensor([1.0, 2.0], dtype=L.float64)", "y[0] = y",
    "y[[0, 0], [0, 0]] = L.tensor([[1.0, 2.0], [3.0, 4.0]])", "y[:, [7]] = 1",
    "y[y[0] > 1] = 0", "y[::-1] = 0", "L.tensor(3.0)[0] = 1",
    "z = L.zeros(3, dtype=L.uint8); z[0] = 300", "z = L.zeros(3, dtype=L.uint8); z[[0]] = 256",
    "z = L.zeros(3, dtype=L.uint8); z[0] = -1.0", "z = L.zeros(3, dtype=L.int32); z[0] = 2**40",
    "z = L.zeros(3, dtype=L.int64); z[0] = 1e30", "z = L.zeros(3); z[0] = 1e40",
    "z = L.zeros(3, dtype=L.int8); z[0] = float('nan')",
    "z = L.zeros(3, dtype=L.complex64); z[0] = 1e40", "y[[0, 1]] = y[1]", "y[[0]] = y[1:]",
    "y.index_put_((L.tensor([0]),), y[0])",
]


@pytest.mark.parametrize("stmt", SETITEM_ERRORS)
def test_setitem_errors_match_torch(stmt):
    def run(L):
        exec(stmt, {"L": L, "np": np, "y": L.tensor(np.arange(24.0, dtype=np.float32)
                                                   .reshape(2, 3, 4))})
    same_error(run)


def test_setitem_accepted_scalars():
    for dtype, value in [("uint8", -1), ("uint8", -255), ("int64", 1.7), ("bool", 5.5),
                         ("float16", 1e5), ("float32", float("inf")), ("int32", 3 + 0j)]:
        g, t = gt.zeros(2, dtype=getattr(gt, dtype)), torch.zeros(2, dtype=getattr(torch, dtype))
        g[0], t[0] = value, value
        assert_same(g, t)


# ---- getitem errors --------------------------------------------------------------------

GETITEM_ERRORS = [
    "y[1.5]", "y[0, 0, 0, 0]", "y[5]", "y[-3]", "y[:, 7]", "y[::-1]", "y[::0]",
    "y[L.tensor([0.0])]", "y[L.tensor([5])]", "y[L.tensor([-3])]", "y[[0, 1], [0, 1, 2]]",
    "y[L.tensor([1, 0], dtype=L.int8)]", "y[L.tensor([1, 0], dtype=L.int16)]",
    "L.tensor(3.0)[0]", "L.tensor(3.0)[1]", "L.tensor(3.0)[0:1]", "L.tensor(3.0)[None, 0]",
    "L.tensor(3.0)[[0]]", "L.tensor(3.0)[L.tensor(0)]", "y[L.zeros(0, 3, dtype=L.bool)]",
    "y[[True, False, True]]", "y[(y > 2)[0]]", "y[:, :, [7]]", "y[[0, 1], :, [5]]",
    "y[None, None, 0, 0, 0, 0]", "y[L.tensor(2), 0]", "L.zeros(0, 3)[[0]]",
    "y[[[True, False, True], [False, False, True]]]",
]


@pytest.mark.parametrize("expr", GETITEM_ERRORS)
def test_getitem_errors_match_torch(expr):
    same_error(lambda L: eval(expr, {"L": L, "y": L.tensor(np.arange(24.0, dtype=np.float32)
                                                           .reshape(2, 3, 4))}))


def test_non_tuple_sequence_warns_like_torch():
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        gt.zeros(2, 3)[[0, slice(None)]]


# ---- index functions -------------------------------------------------------------------

FUNCTION_CASES = [
    "L.index_select(x, 1, L.tensor([2, 0]))", "x.t().index_select(0, L.tensor([2, 0]))",
    "x.index_select(0, L.tensor([1, 0], dtype=L.int32))", "x.index_select(0, L.tensor(1))",
    "L.index_select(L.tensor(5.0), 0, L.tensor([0]))",
    "x.index_select(-1, L.tensor([], dtype=L.long))",
    "L.masked_select(x, x > 4)", "x.masked_select(L.tensor([True, False, True, False]))",
    "L.masked_select(L.tensor([1.0, 2.0]), L.ones(3, 2, dtype=L.bool))",
    "x.masked_fill(x > 4, 0.5)", "x.long().masked_fill(x > 4, 0.5)",
    "L.masked_fill(x, x > 4, L.tensor(2))", "x.masked_fill(L.ones(2, 3, 4, dtype=L.bool), 1)",
    "x.t().masked_fill(x.t() > 4, 1)", "x.clone().masked_fill_(x > 4, -1)",
    "x.clone().masked_fill_(L.tensor([True, False, True, False]), L.tensor(3.0))",
    "L.zeros(3, dtype=L.complex64).masked_fill(L.tensor([True, False, True]), 1j)",
    "L.take(x, L.tensor([[0, 11], [5, 3]]))", "L.take(x.t(), L.tensor([1, 2, -1]))",
    "x.take(L.tensor(4))", "L.nonzero(x)", "L.nonzero(L.tensor([0, 1, 1, 0, 3]))",
    "L.nonzero(L.tensor(5))", "L.nonzero(L.tensor(0))", "x.nonzero()", "L.argwhere(x)",
    "L.nonzero(L.zeros(0, 3))", "L.nonzero(L.tensor([0.0, float('nan'), -0.0]))",
    "x.t().argwhere()", "L.index_put(x, (L.tensor([0, 0]), L.tensor([1, 1])), L.tensor(5.0))",
    "L.index_put(x, (L.tensor([0, 0]), L.tensor([1, 1])), L.tensor([5.0, 6.0]), accumulate=True)",
    "x.clone().index_put_((L.tensor([0, 2]),), L.tensor([5.0]))",
    "x.index_put((x > 5,), L.tensor(-1.0))",
    "L.index_put_(x.t(), [L.tensor([1, 3])], L.tensor(0.0))",
    "x.index_put((L.tensor([1, 1]),), L.ones(2, 4), accumulate=True)",
    "x.bool().index_put((L.tensor([0, 0]),), L.tensor([True, True]).view(2, 1), accumulate=True)",
]


@pytest.mark.parametrize("expr", FUNCTION_CASES)
def test_index_functions_match_torch(expr):
    results = [eval(expr, {"L": L, "x": L.tensor(np.arange(12.0, dtype=np.float32)
                                                 .reshape(3, 4))}) for L in (gt, torch)]
    assert_same(*results)


def test_nonzero_as_tuple_and_where_are_views_of_one_result():
    for expr in ["L.nonzero(x, as_tuple=True)", "L.nonzero(L.tensor(5), as_tuple=True)",
                 "L.nonzero(L.tensor(0), as_tuple=True)", "L.where(x > 9)",
                 "x.nonzero(as_tuple=True)", "L.nonzero(L.zeros(0, 3), as_tuple=True)"]:
        g, t = (eval(expr, {"L": L, "x": L.tensor(np.arange(12.0).reshape(3, 4))})
                for L in (gt, torch))
        assert isinstance(g, tuple) and len(g) == len(t)
        for a, b in zip(g, t):
            assert_same(a, b)
            assert a._is_view() == b._is_view()


def test_index_put_bumps_version_once_and_nonzero_indexes_back():
    x = gt.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    x.index_put_((gt.tensor([0, 1]),), gt.tensor(1.0))
    assert x._version == 1
    mask = x > 5
    assert_same(x[gt.nonzero(mask, as_tuple=True)], x[mask])


INDEX_FUNCTION_ERRORS = [
    "L.index_select(x, 0, L.tensor([0, 1]).float())", "L.index_select(x, 0, L.tensor([[0]]))",
    "L.index_select(x, 0, L.tensor([5]))", "L.index_select(x, 2, L.tensor([0]))",
    "L.masked_select(x, L.tensor([1, 0, 1, 0]))", "x.masked_fill(x > 4, L.tensor([2.0]))",
    "x.masked_fill(x.long(), 2)", "x.clone().masked_fill_(L.ones(2, 3, 4, dtype=L.bool), 1)",
    "L.zeros(3, dtype=L.uint8).masked_fill(L.tensor([True, False, True]), 300)",
    "x.masked_fill(x > 4, 1j)", "L.take(x, L.tensor([12]))", "L.take(x, L.tensor([-13]))",
    "L.take(x, L.tensor([1]).int())", "x.index_put_((L.tensor([0]),), L.tensor([1]))",
    "x.index_put_((L.tensor([0, 1]),), L.ones(3))", "x.index_put_((L.tensor([0.0]),), L.ones(1))",
    "x.index_put_((L.tensor([7]),), L.ones(1))", "x.index_put((None, L.tensor([1])), L.ones(1))",
    "L.index_put(x, (None, L.tensor([1])), L.ones(1))", "x.index_put_([1], L.ones(1))",
    "x.index_put_(L.tensor([1]), L.ones(1))", "x.index_put_((L.tensor([1]),), 1.0)",
]


@pytest.mark.parametrize("expr", INDEX_FUNCTION_ERRORS)
def test_index_function_errors_match_torch(expr):
    same_error(lambda L: eval(expr, {"L": L, "x": L.tensor(np.arange(12.0, dtype=np.float32)
                                                           .reshape(3, 4))}))


_SLICE_INDICES = [
    slice(0, 11, 1), (slice(0, 11, 1), slice(None)), (slice(None), slice(0, 11, 1)),
    (slice(None), slice(0, 100)), slice(0, 100), (slice(0, 11),), (0, slice(0, 11)),
    slice(0, 11), (slice(None, 11),), slice(None), slice(0, None), slice(None, None, 1),
    (Ellipsis, slice(None, 5)), (None, slice(0, 11)), slice(2, None), slice(None, None, 2),
    slice(-11, None), slice(0, 2 ** 70), slice(None, -100), (slice(-20, 11),),
    (slice(None, -1),), (slice(1, 5, 2), slice(3, None))]


@pytest.mark.parametrize("index", _SLICE_INDICES, ids=repr)
def test_slicing_calls_the_ops_torchs_does(index):
    """Within an index tuple a slice covering its dim is no op (a full `x[:, :, :T]` is one
    alias), a lone slice index always one aten::slice; slices reach aten::slice with
    PyTorch's arguments (None as 0 or the largest int64, ints clamped to int64), so a
    dispatch mode, an FX trace or an export sees the calls torch's does."""
    from torch.utils._python_dispatch import TorchDispatchMode as TorchMode
    from glasstorch.utils._python_dispatch import TorchDispatchMode as OurMode

    def seen(T, mode_class):
        calls = []

        class Log(mode_class):
            def __torch_dispatch__(self, func, types, args, kwargs=None):
                calls.append((str(func).replace("aten.", ""), tuple(args[1:])))
                return func(*args, **(kwargs or {}))
        m = T.arange(121.0).reshape(11, 11).requires_grad_()
        with Log():
            r = m[index]
        return calls, tuple(r.shape), r.stride(), type(r.grad_fn).__name__, r.tolist()
    assert seen(gt, OurMode) == seen(torch, TorchMode)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("value", [float("-inf"), float("nan"), 3, 2 ** 40, -0.0, 1e38, 0.1])
def test_masked_fill_of_floats_by_numbers_equals_torch(dtype, value):
    """masked_fill's direct path (a float tensor, a Python number: one copyto under the mask)
    and masked_fill_ give torch's values, with masks of the shape and broadcast ones."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5)).astype(dtype)
    masks = [rng.random((4, 3, 5)) < 0.5, np.tril(np.ones((3, 5), bool)), rng.random(5) < 0.5]

    def filled(T):
        out = []
        for m in masks:
            a, mk = T.from_numpy(x.copy()), T.from_numpy(m)
            out.append(a.masked_fill(mk, value).numpy().tobytes())
            out.append(a.masked_fill_(mk, value).numpy().tobytes())
        return out
    assert filled(gt) == filled(torch)
