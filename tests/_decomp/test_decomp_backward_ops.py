"""The backward ops defined by their decompositions (glasstorch/_decomp/backward.py):
each against PyTorch's op of the same name, and against the gradient glasstorch's own
autograd formula gives for the forward op."""
from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt
from glasstorch._decomp import decomposition_table

torch = pytest.importorskip("torch")


def _ours(x):
    if isinstance(x, torch.Tensor):
        return gt.tensor(x.detach().numpy())
    if isinstance(x, (list, tuple)):
        return type(x)(_ours(v) for v in x)
    if isinstance(x, torch.dtype):
        return getattr(gt, str(x).removeprefix("torch."))
    return x


def _check(name, *args, rtol=1e-9):
    """gt.ops.aten.<name> against torch.ops.aten.<name> on the same arguments."""
    theirs = getattr(torch.ops.aten, name).default(*args)
    ours = getattr(gt.ops.aten, name).default(*_ours(args))
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    ours = ours if isinstance(ours, tuple) else (ours,)
    assert len(ours) == len(theirs)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if t is None:
            assert o is None, f"{name} output {i}"
            continue
        assert str(o.dtype) == str(t.dtype), f"{name} output {i}"
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=rtol, atol=rtol,
                                   err_msg=f"{name} output {i}")
    return ours


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape))


@pytest.mark.parametrize("mask", [[True, True, True], [True, False, False], [False, True, True]])
@pytest.mark.parametrize("affine", [True, False])
def test_native_layer_norm_backward(mask, affine):
    x, g = _rand(3, 4, 5), _rand(3, 4, 5, seed=1)
    w, b = (_rand(4, 5, seed=2), _rand(4, 5, seed=3)) if affine else (None, None)
    if not affine:
        mask = [mask[0], False, False]      # PyTorch refuses weight gradients without weight
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [4, 5], w, b, 1e-5)
    _check("native_layer_norm_backward", g, x, [4, 5], mean, rstd, w, b, mask)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 2, 2)])
def test_native_batch_norm_backward(train, shape):
    x, g, w = _rand(*shape), _rand(*shape, seed=1), _rand(3, seed=2)
    rm, rv = _rand(3, seed=3), _rand(3, seed=4).abs() + 0.5
    _, save_mean, save_invstd = torch.ops.aten.native_batch_norm(
        x, w, None, rm.clone(), rv.clone(), train, 0.1, 1e-5)
    _check("native_batch_norm_backward", g, x, w, rm, rv, save_mean, save_invstd, train, 1e-5,
           [True, True, True])


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_native_group_norm_backward(groups):
    x, g, w = _rand(2, 4, 3, 2), _rand(2, 4, 3, 2, seed=1), _rand(4, seed=2)
    _, mean, rstd = torch.ops.aten.native_group_norm(x, w, None, 2, 4, 6, groups, 1e-5)
    _check("native_group_norm_backward", g, x, mean, rstd, w, 2, 4, 6, groups,
           [True, True, True])


