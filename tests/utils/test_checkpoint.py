"""glasstorch.utils.checkpoint: same gradients as the plain run, fewer tensors kept."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as F
from glasstorch.utils.checkpoint import checkpoint, checkpoint_sequential
from tests.oracle import assert_same, oracle_torch, to_numpy

VARIANTS = [True, False]


def leaves(seed=0, n=6, batch=5):
    rng = np.random.default_rng(seed)
    w = gt.tensor(rng.standard_normal((n, n)).astype(np.float32) / n, requires_grad=True)
    x = gt.tensor(rng.standard_normal((batch, n)).astype(np.float32), requires_grad=True)
    return w, x


def grads_of(run, *tensors):
    for t in tensors:
        t.grad = None
    run().sum().backward()
    return [to_numpy(t.grad) for t in tensors]


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_gradients_match_the_plain_run(use_reentrant):
    w, x = leaves()

    def block(x, scale):
        return (gt.tanh(x @ w) * scale).exp().sin()
    out = checkpoint(block, x, 0.5, use_reentrant=use_reentrant)
    np.testing.assert_array_equal(to_numpy(out), to_numpy(block(x, 0.5)))
    want = grads_of(lambda: block(x, 0.5), w, x)
    got = grads_of(lambda: checkpoint(block, x, 0.5, use_reentrant=use_reentrant), w, x)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_dropout_inside_replays_the_same_mask(use_reentrant):
    w, x = leaves(1, n=16, batch=8)

    def block(x):
        return F.dropout(gt.tanh(x @ w), p=0.5, training=True) @ w

    gt.manual_seed(7)
    want = grads_of(lambda: block(x), w, x)
    gt.manual_seed(7)
    got = grads_of(lambda: checkpoint(block, x, use_reentrant=use_reentrant), w, x)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)
    # without preserving the RNG state the recomputation draws another mask
    gt.manual_seed(7)
    other = grads_of(lambda: checkpoint(block, x, use_reentrant=use_reentrant,
                                        preserve_rng_state=False), w, x)
    assert not np.allclose(other[0], want[0])


def test_backward_leaves_the_global_rng_where_the_plain_run_does():
    w, x = leaves(2)

    def block(x):
        return F.dropout(x @ w, p=0.3, training=True)
    gt.manual_seed(3)
    block(x).sum().backward()
    after_plain = to_numpy(gt.rand(4))
    gt.manual_seed(3)
    checkpoint(block, x, use_reentrant=False).sum().backward()
    np.testing.assert_array_equal(to_numpy(gt.rand(4)), after_plain)


def test_forward_keeps_fewer_tensors_alive():
    w = gt.randn(128, 128, requires_grad=True)
    x = gt.randn(128, 128, requires_grad=True)

    def block(x):
        for _ in range(6):
            x = gt.tanh(x @ w).exp()
        return x

    def held_after_forward(run):
        start = gt.memory.memory_allocated()
        out = run()
        held = gt.memory.memory_allocated() - start
        out.sum().backward()
        return held

    plain = held_after_forward(lambda: block(x))
    ckpt = held_after_forward(lambda: checkpoint(block, x, use_reentrant=False))
    one = 128 * 128 * 4
    assert ckpt <= 2 * one           # the output (and at most one temporary)
    assert plain >= 12 * one         # every tanh and exp result is saved for backward


def test_recomputes_once_in_backward():
    w, x = leaves(3)
    calls = []

    def block(x):
        calls.append(gt.is_grad_enabled())
        return x @ w
    out = checkpoint(block, x, use_reentrant=False)
    assert calls == [False] and out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    assert calls == [False, True]


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_multiple_outputs_and_unused_output(use_reentrant):
    w, x = leaves(4)

    def block(x):
        h = x @ w
        return h.sin(), h.cos(), 3
    a, b, k = checkpoint(block, x, use_reentrant=use_reentrant)
    assert k == 3
    a.sum().backward()
    got = [to_numpy(w.grad), to_numpy(x.grad)]
    want = grads_of(lambda: block(x)[0], w, x)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_non_reentrant_input_without_grad_still_trains_parameters():
    w, _ = leaves(5)
    x = gt.randn(5, 6)
    out = checkpoint(lambda x: (x @ w).sin(), x, use_reentrant=False)
    assert out.requires_grad
    out.sum().backward()
    w_grad = to_numpy(w.grad)
    w.grad = None
    (x @ w).sin().sum().backward()
    np.testing.assert_allclose(w_grad, to_numpy(w.grad), rtol=1e-6)


def test_non_reentrant_accepts_kwargs():
    w, x = leaves(6)
    out = checkpoint(lambda x, power=1: (x @ w) ** power, x, power=2, use_reentrant=False)
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), to_numpy(2 * (x @ w) @ w.t()), rtol=1e-5)


# torch 2.13's texts (torch.utils.checkpoint is not called here: its first call imports
# torch._dynamo, which takes seconds)
TORCH_USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants.")
TORCH_NO_GRAD_INPUTS_WARNING = "None of the inputs have requires_grad=True. Gradients will be None"


def caught_warnings(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run()
    return out, [str(w.message) for w in caught]


def test_messages_and_errors_match_torch():
    out, messages = caught_warnings(lambda: checkpoint(gt.sin, gt.ones(2, requires_grad=True)))
    assert messages == [TORCH_USE_REENTRANT_WARNING] and out.requires_grad
    plain, messages = caught_warnings(lambda: checkpoint(gt.sin, gt.ones(2), use_reentrant=True))
    assert messages == [TORCH_NO_GRAD_INPUTS_WARNING] and not plain.requires_grad
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint(gt.sin, gt.ones(2), use_reentrant=True, foo=1)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(gt.sin, gt.ones(2), use_reentrant=True, debug=True)


def test_values_and_grads_against_torch():
    torch = oracle_torch()
    w, x = leaves(8)
    tw = torch.tensor(to_numpy(w), requires_grad=True)
    tx = torch.tensor(to_numpy(x), requires_grad=True)
    out = checkpoint(lambda x: gt.tanh(x @ w).square(), x, use_reentrant=False)
    tout = torch.tanh(tx @ tw).square()
    assert_same(out.detach(), tout.detach(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    assert_same(w.grad, tw.grad, rtol=1e-5, atol=1e-6)
    assert_same(x.grad, tx.grad, rtol=1e-5, atol=1e-6)


def test_nondeterministic_recomputation_is_detected():
    w, x = leaves(12)
    calls = []

    def block(x):
        calls.append(1)
        return (x @ w)[: 6 - len(calls)]     # a different shape the second time
    out = checkpoint(block, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="Recomputed values have different metadata"):
        out.sum().backward()
    calls.clear()
    out = checkpoint(block, x, use_reentrant=False, determinism_check="none")
    with pytest.raises(RuntimeError, match="Mismatch in shape"):   # unchecked: clashes later
        out.sum().backward()
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(block, x, use_reentrant=False, determinism_check="strict")


def test_under_no_grad_records_nothing():
    w, x = leaves(9)
    with gt.no_grad():
        out = checkpoint(lambda x: x @ w, x, use_reentrant=False)
    assert not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("segments", [1, 2, 3])
@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_checkpoint_sequential_matches(segments, use_reentrant):
    w, x = leaves(10)
    calls = []

    def layer(i):
        def f(h):
            calls.append(i)
            return gt.tanh(h @ w + i)
        return f
    functions = [layer(i) for i in range(5)]

    def plain():
        h = x
        for f in functions:
            h = f(h)
        return h
    want = grads_of(plain, w, x)
    calls.clear()
    got = grads_of(lambda: checkpoint_sequential(functions, segments, x,
                                                 use_reentrant=use_reentrant), w, x)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)
    # every checkpointed layer runs twice, the last segment's layers once
    recomputed = (5 // segments) * (segments - 1)
    assert len(calls) == 5 + recomputed


def test_checkpoint_sequential_takes_a_sequential_and_warns():
    w, x = leaves(11)

    class Layer(gt.nn.Module):
        def forward(self, h):
            return (h @ w).sin()
    model = gt.nn.Sequential(Layer(), Layer(), Layer())
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        out = checkpoint_sequential(model, 2, x)
    np.testing.assert_allclose(to_numpy(out), to_numpy(model(x)), rtol=1e-6)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: bad"):
        checkpoint_sequential(model, 2, x, use_reentrant=False, bad=1)
