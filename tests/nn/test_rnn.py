"""RNN/LSTM/GRU layers, their cells and sequence packing, against torch with copied weights."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
import glasstorch.nn as gnn
from glasstorch.nn.utils import rnn as grnn
from tests.oracle import assert_same, oracle_torch

torch = oracle_torch()
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported")
tnn = torch.nn
trnn = torch.nn.utils.rnn

RTOL = ATOL = 1e-10


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    """torch's multi-threaded RNN kernels crawl on small shared machines; restore after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def g(t, requires_grad=False):
    """A glasstorch copy of a torch tensor (float64 leaves get requires_grad on demand)."""
    out = gt.as_tensor(t.detach().numpy().copy())
    return out.requires_grad_(True) if requires_grad else out


def pair(torch_cls, gt_cls, *args, **kwargs):
    """The torch module in float64 and a glasstorch twin holding the same weights."""
    tm = torch_cls(*args, dtype=torch.float64, **kwargs)
    gm = gt_cls(*args, dtype=gt.float64, **kwargs)
    assert list(gm.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert tuple(gm.state_dict()[k].shape) == tuple(v.shape), k
    gm.load_state_dict({k: g(v) for k, v in tm.state_dict().items()})
    return tm, gm


def leaves(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    ts = [torch.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    return ts, [g(t, True) for t in ts]


def flat(out):
    """The tensors of a layer's output, flattened (PackedSequence -> its data)."""
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in flat(o)]
    if isinstance(out, (trnn.PackedSequence, grnn.PackedSequence)):
        return [out.data]
    return [out]


def check_outputs_and_grads(tm, gm, t_out, g_out, t_leaves, g_leaves, stride=True):
    tl, gl = flat(t_out), flat(g_out)
    assert len(tl) == len(gl)
    for a, b in zip(gl, tl):
        assert_same(a, b, rtol=RTOL, atol=ATOL, check_stride=stride)
    # one scalar mixing every output with fixed weights, so each gradient is exercised
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal(tuple(t.shape)) for t in tl]
    sum(((t * torch.tensor(w)).sum() for t, w in zip(tl, ws))).backward()
    sum(((x * gt.as_tensor(w)).sum() for x, w in zip(gl, ws))).backward()
    for a, b in zip(g_leaves, t_leaves):
        assert_same(a.grad, b.grad, rtol=RTOL, atol=ATOL, check_stride=False)
    gp = dict(gm.named_parameters())
    for name, p in tm.named_parameters():
        assert_same(gp[name].grad, p.grad, rtol=RTOL, atol=ATOL, check_stride=False)


LAYERS = [
    ("rnn_tanh", tnn.RNN, gnn.RNN, {}),
    ("rnn_relu", tnn.RNN, gnn.RNN, {"nonlinearity": "relu"}),
    ("lstm", tnn.LSTM, gnn.LSTM, {}),
    ("lstm_proj", tnn.LSTM, gnn.LSTM, {"proj_size": 3}),
    ("gru", tnn.GRU, gnn.GRU, {}),
]
CONFIGS = [
    {},
    {"num_layers": 2, "bidirectional": True},
    {"batch_first": True, "bias": False},
]


def _states(name, kwargs, batch, H=5, P=3, unbatched=False):
    d = (2 if kwargs.get("bidirectional") else 1) * kwargs.get("num_layers", 1)
    hsize = P if name == "lstm_proj" else H
    shape_h = (d, hsize) if unbatched else (d, batch, hsize)
    shape_c = (d, H) if unbatched else (d, batch, H)
    return [shape_h, shape_c] if name.startswith("lstm") else [shape_h]


def _hx(name, states):
    return tuple(states) if name.startswith("lstm") else states[0]


@pytest.mark.parametrize("config", CONFIGS, ids=["plain", "2layer_bidir", "batch_first_nobias"])
@pytest.mark.parametrize("name,tcls,gcls,extra", LAYERS, ids=[x[0] for x in LAYERS])
def test_layer_matches_torch(name, tcls, gcls, extra, config, kernel_path):
    kwargs = {**extra, **config}
    tm, gm = pair(tcls, gcls, 4, 5, **kwargs)
    T, N = 6, 3
    x_shape = (N, T, 4) if kwargs.get("batch_first") else (T, N, 4)
    tl, gl = leaves(x_shape, *_states(name, kwargs, N))
    t_out = tm(tl[0], _hx(name, tl[1:]))
    g_out = gm(gl[0], _hx(name, gl[1:]))
    # torch's h_n strides are an artefact of its fused kernels: only output strides count
    assert g_out[0].stride() == t_out[0].stride()
    check_outputs_and_grads(tm, gm, t_out, g_out, tl, gl, stride=False)
    _, gm2 = pair(tcls, gcls, 4, 5, **kwargs)
    gm2.load_state_dict(gm.state_dict())
    tm.zero_grad()
    # without initial states: zeros
    tl, gl = leaves(x_shape, seed=3)
    check_outputs_and_grads(tm, gm2, tm(tl[0]), gm2(gl[0]), tl, gl, stride=False)


@pytest.mark.parametrize("name,tcls,gcls,extra", LAYERS, ids=[x[0] for x in LAYERS])
def test_unbatched_matches_torch(name, tcls, gcls, extra):
    kwargs = {**extra, "bidirectional": True}
    tm, gm = pair(tcls, gcls, 4, 5, **kwargs)
    tl, gl = leaves((6, 4), *_states(name, kwargs, None, unbatched=True), seed=2)
    t_out = tm(tl[0], _hx(name, tl[1:]))
    g_out = gm(gl[0], _hx(name, gl[1:]))
    check_outputs_and_grads(tm, gm, t_out, g_out, tl, gl, stride=False)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("name,tcls,gcls,extra", LAYERS, ids=[x[0] for x in LAYERS])
def test_packed_matches_torch(name, tcls, gcls, extra, batch_first, kernel_path):
    kwargs = {**extra, "num_layers": 2, "bidirectional": True, "batch_first": batch_first}
    tm, gm = pair(tcls, gcls, 4, 5, **kwargs)
    lengths = [3, 5, 1, 4]
    x_shape = (4, 5, 4) if batch_first else (5, 4, 4)
    tl, gl = leaves(x_shape, *_states(name, kwargs, 4), seed=4)
    tp = trnn.pack_padded_sequence(tl[0], lengths, batch_first=batch_first,
                                   enforce_sorted=False)
    gp = grnn.pack_padded_sequence(gl[0], lengths, batch_first=batch_first,
                                   enforce_sorted=False)
    t_out, t_h = tm(tp, _hx(name, tl[1:]))
    g_out, g_h = gm(gp, _hx(name, gl[1:]))
    assert isinstance(g_out, grnn.PackedSequence)
    assert g_out.batch_sizes.tolist() == t_out.batch_sizes.tolist()
    assert g_out.unsorted_indices.tolist() == t_out.unsorted_indices.tolist()
    t_pad, t_len = trnn.pad_packed_sequence(t_out, batch_first=batch_first, total_length=6)
    g_pad, g_len = grnn.pad_packed_sequence(g_out, batch_first=batch_first, total_length=6)
    assert_same(g_len, t_len)
    check_outputs_and_grads(tm, gm, (t_pad, t_h), (g_pad, g_h), tl, gl)


@pytest.mark.parametrize("tcls,gcls,nstates,kw", [
    (tnn.RNNCell, gnn.RNNCell, 1, {}),
    (tnn.RNNCell, gnn.RNNCell, 1, {"nonlinearity": "relu", "bias": False}),
    (tnn.LSTMCell, gnn.LSTMCell, 2, {}),
    (tnn.GRUCell, gnn.GRUCell, 1, {}),
])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(tcls, gcls, nstates, kw, batched, kernel_path):
    tm, gm = pair(tcls, gcls, 4, 5, **kw)
    b = (3,) if batched else ()
    tl, gl = leaves(b + (4,), *[b + (5,)] * nstates, seed=5)
    hx = (lambda s: tuple(s) if nstates == 2 else s[0])
    check_outputs_and_grads(tm, gm, tm(tl[0], hx(tl[1:])), gm(gl[0], hx(gl[1:])), tl, gl)
    tl, gl = leaves(b + (4,), seed=6)
    check_outputs_and_grads(tm, gm, tm(tl[0]), gm(gl[0]), tl, gl)


@pytest.mark.parametrize("name,tcls,gcls,extra", LAYERS, ids=[x[0] for x in LAYERS])
def test_float32_default_and_packed_without_state(name, tcls, gcls, extra):
    tm = tcls(4, 5, 2, **extra)
    gm = gcls(4, 5, 2, **extra)
    gm.load_state_dict({k: g(v) for k, v in tm.state_dict().items()})
    x = torch.randn(7, 3, 4)
    for a, b in zip(flat(gm(g(x))), flat(tm(x))):
        assert_same(a, b, rtol=1e-5, atol=1e-5, check_stride=False)
    tp = trnn.pack_sequence([x[:5, 0], x[:, 1], x[:2, 2]], enforce_sorted=False)
    gp = grnn.pack_sequence([g(x[:5, 0]), g(x[:, 1]), g(x[:2, 2])], enforce_sorted=False)
    for a, b in zip(flat(gm(gp)), flat(tm(tp))):
        assert_same(a, b, rtol=1e-5, atol=1e-5, check_stride=False)


def test_empty_inputs_and_module_conversions():
    for M in (tnn, gnn):
        with pytest.raises(RuntimeError, match="sequence length to be larger than 0"):
            M.GRU(3, 4)(torch.zeros(0, 2, 3) if M is tnn else gt.zeros(0, 2, 3))
    tm, gm = pair(tnn.LSTM, gnn.LSTM, 3, 4, bidirectional=True)
    t_out, g_out = tm(torch.zeros(5, 0, 3, dtype=torch.float64)), gm(
        gt.zeros(5, 0, 3, dtype=gt.float64))
    for a, b in zip(flat(g_out), flat(t_out)):
        assert tuple(a.shape) == tuple(b.shape)
    gm.float()
    assert all(w.dtype == gt.float32 for w in gm._flat_weights)
    assert gm(gt.zeros(2, 1, 3))[0].dtype == gt.float32
    gm.weight_hh_l0 = gnn.Parameter(gt.zeros(16, 4))
    assert gm._flat_weights[1] is gm.weight_hh_l0
    import copy
    clone = copy.deepcopy(gm)
    assert clone._flat_weights[0] is clone.weight_ih_l0


def test_parameters_init_and_repr():
    for args, kw in [((3, 4), {}), ((3, 4, 2), {"nonlinearity": "relu", "bias": False,
                                                "batch_first": True, "dropout": 0.5,
                                                "bidirectional": True})]:
        assert repr(gnn.RNN(*args, **kw)) == repr(tnn.RNN(*args, **kw))
    assert repr(gnn.LSTM(3, 4, proj_size=2)) == repr(tnn.LSTM(3, 4, proj_size=2))
    assert repr(gnn.GRU(3, 4, 3)) == repr(tnn.GRU(3, 4, 3))
    for c in ("RNNCell", "LSTMCell", "GRUCell"):
        assert repr(getattr(gnn, c)(3, 4, bias=False)) == repr(getattr(tnn, c)(3, 4, bias=False))
    assert repr(gnn.RNNCell(3, 4, nonlinearity="relu")) == repr(
        tnn.RNNCell(3, 4, nonlinearity="relu"))
    m, tm = gnn.LSTM(3, 16, 2, bidirectional=True, proj_size=2), tnn.LSTM(
        3, 16, 2, bidirectional=True, proj_size=2)
    assert m._flat_weights_names == tm._flat_weights_names
    assert [[tuple(p.shape) for p in ws] for ws in m.all_weights] == [
        [tuple(p.shape) for p in ws] for ws in tm.all_weights]
    bound = 1 / 4
    for p in m.parameters():
        assert p.requires_grad and float(p.abs().max()) <= bound
    assert float(m.weight_ih_l0.abs().max()) > bound / 2
    m.flatten_parameters()


def test_constructor_errors_and_warning():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        gnn.GRU(3, 4, dropout=0.2)
    cases = [(lambda M: M.RNN(3, 4, nonlinearity="sigmoid"), ValueError, "Unknown nonlinearity"),
             (lambda M: M.RNN(3, 4, proj_size=2), ValueError, "only supported for LSTM"),
             (lambda M: M.LSTM(3, 4, proj_size=4), ValueError, "smaller than hidden_size"),
             (lambda M: M.LSTM(3, 4, dropout=2), ValueError, "range \\[0, 1\\]"),
             (lambda M: M.GRU(3, 0), ValueError, "hidden_size must be greater than zero"),
             (lambda M: M.GRU(3, 4.0), TypeError, "hidden_size should be of type int"),
             (lambda M: M.GRU(3, 4, 0), ValueError, "num_layers must be greater than zero")]
    for make, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            make(tnn)
        with pytest.raises(exc, match=msg):
            make(gnn)


def _same_error(fn_t, fn_g):
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(Exception) as eg:
        fn_g()
    assert type(eg.value) is type(et.value)
    assert str(eg.value) == str(et.value)


def test_forward_errors_match_torch():
    for name, tcls, gcls, extra in LAYERS:
        tm, gm = pair(tcls, gcls, 10, 6, **extra)
        x = torch.randn(3, 2, 5, dtype=torch.float64)
        _same_error(lambda: tm(x), lambda: gm(g(x)))
        _same_error(lambda: tm(x[0, 0]), lambda: gm(g(x[0, 0])))
        _same_error(lambda: tm(torch.randn(3, 2, 10)), lambda: gm(gt.randn(3, 2, 10)))
        x = torch.randn(3, 2, 10, dtype=torch.float64)
        bad = torch.zeros(1, 3, 6, dtype=torch.float64)
        hx = (bad, bad) if name.startswith("lstm") else bad
        _same_error(lambda: tm(x, hx), lambda: gm(g(x), _hx(name, [g(bad)] * 2)))
        bad2 = torch.zeros(3, 6, dtype=torch.float64)
        hx = (bad2, bad2) if name.startswith("lstm") else bad2
        _same_error(lambda: tm(x, hx), lambda: gm(g(x), _hx(name, [g(bad2)] * 2)))
    for tcls, gcls in [(tnn.RNNCell, gnn.RNNCell), (tnn.LSTMCell, gnn.LSTMCell),
                       (tnn.GRUCell, gnn.GRUCell)]:
        tm, gm = pair(tcls, gcls, 3, 4)
        n = 2 if tcls is tnn.LSTMCell else 1
        for xs, hs in [((2, 5), (2, 4)), ((2, 3), (3, 4)), ((2, 3), (2, 5)),
                       ((2, 2, 3), (2, 4)), ((2, 3), (1, 2, 4))]:
            x, h = torch.zeros(xs, dtype=torch.float64), torch.zeros(hs, dtype=torch.float64)
            th = (h, h) if n == 2 else h
            gh = (g(h), g(h)) if n == 2 else g(h)
            _same_error(lambda: tm(x, th), lambda: gm(g(x), gh))


def test_dropout_between_layers():
    m = gnn.LSTM(3, 4, 3, dropout=0.5, dtype=gt.float64)
    x = gt.randn(5, 2, 3, dtype=gt.float64)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    a, b = m(x)[0], m(x)[0]
    assert not np.array_equal(a.detach().numpy(), b.detach().numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gnn.LSTM(3, 4, 2, dropout=0.5)


# ----------------------------------------------------------------------------- packing
def _pack_pair(lengths, batch_first, enforce_sorted, feat=(2,), seed=7):
    T, B = max(lengths) + 1, len(lengths)
    shape = ((B, T) if batch_first else (T, B)) + feat
    tl, gl = leaves(shape, seed=seed)
    tp = trnn.pack_padded_sequence(tl[0], lengths, batch_first=batch_first,
                                   enforce_sorted=enforce_sorted)
    gp = grnn.pack_padded_sequence(gl[0], lengths, batch_first=batch_first,
                                   enforce_sorted=enforce_sorted)
    return tl, gl, tp, gp


def _same_packed(gp, tp):
    assert_same(gp.data, tp.data, rtol=0, atol=0)
    assert_same(gp.batch_sizes, tp.batch_sizes)
    for a, b in [(gp.sorted_indices, tp.sorted_indices),
                 (gp.unsorted_indices, tp.unsorted_indices)]:
        assert (a is None) == (b is None)
        if a is not None:
            assert_same(a, b)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce_sorted", [([4, 4, 2, 1], True),
                                                    ([2, 5, 1, 3, 5], False)])
