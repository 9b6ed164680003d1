"""Optimizer steps and whole train steps under torch.compile: Adam's step count stays a
tensor inside the graph (PyTorch's capturable form), so steps replay one graph instead of
recompiling; autocast and GradScaler work inside compiled regions."""
import copy
import warnings

import pytest

import glasstorch as gt
import glasstorch.nn as nn
import glasstorch.nn.functional as F


def model_and_data():
    gt.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
    gt.manual_seed(1)
    return model, [(gt.randn(8, 6), gt.randint(0, 3, (8,))) for _ in range(20)]


def step_fn(model, optimizer, scaler=None):
    def step(x, y):
        with gt.autocast("cpu", dtype=gt.bfloat16, enabled=scaler is not None):
            loss = F.cross_entropy(model(x).float(), y)
        optimizer.zero_grad()
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss
    return step


@pytest.mark.parametrize("optimizer", ["Adam", "AdamW"])
def test_a_compiled_train_step_with_adam_keeps_one_graph(counter, optimizer):
    model, data = model_and_data()
    twin = copy.deepcopy(model)
    make = getattr(gt.optim, optimizer)
    eager = step_fn(twin, make(twin.parameters(), lr=1e-2))
    compiled = gt.compile(step_fn(model, make(model.parameters(), lr=1e-2)), backend=counter)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no recompile-limit warning
        losses = [(compiled(x, y).item(), eager(x, y).item()) for x, y in data]
    for got, expected in losses:
        assert got == pytest.approx(expected, rel=1e-5, abs=1e-6)
    for p, q in zip(model.parameters(), twin.parameters()):
        assert gt.allclose(p, q, atol=1e-5)
    graphs_after_warmup = counter.compiles
    compiled(*data[0])
    assert counter.compiles == graphs_after_warmup <= 3


def test_a_compiled_optimizer_step_matches_eager():
    model, data = model_and_data()
    twin = copy.deepcopy(model)
    optimizer, reference = (gt.optim.Adam(m.parameters(), lr=1e-2) for m in (model, twin))
    step = gt.compile(optimizer.step)
    for x, y in data[:5]:
        for m in (model, twin):
            F.cross_entropy(m(x), y).backward()
        step()
        reference.step()
        optimizer.zero_grad()
        reference.zero_grad()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert gt.allclose(p, q, atol=1e-6)    # the first step's state is made captured


def test_autocast_inside_a_compiled_function():
    x, w = gt.randn(4, 8), gt.randn(8, 8)

    def f(x, w):
        with gt.autocast("cpu", dtype=gt.bfloat16):
            return (x @ w).relu()

    out = gt.compile(f)(x, w)
    assert out.dtype == gt.bfloat16
    assert gt.equal(out, f(x, w))


def test_grad_scaler_inside_a_compiled_train_step():
    model, data = model_and_data()
    twin = copy.deepcopy(model)
    eager = step_fn(twin, gt.optim.SGD(twin.parameters(), lr=0.1), gt.amp.GradScaler("cpu"))
    compiled = gt.compile(step_fn(model, gt.optim.SGD(model.parameters(), lr=0.1),
                                  gt.amp.GradScaler("cpu")))
    for x, y in data[:5]:
        assert compiled(x, y).item() == pytest.approx(eager(x, y).item(), rel=1e-2)
    for p, q in zip(model.parameters(), twin.parameters()):
        assert gt.allclose(p, q, atol=1e-2)
