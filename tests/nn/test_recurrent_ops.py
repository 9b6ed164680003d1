"""The recurrent layers' operators: one mkldnn_rnn_layer call (one node) per layer and
direction, the aten::lstm/gru/rnn_* composites and cells against torch, float32 against
torch's fused CPU kernel, gradcheck of the layer ops, double backward, the meta kernel and
the step-by-step path the CUDA tensors take."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn as gnn
from glasstorch.ops.nn import recurrent as R
from glasstorch.utils._python_dispatch import TorchDispatchMode
from tests.oracle import assert_same, oracle_torch

torch = oracle_torch()
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported")


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def g(t, requires_grad=False):
    out = gt.as_tensor(t.detach().numpy().copy())
    return out.requires_grad_(True) if requires_grad else out


def twins(kind, *args, dtype="float32", **kwargs):
    tm = getattr(torch.nn, kind)(*args, dtype=getattr(torch, dtype), **kwargs)
    gm = getattr(gnn, kind)(*args, dtype=getattr(gt, dtype), **kwargs)
    gm.load_state_dict({k: g(v) for k, v in tm.state_dict().items()})
    return tm, gm


def nodes(tensor) -> list:
    """Every node's name in the graph behind `tensor`."""
    seen, stack, names = set(), [tensor.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        stack.extend(n for n, _ in node.next_functions)
    return names


@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (2, True)])
def test_one_node_per_layer_and_direction_named_as_torch(layers, bidirectional):
    tm, gm = twins("LSTM", 3, 4, layers, bidirectional=bidirectional)
    x = torch.randn(5, 2, 3)
    t_out, g_out = tm(x)[0], gm(g(x))[0]
    count = layers * (2 if bidirectional else 1)
    t_names, g_names = nodes(t_out), nodes(g_out)
    assert t_names.count("MkldnnRnnLayerBackward0") == count
    assert g_names.count("MkldnnRnnLayerBackward0") == count
    if not bidirectional:
        assert g_out.grad_fn.name() == t_out.grad_fn.name() == "MkldnnRnnLayerBackward0"


@pytest.mark.parametrize("kind,extra", [("LSTM", {}), ("GRU", {}), ("RNN", {}),
                                        ("RNN", {"nonlinearity": "relu"}),
                                        ("LSTM", {"proj_size": 2})])
def test_float32_matches_torch_with_gradients(kind, extra):
    tm, gm = twins(kind, 3, 5, 2, batch_first=True, **extra)
    x = torch.randn(4, 6, 3, requires_grad=True)
    gx = g(x, True)
    t_out, t_h = tm(x)
    g_out, g_h = gm(gx)
    t_h, g_h = (t_h, g_h) if kind == "LSTM" else ((t_h,), (g_h,))
    for a, b in zip((g_out, *g_h), (t_out, *t_h)):
        assert_same(a, b, rtol=1e-5, atol=1e-6, check_stride=False)
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for t in (t_out, *t_h)]
    sum((t * torch.from_numpy(w)).sum() for t, w in zip((t_out, *t_h), weights)).backward()
    sum((t * gt.from_numpy(w)).sum() for t, w in zip((g_out, *g_h), weights)).backward()
    assert_same(gx.grad, x.grad, rtol=1e-4, atol=1e-5)
    for (name, p), q in zip(tm.named_parameters(), gm.parameters()):
        assert_same(q.grad, p.grad, rtol=1e-4, atol=1e-5, check_stride=False)


def _params(modes_gates, input_size, hidden, proj=0, seed=0, bias=True):
    rng = np.random.default_rng(seed)
    real = proj or hidden
    shapes = [(modes_gates * hidden, input_size), (modes_gates * hidden, real)]
    shapes += [(modes_gates * hidden,)] * 2 if bias else []
    shapes += [(proj, hidden)] if proj else []
    return [torch.tensor(rng.standard_normal(s) * 0.5) for s in shapes]


@pytest.mark.parametrize("name,gates,state", [("lstm", 4, 2), ("gru", 3, 1),
                                              ("rnn_tanh", 1, 1), ("rnn_relu", 1, 1)])