def test_pack_pad_roundtrip_matches_torch(lengths, enforce_sorted, batch_first):
    tl, gl, tp, gp = _pack_pair(lengths, batch_first, enforce_sorted)
    _same_packed(gp, tp)
    for kw in [{}, {"padding_value": -1.5, "total_length": max(lengths) + 2}]:
        t_pad, t_len = trnn.pad_packed_sequence(tp, batch_first=batch_first, **kw)
        g_pad, g_len = grnn.pad_packed_sequence(gp, batch_first=batch_first, **kw)
        assert_same(g_pad, t_pad, rtol=0, atol=0)
        assert_same(g_len, t_len)
    w = np.random.default_rng(0).standard_normal(tuple(t_pad.shape))
    (t_pad * torch.tensor(w)).sum().backward()
    (g_pad * gt.as_tensor(w)).sum().backward()
    assert_same(gl[0].grad, tl[0].grad, check_stride=False)
    assert [tuple(x.shape) for x in grnn.unpack_sequence(gp)] == [
        tuple(x.shape) for x in trnn.unpack_sequence(tp)]
    for a, b in zip(grnn.unpack_sequence(gp), trnn.unpack_sequence(tp)):
        assert_same(a, b, rtol=0, atol=0)


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(1, 5), min_size=1, max_size=5), batch_first=st.booleans(),
       feat=st.sampled_from([(), (2,), (1, 3)]))
