"""The backward engine's shortcuts for the common case (issue 22) give what the general path
gives, and step aside whenever a mode, a trace, autocast or a registered kernel must see
the calls."""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.autograd import engine
from oracle import op_log

torch = pytest.importorskip("torch")


def _tiny(lib, values):
    x = lib.tensor(values, requires_grad=True)
    y = (x * 2 + 1).sum()
    return x, y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_implicit_root_gradient_matches_torch(dtype):
    values = [0.5, -1.0, 2.0]
    x = gt.tensor(values, dtype=getattr(gt, dtype), requires_grad=True)
    y = (x * 2 + 1).sum()
    tx = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    (tx * 2 + 1).sum().backward()
    g = engine.implicit_gradient(y)
    assert g.dtype is y.dtype and g.shape == y.shape and g.tolist() == 1.0
    y.backward()
    assert x.grad.dtype is x.dtype and x.grad.tolist() == tx.grad.tolist()


def test_a_dispatch_mode_sees_ones_like_as_in_torch():
    x, y = _tiny(gt, [1.0, 2.0])
    with op_log() as log:
        y.backward()
    tx, ty = _tiny(torch, [1.0, 2.0])
    with op_log(torch) as tlog:
        ty.backward()
    assert log.seen[:3] == tlog.seen[:3]     # ones_like, expand, mul
    assert x.grad.tolist() == tx.grad.tolist()


def test_a_registered_ones_like_kernel_is_called_and_the_shortcut_returns_after():
    calls = []

    def ones(self, dtype=None, layout=None, device=None, pin_memory=None,
             memory_format=None):
        calls.append(tuple(self.shape))
        return gt.full(self.shape, 3.0, dtype=self.dtype)

    lib = gt.library.Library("aten", "IMPL")
    lib.impl("ones_like", ones, "CPU")
    try:
        x, y = _tiny(gt, [1.0, 2.0])
        y.backward()
        assert calls == [()] and x.grad.tolist() == [6.0, 6.0]
    finally:
        lib._destroy()
    assert engine._ones_like_is_builtin()
    x, y = _tiny(gt, [1.0, 2.0])
    y.backward()
    assert calls == [()] and x.grad.tolist() == [2.0, 2.0]


def test_the_shortcut_is_taken_for_plain_tensors_and_not_under_a_mode():
    x, y = _tiny(gt, [1.0])
    assert engine._ones_like_is_builtin()
    made = []
    original = engine.ones_like
    engine.ones_like = lambda *a, **k: made.append(1) or original(*a, **k)
    try:
        engine.implicit_gradient(y)
        assert made == []                      # plain: made directly
        with op_log():
            engine.implicit_gradient(y)
        assert made == [1]                     # a mode on: through ones_like
        with gt.autocast("cpu"):
            engine.implicit_gradient(y)
        assert made == [1, 1]
    finally:
        engine.ones_like = original


def test_hooks_and_grad_mode_inside_backward_are_kept():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    y.grad_fn.register_hook(lambda gi, go: seen.append(gt.is_grad_enabled()))
    y.sum().backward()
    assert seen == [[1.0, 1.0], False] and x.grad.tolist() == [6.0, 6.0]
    assert gt.is_grad_enabled()
    z = gt.tensor([1.0, 2.0], requires_grad=True)
    (g,) = gt.autograd.grad((z * z).sum(), z, create_graph=True)
    assert g.requires_grad and g.tolist() == [2.0, 4.0]
    assert gt.is_grad_enabled()


def test_grad_mode_is_restored_when_a_node_fails():
    x = gt.tensor([1.0], requires_grad=True)
    y = x * 2
    y.grad_fn.register_prehook(lambda grads: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        y.sum().backward()
    assert gt.is_grad_enabled()


def _fan_out(lib, dtype, values):
    """x feeding three nodes: its AccumulateGrad buffer sums three gradients."""
    x = lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)
    return x, ((x * 2).sin() + (x * 3).cos() + (x * 5).tanh()).sum()


class _Spy:
    """Stands for the engine's `parallel` module: records its in-place sums."""

    def __init__(self):
        self.calls = 0

    def ufunc(self, fn, args, out, **kwargs):
        self.calls += 1
        fn(*args, out=out, **kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_buffered_gradients_are_summed_in_place_as_torch(dtype, monkeypatch):
    spy = _Spy()
    monkeypatch.setattr(engine, "parallel", spy)
    values = [[0.5, -1.0, 2.0], [0.25, 3.0, -0.75]]
    x, y = _fan_out(gt, dtype, values)
    y.backward()
    assert spy.calls == 2                  # the second and third gradient into the first
    tx, ty = _fan_out(torch, dtype, values)
    ty.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-7)
    x, y = _fan_out(gt, dtype, values)     # create_graph: sums that record their own graph
    (g,) = gt.autograd.grad(y, x, create_graph=True)
    assert spy.calls == 2 and g.requires_grad
    tx, ty = _fan_out(torch, dtype, values)
    (tg,) = torch.autograd.grad(ty, tx, create_graph=True)
    gt.autograd.backward(g.sum())
    tg.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_gradient_someone_else_holds_is_not_summed_into(monkeypatch):
    spy = _Spy()
    monkeypatch.setattr(engine, "parallel", spy)
    x = gt.tensor([1.0, 2.0], dtype=gt.float64, requires_grad=True)
    parts = [(x * 2).sin(), (x * 3).cos(), (x * 5).tanh()]
    kept = []
    for part in parts:             # each product's node: its output is x's buffered gradient
        part.grad_fn.next_functions[0][0].register_hook(
            lambda grad_inputs, grad_outputs: kept.append(
                (grad_inputs[0], grad_inputs[0].tolist())))
    (parts[0] + parts[1] + parts[2]).sum().backward()
    assert spy.calls == 1 and len(kept) == 3    # only into the engine's own first sum
    for held, values in kept:
        assert held.tolist() == values
    expected = np.sum([held.numpy() for held, _ in kept], axis=0)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-15)