@pytest.mark.parametrize("bias", [True, False])
def test_functional_overloads_match_torch(name, gates, state, bias):
    """glasstorch.lstm & co. take PyTorch's arguments, padded (.input) or packed (.data)."""
    params = _params(gates, 3, 4, bias=bias)
    h = [torch.randn(1, 2, 4, dtype=torch.float64) for _ in range(state)]
    t_hx, g_hx = (h, [g(t) for t in h]) if state == 2 else (h[0], g(h[0]))
    g_params = [g(p) for p in params]
    args = (bias, 1, 0.0, False, False)
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    for batch_first in (False, True):
        x = x.transpose(0, 1).contiguous() if batch_first else x
        t = getattr(torch, name)(x, t_hx, params, *args, batch_first)
        ours = getattr(gt, name)(g(x), g_hx, g_params, *args, batch_first)
        for a, b in zip(ours, t):
            assert_same(a, b, rtol=1e-10, atol=1e-10, check_stride=False)
    sizes = torch.tensor([2, 2, 1])
    data = torch.randn(5, 3, dtype=torch.float64)
    t = getattr(torch, name)(data, sizes, t_hx, params, *args)
    ours = getattr(gt, name)(g(data), g(sizes), g_hx, g_params, *args)
    for a, b in zip(ours, t):
        assert_same(a, b, rtol=1e-10, atol=1e-10, check_stride=False)
    assert getattr(gt.ops.aten, name).input is not None
    assert getattr(gt.ops.aten, name).data is not None


def _layer_inputs(mode, proj, packed, seed=0, hidden=3, n=3, steps=4):
    rng = np.random.default_rng(seed)
    gates = {R.LSTM: 4, R.GRU: 3}.get(mode, 1)
    real = proj or hidden
    sizes = [n, n - 1, n - 1, 1][:steps] if packed else []
    rows = sum(sizes) if packed else None

    def leaf(*shape):
        return gt.tensor(rng.standard_normal(shape) * 0.5, dtype=gt.float64,
                         requires_grad=True)
    x = leaf(rows, 2) if packed else leaf(steps, n, 2)
    weights = [leaf(gates * hidden, 2), leaf(gates * hidden, real), leaf(gates * hidden),
               leaf(gates * hidden)]
    return x, weights, leaf(n, real), leaf(n, hidden), sizes, (leaf(real, hidden) if proj else None)


@pytest.mark.parametrize("mode", [R.RNN_RELU, R.RNN_TANH, R.LSTM, R.GRU])
@pytest.mark.parametrize("packed,batch_first,reverse", [
    (False, False, False), (True, False, False), (True, False, True), (False, True, True)])
def test_layer_op_gradcheck(mode, packed, batch_first, reverse, kernel_path):
    x, w, hx, cx, sizes, _ = _layer_inputs(mode, 0, packed)
    if batch_first:             # the op takes (N, T, I) and gives (N, T, H) then
        x = x.detach().transpose(0, 1).contiguous().requires_grad_()
    if mode == R.RNN_RELU:      # keep pre-activations away from relu's kink
        with gt.no_grad():
            w[2].add_(2.0)

    def layer(x, w0, w1, w2, w3, hx, cx):
        out, hy, cy, _ = R.mkldnn_rnn_layer.functional(
            x, w0, w1, w2, w3, hx, cx, reverse, sizes, mode, 3, 1, True, False, batch_first,
            True)
        return (out, hy, cy) if mode == R.LSTM else (out, hy)
    assert gt.autograd.gradcheck(layer, (x, *w, hx, cx))


@pytest.mark.parametrize("packed", [False, True])
def test_projected_lstm_layer_gradcheck(packed):
    x, w, hx, cx, sizes, w_hr = _layer_inputs(R.LSTM, 2, packed, seed=1)

    def layer(x, w0, w1, w2, w3, w4, hx, cx):
        return R._lstm_proj_layer.functional(x, w0, w1, w2, w3, w4, hx, cx, packed, sizes,
                                             True, False, True)[:3]
    assert gt.autograd.gradcheck(layer, (x, *w, w_hr, hx, cx))
    out = layer(x, *w, w_hr, hx, cx)[0]
    assert out.grad_fn.name() == "LstmProjLayerBackward0"