def test_activation_backwards():
    x, g = _rand(50) * 3, _rand(50, seed=1)
    x[:4] = torch.tensor([-3.0, 3.0, 0.0, -0.0])
    _check("silu_backward", g, x)
    _check("mish_backward", g, x)
    _check("hardswish_backward", g, x)
    _check("hardsigmoid_backward", g, x, rtol=1e-7)     # PyTorch's 1/6 is a float32
    _check("leaky_relu_backward", g, x, 0.1, False)
    _check("softplus_backward", g, x, 2.0, 3.0)
    _check("elu_backward", g, 0.7, 1.5, 2.0, False, x)
    y = torch.nn.functional.elu(x, 0.7) * 1.5
    _check("elu_backward", g, 0.7, 1.5, 1.0, True, y)
    mask = torch.from_numpy(np.random.default_rng(2).random(50) > 0.3)
    _check("native_dropout_backward", g, mask, 1 / 0.7)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_loss_backwards(reduction):
    x, t = _rand(4, 5), _rand(4, 5, seed=1)
    g = _rand(4, 5, seed=2) if reduction == 0 else torch.tensor(0.7, dtype=torch.float64)
    _check("mse_loss_backward", g, x, t, reduction)
    _check("smooth_l1_loss_backward", g, x, t, reduction, 0.5)
    _check("smooth_l1_loss_backward", g, x, t, reduction, 0.0)
    _check("huber_loss_backward", g, x, t, reduction, 0.8)
    p, y = torch.sigmoid(x), torch.sigmoid(t)
    _check("binary_cross_entropy_backward", g, p, y, None, reduction)
    _check("binary_cross_entropy_backward", g, p, y, _rand(4, 5, seed=3).abs(), reduction)


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_backwards(reduction, weighted):
    logp = torch.log_softmax(_rand(4, 5), 1)
    target = torch.tensor([0, 4, -100, 2])
    weight = _rand(5, seed=1).abs() if weighted else None
    _, total = torch.ops.aten.nll_loss_forward(logp, target, weight, reduction, -100)
    g = _rand(4, seed=2) if reduction == 0 else torch.tensor(1.3, dtype=torch.float64)
    _check("nll_loss_backward", g, logp, target, weight, reduction, -100, total)
    image = torch.log_softmax(_rand(2, 3, 2, 2), 1)
    image_target = torch.tensor([[[0, 1], [2, -100]], [[1, 1], [0, 2]]])
    _, total = torch.ops.aten.nll_loss2d_forward(image, image_target, None, reduction, -100)
    g = _rand(2, 2, 2, seed=3) if reduction == 0 else torch.tensor(1.3, dtype=torch.float64)
    _check("nll_loss2d_backward", g, image, image_target, None, reduction, -100, total)


@pytest.mark.parametrize("forward,backward", [
    (gt.nn.functional.silu, lambda g, x: gt.ops.aten.silu_backward.default(g, x)),
    (gt.nn.functional.mish, lambda g, x: gt.ops.aten.mish_backward.default(g, x)),
    (gt.nn.functional.hardswish, lambda g, x: gt.ops.aten.hardswish_backward.default(g, x)),
    (lambda x: gt.nn.functional.elu(x, 0.5),
     lambda g, x: gt.ops.aten.elu_backward.default(g, 0.5, 1, 1, False, x)),
    (lambda x: gt.nn.functional.softplus(x, 2, 1),
     lambda g, x: gt.ops.aten.softplus_backward.default(g, x, 2, 1)),
])
def test_backward_ops_agree_with_glasstorch_autograd(forward, backward):
    x = gt.tensor(np.linspace(-5, 5, 41)).requires_grad_()
    g = gt.tensor(np.random.default_rng(0).standard_normal(41))
    (expected,) = gt.autograd.grad(forward(x), x, g)
    np.testing.assert_allclose(backward(g, x.detach()).numpy(), expected.numpy(), rtol=1e-12,
                               atol=1e-12)


def test_backward_ops_are_differentiable_and_in_the_table():
    """Their kernel is the decomposition, so double backward runs through its pieces."""
    x = gt.tensor([-1.0, 0.5, 2.0], dtype=gt.float64, requires_grad=True)
    g = gt.ones(3, dtype=gt.float64)
    first = gt.ops.aten.silu_backward.default(g, x)
    (second,) = gt.autograd.grad(first.sum(), x)
    s = 1 / (1 + np.exp(-x.detach().numpy()))
    xs = x.detach().numpy()
    expected = s * (1 - s) * (2 + xs * (1 - 2 * s))       # d/dx [s (1 + x (1 - s))]
    np.testing.assert_allclose(second.numpy(), expected, rtol=1e-12)
    assert gt.ops.aten.native_layer_norm_backward.default in decomposition_table
