"""glasstorch.optim.lr_scheduler against torch: lr (and momentum) sequences over 30 steps,
state_dict round trips, the call-order warnings and the constructors' errors."""
from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy

STEPS = 30
METRICS = [1.0, 0.9, 0.95, 0.96, 0.97, 0.8, 0.85, 0.84, 0.86, 0.87, 0.88, 0.7, 0.7, 0.71,
           0.72, 0.73, 0.74, 0.6, 0.65, 0.66, 0.67, 0.68, 0.69, 0.5, 0.55, 0.56, 0.57, 0.58,
           0.59, 0.6]


def sgd(lib, params):
    return lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.05}],
                         lr=0.1, momentum=0.9)


def adam(lib, params):
    return lib.optim.Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.02}],
                          lr=0.1)


def rmsprop(lib, params):
    return lib.optim.RMSprop(params, lr=0.01, momentum=0.5)


def _lambda(e):
    return 0.95 ** e


class Halving:
    """A callable object: its __dict__ is what LambdaLR's state_dict keeps."""

    def __init__(self):
        self.factor = 0.5

    def __call__(self, epoch):
        return self.factor ** (epoch // 5)


SCHEDULERS = {
    "StepLR": lambda S, o: S.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=0.3),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(
        o, T_0=4, T_mult=2, eta_min=0.01),
    "CosineAnnealingWarmRestarts-1": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=5),
    "LambdaLR": lambda S, o: S.LambdaLR(o, lr_lambda=_lambda),
    "LambdaLR-list": lambda S, o: S.LambdaLR(o, lr_lambda=[_lambda, Halving()]),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.9),
    "LinearLR": lambda S, o: S.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=10),
    "ConstantLR": lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=6),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o, total_iters=12, power=2.0),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, max_lr=[0.5, 0.1], total_steps=STEPS + 1),
    "OneCycleLR-3phase-linear": lambda S, o: S.OneCycleLR(
        o, max_lr=0.3, epochs=4, steps_per_epoch=8, three_phase=True, anneal_strategy="linear",
        pct_start=0.25),
    "CyclicLR": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4,
                                        step_size_down=3),
    "CyclicLR-triangular2": lambda S, o: S.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1,
                                                    step_size_up=3, mode="triangular2"),
    "CyclicLR-exp_range": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5,
                                                  mode="exp_range", gamma=0.9),
    "ReduceLROnPlateau": lambda S, o: S.ReduceLROnPlateau(o, patience=2, factor=0.5,
                                                          cooldown=1, min_lr=0.004),
    "ReduceLROnPlateau-max-abs": lambda S, o: S.ReduceLROnPlateau(
        o, mode="max", threshold_mode="abs", threshold=0.01, patience=1),
    "SequentialLR": lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.5, total_iters=5), S.ExponentialLR(o, gamma=0.9),
            S.StepLR(o, step_size=3, gamma=0.5)], milestones=[5, 15]),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler(
        [S.ConstantLR(o, factor=0.5, total_iters=4), S.ExponentialLR(o, gamma=0.9)]),
    "ChainedScheduler-cosine": lambda S, o: S.ChainedScheduler(
        [S.LinearLR(o, start_factor=0.2, total_iters=6),
         S.CosineAnnealingLR(o, T_max=10)], optimizer=o),
}
OPTIMIZERS = {"sgd": sgd, "adam": adam, "rmsprop": rmsprop}


def hyper(opt):
    """What the schedulers change: each group's lr, momentum or betas."""
    return [(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def build(lib, sched_name, opt_name):
    params = [lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True),
              lib.tensor([[0.5, 0.25]], dtype=lib.float64, requires_grad=True)]
    opt = OPTIMIZERS[opt_name](lib, params)
    sched = SCHEDULERS[sched_name](lib.optim.lr_scheduler, opt)
    return params, opt, sched


def advance(lib, params, opt, sched, start, stop):
    record = []
    for i in range(start, stop):
        opt.zero_grad()
        ((params[0] ** 2).sum() + params[1].sin().sum()).backward()
        opt.step()
        if isinstance(sched, lib.optim.lr_scheduler.ReduceLROnPlateau):
            sched.step(METRICS[i])
        else:
            sched.step()
        record.append((list(sched.get_last_lr()), hyper(opt)))
    return record


def flat(value) -> list:
    """Nested lists/tuples of numbers (None as NaN) as one flat list of floats."""
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flat(v)]
    return [math.nan if value is None else float(value)]


def cases():
    for name in SCHEDULERS:
        opts = ["sgd", "adam"] if ("Cyclic" in name or "OneCycle" in name) else ["sgd"]
        if name in ("StepLR", "CosineAnnealingLR", "ReduceLROnPlateau"):
            opts.append("rmsprop")
        for opt in opts:
            yield name, opt


CASES = list(cases())