@pytest.mark.parametrize("mode,proj,packed", [(R.GRU, 0, True), (R.LSTM, 1, True)])
def test_layer_double_backward(mode, proj, packed):
    """Under create_graph the layer's backward is recomputed in per-step ops (PyTorch's CPU
    LSTM is twice differentiable too); its backward op alone has no derivative."""
    x, w, hx, cx, sizes, w_hr = _layer_inputs(mode, proj, packed, seed=2, hidden=2, n=2,
                                              steps=3)

    def layer(x, w0, w1, w2, w3, hx, cx, *w4):
        if proj:
            return R._lstm_proj_layer.functional(x, w0, w1, w2, w3, w4[0], hx, cx, True,
                                                 sizes, True, False, True)[:3]
        out = R.mkldnn_rnn_layer.functional(x, w0, w1, w2, w3, hx, cx, True, sizes, mode, 2,
                                            1, True, False, False, True)
        return out[:3] if mode == R.LSTM else out[:2]
    inputs = (x, *w, hx, cx) + ((w_hr,) if proj else ())
    assert gt.autograd.gradgradcheck(layer, inputs)
    assert R.mkldnn_rnn_layer_backward.functional.info["autograd"] == "not implemented"


def test_dropout_between_layers_uses_glasstorch_rng():
    """Train-mode dropout is F.dropout on each layer's output but the last, drawn from the
    default generator: a stack equals its layers run one by one with the same seed."""
    m = gnn.GRU(3, 4, 3, dropout=0.5, dtype=gt.float64)
    x = gt.randn(5, 2, 3, dtype=gt.float64)
    singles = []
    for layer in range(3):
        single = gnn.GRU(3 if layer == 0 else 4, 4, dtype=gt.float64)
        single.load_state_dict({k[:-1] + "0": v for k, v in m.state_dict().items()
                                if k.endswith(f"l{layer}")})
        singles.append(single)
    gt.manual_seed(7)
    out, h = m(x)
    gt.manual_seed(7)
    y, hs = x, []
    for layer, single in enumerate(singles):
        y, h1 = single(y)
        hs.append(h1)
        if layer < 2:
            y = gt.nn.functional.dropout(y, 0.5)
    assert_same(out, y, rtol=0, atol=0)
    assert_same(h, gt.cat(hs), rtol=0, atol=0)


def test_a_dispatch_mode_sees_the_layer_op_as_in_torch():
    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))
    tm, gm = twins("LSTM", 3, 4, 2)
    x = torch.randn(5, 2, 3)
    from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

    class TorchOps(TorchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))
    with TorchOps() as t_mode:
        tm(x)
    with Ops() as g_mode:
        gm(g(x))
    assert t_mode.names.count("aten.mkldnn_rnn_layer.default") == 2
    assert g_mode.names.count("aten.mkldnn_rnn_layer.default") == 2


def test_meta_shapes():
    m = gnn.LSTM(3, 4, 2, bidirectional=True, proj_size=2, device="meta")
    out, (h, c) = m(gt.empty(5, 6, 3, device="meta"))
    assert (out.shape, h.shape, c.shape) == ((5, 6, 4), (4, 6, 2), (4, 6, 4))
    assert out.device.type == "meta"
    assert nodes(out).count("LstmProjLayerBackward0") == 4
    out.sum().backward()
    assert [p.grad.shape for p in m.parameters()] == [p.shape for p in m.parameters()]
    m = gnn.GRU(3, 4, batch_first=True, device="meta")
    x = gt.empty(6, 5, 3, device="meta", requires_grad=True)
    out, h = m(x)
    assert (out.shape, h.shape) == ((6, 5, 4), (1, 6, 4))
    assert out.grad_fn.name() == "TransposeBackward0"   # batch_first, as in torch
    assert "MkldnnRnnLayerBackward0" in nodes(out)
    (out.sum() + h.sum()).backward()
    assert x.grad.shape == x.shape and x.grad.device.type == "meta"
    for cell in (gnn.LSTMCell(3, 4, device="meta"), gnn.GRUCell(3, 4, device="meta"),
                 gnn.RNNCell(3, 4, device="meta")):
        x = gt.empty(2, 3, device="meta", requires_grad=True)
        out = cell(x)
        (out[0] if isinstance(out, tuple) else out).sum().backward()
        assert x.grad.shape == (2, 3)
        assert [p.grad.shape for p in cell.parameters()] == [p.shape for p in cell.parameters()]


