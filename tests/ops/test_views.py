"""View ops against PyTorch: shapes, strides, offsets, values, storage sharing, `_base`,
version counters, writes through views, and error texts."""
from math import prod

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from oracle import assert_same, oracle_torch

torch = oracle_torch()

# ---- building the same tensor in both libraries ----------------------------------------


def _data(shape, dtype):
    a = np.arange(prod(shape)).reshape(shape)
    if dtype == "complex64":
        return (a + 1j * (a + 100)).astype(np.complex64)
    return a.astype(dtype)


def make(lib, shape, layout="contiguous", dtype="float32"):
    """(root, x): a fresh tensor and a view of it with the asked layout and `shape`."""
    if layout == "contiguous":
        root = lib.tensor(_data(shape, dtype))
        return root, root
    if layout == "transposed":      # same shape, reversed memory order
        root = lib.tensor(_data(shape[::-1], dtype))
        return root, root.permute(tuple(range(len(shape) - 1, -1, -1)))
    if layout == "strided":         # every other element, offset by one
        root = lib.tensor(_data(tuple(2 * s + 1 for s in shape), dtype))
        return root, root[tuple(slice(1, None, 2) for _ in shape)]
    if layout == "expanded":        # stride 0 in the first dimension
        root = lib.tensor(_data((1,) + tuple(shape[1:]), dtype))
        return root, root.expand(*shape)
    raise ValueError(layout)


LAYOUTS = ["contiguous", "transposed", "strided", "expanded"]


def check_view(g, t, g_root, t_root):
    """g (glasstorch) is the same view of g_root as t (torch) is of t_root."""
    assert_same(g, t)
    assert g.storage_offset() == t.storage_offset()
    assert (g.untyped_storage().data_ptr() == g_root.untyped_storage().data_ptr()) == \
        (t.untyped_storage().data_ptr() == t_root.untyped_storage().data_ptr())
    assert g._is_view() == t._is_view()
    assert (g._base is g_root) == (t._base is t_root)
    assert g is not g_root or t is t_root


def check_results(g, t, g_root, t_root):
    if isinstance(t, torch.Tensor):
        check_view(g, t, g_root, t_root)
        return
    assert isinstance(g, tuple) and isinstance(t, tuple)
    assert len(g) == len(t)
    for a, b in zip(g, t):
        check_view(a, b, g_root, t_root)


def same_error(fn):
    """fn(lib) raises the same exception type and message in both libraries."""
    with pytest.raises(Exception) as expected:
        fn(torch)
    with pytest.raises(type(expected.value)) as actual:
        fn(gt)
    assert str(actual.value) == str(expected.value)


# ---- every view op on every layout -----------------------------------------------------