@pytest.mark.parametrize("name,opt_name", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_sequence_matches_torch(name, opt_name):
    torch = oracle_torch()
    runs = []
    for lib in (gt, torch):
        params, opt, sched = build(lib, name, opt_name)
        first = (list(sched.get_last_lr()), hyper(opt))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            record = advance(lib, params, opt, sched, 0, STEPS)
        runs.append(([first] + record, params, opt, sched))
    (g_rec, gp, gopt, gsched), (t_rec, tp, topt, tsched) = runs
    assert len(g_rec) == len(t_rec)
    for i, (g, t) in enumerate(zip(g_rec, t_rec)):
        assert flat(g) == pytest.approx(flat(t), rel=1e-13, abs=1e-16, nan_ok=True), f"step {i}"
    for g, t in zip(gp, tp):
        np.testing.assert_allclose(to_numpy(g), to_numpy(t), rtol=1e-10)
    assert sorted(gsched.state_dict()) == sorted(tsched.state_dict())
    assert gopt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]


@pytest.mark.parametrize("name,opt_name", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_state_dict_round_trip(name, opt_name):
    """Stop after 10 steps, restore scheduler and optimizer into fresh ones, continue:
    the same lrs as an uninterrupted run."""
    params, opt, sched = build(gt, name, opt_name)
    straight = advance(gt, params, opt, sched, 0, STEPS)
    params, opt, sched = build(gt, name, opt_name)
    advance(gt, params, opt, sched, 0, 10)
    sched_sd = copy.deepcopy(sched.state_dict())
    opt_sd = copy.deepcopy(opt.state_dict())
    values = [to_numpy(p) for p in params]
    params2, opt2, sched2 = build(gt, name, opt_name)
    with gt.no_grad():
        for p, v in zip(params2, values):
            p.copy_(gt.tensor(v))
    sched2.load_state_dict(sched_sd)
    opt2.load_state_dict(opt_sd)
    resumed = advance(gt, params2, opt2, sched2, 10, STEPS)
    assert resumed == straight[10:]


def test_lambda_state_dict_keeps_callable_objects_state():
    params, opt, sched = build(gt, "LambdaLR-list", "sgd")
    sched.lr_lambdas[1].factor = 0.25
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [None, {"factor": 0.25}]
    _, _, fresh = build(gt, "LambdaLR-list", "sgd")
    fresh.load_state_dict(sd)
    assert fresh.lr_lambdas[1].factor == 0.25
    assert "lr_lambdas" in sd


def test_step_before_optimizer_step_warns():
    torch = oracle_torch()
    for lib in (gt, torch):
        params, opt, sched = build(lib, "StepLR", "sgd")
        with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                             r"`optimizer.step\(\)`"):
            sched.step()


def test_overridden_optimizer_step_warns():
    torch = oracle_torch()
    for lib in (gt, torch):
        params, opt, sched = build(lib, "StepLR", "sgd")
        opt.step = lambda closure=None: None
        with pytest.warns(UserWarning, match=r"Seems like `optimizer.step\(\)` has been "
                                             "overridden"):
            sched.step()


def test_wrapping_survives_several_schedulers_and_records_the_call():
    params, opt, sched = build(gt, "StepLR", "sgd")
    wrapped = opt.step
    second = gt.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    assert opt.step is wrapped and wrapped._wrapped_by_lr_sched
    assert not getattr(opt, "_opt_called", False)
    ((params[0] ** 2).sum() + params[1].sum()).backward()
    opt.step()
    assert opt._opt_called
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
        second.step()


def test_get_lr_outside_step_warns():
    torch = oracle_torch()
    for lib in (gt, torch):
        _, _, sched = build(lib, "ExponentialLR", "sgd")
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            sched.get_lr()


@pytest.mark.parametrize("name,epochs", [("StepLR", [3, 9, 4]), ("MultiStepLR", [8, 2, 16]),
                                         ("CosineAnnealingLR", [5, 1, 12]),
                                         ("PolynomialLR", [4, 20]), ("LinearLR", [3, 12]),
                                         ("ConstantLR", [2, 7]), ("ExponentialLR", [3, 1]),
                                         ("CosineAnnealingWarmRestarts", [2.5, 9, 13.25, 1])])
def test_explicit_epoch_uses_closed_form_and_warns(name, epochs):
    torch = oracle_torch()
    out = []
    for lib in (gt, torch):
        params, opt, sched = build(lib, name, "sgd")
        ((params[0] ** 2).sum() + params[1].sum()).backward()
        opt.step()
        seq = []
        for e in epochs:
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                sched.step(e)
            warned = any("The epoch parameter in `scheduler.step()`" in str(w.message)
                         for w in rec)
            # CosineAnnealingWarmRestarts takes fractional epochs by design: no warning.
            assert warned == (name != "CosineAnnealingWarmRestarts")
            seq.append((list(sched.get_last_lr()), sched.last_epoch))
        out.append(seq)
    assert flat(out[0]) == pytest.approx(flat(out[1]), rel=1e-13)


