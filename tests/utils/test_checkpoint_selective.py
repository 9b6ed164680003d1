"""Selective activation checkpointing and the rest of torch.utils.checkpoint, against PyTorch.

The region reads a tensor that changes between forward and backward: an op whose output the
policy saved gives the forward's value in the recomputation, one that is recomputed gives
the new value, so the gradients show which ops were saved."""
import functools
import warnings

import numpy as np
import pytest

import glasstorch as gt
import glasstorch.utils.checkpoint as gc

torch = pytest.importorskip("torch")
tc = torch.utils.checkpoint

X = np.array([[0.3, -1.2, 0.7], [1.5, 0.2, -0.4]], np.float32)


def grad_after_state_change(lib, cp, policy):
    x = lib.tensor(X, requires_grad=True)
    scale = lib.tensor(np.float32(1.5))

    def region(x):
        return (x * scale).sin().cos().sum()

    context_fn = functools.partial(cp.create_selective_checkpoint_contexts, policy) \
        if policy is not None else cp.noop_context_fn
    out = cp.checkpoint(region, x, use_reentrant=False, context_fn=context_fn)
    scale.mul_(3.0)
    out.backward()
    return x.grad.numpy()


def policies(lib, cp):
    ops = lib.ops.aten
    save_sin = lambda ctx, op, *a, **k: (cp.CheckpointPolicy.MUST_SAVE  # noqa: E731
                                         if op is ops.sin.default
                                         else cp.CheckpointPolicy.PREFER_RECOMPUTE)
    return {"none": None, "list_mul": [ops.mul.Tensor], "list_sin": [ops.sin.default],
            "fn_sin": save_sin, "bool_all": lambda ctx, op, *a, **k: True}


@pytest.mark.parametrize("name", ["none", "list_mul", "list_sin", "fn_sin", "bool_all"])
def test_saved_ops_keep_their_forward_values_as_torch(name):
    ours = grad_after_state_change(gt, gc, policies(gt, gc)[name])
    theirs = grad_after_state_change(torch, tc, policies(torch, tc)[name])
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_policy_sees_forward_context_and_bad_policies_raise():
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append((ctx.is_recompute, str(op), ctx.op_output is not None))
        return gc.CheckpointPolicy.PREFER_RECOMPUTE

    x = gt.ones(2, requires_grad=True)
    gc.checkpoint(lambda t: t.exp().sum(), x, use_reentrant=False,
                  context_fn=functools.partial(gc.create_selective_checkpoint_contexts,
                                               policy)).backward()
    assert (False, "aten.exp.default", True) in seen and all(not r for r, _, _ in seen)
    with pytest.raises(ValueError, match="change it to `torch.ops.aten.mm.default`"):
        gc.create_selective_checkpoint_contexts([gt.ops.aten.mm])
    with pytest.raises(TypeError, match="must be either a function or a list of ops"):
        gc.create_selective_checkpoint_contexts(3)
    assert [p.name for p in gc.CheckpointPolicy] == [p.name for p in tc.CheckpointPolicy]
    assert [p.value for p in gc.CheckpointPolicy] == [p.value for p in tc.CheckpointPolicy]


@pytest.mark.parametrize("lib, cp", [(gt, gc), (torch, tc)], ids=["ours", "torch"])
def test_mutating_a_cached_output_raises(lib, cp):
    x = lib.ones(2, requires_grad=True)

    def region(t):
        y = t.sin()
        z = y * 2
        y.add_(1.0)                  # the cached output changes inside the region
        return (z * y).sum()

    out = cp.checkpoint(region, x, use_reentrant=False, context_fn=functools.partial(
        cp.create_selective_checkpoint_contexts, [lib.ops.aten.sin.default]))
    with pytest.raises(RuntimeError, match="cached during selective activation "
                                           "checkpoint has been mutated"):
        out.backward()


def test_helpers_as_torch():
    ours = gc.detach_variable((gt.ones(2, requires_grad=True), 3))
    theirs = tc.detach_variable((torch.ones(2, requires_grad=True), 3))
    assert [getattr(v, "requires_grad", v) for v in ours] == \
        [getattr(v, "requires_grad", v) for v in theirs]
    assert ours[0].grad_fn is None
    with pytest.raises(RuntimeError, match="Only tuple of tensors is supported. Got "
                                           "Unsupported input type: list"):
        gc.detach_variable([gt.ones(1)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.check_backward_validity((gt.ones(2),))
    assert "None of the inputs have requires_grad=True" in str(caught[0].message)
    assert gc.get_device_states(gt.ones(2)) == tc.get_device_states(torch.ones(2)) == ([], [])
    gc.set_device_states([], [])
    assert gc.DefaultDeviceType.get_device_type() == \
        ("cuda" if gt.cuda.is_available() else "cpu")
    assert issubclass(gc.CheckpointError, RuntimeError)
    with gc.GraphExecGroup() as group:
        assert gc.GraphExecGroup._get_current_group() is group
        with pytest.raises(RuntimeError, match="cannot be nested"):
            gc.GraphExecGroup().__enter__()
    assert gc.GraphExecGroup._get_current_group() is None


def test_debug_reports_the_ops_of_both_runs_on_a_mismatch():
    flip = [False]

    def region(t):
        return t.exp() if not flip[0] else t.exp().reshape(2, 1)

    x = gt.ones(2, requires_grad=True)
    with gc.set_checkpoint_debug_enabled(True), gc.set_checkpoint_early_stop(False):
        out = gc.checkpoint(region, x, use_reentrant=False)
    flip[0] = True
    with pytest.raises(gc.CheckpointError, match="(?s)different metadata.*Operators run in "
                                                 "the recomputation: .*aten.exp.default"):
        out.sum().backward()