def test_a_mode_sees_the_buffer_sums_as_torch_does():
    """Under a Python dispatch mode PyTorch's buffer sums are out of place (add.Tensor)."""
    x, y = _fan_out(gt, "float64", [1.0, 2.0])
    with op_log() as log:
        y.backward()
    tx, ty = _fan_out(torch, "float64", [1.0, 2.0])
    with op_log(torch) as tlog:
        ty.backward()
    assert log.seen.count("aten.add.Tensor") == tlog.seen.count("aten.add.Tensor") == 2
    assert "aten.add_.Tensor" not in log.seen + tlog.seen


@pytest.mark.filterwarnings("ignore:Overriding a previously registered kernel")
def test_a_registered_add_kernel_is_called_for_the_buffer_sums(monkeypatch):
    spy = _Spy()
    monkeypatch.setattr(engine, "parallel", spy)
    calls = []

    def add(self, other, alpha=1):
        calls.append(tuple(self.shape))
        return gt.from_numpy(self.detach().numpy() + alpha * other.detach().numpy())
    x, y = _fan_out(gt, "float64", [1.0, 2.0])
    lib = gt.library.Library("aten", "IMPL")
    lib.impl("add.Tensor", add, "CPU")
    try:
        y.backward()
        assert spy.calls == 0 and calls == [(2,), (2,)]
    finally:
        lib._destroy()
    x, y = _fan_out(gt, "float64", [1.0, 2.0])
    y.backward()
    assert spy.calls == 2


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "channels_last"])
def test_a_first_grad_copied_from_a_view_is_fresh_in_the_variables_layout(layout):
    """x.sum()'s gradient reaches x expanded from one number: x.grad is a fresh dense copy
    in x's layout (empty_like(x).copy_), made directly on a plain thread, as torch's."""
    base = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    x = gt.from_numpy(base.copy())
    tx = torch.from_numpy(base.copy())
    if layout == "transposed":
        x, tx = x.transpose(1, 3), tx.transpose(1, 3)
    elif layout == "channels_last":
        x, tx = (t.contiguous(memory_format=lib.channels_last)
                 for t, lib in ((x, gt), (tx, torch)))
    x = x.detach().requires_grad_()
    tx = tx.detach().requires_grad_()
    (x * 3).sum().backward()          # MulBackward's product: stolen
    stolen = x.grad
    x.grad = None
    x.sum().backward()
    tx.sum().backward()
    assert x.grad.stride() == tx.grad.stride() == x.stride()
    assert x.grad.tolist() == tx.grad.tolist() and stolen.tolist() == (tx.grad * 3).tolist()
    assert x.grad.untyped_storage().nbytes() == 24 * 4      # its own memory, not a view


def test_a_mode_sees_the_first_grads_copy_as_torch_does():
    x = gt.ones(3, requires_grad=True)
    tx = torch.ones(3, requires_grad=True)
    with op_log() as log:
        x.sum().backward()
    with op_log(torch) as tlog:
        tx.sum().backward()
    assert log.seen == tlog.seen         # ones_like, expand, new_empty_strided, copy_
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


# ---- input buffers: a node's gradient itself for output 0, a dict otherwise -----------

def _grads_through_split(lib, used, weights, retain_hook=False):
    """Gradients of x through one SplitBackward0 node whose outputs in `used` reach the
    loss, in the order listed (so a later output's gradient may arrive first), each
    scaled by its weight."""
    x = lib.arange(6.0, dtype=lib.float64).requires_grad_()
    parts = x.split(2)
    seen = []
    if retain_hook:
        parts[0].grad_fn.register_prehook(lambda grads: seen.append(
            [None if g is None else g.tolist() for g in grads]))
    loss = sum((parts[i] * w).sum() for i, w in zip(used, weights))
    loss.backward()
    return x.grad.tolist(), seen


@pytest.mark.parametrize("used, weights", [
    ((0,), (2.0,)), ((1,), (3.0,)), ((2, 0), (5.0, 7.0)), ((1, 0, 2), (1.0, 2.0, 3.0)),
    ((0, 0, 1), (1.0, 4.0, 2.0)), ((2, 2), (1.5, 2.5))])
