"""Ops of several Tensor outputs (native_layer_norm, nll_loss_forward, native_dropout) record
their node through the straight-line code generated per derivative (autograd/recording.
_history_of): the outputs' grad_fn, output numbers, flags and saved values are PyTorch's, and
the calls it leaves to the general `_history` (a Tensor subclass, a non-float output, anomaly
mode, a dispatch mode) record the same graph."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as F
from glasstorch.autograd import recording
from glasstorch.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")


def _pair(shape, seed=0, requires_grad=True, dtype=np.float64):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (gt.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def test_native_layer_norm_outputs_share_one_node_as_torch():
    (x, tx), (w, tw), (b, tb) = _pair((3, 4, 5)), _pair((5,), 1), _pair((5,), 2)
    outs = gt.native_layer_norm(x, (5,), w, b, 1e-5)
    touts = torch.native_layer_norm(tx, (5,), tw, tb, 1e-5)
    node = outs[0].grad_fn
    assert node.name() == touts[0].grad_fn.name() == "NativeLayerNormBackward0"
    for o, to in zip(outs, touts):             # mean and rstd have no history, as in torch
        assert o.requires_grad == to.requires_grad and o.is_leaf == to.is_leaf
        assert (o.grad_fn is node) == (to.grad_fn is not None)
        assert tuple(o.shape) == tuple(to.shape) and o.dtype == gt.float64
        np.testing.assert_allclose(o.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    assert [type(n).__name__ if n is not None else None for n, _ in node.next_functions] == \
        ["AccumulateGrad"] * 3
    for nr, name in ((1, "result1"), (2, "result2")):
        # saved for the formula, they unpack with the node as history (double backward)
        saved = getattr(node, "_saved_" + name)
        assert saved.grad_fn is node and saved._output_nr == nr
        np.testing.assert_array_equal(saved.detach().numpy(), outs[nr].numpy())
    assert node._saved_normalized_shape == (5,)
    (outs[0] * outs[0]).sum().backward()
    (touts[0] * touts[0]).sum().backward()
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_layer_norm_statistics_outputs_take_no_gradient_as_torch():
    (x, tx), (w, tw) = _pair((4, 6), 3), _pair((6,), 4)
    for lib, a, ww in ((gt, x, w), (torch, tx, tw)):
        y, mean, rstd = lib.native_layer_norm(a, (6,), ww, None, 1e-5)
        (y.sum() + (mean * 3).sum() + rstd.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_layer_norm_double_backward_matches_torch():
    (x, tx), (w, tw) = _pair((4, 6), 12), _pair((6,), 13)
    results = []
    for lib, a, ww in ((gt, x, w), (torch, tx, tw)):
        y = lib.nn.functional.layer_norm(a, (6,), ww, None)
        (gx, gw) = lib.autograd.grad((y * y * y).sum(), (a, ww), create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        results.append([t.detach().numpy() for t in (gx, gw, a.grad, ww.grad)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_layer_norm_gradcheck_with_only_the_input_requiring_grad():
    x = gt.tensor(np.random.default_rng(5).standard_normal((3, 4)), requires_grad=True)
    w = gt.tensor(np.random.default_rng(6).standard_normal(4))
    assert gt.autograd.gradcheck(lambda a: F.layer_norm(a, (4,), w, None), (x,))
    assert gt.autograd.gradgradcheck(lambda a: F.layer_norm(a, (4,), w, None), (x,))
    node = F.layer_norm(x, (4,), w, None).grad_fn
    assert node.next_functions[1:] == ((None, 0), (None, 0))


def test_nll_loss_forward_total_weight_as_torch():
    (x, tx) = _pair((6, 5), 7)
    t = np.array([0, 4, 2, 1, 1, 3])
    out, total = gt.ops.aten.nll_loss_forward(x, gt.tensor(t), None, 1, -100)
    tout, ttotal = torch.ops.aten.nll_loss_forward(tx, torch.tensor(t), None, 1, -100)
    assert out.grad_fn.name() == tout.grad_fn.name() == "NllLossBackward0"
    assert total.grad_fn is None and ttotal.grad_fn is None
    assert total.requires_grad == ttotal.requires_grad == False  # noqa: E712
    np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_forward_backward_match_torch(dtype):
    (x, tx) = _pair((16, 9), 8, dtype=dtype)
    t = np.random.default_rng(9).integers(0, 9, 16)
    loss, tloss = F.cross_entropy(x, gt.tensor(t)), torch.nn.functional.cross_entropy(
        tx, torch.tensor(t))
    assert loss.grad_fn.name() == tloss.grad_fn.name() == "NllLossBackward0"
    assert loss.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    assert loss.dtype == gt.float32 if dtype == np.float32 else gt.float64
    loss.backward()
    tloss.backward()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=tol)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


def test_native_dropout_mask_gets_no_history_as_torch():
    x, tx = _pair((50,), 10)
    out, mask = gt.native_dropout(x, 0.5, True)
    tout, tmask = torch.native_dropout(tx, 0.5, True)
    assert out.grad_fn.name() == tout.grad_fn.name() == "NativeDropoutBackward0"
    assert mask.grad_fn is None and not mask.requires_grad
    assert mask.requires_grad == tmask.requires_grad and mask.dtype == gt.bool
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), mask.numpy() * 2.0)


def test_sort_indices_stay_without_history():
    x, tx = _pair((7,), 11)
    values, indices = gt.sort(x)
    tvalues, tindices = torch.sort(tx)
    assert values.grad_fn.name() == tvalues.grad_fn.name()
    assert indices.grad_fn is None and not indices.requires_grad and not tindices.requires_grad


class _Sub(gt.Tensor):
    pass


class _TorchSub(torch.Tensor):
    pass


def test_a_subclass_input_takes_the_general_path_with_the_same_graph():
    names = []
    for lib, cls in ((gt, _Sub), (torch, _TorchSub)):
        x = lib.randn(3, 4, dtype=lib.float64).as_subclass(cls).requires_grad_()
        outs = lib.native_layer_norm(x, (4,), None, None, 1e-5)
        assert all(type(o) is cls for o in outs)
        names.append([None if o.grad_fn is None else o.grad_fn.name() for o in outs])
        assert outs[0].grad_fn.next_functions[0][0].name() == "NativeLayerNormBackward0"
        outs[0].sum().backward()
        assert x.grad is not None and tuple(x.grad.shape) == (3, 4)
    assert names[0] == names[1] == ["AliasBackward0", None, None]


def test_anomaly_mode_keeps_the_forward_stack_of_a_several_output_node():
    x = gt.randn(2, 3, requires_grad=True)
    with gt.autograd.detect_anomaly(check_nan=False):
        y = F.layer_norm(x, (3,))
    assert "F.layer_norm(x, (3,))" in y.grad_fn.metadata["traceback_"]
    z = F.layer_norm(x, (3,))
    assert "traceback_" not in z.grad_fn.metadata


def test_a_dispatch_mode_sees_the_op_and_its_outputs_record():
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = gt.randn(2, 3, requires_grad=True)
    with Log():
        y = F.layer_norm(x, (3,))
    assert any("native_layer_norm" in s for s in seen)
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    y.sum().backward()
    assert x.grad is not None


def _general_history_calls(fn) -> int:
    """How many times `fn()` enters the general `recording._history`."""
    import sys
    count = [0]
    code = recording._history.__code__

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            count[0] += 1
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count[0]


def test_the_generated_history_records_layer_norm_and_nll_loss_alone():
    x = gt.randn(4, 3, requires_grad=True)
    t = gt.tensor([0, 2, 1, 1])
    F.layer_norm(x, (3,))
    assert _general_history_calls(lambda: F.layer_norm(x, (3,))) == 0
    assert _general_history_calls(lambda: F.nll_loss(x, t)) == 0
    sub = x.detach().as_subclass(_Sub).requires_grad_()
    assert _general_history_calls(lambda: gt.native_layer_norm(sub, (3,), None, None,
                                                               1e-5)) >= 1


def test_batch_norm_statistics_have_no_history_and_double_backward_matches_torch():
    (x, tx), (w, tw) = _pair((5, 3, 4), 14), _pair((3,), 15)
    results = []
    for lib, a, ww in ((gt, x, w), (torch, tx, tw)):
        outs = lib.native_batch_norm(a, ww, None, None, None, True, 0.1, 1e-5)
        assert [o.requires_grad for o in outs] == [True, False, False]
        y = lib.nn.functional.batch_norm(a, None, None, ww, None, training=True)
        (gx, gw) = lib.autograd.grad((y * y * y).sum(), (a, ww), create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        results.append([t.detach().numpy() for t in (gx, gw, a.grad, ww.grad)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11)
