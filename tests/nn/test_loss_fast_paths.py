"""The CPU fast paths of _softmax, _log_softmax and nll_loss_forward (ops/nn/loss.py, in
front of the general CPU kernels, as F.cross_entropy calls them) give the general kernels'
results bit for bit, with the same shapes, strides, dtypes and errors, in and out of
inference mode, on both kernel paths; the calls they do not take go the general way."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as F
from glasstorch.ops.nn import loss as ops_loss
from glasstorch.utils._python_dispatch import TorchDispatchMode

aten = gt.ops.aten
rng = np.random.default_rng(7)


def _describe(result):
    outs = result if isinstance(result, tuple) else (result,)
    return [(t.numpy().copy(), tuple(t.shape), t.stride(), t.dtype, t.is_inference())
            for t in outs]


def _run(calls, inference):
    results = []
    with gt.inference_mode(inference):
        for fn in calls:
            try:
                results.append(_describe(fn()))
            except (RuntimeError, IndexError, ValueError) as e:
                results.append((type(e), str(e)))
    return results


def _fast_and_general(decls, calls, monkeypatch):
    """[results with the fast paths, results without them], in and out of inference mode."""
    fast = [_run(calls, False), _run(calls, True)]
    for decl in decls:
        monkeypatch.setattr(decl, "cpu_fast_path", None)
        decl.impl("CPU")(decl.impls["CPU"])
    try:
        general = [_run(calls, False), _run(calls, True)]
    finally:
        monkeypatch.undo()
        for decl in decls:
            decl.impl("CPU")(decl.impls["CPU"])
    return fast, general


def _assert_same(fast, general):
    for got, want in zip(fast, general):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if isinstance(g, tuple):
                assert g == w
                continue
            for (a, *meta_a), (e, *meta_e) in zip(g, w):
                assert meta_a == meta_e and np.array_equal(a, e, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_fast_path_is_the_general_kernel_bit_for_bit(dtype, kernel_path, monkeypatch):
    x = gt.from_numpy((rng.standard_normal((6, 40)) * 5).astype(dtype))
    x[1, 3] = float("inf")
    x[2, 0] = float("nan")
    x[3] = float("-inf")
    short = gt.from_numpy(rng.standard_normal((300, 5)).astype(dtype))   # many short rows
    calls = []
    for op in (aten._softmax, aten._log_softmax):
        calls += [lambda op=op: op(x, -1, False), lambda op=op: op(x, 1, False),
                  lambda op=op: op(x[0], 0, False), lambda op=op: op(x.t(), 1, False),
                  lambda op=op: op(x, 0, False), lambda op=op: op(short, -1, False),
                  lambda op=op: op(x[:, :0], -1, False), lambda op=op: op(x[:0], -1, False),
                  lambda op=op: op(x.reshape(2, 3, 40), 2, False),
                  lambda op=op: op(x[:, ::2], -1, False), lambda op=op: op(x, 2, False),
                  lambda op=op: op(x[0, 0], 0, False)]
    fast, general = _fast_and_general((ops_loss._softmax, ops_loss._log_softmax), calls,
                                      monkeypatch)
    _assert_same(fast, general)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nll_fast_path_is_the_general_kernel_bit_for_bit(dtype, kernel_path, monkeypatch):
    x = gt.from_numpy(rng.standard_normal((12, 7)).astype(dtype))
    t = gt.from_numpy(rng.integers(0, 7, 12))
    t_ignored = t.clone()
    t_ignored[::3] = -100
    bad = t.clone()
    bad[4] = 9
    negative = t.clone()
    negative[2] = -3
    w = gt.from_numpy(rng.uniform(0.5, 2, 7).astype(dtype))
    calls = []
    for reduction in (0, 1, 2):
        calls += [lambda r=reduction: aten.nll_loss_forward(x, t, None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x, t_ignored, None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x, t, None, r, 3),
                  lambda r=reduction: aten.nll_loss_forward(x, t, w, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x, bad, None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x, negative, None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x.t().contiguous().t(), t,
                                                            None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x, t[::1], None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x[:1], t[:1], None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x, gt.full((12,), -100), None,
                                                            r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x, t.int(), None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x, t[:5], None, r, -100),
                  lambda r=reduction: aten.nll_loss_forward(x[0], t[0], None, r, -100)]
    fast, general = _fast_and_general((ops_loss.nll_loss_forward,), calls, monkeypatch)
    _assert_same(fast, general)
    assert fast[0][4][0] is IndexError and fast[0][10][0] is RuntimeError


def test_cross_entropy_matches_torch_with_its_graph():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((32, 11)).astype(np.float32)
    t = rng.integers(0, 11, 32)
    x, tx = gt.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for reduction in ("mean", "sum"):
        loss = F.cross_entropy(x, gt.tensor(t), reduction=reduction)
        tloss = torch.nn.functional.cross_entropy(tx, torch.tensor(t), reduction=reduction)
        assert loss.grad_fn.name() == tloss.grad_fn.name() == "NllLossBackward0"
        assert loss.grad_fn.next_functions[0][0].name() == \
            tloss.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
        assert loss.dtype == gt.float32 and loss.shape == ()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-6)
        x.grad = None
        tx.grad = None
        loss.backward()
        tloss.backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_cross_entropy_gradcheck():
    x = gt.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    t = gt.tensor([0, 3, 1, 1, 2])
    assert gt.autograd.gradcheck(lambda a: F.cross_entropy(a, t), (x,))
    assert gt.autograd.gradgradcheck(lambda a: F.cross_entropy(a, t, reduction="sum"), (x,))


def test_log_softmax_of_a_complex_input_with_grad_is_still_refused():
    torch = pytest.importorskip("torch")
    for lib in (gt, torch):
        x = lib.zeros(0, 3, dtype=lib.complex64, requires_grad=True)
        with pytest.raises(RuntimeError, match="_log_softmax does not support automatic "
                                               "differentiation for outputs with complex"):
            lib._log_softmax(x, 1, False)


def test_a_dispatch_mode_sees_cross_entropys_ops():
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func).split(".")[-2] if str(func).count(".") > 1 else str(func))
            return func(*args, **(kwargs or {}))

    x = gt.randn(4, 20, requires_grad=True)
    with Log():
        loss = F.cross_entropy(x, gt.tensor([0, 5, 19, 2]))
    assert any("_log_softmax" in s for s in seen) and any("nll_loss_forward" in s for s in seen)
    loss.backward()
    assert x.grad is not None


def test_cross_entropy_takes_both_fast_paths(monkeypatch):
    from glasstorch.backends.cpu import native
    monkeypatch.setattr(native, "ENABLED", True)
    taken = []
    for name in ("softmax_last_dim", "nll_reduced_rows"):
        real = getattr(ops_loss, name)
        monkeypatch.setattr(ops_loss, name, lambda *a, real=real, name=name: taken.append(
            (name, real(*a) is not None)) or real(*a))
    F.cross_entropy(gt.randn(8, 20, requires_grad=True), gt.randint(0, 20, (8,)))
    if native.function("softmax", "softmax_f32", "nnppii") is not None:
        assert taken == [("softmax_last_dim", True), ("nll_reduced_rows", True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_backward_fast_paths_are_the_general_kernels_bit_for_bit(dtype, kernel_path,
                                                                       monkeypatch):
    x = gt.from_numpy((rng.standard_normal((6, 40)) * 3).astype(dtype))
    g = gt.from_numpy(rng.standard_normal((6, 40)).astype(dtype))
    y, ly = aten._softmax(x, -1, False), aten._log_softmax(x, -1, False)
    d = gt.float32 if dtype == np.float32 else gt.float64
    other = gt.float64 if d is gt.float32 else gt.float32
    short_x = gt.from_numpy(rng.standard_normal((300, 5)).astype(dtype))
    short_y, short_g = aten._softmax(short_x, -1, False), gt.ones_like(short_x)
    calls = []
    for op, out in ((aten._softmax_backward_data, y), (aten._log_softmax_backward_data, ly)):
        calls += [lambda op=op, o=out: op(g, o, -1, d), lambda op=op, o=out: op(g, o, 1, d),
                  lambda op=op, o=out: op(g.t().contiguous().t(), o, 1, d),
                  lambda op=op, o=out: op(g, o.t().contiguous().t(), 1, d),
                  lambda op=op, o=out: op(g[0], o[0], 0, d),
                  lambda op=op, o=out: op(g, o, 0, d),
                  lambda op=op, o=out: op(g[:3], o, -1, d),
                  lambda op=op, o=out: op(g.to(other), o, -1, d),
                  lambda op=op, o=out: op(g, o, -1, other),
                  lambda op=op, o=out: op(g[:, :0], o[:, :0], -1, d),
                  lambda op=op: op(short_g, short_y, -1, d),
                  lambda op=op, o=out: op(g, o, 2, d)]
    decls = (ops_loss._softmax_backward_data, ops_loss._log_softmax_backward_data)
    fast, general = _fast_and_general(decls, calls, monkeypatch)
    _assert_same(fast, general)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nll_backward_fast_path_is_the_general_kernel_bit_for_bit(dtype, kernel_path,
                                                                  monkeypatch):
    x = gt.from_numpy(rng.standard_normal((12, 7)).astype(dtype))
    t = gt.from_numpy(rng.integers(0, 7, 12))
    t_ignored = t.clone()
    t_ignored[::4] = 2
    bad = t.clone()
    bad[1] = 7
    w = gt.from_numpy(rng.uniform(0.5, 2, 7).astype(dtype))
    one = gt.from_numpy(np.array(1.5, dtype))
    rows = gt.from_numpy(rng.standard_normal(12).astype(dtype))
    total = gt.from_numpy(np.array(9.0, dtype))
    calls = []
    for r in (1, 2):
        calls += [lambda r=r: aten.nll_loss_backward(one, x, t, None, r, -100, total),
                  lambda r=r: aten.nll_loss_backward(one, x, t_ignored, None, r, 2, total),
                  lambda r=r: aten.nll_loss_backward(one, x, t, w, r, -100, total),
                  lambda r=r: aten.nll_loss_backward(one, x, bad, None, r, -100, total),
                  lambda r=r: aten.nll_loss_backward(one, x.t().contiguous().t(), t, None, r,
                                                     -100, total),
                  lambda r=r: aten.nll_loss_backward(one.double(), x, t, None, r, -100,
                                                     total),
                  lambda r=r: aten.nll_loss_backward(one, x[0], t[0], None, r, -100, total)]
    calls += [lambda: aten.nll_loss_backward(rows, x, t, None, 0, -100, total),
              lambda: aten.nll_loss_backward(rows[:3], x, t, None, 0, -100, total)]
    fast, general = _fast_and_general((ops_loss.nll_loss_backward,), calls, monkeypatch)
    _assert_same(fast, general)


def test_cross_entropy_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((6, 5))
    t = rng.integers(0, 5, 6)
    grads = []
    for lib in (gt, torch):
        x = lib.tensor(a, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(x, lib.tensor(t))
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (g * g).sum().backward()
        grads.append((g.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("reduction, grad_shape", [(0, (3,)), (0, ()), (0, (4, 1)), (1, (2,)),
                                                   (2, (1, 1)), (1, (1,)), (0, (4,))])
def test_nll_loss_backward_checks_grad_outputs_shape_as_torch(reduction, grad_shape):
    """Before, a wrong grad_output reached NumPy's reshape and raised its ValueError."""
    torch = pytest.importorskip("torch")

    def run(lib):
        inp = lib.zeros(4, 3).log_softmax(-1)
        try:
            out = lib.ops.aten.nll_loss_backward(lib.ones(grad_shape), inp,
                                                 lib.tensor([0, 1, 2, 0]), None, reduction,
                                                 -100, lib.tensor(4.))
            return tuple(out.shape)
        except (RuntimeError, IndexError) as e:
            return type(e).__name__, str(e)
    assert run(gt) == run(torch)
