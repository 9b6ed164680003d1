"""Whole training runs against PyTorch: the same model (written once, for either library),
the same initial weights (copied from torch) and the same batches give the same loss curve
over 20 steps of SGD with momentum and of Adam."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import oracle_torch

STEPS = 20


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 5))


def cnn(lib):
    nn = lib.nn
    # no bias before BatchNorm: its gradient is zero up to rounding, which Adam would amplify
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 2 * 2, 5))


def _copy_weights(model, reference):
    state = {k: gt.from_numpy(v.detach().numpy().copy())
             for k, v in reference.state_dict().items()}
    model.load_state_dict(state)


def _batches(shape, seed=0):
    """Inputs with learnable labels (the argmax of a fixed linear map of the input)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((int(np.prod(shape)), 5))
    out = []
    for _ in range(STEPS):
        x = rng.standard_normal((16,) + shape).astype(np.float32)
        out.append((x, (x.reshape(16, -1) @ w).argmax(1)))
    return out


def _losses(lib, model, optimizer, batches):
    loss_fn = lib.nn.CrossEntropyLoss()
    out = []
    for x, y in batches:
        loss = loss_fn(model(lib.from_numpy(x)), lib.from_numpy(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    return out


@pytest.mark.parametrize("build,shape", [(mlp, (20,)), (cnn, (1, 8, 8))],
                         ids=["mlp", "cnn"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_loss_curve_follows_torch(build, shape, optimizer):
    torch = oracle_torch()
    torch.manual_seed(0)
    reference = build(torch)
    model = build(gt)
    _copy_weights(model, reference)
    make = {"sgd": lambda lib, p: lib.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4),
            "adam": lambda lib, p: lib.optim.Adam(p, lr=1e-2)}[optimizer]
    batches = _batches(shape)
    expected = _losses(torch, reference, make(torch, reference.parameters()), batches)
    got = _losses(gt, model, make(gt, model.parameters()), batches)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-5)
    assert np.mean(got[-5:]) < np.mean(got[:5])   # and it did learn
    for name, value in reference.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[name].numpy(), value.numpy(),
                                   rtol=2e-3, atol=2e-4, err_msg=name)
