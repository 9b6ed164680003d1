"""Optimizer.load_state_dict and step check everything first, then change: malformed state
raises PyTorch's errors, and a failure leaves parameters and state as they were."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import glasstorch as gt


def params(n=3, shape=(2,)):
    return [gt.nn.Parameter(gt.full(shape, float(i + 1))) for i in range(n)]


def stepped(opt_cls, ps, steps=2, **kwargs):
    opt = opt_cls(ps, **kwargs)
    for _ in range(steps):
        for p in ps:
            p.grad = gt.ones_like(p)
        opt.step()
    return opt


def snapshot(opt, ps):
    state = {i: {k: (v.clone() if isinstance(v, gt.Tensor) else v)
                 for k, v in opt.state[p].items()} for i, p in enumerate(ps)}
    return [p.detach().clone() for p in ps], state


def assert_unchanged(before, opt, ps):
    values, state = before
    for p, v in zip(ps, values):
        assert gt.equal(p.detach(), v)
    for i, p in enumerate(ps):
        assert set(opt.state[p]) == set(state[i])
        for k, v in state[i].items():
            got = opt.state[p][k]
            assert gt.equal(got, v) if isinstance(v, gt.Tensor) else got == v


# ---- load_state_dict -----------------------------------------------------------------------

def test_group_count_and_sizes_raise_pytorchs_errors():
    torch = pytest.importorskip("torch")
    ps = params()
    opt = stepped(gt.optim.Adam, ps)
    tw = [torch.nn.Parameter(torch.ones(2)) for _ in range(3)]
    topt = torch.optim.Adam(tw)
    for bad in [{"state": {}, "param_groups": []},
                {"state": {}, "param_groups": [{"params": [0, 1]}]}]:
        with pytest.raises(ValueError) as want:
            topt.load_state_dict(copy.deepcopy(bad))
        before = snapshot(opt, ps)
        with pytest.raises(ValueError) as got:
            opt.load_state_dict(copy.deepcopy(bad))
        assert str(got.value) == str(want.value)
        assert_unchanged(before, opt, ps)


@pytest.mark.parametrize("corrupt, match", [
    (lambda s: s[2].pop("exp_avg_sq"), "parameter 2: the state has no 'exp_avg_sq', which "
                                        "Adam needs"),
    (lambda s: s[2].update(exp_avg=gt.zeros(5)), r"parameter 2: 'exp_avg' has shape \[5\], but "
                                                 r"the parameter's shape is \[2\]"),
    (lambda s: s[1].update(exp_avg="zeros"), "parameter 1: 'exp_avg' must be a tensor"),
    (lambda s: s[0].update(step=gt.zeros(3)), "parameter 0: 'step' must be a number"),
    (lambda s: s[2].update(exp_avg=gt.zeros(2, dtype=gt.complex64)), "'exp_avg' is complex"),
    (lambda s: s.update({1: [1, 2]}), "parameter 1: expected a dict of state, got list"),
])
def test_malformed_state_raises_and_changes_nothing(corrupt, match):
    ps = params()
    opt = stepped(gt.optim.Adam, ps)
    sd = copy.deepcopy(opt.state_dict())
    sd["param_groups"][0]["lr"] = 0.5
    corrupt(sd["state"])
    before = snapshot(opt, ps)
    with pytest.raises(ValueError, match=match):
        opt.load_state_dict(sd)
    assert_unchanged(before, opt, ps)
    assert opt.param_groups[0]["lr"] == 1e-3            # the groups were not replaced either


def test_a_state_of_another_optimizer_is_refused():
    ps = params()
    sgd_state = stepped(gt.optim.SGD, ps, lr=0.1, momentum=0.9).state_dict()
    opt = gt.optim.Adam(params())
    with pytest.raises(ValueError, match="the state has no 'step', which Adam needs"):
        opt.load_state_dict(sgd_state)


def test_well_formed_states_still_load():
    ps = params()
    opt = stepped(gt.optim.Adam, ps, amsgrad=True)
    sd = opt.state_dict()
    sd["state"][0]["step"] = 2                          # older files keep step as a number
    fresh = gt.optim.Adam(params(), amsgrad=True)
    fresh.load_state_dict(sd)
    first = fresh.param_groups[0]["params"][0]
    assert isinstance(fresh.state[first]["step"], gt.Tensor)
    assert fresh.state[first]["step"].item() == 2
    empty = gt.optim.SGD(params(), lr=0.1)              # SGD without momentum: no state
    empty.load_state_dict(stepped(gt.optim.SGD, params(), lr=0.1).state_dict())


def test_state_from_torch_is_validated_the_same_way():
    torch = pytest.importorskip("torch")
    tw = [torch.nn.Parameter(torch.ones(2)) for _ in range(3)]
    topt = torch.optim.RMSprop(tw, momentum=0.9, centered=True)
    for w in tw:
        w.grad = torch.ones(2)
    topt.step()
    sd = topt.state_dict()
    ps = params()
    opt = gt.optim.RMSprop(ps, momentum=0.9, centered=True)
    loaded = {"state": {k: {n: gt.tensor(v.numpy()) for n, v in s.items()}
                        for k, s in sd["state"].items()},
              "param_groups": copy.deepcopy(sd["param_groups"])}
    opt.load_state_dict(copy.deepcopy(loaded))
    del loaded["state"][1]["grad_avg"]
    with pytest.raises(ValueError, match="no 'grad_avg', which RMSprop needs"):
        gt.optim.RMSprop(params(), momentum=0.9, centered=True).load_state_dict(loaded)


# ---- step ----------------------------------------------------------------------------------

@pytest.mark.parametrize("opt_cls, kwargs, key", [
    (gt.optim.Adam, {}, "exp_avg"), (gt.optim.AdamW, {"amsgrad": True}, "max_exp_avg_sq"),
    (gt.optim.SGD, {"lr": 0.1, "momentum": 0.9}, "momentum_buffer"),
    (gt.optim.RMSprop, {"centered": True}, "grad_avg"), (gt.optim.Adagrad, {}, "sum"),
    (gt.optim.NAdam, {}, "exp_avg_sq"), (gt.optim.Rprop, {}, "step_size"),
    (gt.optim.ASGD, {}, "ax"), (gt.optim.Adamax, {}, "exp_inf"),
    (gt.optim.Adadelta, {}, "acc_delta"), (gt.optim.RAdam, {}, "exp_avg"),
])
def test_a_step_failing_on_the_third_parameter_changes_nothing(opt_cls, kwargs, key):
    ps = params()
    opt = stepped(opt_cls, ps, **kwargs)
    opt.state[ps[2]][key] = gt.zeros(5)                 # corrupted behind the optimizer's back
    for p in ps:
        p.grad = gt.full_like(p, 0.5)
    before = snapshot(opt, ps)
    with pytest.raises(ValueError, match=f"parameter 2: '{key}' has shape"):
        opt.step()
    assert_unchanged(before, opt, ps)


def test_torch_fails_midway_where_glasstorch_fails_first():
    torch = pytest.importorskip("torch")
    tw = [torch.nn.Parameter(torch.full((2,), float(i + 1))) for i in range(3)]
    topt = torch.optim.Adam(tw, foreach=False)
    for w in tw:
        w.grad = torch.ones(2)
    topt.step()
    topt.state[tw[2]]["exp_avg"] = torch.zeros(5)
    first = tw[0].detach().clone()
    with pytest.raises(RuntimeError):
        topt.step()
    assert not torch.equal(tw[0].detach(), first)        # PyTorch: the first one changed


def test_bad_hyperparameters_in_a_later_group_change_nothing():
    a, b = params(2), params(1)
    opt = gt.optim.SGD([{"params": a}, {"params": b}], lr=0.1, momentum=0.9)
    for p in a + b:
        p.grad = gt.ones_like(p)
    opt.step()
    opt.param_groups[1]["lr"] = "0.1"
    before = snapshot(opt, a + b)
    with pytest.raises(TypeError, match="param group 1: 'lr' must be a number, got str"):
        opt.step()
    assert_unchanged(before, opt, a + b)
    opt.param_groups[1]["lr"] = 0.1
    opt.param_groups[0]["betas"] = None                 # not an SGD option: ignored
    opt.step()


def test_the_check_runs_after_the_closure_computed_the_gradients():
    ps = params()
    opt = stepped(gt.optim.Adam, ps)
    opt.state[ps[2]]["exp_avg"] = gt.zeros(5)
    calls = []

    def closure():
        calls.append(1)
        for p in ps:
            p.grad = gt.ones_like(p)
        return gt.tensor(1.0)
    before = snapshot(opt, ps)
    with pytest.raises(ValueError, match="'exp_avg' has shape"):
        opt.step(closure)
    assert calls == [1]
    assert_unchanged(before, opt, ps)
    opt.state[ps[2]]["exp_avg"] = gt.zeros(2)
    assert opt.step(closure=closure).item() == 1.0


def test_lbfgs_still_steps_with_its_own_state_layout():
    w = gt.nn.Parameter(gt.tensor([1.5, -0.5]))
    opt = gt.optim.LBFGS([w], lr=1, max_iter=5)

    def closure():
        opt.zero_grad()
        loss = ((w - 3) ** 2).sum()
        loss.backward()
        return loss
    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(w.detach().numpy(), [3, 3], atol=1e-4)