def test_pack_pad_random_lengths(lengths, batch_first, feat):
    tl, gl, tp, gp = _pack_pair(lengths, batch_first, False, feat=feat)
    _same_packed(gp, tp)
    t_pad, t_len = trnn.pad_packed_sequence(tp, batch_first=batch_first, padding_value=9.0)
    g_pad, g_len = grnn.pad_packed_sequence(gp, batch_first=batch_first, padding_value=9.0)
    assert_same(g_pad, t_pad, rtol=0, atol=0)
    assert_same(g_len, t_len)
    seqs = [torch.randn((n,) + feat, dtype=torch.float64) for n in lengths]
    assert_same(grnn.pad_sequence([g(x) for x in seqs], batch_first),
                trnn.pad_sequence(seqs, batch_first), rtol=0, atol=0)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    tl, gl = leaves((3, 2, 2), (5, 2, 2), (1, 2, 2), seed=8)
    t = trnn.pad_sequence(tl, batch_first, 0.5, padding_side)
    x = grnn.pad_sequence(gl, batch_first, 0.5, padding_side)
    assert_same(x, t, rtol=0, atol=0)
    w = np.random.default_rng(0).standard_normal(tuple(t.shape))
    (t * torch.tensor(w)).sum().backward()
    (x * gt.as_tensor(w)).sum().backward()
    for a, b in zip(gl, tl):
        assert_same(a.grad, b.grad)
    ints = [torch.tensor([1, 2, 3]), torch.tensor([4])]
    assert_same(grnn.pad_sequence([g(i) for i in ints], padding_value=7),
                trnn.pad_sequence(ints, padding_value=7))
    lens = torch.tensor([3, 5, 1])
    for a, b in zip(grnn.unpad_sequence(x, g(lens), batch_first=batch_first),
                    trnn.unpad_sequence(t, lens, batch_first=batch_first)):
        assert_same(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_matches_torch(enforce_sorted):
    seqs = [torch.tensor([1, 2, 3]), torch.tensor([4, 5]), torch.tensor([6])]
    if not enforce_sorted:
        seqs = seqs[::-1]
    tp = trnn.pack_sequence(seqs, enforce_sorted=enforce_sorted)
    gp = grnn.pack_sequence([g(s) for s in seqs], enforce_sorted=enforce_sorted)
    _same_packed(gp, tp)
    assert repr(gp) == repr(tp)
    for a, b in zip(grnn.unpack_sequence(gp), trnn.unpack_sequence(tp)):
        assert_same(a, b)


def test_packed_sequence_conversions_and_invert_permutation():
    _, _, tp, gp = _pack_pair([2, 3, 1], False, False)
    assert gp.to(gt.float64) is gp
    for conv in ("float", "double", "long", "cpu"):
        a, b = getattr(gp, conv)(), getattr(tp, conv)()
        assert type(a) is grnn.PackedSequence
        _same_packed(a, b)
    assert not gp.is_cuda
    data, sizes, sorted_idx, unsorted_idx = gp
    assert gp._fields == tp._fields
    assert_same(grnn.invert_permutation(g(torch.tensor([2, 0, 1]))),
                trnn.invert_permutation(torch.tensor([2, 0, 1])))
    assert grnn.invert_permutation(None) is None
    built = grnn.PackedSequence(data, sizes, sorted_idx)
    assert_same(built.unsorted_indices, tp.unsorted_indices)


def test_packing_errors_match_torch():
    x = torch.zeros(4, 3, 2)
    for lengths, kw in [([4, 2, 3], {}), ([4, 3, 0], {}), ([4, 3], {}),
                        ([4, 3, 0], {"enforce_sorted": False})]:
        _same_error(lambda: trnn.pack_padded_sequence(x, lengths, **kw),
                    lambda: grnn.pack_padded_sequence(g(x), lengths, **kw))
    _same_error(lambda: trnn.pack_padded_sequence(torch.zeros(0, 3), [1, 1, 1]),
                lambda: grnn.pack_padded_sequence(gt.zeros(0, 3), [1, 1, 1]))
    with pytest.raises(RuntimeError, match="exceeds"):
        grnn.pack_padded_sequence(g(x), [5, 3, 1])
    tp = trnn.pack_padded_sequence(x, [4, 3, 1])
    gp = grnn.pack_padded_sequence(g(x), [4, 3, 1])
    _same_error(lambda: trnn.pad_packed_sequence(tp, total_length=2),
                lambda: grnn.pad_packed_sequence(gp, total_length=2))
    seqs = [torch.zeros(3, 2), torch.zeros(1, 2)]
    _same_error(lambda: trnn.pad_sequence(seqs, padding_side="middle"),
                lambda: grnn.pad_sequence([g(s) for s in seqs], padding_side="middle"))
    _same_error(lambda: trnn.pad_sequence([]), lambda: grnn.pad_sequence([]))
    _same_error(lambda: trnn.pad_sequence(3), lambda: grnn.pad_sequence(3))
    _same_error(lambda: trnn.pad_sequence([torch.zeros(3, 2), torch.zeros(1, 3)]),
                lambda: grnn.pad_sequence([gt.zeros(3, 2), gt.zeros(1, 3)]))