def test_gradients_of_several_outputs_meet_in_one_buffer_as_torch(used, weights):
    assert _grads_through_split(gt, used, weights) == \
        _grads_through_split(torch, used, weights)


@pytest.mark.parametrize("used, weights", [((1,), (3.0,)), ((2, 0), (5.0, 7.0))])
def test_a_pre_hook_sees_every_output_slot_as_torch(used, weights):
    ours = _grads_through_split(gt, used, weights, retain_hook=True)
    theirs = _grads_through_split(torch, used, weights, retain_hook=True)
    assert ours == theirs


def test_roots_into_one_node_and_a_root_without_gradient_as_torch():
    def run(lib):
        x = lib.arange(4.0, dtype=lib.float64).requires_grad_()
        a, b = x.split(2)
        lib.autograd.backward([a, b, a], [lib.ones(2, dtype=lib.float64) * 2,
                                          lib.ones(2, dtype=lib.float64) * 3,
                                          lib.ones(2, dtype=lib.float64)])
        first = x.grad.tolist()
        y = lib.arange(3.0, dtype=lib.float64).requires_grad_()
        c, d = y.split(2)
        g, = lib.autograd.grad([c.sum(), d], [y], [None, lib.ones(1, dtype=lib.float64)])
        return first, g.tolist()
    assert run(gt) == run(torch)


def test_autograd_grad_captures_a_later_output_of_a_node_as_torch():
    def run(lib):
        x = lib.arange(6.0, dtype=lib.float64).requires_grad_()
        a, b, c = x.split(2)
        mid = c * 3
        loss = (mid * mid).sum() + a.sum()
        return [t.tolist() for t in lib.autograd.grad(loss, [mid, c, x])]
    assert run(gt) == run(torch)


def test_a_captured_tensor_on_the_path_to_another_still_passes_its_gradient_on():
    """autograd.grad(z, [y, x]) and z.backward(inputs=[y, x]) with y made from x: y's node
    runs after its gradient is captured (before, x's gradient was missing)."""
    def run(lib):
        x = lib.arange(3.0, dtype=lib.float64).requires_grad_()
        y = x * 2
        grads = [t.tolist() for t in lib.autograd.grad((y * y).sum(), [y, x])]
        y = x * 3
        y.retain_grad()
        (y ** 2).sum().backward(inputs=[y, x])
        return grads, y.grad.tolist(), x.grad.tolist()
    assert run(gt) == run(torch)


def _hooked_captures(lib):
    """What autograd.grad and backward(inputs=) give where tensor hooks, retain_grad and a
    node's pre hook meet a captured tensor, in PyTorch's engine order."""
    out = []
    x = lib.arange(3.0, dtype=lib.float64).requires_grad_()
    y = x * 2
    y.register_hook(lambda g: g * 10)           # y's node does not run: hooked capture
    out.append(lib.autograd.grad((y * y).sum(), [y])[0].tolist())
    y = x * 2
    y.retain_grad()                             # ... and retain_grad's hook fills y.grad
    out.append(lib.autograd.grad((y * y).sum(), [y])[0].tolist() + y.grad.tolist())
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 10)           # y's node runs on to x: raw capture
    out.append([t.tolist() for t in lib.autograd.grad((y * y).sum(), [y, x])] +
               [y.grad.tolist()])
    y = x * 2
    y.grad_fn.register_prehook(lambda gs: (gs[0] * 100,))     # never applied to a capture
    out.append(lib.autograd.grad((y * y).sum(), [y])[0].tolist())
    y = x * 2
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward(inputs=[y, x])       # inputs= retains y's grad, after the hook
    out.append((y.grad.tolist(), x.grad.tolist(), y.retains_grad))
    x.grad = None
    x.register_hook(lambda g: g + 1)            # a leaf's hook, at its AccumulateGrad
    out.append(lib.autograd.grad((x * x).sum(), [x])[0].tolist())
    return out


def test_hooks_meet_captured_gradients_as_in_torch():
    assert _hooked_captures(gt) == _hooked_captures(torch)


def test_a_pre_hook_gets_a_gradient_per_output_with_history_as_torch():
    """max's indices and layer norm's mean and rstd have no history, so their nodes' pre
    hooks see one gradient; unbind's see one per view, None where none came."""
    def run(lib):
        x = lib.tensor([[1., 5.], [3., 2.]], requires_grad=True)
        seen = []
        v, _ = x.max(0)
        v.grad_fn.register_prehook(lambda gs: seen.append(len(gs)))
        v.sum().backward()
        o, _, _ = lib.native_layer_norm(x, (2,), None, None, 1e-5)
        o.grad_fn.register_prehook(lambda gs: seen.append(len(gs)))
        o.sum().backward()
        a, b = x.unbind(1)
        a.grad_fn.register_prehook(
            lambda gs: seen.append([None if g is None else g.tolist() for g in gs]))
        (b * 2).sum().backward()
        return seen
    assert run(gt) == run(torch)