@pytest.mark.parametrize("kind,extra", [("LSTM", {"proj_size": 2}), ("GRU", {}), ("RNN", {})])
def test_step_by_step_path_agrees(kind, extra, monkeypatch):
    """The per-step path (CUDA tensors, other dtypes) against the whole-sequence kernels."""
    m = getattr(gnn, kind)(3, 4, 2, bidirectional=True, **extra)
    x = gt.randn(5, 2, 3, requires_grad=True)
    fast = m(x)
    fast_grads = gt.autograd.grad(fast[0].sum(), [x, *m.parameters()])
    monkeypatch.setattr(R, "_fast", lambda *args: False)
    slow = m(x)
    assert "MkldnnRnnLayerBackward0" not in nodes(slow[0])
    slow_grads = gt.autograd.grad(slow[0].sum(), [x, *m.parameters()])
    assert_same(fast[0], slow[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(fast_grads, slow_grads):
        assert_same(a, b, rtol=1e-4, atol=1e-5)


BIASES = {"both": (True, True), "none": (False, False), "b_ih": (True, False),
          "b_hh": (False, True)}


@pytest.mark.parametrize("name,gates,node", [("lstm_cell", 4, "ThnnFusedLstmCellBackward0"),
                                             ("gru_cell", 3, "ThnnFusedGruCellBackward0"),
                                             ("rnn_tanh_cell", 1, "FusedRnnCellBackward0"),
                                             ("rnn_relu_cell", 1, "FusedRnnCellBackward0")])
@pytest.mark.parametrize("biases", sorted(BIASES))
def test_fused_cells_gradcheck_and_gradgradcheck(name, gates, node, biases, kernel_path):
    """LSTM and GRU cells run one fused op (PyTorch's CUDA cells), Elman cells glasstorch's
    _fused_rnn_cell; their second derivative comes from a formula in ops, as PyTorch's
    _thnn_differentiable_*_backward. Either bias may come alone."""
    rng = np.random.default_rng(3)

    def leaf(*shape):
        return gt.tensor(rng.standard_normal(shape), dtype=gt.float64, requires_grad=True)
    states = 2 if name == "lstm_cell" else 1
    x, hs = leaf(4, 2), [leaf(4, 3) for _ in range(states)]
    weights = [leaf(gates * 3, 2), leaf(gates * 3, 3)]
    given = BIASES[biases]
    weights += [leaf(gates * 3) for present in given if present]
    cell = getattr(gt, name)

    def step(x, *rest):
        h, (w_ih, w_hh, *b) = rest[:states], rest[states:]
        b = iter(b)
        bias = [next(b) if present else None for present in given]
        return cell(x, list(h) if states == 2 else h[0], w_ih, w_hh, *bias)
    inputs = (x, *hs, *weights)
    assert gt.autograd.gradcheck(step, inputs)
    assert gt.autograd.gradgradcheck(step, inputs)
    out = step(*inputs)
    assert (out[0] if states == 2 else out).grad_fn.name() == node


@pytest.mark.parametrize("name,gates", [("lstm_cell", 4), ("gru_cell", 3)])
@pytest.mark.parametrize("biases", sorted(BIASES))
def test_gated_cells_match_torch_with_either_bias(name, gates, biases, kernel_path):
    """The fused LSTM and GRU cells add each bias given, alone too, and give each its
    gradient (the hidden bias alone once got none)."""
    rng = np.random.default_rng(11)
    lstm = name == "lstm_cell"
    shapes = [(5, 3), (5, 4), (5, 4), (4 * gates, 3), (4 * gates, 4), (4 * gates,),
              (4 * gates,)]
    t_args = [torch.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    t_args[5:] = [t if keep else None for t, keep in zip(t_args[5:], BIASES[biases])]
    if not lstm:
        del t_args[2]
    g_args = [None if t is None else g(t, True) for t in t_args]
    weights = [rng.standard_normal((5, 4)) for _ in range(2)]

    def run(lib, args):
        state = args[1:3] if lstm else args[1]
        out = getattr(lib, name)(args[0], state, *args[3 if lstm else 2:])
        outs = out if lstm else (out,)
        loss = sum((o * lib.tensor(w)).sum() for o, w in zip(outs, weights))
        wanted = [a for a in args if a is not None]
        return outs, lib.autograd.grad(loss, wanted)
    t_outs, t_grads = run(torch, t_args)
    g_outs, g_grads = run(gt, g_args)
    assert g_outs[0].grad_fn.name() == ("ThnnFusedLstmCellBackward0" if lstm
                                        else "ThnnFusedGruCellBackward0")
    for ours, theirs in zip(g_outs + g_grads, t_outs + t_grads):
        assert_same(ours, theirs, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", ["rnn_tanh_cell", "rnn_relu_cell"])
@pytest.mark.parametrize("biases", sorted(BIASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("wanted", ["all", "weights"])
def test_elman_cells_match_torch(name, biases, dtype, wanted):
    """One _fused_rnn_cell op and one node, with torch's values and gradients for any of
    the biases given, and for a step whose input and state need no gradient (the first
    cell of a stack)."""
    rng = np.random.default_rng(8)
    has_ih, has_hh = BIASES[biases]
    t_dtype = getattr(torch, dtype)
    shapes = [(5, 3), (5, 4), (4, 3), (4, 4), (4,), (4,)]
    t_args = [torch.tensor(rng.standard_normal(s), dtype=t_dtype) for s in shapes]
    for i, t in enumerate(t_args):
        t.requires_grad_(wanted == "all" or i >= 2)
    t_args[4:] = [t if keep else None for t, keep in zip(t_args[4:], (has_ih, has_hh))]
    g_args = [None if t is None else g(t, t.requires_grad) for t in t_args]
    t_out, g_out = getattr(torch, name)(*t_args), getattr(gt, name)(*g_args)
    assert g_out.grad_fn.name() == "FusedRnnCellBackward0"
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-13}
    assert_same(g_out, t_out, **tol)
    weight = rng.standard_normal((5, 4))
    (t_out * torch.tensor(weight, dtype=t_dtype)).sum().backward()
    (g_out * g(torch.tensor(weight, dtype=t_dtype))).sum().backward()
    for t, ours in zip(t_args, g_args):
        if t is not None and t.requires_grad:
            assert_same(ours.grad, t.grad, **tol)
        elif ours is not None:
            assert ours.grad is None


def test_elman_backward_computes_only_wanted_gradients(monkeypatch):
    seen, wanted = [], []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))
    backward = R.kernels.rnn_cell_backward

    def spy(grad, x, h, w_ih, w_hh, out, relu, grads):
        wanted.append([g is not None for g in grads])
        backward(grad, x, h, w_ih, w_hh, out, relu, grads)
    monkeypatch.setattr(R.kernels, "rnn_cell_backward", spy)
    x, h = gt.randn(5, 3), gt.randn(5, 4)
    cell = gnn.RNNCell(3, 4)
    with Ops():
        out = cell(x, h)
    assert [name for name in seen if "rnn" in name] == ["aten._fused_rnn_cell.default"]
    out.sum().backward()
    assert wanted == [[False, False, True, True, True]]
    assert x.grad is None and cell.bias_ih.grad is not None
    assert_same(cell.bias_ih.grad, cell.bias_hh.grad)


@pytest.mark.parametrize("name", ["rnn_tanh_cell", "lstm_cell", "gru_cell"])
def test_fused_cells_forward_over_reverse_matches_torch(name):
    """A hessian (jacfwd over jacrev) sends tangents through the cells' backward: it takes
    the formula in ops there, whose ops have jvps (the kernels have none)."""
    rng = np.random.default_rng(9)
    gates = {"rnn_tanh_cell": 1, "lstm_cell": 4, "gru_cell": 3}[name]
    values = [rng.standard_normal(s) for s in ((5, 3), (5, 4), (4 * gates, 3), (4 * gates, 4),
                                               (4 * gates,), (4 * gates,))]

    def hessian(lib):
        x, h, *weights = [lib.tensor(v) for v in values]
        state = [h, h] if name == "lstm_cell" else h

        def f(v):
            out = getattr(lib, name)(v, state, *weights)
            return (out[0] if name == "lstm_cell" else out).sum()
        return lib.func.hessian(f)(x)
    assert_same(hessian(gt), hessian(torch), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_elman_composite_path_agrees(nonlinearity, monkeypatch):
    """The per-op path (CUDA tensors, other dtypes, autocast) against the fused op, and
    other dtypes taking it."""
    cell = gnn.RNNCell(3, 4, nonlinearity=nonlinearity, dtype=gt.float64)
    x = gt.randn(5, 3, dtype=gt.float64, requires_grad=True)
    h = gt.randn(5, 4, dtype=gt.float64, requires_grad=True)
    fused = cell(x, h)
    fused_grads = gt.autograd.grad(fused.sum(), [x, h, *cell.parameters()])
    monkeypatch.setattr(R, "_cell_fused", lambda *args: False)
    slow = cell(x, h)
    assert slow.grad_fn.name() != "FusedRnnCellBackward0"
    assert_same(fused, slow, rtol=1e-12, atol=1e-13)
    for a, b in zip(fused_grads, gt.autograd.grad(slow.sum(), [x, h, *cell.parameters()])):
        assert_same(a, b, rtol=1e-12, atol=1e-13)
    monkeypatch.undo()
    half = gnn.RNNCell(3, 4, nonlinearity=nonlinearity, dtype=gt.bfloat16)
    out = half(gt.randn(5, 3, dtype=gt.bfloat16))
    assert out.dtype == gt.bfloat16 and out.grad_fn.name() != "FusedRnnCellBackward0"


# a cell's arguments (input 2x3, states 2x4, gates of 4 units) with one of them changed;
# torch checks them in an order that differs by cell, so some cases break two of them
SIZE_CASES = {"input width": {"x": (2, 5)}, "input 3-D": {"x": (1, 2, 3)},
              "input 1-D": {"x": (3,)}, "h batch": {"h": (3, 4)}, "c batch": {"c": (3, 4)},
              "h width": {"h": (2, 5)}, "c width": {"c": (2, 5)}, "h 1-D": {"h": (4,)},
              "c 1-D": {"c": (2,)}, "w_ih rows": {"w_ih": 1}, "w_hh rows": {"w_hh": 1},
              "w_hh cols": {"w_hh": (0, 5)}, "w_ih 1-D": {"w_ih": (None,)},
              "w_hh 1-D": {"w_hh": (None,)}, "w_ih 3-D": {"w_ih": (1, None, 3)},
              "b_ih size": {"b_ih": 1}, "b_hh size": {"b_hh": 1},
              "input width, w_ih rows": {"x": (2, 5), "w_ih": 1},
              "h batch, w_ih rows": {"h": (3, 4), "w_ih": 1},
              "c batch, w_hh rows": {"c": (3, 4), "w_hh": 1},
              "h width, w_hh cols": {"h": (2, 5), "c": (2, 5), "w_hh": (0, 5)}}


def _cell_arguments(lib, gates, case):
    """The arguments' shapes: an int adds rows to the gate dimension, None is the gate
    dimension, 0 keeps it (the gate dimension is always the first of a weight's)."""
    shapes = {"x": (2, 3), "h": (2, 4), "c": (2, 4), "w_ih": (None, 3), "w_hh": (None, 4),
              "b_ih": (None,), "b_hh": (None,)}
    extra = {}
    for key, shape in case.items():
        if isinstance(shape, int):
            extra[key] = shape
        else:
            shapes[key] = shape
    return {key: lib.zeros([gates * 4 + extra.get(key, 0) if d in (None, 0) and key[0] in "wb"
                            else d for d in shape], dtype=lib.float64)
            for key, shape in shapes.items()}


@pytest.mark.parametrize("case", sorted(SIZE_CASES))
@pytest.mark.parametrize("name,gates", [("rnn_tanh_cell", 1), ("lstm_cell", 4), ("gru_cell", 3),
                                        ("RNNCell", 1), ("LSTMCell", 4), ("GRUCell", 3)])
def test_cell_size_errors_match_torch(name, gates, case):
    """The ops' checks, and the modules', which are the ops' (a module's weights may have
    been replaced); the same error, or none, as torch's."""
    def outcome(lib):
        a = _cell_arguments(lib, gates, SIZE_CASES[case])
        states = [a["h"], a["c"]] if "LSTM" in name or "lstm" in name else a["h"]
        try:
            if name[0].islower():
                return getattr(lib, name)(a["x"], states, a["w_ih"], a["w_hh"], a["b_ih"],
                                          a["b_hh"]), None
            cell = getattr(lib.nn, name)(3, 4, dtype=lib.float64)
            for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                setattr(cell, p, lib.nn.Parameter(a[p[0] + "_" + p.split("_")[1]]))
            return cell(a["x"], tuple(states) if isinstance(states, list) else states), None
        except Exception as e:      # noqa: BLE001 -- compared with torch's below
            return None, e
    (t_out, t_err), (g_out, g_err) = outcome(torch), outcome(gt)
    if t_err is None:
        assert g_err is None, g_err
    else:
        assert type(g_err) is type(t_err)
        assert str(g_err) == str(t_err)


def test_consistent_2d_sizes_skip_the_ordered_checks(monkeypatch):
    """Every step's case is settled from the shapes (the checks in ops cost as much as a
    small step); anything else goes through PyTorch's ordered checks."""
    ran = []
    monkeypatch.setattr(R, "_CHECK_ORDER", {mode: (lambda *args: ran.append(args[0]),)
                                            for mode in R._CHECK_ORDER})
    x, h = gt.randn(2, 3), gt.randn(2, 4)
    for name, gates in (("rnn_tanh_cell", 1), ("lstm_cell", 4), ("gru_cell", 3)):
        state = [h, h] if name == "lstm_cell" else h
        weights = gt.randn(4 * gates, 3), gt.randn(4 * gates, 4)
        getattr(gt, name)(x, state, *weights)
        assert ran == []
        with pytest.raises(Exception):      # the checks ran (and passed): the op failed
            getattr(gt, name)(gt.randn(2, 5), state, *weights)
        assert ran == [gates]
        ran.clear()


def test_cells_take_biases_that_broadcast():
    rng = np.random.default_rng(12)
    for name, gates in (("rnn_tanh_cell", 1), ("lstm_cell", 4), ("gru_cell", 3)):
        for bias in ((1,), (1, 4 * gates), (5, 4 * gates)):
            t_args = [torch.tensor(rng.standard_normal(s)) for s in
                      ((5, 3), (5, 4), (4 * gates, 3), (4 * gates, 4), bias, (4 * gates,))]
            state = [t_args[1], t_args[1]] if name == "lstm_cell" else t_args[1]
            t_out = getattr(torch, name)(t_args[0], state, *t_args[2:])
            g_state = [g(t) for t in state] if name == "lstm_cell" else g(state)
            g_out = getattr(gt, name)(g(t_args[0]), g_state, *[g(t) for t in t_args[2:]])
            for ours, theirs in zip(*((o,) if name != "lstm_cell" else o
                                      for o in (g_out, t_out))):
                assert_same(ours, theirs, rtol=1e-12, atol=1e-13)


def test_lstm_cell_wants_two_states():
    for states in (1, 3):
        with pytest.raises(RuntimeError, match="^lstm_cell expects two hidden states$"):
            gt.lstm_cell(gt.randn(2, 3), [gt.randn(2, 4)] * states, gt.randn(16, 3),
                         gt.randn(16, 4))


FUSED_SIZE_CASES = {"gates 3-D": {"ig": (1, 2, 16)}, "gates 1-D": {"ig": (16,)},
                    "hidden gates": {"hg": (3, 16)}, "input bias 2-D": {"ib": (1, 16)},
                    "input bias size": {"ib": (17,)}, "hidden bias size": {"hb": (17,)},
                    "state 3-D": {"cx": (1, 2, 4)}, "state size": {"cx": (2, 5)}}


@pytest.mark.parametrize("case", sorted(FUSED_SIZE_CASES))
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_fused_lstm_cell_size_errors_match_torch_meta(case, device):
    """torch has no CPU kernel for the fused cells: its meta kernel says its checks."""
    def outcome(lib):
        shapes = {"ig": (2, 16), "hg": (2, 16), "cx": (2, 4), "ib": (16,), "hb": (16,)}
        shapes.update(FUSED_SIZE_CASES[case])
        a = {k: lib.zeros(s, device=device if lib is gt else "meta") for k, s in shapes.items()}
        with pytest.raises(RuntimeError) as e:
            lib.ops.aten._thnn_fused_lstm_cell(a["ig"], a["hg"], a["cx"], a["ib"], a["hb"])
        return str(e.value)
    assert outcome(gt) == outcome(torch)


@pytest.mark.parametrize("op,factor", [("_thnn_fused_lstm_cell", 4),
                                       ("_thnn_fused_gru_cell", 3)])
def test_fused_cells_refuse_a_state_they_would_misread(op, factor):
    """PyTorch's checks count the state's elements only; the kernels read it (N, H):
    a transposed state, or gates not a multiple of the gate count, are refused."""
    for gates, state in ((6 * factor, (6, 2)), (4 * factor + 1, (2, 4))):
        with pytest.raises(RuntimeError, match=rf"{op}: expected a state of shape \[2, "):
            getattr(gt.ops.aten, op)(gt.zeros(2, gates), gt.zeros(2, gates), gt.zeros(state))
    assert getattr(gt.ops.aten, op)(gt.zeros(2, 4 * factor), gt.zeros(2, 4 * factor),
                                    gt.zeros(2, 4), None, gt.zeros(4 * factor))[0].shape == (2, 4)


def test_state_of_another_dtype_is_refused_by_name():
    m = gnn.GRU(3, 4)
    with pytest.raises(RuntimeError, match="Input and hidden tensors are not the same dtype, "
                       "found input tensor with Float and hidden tensor with Double"):
        m(gt.randn(5, 2, 3), gt.zeros(1, 2, 4, dtype=gt.float64))
    with pytest.raises(RuntimeError, match="Input and parameter tensors are not the same"):
        gt.lstm(gt.randn(5, 2, 3), [gt.zeros(1, 2, 4)] * 2,
                [p.double() for p in gnn.LSTM(3, 4).parameters()], True, 1, 0.0, False, False,
                False)


def test_mkldnn_rnn_layer_matches_torch():
    rng = np.random.default_rng(4)
    args = [torch.tensor(rng.standard_normal(s), dtype=torch.float32)
            for s in [(5, 2, 3), (16, 3), (16, 4), (16,), (16,), (1, 2, 4), (1, 2, 4)]]
    for reverse in (False, True):
        t = torch.mkldnn_rnn_layer(*args, reverse, [], 2, 4, 1, True, False, False, True)
        ours = gt.mkldnn_rnn_layer(*[g(a) for a in args], reverse, [], 2, 4, 1, True, False,
                                   False, True)
        for a, b in zip(ours[:3], t[:3]):
            assert_same(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_under_autocast_give_torch_dtypes(kind):
    tm, gm = twins(kind, 3, 4)
    x = torch.randn(2, 3)
    with torch.autocast("cpu"):
        t_out = tm(x)
    with gt.autocast("cpu"):
        g_out = gm(g(x))
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    g_out = g_out if isinstance(g_out, tuple) else (g_out,)
    assert [str(t.dtype) for t in g_out] == [str(t.dtype) for t in t_out]
    for a, b in zip(g_out, t_out):
        assert_same(a.float(), b.float(), rtol=2e-2, atol=2e-2, check_stride=False)


def test_wrong_parameter_count_is_refused():
    params = list(gnn.GRU(3, 4).parameters())
    with pytest.raises(RuntimeError, match="expected 8 parameter tensors"):
        gt.gru(gt.randn(5, 2, 3), gt.zeros(2, 2, 4), params, True, 2, 0.0, False, False, False)