VIEW_OPS = {
    "unfold": lambda L, x: x.unfold(1, 2, 1),
    "unfold_step": lambda L, x: x.unfold(-1, 2, 3),
    "unfold_whole": lambda L, x: x.unfold(0, x.shape[0], 1),
    "diagonal": lambda L, x: x.diagonal(),
    "diagonal_offset": lambda L, x: L.diagonal(x, 1, 2, 0),
    "diagonal_negative": lambda L, x: x.diagonal(-1, 1, 2),
    "diagonal_empty": lambda L, x: x.diagonal(9),
    "movedim": lambda L, x: x.movedim(0, 2),
    "movedim_tuple": lambda L, x: L.movedim(x, (0, 1), (2, 0)),
    "moveaxis": lambda L, x: L.moveaxis(x, -1, 0),
    "flatten": lambda L, x: x.flatten(),
    "flatten_part": lambda L, x: x.flatten(1),
    "flatten_same": lambda L, x: x.flatten(1, 1),
    "unflatten": lambda L, x: x.unflatten(-1, (-1, 2)),
    "unflatten_first": lambda L, x: L.unflatten(x, 0, (1, 2)),
    "split": lambda L, x: x.split(1, 2),
    "split_sizes": lambda L, x: L.split(x, [1, 3], -1),
    "split_big": lambda L, x: x.split(7, 1),
    "split_with_sizes": lambda L, x: x.split_with_sizes([2, 1], 1),
    "chunk": lambda L, x: x.chunk(3, 2),
    "chunk_more": lambda L, x: L.chunk(x, 5, 1),
    "unbind": lambda L, x: x.unbind(1),
    "unbind_fn": lambda L, x: L.unbind(x, -1),
    "tensor_split_n": lambda L, x: x.tensor_split(3, 2),
    "tensor_split_idx": lambda L, x: L.tensor_split(x, [1, 3], dim=2),
    "tensor_split_unsorted": lambda L, x: x.tensor_split([3, 1, 10], 2),
    "tensor_split_tensor": lambda L, x: x.tensor_split(L.tensor([1, 2]), 1),
    "tensor_split_scalar_tensor": lambda L, x: x.tensor_split(L.tensor(2), 0),
    "hsplit": lambda L, x: L.hsplit(x, 3),
    "hsplit_idx": lambda L, x: x.hsplit([1]),
    "vsplit": lambda L, x: L.vsplit(x, 2),
    "dsplit": lambda L, x: L.dsplit(x, [1, 2]),
    "squeeze_int": lambda L, x: x[:, :1].squeeze(1),
    "squeeze_tuple": lambda L, x: x[:1, :, :1].squeeze((0, 2)),
    "squeeze_nothing": lambda L, x: x.squeeze(0),
    "squeeze_all": lambda L, x: x[:1].squeeze(),
    "unsqueeze": lambda L, x: x.unsqueeze(-1),
    "expand_minus_one": lambda L, x: x[:, :1].expand(-1, 5, -1),
    "expand_new_dims": lambda L, x: x.expand(2, -1, -1, -1),
    "broadcast_to": lambda L, x: L.broadcast_to(x, (3, 2, 3, 4)),
    "swapdims": lambda L, x: x.swapdims(0, 2),
    "swapaxes": lambda L, x: L.swapaxes(x, 1, -1),
    "transpose": lambda L, x: x.transpose(0, 1),
    "permute": lambda L, x: x.permute(2, 0, 1),
    "mT": lambda L, x: x.mT,
    "narrow": lambda L, x: x.narrow(2, 1, 2),
    "select": lambda L, x: x.select(1, -1),
    "as_strided": lambda L, x: x.as_strided((2, 2), (1, 2)),
    "view": lambda L, x: x.view(-1) if x.is_contiguous() else x.unsqueeze(0),
    "reshape": lambda L, x: x.reshape(2, 12),
    "view_of_view": lambda L, x: x[1:].unfold(2, 2, 2).diagonal(0, 0, 1),
    "split_of_slice": lambda L, x: x[:, 1:].split(1, 1),
    "real_of_real": lambda L, x: x.real,
    "torch_real": lambda L, x: L.real(x),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_view_op_matches_torch(name, layout):
    op = VIEW_OPS[name]
    g_root, g = make(gt, (2, 3, 4), layout)
    t_root, t = make(torch, (2, 3, 4), layout)
    check_results(op(gt, g), op(torch, t), g_root, t_root)


def _first(x):
    return x[0] if isinstance(x, tuple) else x


@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_views_share_the_version_counter_and_write_through(name):
    op = VIEW_OPS[name]
    g_root, g = make(gt, (2, 3, 4), "strided")
    t_root, t = make(torch, (2, 3, 4), "strided")
    gv, tv = _first(op(gt, g)), _first(op(torch, t))
    if tv.numel() == 0:
        return
    tv.fill_(-7)
    gv.fill_(-7)
    assert_same(g_root, t_root)
    if tv._is_view():
        assert gv._version == g_root._version == tv._version == t_root._version


def test_views_of_views_point_at_the_root():
    a = gt.zeros(12)
    v = a.view(3, 4)[1:].unfold(1, 2, 1).diagonal().movedim(0, 1)
    assert v._base is a
    assert all(p._base is a for p in a.view(3, 4).split(1))
    assert a.view(3, 4).unbind()[2]._base is a


@pytest.mark.parametrize("layout", LAYOUTS)
def test_flatten_copies_only_when_it_must(layout):
    for op in (lambda x: x.flatten(), lambda x: x.flatten(0, 1), lambda x: x.flatten(1, 2)):
        g_root, g = make(gt, (2, 3, 4), layout)
        t_root, t = make(torch, (2, 3, 4), layout)
        check_view(op(g), op(t), g_root, t_root)


def test_flatten_special_cases():
    x = gt.zeros(5)
    assert x.flatten() is x
    s = gt.tensor(3.0)
    f = s.flatten()
    assert f.shape == (1,) and f._base is s
    y = gt.zeros(2, 3)
    assert y.flatten(1, 1) is y and gt.flatten(y, -1, -1) is y


def test_moveaxis_identity_is_a_view():
    g_root, _ = make(gt, (2, 3, 4))
    t_root, _ = make(torch, (2, 3, 4))
    check_view(g_root.moveaxis(0, 0), t_root.moveaxis(0, 0), g_root, t_root)


@pytest.mark.parametrize("op", [
    lambda L, x: x.unfold(0, 1, 1), lambda L, x: x.squeeze(0), lambda L, x: x.squeeze(-1),
    lambda L, x: x.squeeze((0,)), lambda L, x: x.unsqueeze(0), lambda L, x: x.unsqueeze(-1),
    lambda L, x: x.flatten(), lambda L, x: x.expand(3), lambda L, x: x.view(1, 1),
    lambda L, x: L.atleast_2d(x), lambda L, x: x.t(), lambda L, x: x.transpose(0, -1),
])
def test_views_of_zero_dim_tensors(op):
    g, t = gt.tensor(5.0), torch.tensor(5.0)
    check_view(op(gt, g), op(torch, t), g, t)


def test_empty_tensor_views():
    for shape, op in [((0, 3), lambda x: x.unfold(0, 0, 1)), ((0, 3), lambda x: x.chunk(3)),
                      ((0,), lambda x: x.split(0)), ((3, 0), lambda x: x.diagonal()),
                      ((4, 0), lambda x: x.tensor_split(3))]:
        g, t = gt.zeros(*shape), torch.zeros(*shape)
        check_results(op(g), op(t), g, t)


# ---- complex views ---------------------------------------------------------------------

COMPLEX_OPS = {
    "real": lambda L, z: z.real,
    "imag": lambda L, z: z.imag,
    "torch.imag": lambda L, z: L.imag(z),
    "view_as_real": lambda L, z: L.view_as_real(z),
    "roundtrip": lambda L, z: L.view_as_complex(L.view_as_real(z)),
    "real_of_slice": lambda L, z: z[1:, ::2].imag,
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("name", list(COMPLEX_OPS))
def test_complex_views(name, layout):
    op = COMPLEX_OPS[name]
    g_root, g = make(gt, (3, 4), layout, "complex64")
    t_root, t = make(torch, (3, 4), layout, "complex64")
    check_view(op(gt, g), op(torch, t), g_root, t_root)


def test_view_as_complex_of_real_views():
    for op in (lambda L, x: L.view_as_complex(x), lambda L, x: L.view_as_complex(x[1:]),
               lambda L, x: L.view_as_complex(x[0]),
               lambda L, x: L.view_as_complex(x[:1].expand(3, 2))):
        g, t = gt.tensor(_data((3, 2), "float64")), torch.tensor(_data((3, 2), "float64"))
        check_view(op(gt, g), op(torch, t), g, t)


def test_real_and_imag_setters_write_into_the_complex_tensor():
    g, t = gt.zeros(3, dtype=gt.complex64), torch.zeros(3, dtype=torch.complex64)
    for x, L in ((g, gt), (t, torch)):
        x.real = L.tensor([1.0, 2.0, 3.0])
        x.imag = 2
    assert_same(g, t)
    assert g._version == t._version
    r_g, r_t = gt.zeros(2), torch.zeros(2)
    r_g.real, r_t.real = 5, 5
    assert_same(r_g, r_t)
    assert gt.real(r_g) is r_g


# ---- view(dtype) -----------------------------------------------------------------------

DTYPE_VIEWS = [
    ("contiguous", "int32"), ("contiguous", "int16"), ("contiguous", "uint8"),
    ("contiguous", "float64"), ("contiguous", "complex128"), ("contiguous", "bool"),
    ("contiguous", "bfloat16"), ("strided_last_contiguous", "int16"),
    ("offset_even", "float64"), ("row", "int8"),
]


def _dtype_source(lib, kind):
    root = lib.tensor(_data((2, 3, 4), "float32"))
    views = {"contiguous": lambda x: x, "strided_last_contiguous": lambda x: x[:, ::2],
             "offset_even": lambda x: x[:, :, 2:], "row": lambda x: x[1]}
    return root, views[kind](root)


@pytest.mark.parametrize("kind,dtype", DTYPE_VIEWS)
def test_view_dtype(kind, dtype):
    g_root, g = _dtype_source(gt, kind)
    t_root, t = _dtype_source(torch, kind)
    gv, tv = g.view(getattr(gt, dtype)), t.view(getattr(torch, dtype))
    assert_same(gv, tv, equal_nan=True)
    assert gv.storage_offset() == tv.storage_offset()
    assert gv._base is None and tv._base is None and not gv._is_view()
    assert gv.untyped_storage().data_ptr() == g_root.untyped_storage().data_ptr()
    gv.zero_()
    assert g_root._version == gv._version == 1
    assert_same(g.view(gt.int32), t.view(torch.int32).zero_())


@pytest.mark.parametrize("op", [
    lambda L, x: x[:, :, 1:].view(L.float64), lambda L, x: x[:, 1:, 1:3].view(L.float64),
    lambda L, x: x[:, :, ::2].view(L.int16), lambda L, x: x.transpose(1, 2).view(L.int16),
    lambda L, x: x[0, 0, 0].view(L.int16), lambda L, x: x[:, :, 1:3].view(L.complex64),
    lambda L, x: x[:, ::3, :2].view(L.complex128), lambda L, x: L.zeros(3, 0).view(L.float64),
])
def test_view_dtype_errors(op):
    same_error(lambda L: op(L, L.tensor(_data((2, 3, 4), "float32"))))


def test_view_dtype_keyword_and_zero_dim():
    g, t = gt.tensor(_data((2, 4), "float32")), torch.tensor(_data((2, 4), "float32"))
    assert_same(g.view(dtype=gt.int32), t.view(dtype=torch.int32))
    assert_same(g[0, 0].view(gt.int32), t[0, 0].view(torch.int32))


# ---- errors ----------------------------------------------------------------------------

ERRORS = [
    lambda L, x: x.unfold(2, 5, 1), lambda L, x: x.unfold(2, 2, 0), lambda L, x: x.unfold(3, 1, 1),
    lambda L, x: x.unfold(2, -1, 1), lambda L, x: L.tensor(5.0).unfold(0, 2, 1),
    lambda L, x: x.diagonal(0, 0, 0), lambda L, x: L.ones(3).diagonal(),
    lambda L, x: x.movedim((0, 0), (1, 2)), lambda L, x: x.movedim((0, 1), (1, 1)),
    lambda L, x: x.movedim((0, 1), (1,)), lambda L, x: x.movedim(3, 0),
    lambda L, x: x.flatten(1, 0), lambda L, x: x.flatten(0, 3),
    lambda L, x: x.unflatten(1, (2,)), lambda L, x: x.unflatten(1, ()),
    lambda L, x: x.split([1, 2], 2), lambda L, x: x.split(0, 2), lambda L, x: x.split(-1, 2),
    lambda L, x: x.split([1, -1, 4], 2), lambda L, x: L.tensor(1.0).split(1),
    lambda L, x: x.chunk(0, 2), lambda L, x: L.tensor(1.0).unbind(), lambda L, x: x.unbind(3),
    lambda L, x: x.tensor_split(0, 2), lambda L, x: x.tensor_split(L.tensor([1.0, 3.0]), 2),
    lambda L, x: x.tensor_split(L.tensor([[1, 3]]), 2), lambda L, x: L.tensor(1.0).tensor_split(1),
    lambda L, x: L.hsplit(x, 2), lambda L, x: L.hsplit(L.tensor(1.0), 1),
    lambda L, x: L.vsplit(L.arange(4.0), 2), lambda L, x: L.dsplit(x[0], 2),
    lambda L, x: L.vsplit(x, 0),
    lambda L, x: x.squeeze((1, 1)), lambda L, x: x.squeeze(5),
    lambda L, x: L.tensor(1.0).squeeze(1),
    lambda L, x: L.tensor(1.0).unsqueeze(1),
    lambda L, x: x.imag, lambda L, x: L.view_as_real(x),
    lambda L, x: L.view_as_complex(L.ones(3, 3)), lambda L, x: L.view_as_complex(L.ones(2, 3).t()),
    lambda L, x: L.view_as_complex(L.ones(3, 4)[:, 1:3]),
    lambda L, x: L.view_as_complex(L.ones(3, 3)[:, 1:]),
    lambda L, x: L.view_as_complex(L.ones(3, 2).long()),
    lambda L, x: x.expand(-1, 2, 3, 4), lambda L, x: x.expand(2, 3),
    lambda L, x: x.expand(2, 3, -2), lambda L, x: x.long().expand(3, 3, 4),
    lambda L, x: x.as_strided((2, 2), (1, 2), 23), lambda L, x: x.as_strided((2, 2), (1, -2)),
    lambda L, x: x.as_strided((2, -2), (1, 2)), lambda L, x: x.as_strided((2, 2), (1,)),
    lambda L, x: x.as_strided((2, 2), (1, 2), -1), lambda L, x: x.t(),
    lambda L, x: x.view(5, 5), lambda L, x: x.transpose(0, 1).view(-1),
    lambda L, x: x.view(-1, -1), lambda L, x: x.narrow(0, 1, 5),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_view_errors_match_torch(i):
    same_error(lambda L: ERRORS[i](L, L.tensor(_data((2, 3, 4), "float32"))))


# ---- properties over random shapes -----------------------------------------------------

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, layout=st.sampled_from(["contiguous", "transposed", "strided"]),
       data=st.data())
def test_random_split_unfold_diagonal(shape, layout, data):
    n = len(shape)
    dim = data.draw(st.integers(-n, n - 1))
    size = shape[dim]
    ops = [
        lambda L, x: x.unfold(dim, data_size, data_step),
        lambda L, x: x.split(split_size, dim),
        lambda L, x: x.tensor_split(sections, dim),
        lambda L, x: x.chunk(sections, dim),
        lambda L, x: L.movedim(x, dim, 0),
    ]
    data_size = data.draw(st.integers(0, size))
    data_step = data.draw(st.integers(1, 3))
    split_size = data.draw(st.integers(1, size + 1))
    sections = data.draw(st.integers(1, 5))
    if n >= 2:
        d2 = data.draw(st.integers(-n, n - 1).filter(lambda d: d % n != dim % n))
        offset = data.draw(st.integers(-3, 3))
        ops.append(lambda L, x: x.diagonal(offset, dim, d2))
    g_root, g = make(gt, shape, layout)
    t_root, t = make(torch, shape, layout)
    for op in ops:
        check_results(op(gt, g), op(torch, t), g_root, t_root)


# ---- the recorded history of views (autograd's fused view path) --------------------------

def _history_of(t, depth=3):
    """What autograd recorded for `t`: node classes, saved values, edges (to `depth`)."""
    def node(fn, d):
        if fn is None:
            return None
        saved = {k: (v.unpack()._shape if hasattr(v, "unpack") else v)
                 for k, v in getattr(fn, "_saved", {}).items()}
        return (type(fn).__name__, saved, getattr(fn, "_input_meta", None),
                tuple((node(n, d - 1) if d else type(n).__name__, nr)
                      for n, nr in fn.next_functions))
    return (node(t.grad_fn, depth), t._requires_grad, t.is_leaf, t._output_nr,
            t._grad_fn_version, t._view_creation, t._keyset, t._shape, t._stride, t._offset)


def _view_cases():
    """make(view_fn) -> (leaf, view): the view `view_fn(x, name, *args)` makes of a tensor
    computed from `leaf`, in each case the fused path takes and each it leaves to the
    general one."""
    def leaf_t(v):
        x = gt.randn(4, 6, requires_grad=True)
        return x, v(x, "t")

    def nonleaf_view(v):
        x = gt.randn(4, 6, requires_grad=True)
        return x, v(x * 2, "view", [3, 8])

    def view_of_view(v):
        x = gt.randn(4, 6, requires_grad=True)
        return x, v((x * 2).view(2, 2, 6), "transpose", 0, 2)

    def view_after_inplace(v):        # its base changed in place: history regenerated
        x = gt.randn(4, 6, requires_grad=True)
        y = (x * 2).view(6, 4)
        y.mul_(3)
        return x, v(y, "t")

    def of_a_no_grad_view(v):         # made in no_grad: the general path's bookkeeping
        x = gt.randn(4, 6, requires_grad=True)
        with gt.no_grad():
            y = x.view(24)
        return x, v(y, "view", [6, 4])

    def real_of_complex(v):           # a view of another dtype
        x = gt.randn(3, dtype=gt.complex64, requires_grad=True)
        return x, v(x * 2, "view_as_real")

    def no_grad_input(v):             # ADInplaceOrView's direct path alone
        x = gt.randn(4, 6)
        return x, v(x.t(), "view", [1, 6, 4])

    def under_no_grad(v):
        x = gt.randn(4, 6, requires_grad=True)
        with gt.no_grad():
            return x, v(x, "transpose", 0, 1)

    def under_anomaly(v):
        x = gt.randn(4, 6, requires_grad=True)
        with gt.autograd.detect_anomaly():
            return x, v(x * 2, "t")
    return [leaf_t, nonleaf_view, view_of_view, view_after_inplace, of_a_no_grad_view,
            real_of_complex, no_grad_input, under_no_grad, under_anomaly]


_FUSED_CASES = ("leaf_t", "nonleaf_view", "view_of_view", "view_after_inplace")


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
@pytest.mark.parametrize("case", _view_cases(), ids=lambda f: f.__name__)
def test_views_record_the_history_the_dispatcher_path_records(case, monkeypatch):
    """A view's method takes autograd's fused view path (its grad_fn, base and bookkeeping
    made in one frame) where it applies; the history equals the one the dispatcher's general
    autograd kernel records for the same call, and backward gives the same gradients."""
    from glasstorch.autograd import recording
    from glasstorch.dispatch.dispatcher import find
    fused = []
    real_alias = recording.make_alias
    monkeypatch.setattr(recording, "make_alias", lambda *a: fused.append(a) or real_alias(*a))

    def by_method(x, name, *args):
        return getattr(x, name)(*args) if hasattr(x, name) else getattr(gt, name)(x, *args)

    def by_dispatcher(x, name, *args):
        overload = {"view": "aten::view", "t": "aten::t", "transpose": "aten::transpose.int",
                    "view_as_real": "aten::view_as_real"}[name]
        return find(overload).dispatch(x._keyset, x, *args)

    results = []
    for make in (by_method, by_dispatcher):
        gt.manual_seed(0)
        fused.clear()
        leaf, out = case(make)
        history = (_history_of(out), out._base is not None and out._base._shape, len(fused))
        if out.requires_grad:
            out.backward(gt.ones_like(out) * gt.arange(out.numel()).view(out.shape))
        results.append(history + (leaf.grad is None or leaf.grad.tolist(),))
    assert results[0][:2] == results[1][:2] and results[0][3] == results[1][3]
    # the setup's own views count in both runs: the call itself is the difference
    assert results[0][2] - results[1][2] == (case.__name__ in _FUSED_CASES)


def _multi_view_cases():
    """make(views_fn) -> (leaf, views): as `_view_cases`, for ops returning several views."""
    def leaf_split(v):
        x = gt.randn(4, 6, requires_grad=True)
        return x, v(x, "split", 2, 1)

    def nonleaf_unbind(v):
        x = gt.randn(4, 6, requires_grad=True)
        return x, v(x * 2, "unbind", 0)

    def view_of_view_split_with_sizes(v):
        x = gt.randn(4, 6, requires_grad=True)
        return x, v((x * 2).t(), "split_with_sizes", (1, 3, 2), 0)

    def after_inplace_chunk(v):       # its base changed in place: history regenerated
        x = gt.randn(4, 6, requires_grad=True)
        y = (x * 2).view(6, 4)
        y.mul_(3)
        return x, v(y, "chunk", 3, 0)

    def of_a_no_grad_view(v):         # made in no_grad: the general path's bookkeeping
        x = gt.randn(4, 6, requires_grad=True)
        with gt.no_grad():
            y = x.view(24)
        return x, v(y, "split", 5, 0)

    def no_grad_input(v):
        x = gt.randn(4, 6)
        return x, v(x.t(), "unbind", 1)

    def under_no_grad(v):
        x = gt.randn(4, 6, requires_grad=True)
        with gt.no_grad():
            return x, v(x, "split", 4, 1)

    def under_anomaly(v):
        x = gt.randn(4, 6, requires_grad=True)
        with gt.autograd.detect_anomaly():
            return x, v(x * 2, "unbind", 1)
    return [leaf_split, nonleaf_unbind, view_of_view_split_with_sizes, after_inplace_chunk,
            of_a_no_grad_view, no_grad_input, under_no_grad, under_anomaly]


_MULTI_FUSED_CASES = ("leaf_split", "nonleaf_unbind", "view_of_view_split_with_sizes",
                      "after_inplace_chunk")


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
@pytest.mark.parametrize("case", _multi_view_cases(), ids=lambda f: f.__name__)
def test_multi_output_views_record_the_history_the_dispatcher_path_records(case, monkeypatch):
    """split, split_with_sizes, chunk and unbind take autograd's fused path for several
    views where it applies; each view's history (node, output number, base, creation
    record, keys) equals the one the dispatcher's general autograd kernel records, and
    backward gives the same gradients."""
    from glasstorch.autograd import recording
    from glasstorch.dispatch.dispatcher import find
    fused = []
    real_alias = recording.make_alias
    monkeypatch.setattr(recording, "make_alias", lambda *a: fused.append(a) or real_alias(*a))

    def by_method(x, name, *args):
        return getattr(x, name)(*args)

    def by_dispatcher(x, name, *args):
        if name == "chunk":       # chunk is split with the size rounded up, as PyTorch's
            name, args = "split", (-(-x.shape[args[1]] // args[0]), args[1])
        overload = {"split": "aten::split.Tensor", "unbind": "aten::unbind.int",
                    "split_with_sizes": "aten::split_with_sizes"}[name]
        return tuple(find(overload).dispatch(x._keyset, x, *args))

    results = []
    for make in (by_method, by_dispatcher):
        gt.manual_seed(0)
        fused.clear()
        leaf, outs = case(make)
        history = (tuple(_history_of(o) for o in outs),
                   tuple(o._base is not None and (o._base._shape, o._vc is o._base._vc)
                         for o in outs), len(fused))
        if outs[0].requires_grad:
            gt.autograd.backward([o for o in outs[::2]],
                                 [gt.arange(o.numel(), dtype=o.dtype).view(o.shape) + k
                                  for k, o in enumerate(outs[::2])])
        results.append(history + (leaf.grad is None or leaf.grad.tolist(),))
    assert results[0][:2] == results[1][:2] and results[0][3] == results[1][3]
    assert results[0][2] - results[1][2] == (len(outs) if case.__name__ in _MULTI_FUSED_CASES
                                             else 0)
