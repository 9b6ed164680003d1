"""rms_norm, l1_loss and cross_entropy_loss: ops PyTorch has (CompositeImplicitAutograd) that
glasstorch defines by their decompositions; values and gradients against torch's."""
from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def _pair(t, leaf: bool):
    """(torch tensor, glasstorch tensor) of the same values; leaves require grad."""
    ours = gt.tensor(t.detach().numpy())
    if leaf:
        return t.detach().clone().requires_grad_(), ours.requires_grad_()
    return t, ours


def _check(name, *args):
    """Values, and the input's gradient of a weighted sum, against torch.ops.aten.<name>."""
    pairs = [_pair(a, i == 0) if isinstance(a, torch.Tensor) else (a, a)
             for i, a in enumerate(args)]
    theirs = getattr(torch.ops.aten, name).default(*[p[0] for p in pairs])
    ours = getattr(gt.ops.aten, name).default(*[p[1] for p in pairs])
    assert str(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    w = np.random.default_rng(0).standard_normal(tuple(theirs.shape))
    leaves = [p for p in pairs if isinstance(p[0], torch.Tensor) and p[0].requires_grad]
    t_grads = torch.autograd.grad((theirs * torch.tensor(w)).sum(), [p[0] for p in leaves])
    g_grads = gt.autograd.grad((ours * gt.tensor(w)).sum(), [p[1] for p in leaves])
    for g, t in zip(g_grads, t_grads):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-9, atol=1e-12)


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape))


@pytest.mark.parametrize("shape,normalized", [((3, 4), [4]), ((2, 3, 4), [3, 4]), ((5,), [5])])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(shape, normalized, eps):
    _check("rms_norm", _rand(*shape), normalized, _rand(*normalized, seed=1), eps)
    _check("rms_norm", _rand(*shape), normalized, None, eps)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_l1_loss(reduction):
    _check("l1_loss", _rand(3, 4), _rand(3, 4, seed=1), reduction)


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4, 5), (5,), (2, 5, 3), (2, 5, 2, 2)])
def test_cross_entropy_loss_with_class_indices(reduction, smoothing, weighted, shape):
    x = _rand(*shape)
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    target = torch.from_numpy(np.random.default_rng(1).integers(0, 5, target_shape))
    if target.dim():
        target.view(-1)[0] = -100                  # one ignored position
    weight = _rand(5, seed=2).abs() if weighted else None
    _check("cross_entropy_loss", x, target, weight, reduction, -100, smoothing)


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_loss_with_class_probabilities(reduction, smoothing):
    x, probs = _rand(4, 5, 3), torch.softmax(_rand(4, 5, 3, seed=1), 1)
    _check("cross_entropy_loss", x, probs, _rand(5, seed=2).abs(), reduction, -100, smoothing)
