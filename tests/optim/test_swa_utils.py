"""optim.swa_utils against PyTorch: AveragedModel (SWA and EMA, with and without buffers),
SWALR's learning rates, update_bn."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))


def _train_and_average(lib, **kwargs):
    model = _model(lib)
    averaged = lib.optim.swa_utils.AveragedModel(model, **kwargs)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    x = lib.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3))
    for _ in range(4):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        averaged.update_parameters(model)
    return ({k: v.detach().numpy() for k, v in averaged.state_dict().items()},
            averaged(x).detach().numpy())


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_fn", "buffers"])
def test_averaged_model_matches_pytorch(kind):
    results = []
    for lib in (gt, torch):
        S = lib.optim.swa_utils
        kwargs = {"swa": {}, "ema": {"multi_avg_fn": S.get_ema_multi_avg_fn(0.9)},
                  "ema_fn": {"avg_fn": S.get_ema_avg_fn(0.8)},
                  "buffers": {"use_buffers": True}}[kind]
        results.append(_train_and_average(lib, **kwargs))
    (ours, our_out), (theirs, their_out) = results
    assert list(ours) == list(theirs)
    for key in ours:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)
    np.testing.assert_allclose(our_out, their_out, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("strategy,epochs", [("cos", 3), ("linear", 4), ("cos", 0)])
def test_swalr_matches_pytorch(strategy, epochs):
    rates = []
    for lib in (gt, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=epochs,
                                          anneal_strategy=strategy)
        seen = []
        for _ in range(6):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr()[0])
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12)
    for lib in (gt, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)
        with pytest.raises(ValueError, match="anneal_strategy must be one of"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="step")


def test_update_bn_matches_pytorch():
    stats = []
    for lib in (gt, torch):
        model = _model(lib)
        data = [lib.tensor(np.full((4, 3), i, np.float32)) for i in range(3)]
        lib.optim.swa_utils.update_bn(data, model)
        bn = model[1]
        stats.append((bn.running_mean.numpy(), bn.running_var.numpy(), bn.momentum,
                      int(bn.num_batches_tracked)))
    np.testing.assert_allclose(stats[0][0], stats[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats[0][1], stats[1][1], rtol=1e-5, atol=1e-6)
    assert stats[0][2:] == stats[1][2:]