def test_resuming_with_last_epoch():
    torch = oracle_torch()
    out = []
    for lib in (gt, torch):
        opt = sgd(lib, [lib.tensor([1.0], requires_grad=True) for _ in range(2)])
        with pytest.raises(KeyError, match="param 'initial_lr' is not specified in "
                                           "param_groups\\[0\\]"):
            lib.optim.lr_scheduler.StepLR(opt, step_size=2, last_epoch=4)
        for g in opt.param_groups:
            g["initial_lr"] = 1.0
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, last_epoch=4)
        out.append((sched.get_last_lr(), sched.last_epoch))
    assert flat(out[0]) == pytest.approx(flat(out[1]), rel=1e-13)


@pytest.mark.parametrize("build_sched,exc,message", [
    (lambda S, o: S.StepLR(object(), 3), TypeError, "object is not an Optimizer"),
    (lambda S, o: S.ConstantLR(o, factor=2.0), ValueError,
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda S, o: S.LinearLR(o, start_factor=0), ValueError,
     "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
    (lambda S, o: S.LinearLR(o, end_factor=1.5), ValueError,
     "Ending multiplicative factor expected to be between 0 and 1."),
    (lambda S, o: S.LambdaLR(o, [_lambda]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda S, o: S.MultiplicativeLR(o, 0.9), TypeError,
     "lr_lambda should be a function, but got float"),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError,
     "Expected positive integer T_0, but got 0"),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError,
     "Expected integer T_mult >= 1, but got 0"),
    (lambda S, o: S.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda S, o: S.ReduceLROnPlateau(o, mode="avg"), ValueError, "mode avg is unknown!"),
    (lambda S, o: S.ReduceLROnPlateau(o, threshold_mode="x"), ValueError,
     "threshold mode x is unknown!"),
    (lambda S, o: S.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError,
     "expected 2 min_lrs, got 1"),
    (lambda S, o: S.CyclicLR(o, 0.1, 1.0, mode="sine"), ValueError,
     "mode is invalid and scale_fn is None"),
    (lambda S, o: S.CyclicLR(o, [0.1], 1.0), ValueError,
     "base_lr must have the same length as optimizer.param_groups. base_lr has 1 values, "
     "param_groups has 2."),
    (lambda S, o: S.OneCycleLR(o, 1.0), ValueError,
     "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    (lambda S, o: S.OneCycleLR(o, 1.0, total_steps=0), ValueError,
     "Expected positive integer total_steps, but got 0"),
    (lambda S, o: S.OneCycleLR(o, 1.0, total_steps=10, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1"),
    (lambda S, o: S.OneCycleLR(o, 1.0, total_steps=10, anneal_strategy="x"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got x"),
    (lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[3]), ValueError,
     "Sequential Schedulers expects number of schedulers provided to be one more than the "
     "number of milestone points, but got number of schedulers 1 and the number of milestones "
     "to be equal to 1"),
    (lambda S, o: S.SequentialLR(o, [], milestones=[]), ValueError,
     "SequentialLR expects at least one scheduler, but got no scheduler."),
    (lambda S, o: S.ChainedScheduler([S.ReduceLROnPlateau(o)]), ValueError,
     "ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
])
def test_errors_match_torch(build_sched, exc, message):
    torch = oracle_torch()
    for lib in (gt, torch):
        _, opt, _ = build(lib, "StepLR", "sgd")
        with pytest.raises(exc) as info:
            build_sched(lib.optim.lr_scheduler, opt)
        assert str(info.value).startswith(message), str(info.value)


def test_cycle_momentum_needs_momentum():
    torch = oracle_torch()
    for lib in (gt, torch):
        p = lib.tensor([1.0], requires_grad=True)
        opt = lib.optim.Adagrad([p])
        with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
            lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=5)


def test_one_cycle_past_total_steps_raises():
    params, opt, sched = build(gt, "OneCycleLR", "sgd")
    advance(gt, params, opt, sched, 0, STEPS)
    with pytest.raises(ValueError, match=f"Tried to step {STEPS + 2} times. The specified "
                                         f"number of total steps is {STEPS + 1}"):
        advance(gt, params, opt, sched, 0, 2)


def test_tensor_lr_is_updated_in_place():
    torch = oracle_torch()
    out = []
    for lib in (gt, torch):
        p = lib.tensor([1.0], requires_grad=True)
        lr = lib.tensor(0.5)
        opt = lib.optim.SGD([p], lr=lr)
        sched = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        p.sum().backward()
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] is lr
        out.append((lr.item(), float(sched.get_last_lr()[0]), p.item()))
    assert out[0] == pytest.approx(out[1])
    assert math.isclose(out[0][0], 0.25)
