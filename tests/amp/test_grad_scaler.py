"""glasstorch.amp.GradScaler against torch.amp.GradScaler("cpu"): the scale sequence, growth
tracker and parameters over training steps with injected inf/nan gradients, state_dict,
errors, the disabled path, and glasstorch's step_skipped / no-misleading-warning additions."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import assert_same, oracle_torch, to_numpy

W = np.array([[0.5, -0.25, 1.0], [0.75, 0.125, -0.5]], dtype=np.float32)
B = np.array([0.1, -0.2], dtype=np.float32)
X = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
Y = np.array([[1.0, 0.0], [0.5, -1.0], [0.0, 2.0], [1.5, 0.5]], dtype=np.float32)
BAD = {2: float("inf"), 3: float("nan"), 7: float("-inf")}    # step -> injected grad value


def _setup(lib, optim="sgd", **scaler_kw):
    w = lib.tensor(W, requires_grad=True)
    b = lib.tensor(B, requires_grad=True)
    opt = (lib.optim.SGD([w, b], lr=0.1, momentum=0.9) if optim == "sgd"
           else lib.optim.Adam([w, b], lr=0.01))
    return w, b, opt, lib.amp.GradScaler("cpu", **scaler_kw)


def _train(lib, steps=12, optim="sgd", **scaler_kw):
    """Runs the usual scaled loop; records (scale, tracker, step result skipped?) per step."""
    w, b, opt, scaler = _setup(lib, optim, **scaler_kw)
    x, y = lib.tensor(X), lib.tensor(Y)
    record = []
    for i in range(steps):
        opt.zero_grad()
        loss = ((x @ w.t() + b - y) ** 2).mean()
        scaler.scale(loss).backward()
        if i in BAD:
            with lib.no_grad():
                w.grad[1, 2] = BAD[i]
        before = to_numpy(w).copy()
        scaler.step(opt)
        unchanged = np.array_equal(before, to_numpy(w))
        scaler.update()
        record.append((scaler.get_scale(), scaler._get_growth_tracker(), unchanged))
    return w, b, scaler, record


@pytest.mark.parametrize("optim", ["sgd", "adam"])
def test_training_matches_torch(optim):
    torch = oracle_torch()
    kw = dict(init_scale=2.0 ** 10, growth_interval=3)
    gw, gb, gs, grec = _train(gt, optim=optim, **kw)
    tw, tb, ts, trec = _train(torch, optim=optim, **kw)
    assert grec == trec
    for i, (_, tracker, unchanged) in enumerate(grec):
        assert unchanged == (i in BAD)
        if i in BAD:
            assert tracker == 0
    scales = [r[0] for r in grec]
    assert scales[2] == scales[1] / 2                               # backed off
    assert any(b == 2 * a for a, b in zip(scales, scales[1:]))     # and grew again
    assert_same(gw, tw, rtol=1e-5, atol=1e-6)
    assert_same(gb, tb, rtol=1e-5, atol=1e-6)
    assert gs.state_dict() == ts.state_dict()
    assert_same(gs._scale, ts._scale)
    assert_same(gs._growth_tracker, ts._growth_tracker)


def test_scale_outputs_like_torch():
    torch = oracle_torch()
    gs, ts = gt.amp.GradScaler("cpu", init_scale=8.0), torch.amp.GradScaler("cpu", init_scale=8.0)
    a = np.array([1.0, -2.0], dtype=np.float32)
    assert_same(gs.scale(gt.tensor(a)), ts.scale(torch.tensor(a)))
    assert_same(gs._scale, ts._scale)
    assert_same(gs._growth_tracker, ts._growth_tracker)
    g_nested = gs.scale([gt.tensor(a), (gt.tensor(a), gt.tensor(a, dtype=gt.float64))])
    t_nested = ts.scale([torch.tensor(a), (torch.tensor(a), torch.tensor(a, dtype=torch.float64))])
    assert type(g_nested) is list and type(g_nested[1]) is tuple
    assert_same(g_nested[0], t_nested[0])
    assert_same(g_nested[1][1], t_nested[1][1])
    g_it = gs.scale(iter([gt.tensor(a)]))
    assert not isinstance(g_it, (list, tuple))
    assert_same(next(iter(g_it)), ts.scale(torch.tensor(a)))
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        gs.scale(3.0)


def test_unscale_then_step_and_fp16():
    torch = oracle_torch()
    results = []
    for lib in (gt, torch):
        w, b, opt, scaler = _setup(lib, init_scale=4.0)
        scaler.scale((w.sum() + b.sum()) * 2).backward()
        scaler.unscale_(opt)
        results.append((to_numpy(w.grad), scaler._per_optimizer_states[id(opt)]["stage"].name))
        assert scaler.step(opt) is None             # SGD.step returns None
        scaler.update()
        half = lib.zeros(2, dtype=lib.float16, requires_grad=True)
        half.grad = lib.ones(2, dtype=lib.float16)
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            scaler.unscale_(lib.optim.SGD([half], lr=0.1))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1] == "UNSCALED"


def test_step_forwards_args_and_returns_result():
    w, _, opt, scaler = _setup(gt)
    calls = []
    opt.step = lambda *a, **k: calls.append((a, k)) or "done"
    scaler.scale(w.sum()).backward()
    assert scaler.step(opt, 1, key=2) == "done"
    assert calls == [((1,), {"key": 2})]


ERRORS = [
    ("unscale_twice", RuntimeError,
     r"unscale_\(\) has already been called on this optimizer since the last update\(\)\."),
    ("unscale_after_step", RuntimeError, r"unscale_\(\) is being called after step\(\)\."),
    ("step_twice", RuntimeError, r"step\(\) has already been called since the last update\(\)\."),
    ("closure", RuntimeError, "Closure use is not currently supported if GradScaler is enabled."),
    ("no_grads", AssertionError, "No inf checks were recorded for this optimizer."),
    ("update_nothing", AssertionError, "No inf checks were recorded prior to update."),
    ("no_scale", AssertionError, "Attempted step but _scale is None."),
    ("new_scale_bad", AssertionError, "new_scale should be a float or a 1-element"),
    ("load_empty", RuntimeError, "The source state dict is empty, possibly because it was saved "
                                 "from a disabled instance of GradScaler."),
    ("growth", AssertionError, r"The growth factor must be > 1\.0\."),
    ("backoff", AssertionError, r"The backoff factor must be < 1\.0\."),
    ("pickle_mid_iteration", AssertionError, "may only be pickled at the beginning"),
]


def _provoke(lib, case):
    w, b, opt, scaler = _setup(lib)
    if case == "growth":
        lib.amp.GradScaler("cpu", growth_factor=1.0)
    if case == "backoff":
        lib.amp.GradScaler("cpu", backoff_factor=1.0)
    if case == "no_scale":
        scaler.step(opt)
    if case == "load_empty":
        scaler.load_state_dict({})
    scaler.scale(w.sum() + b.sum()).backward()
    if case == "no_grads":
        opt.zero_grad()
        scaler.step(opt)
    if case == "update_nothing":
        scaler.update()
    if case == "new_scale_bad":
        scaler.update(lib.ones(2))
    if case == "closure":
        scaler.step(opt, closure=lambda: 0.0)
    scaler.unscale_(opt)
    if case == "unscale_twice":
        scaler.unscale_(opt)
    if case == "pickle_mid_iteration":
        pickle.dumps(scaler)
    scaler.step(opt)
    if case == "unscale_after_step":
        scaler.unscale_(opt)
    if case == "step_twice":
        scaler.step(opt)


@pytest.mark.parametrize("case,exc,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(case, exc, match):
    torch = oracle_torch()
    for lib in (torch, gt):
        with pytest.raises(exc, match=match):
            _provoke(lib, case)


def test_update_new_scale():
    torch = oracle_torch()
    for lib in (gt, torch):
        w, _, opt, scaler = _setup(lib)
        scaler.scale(w.sum())
        scaler.update(8.0)
        assert scaler.get_scale() == 8.0
        scaler.update(lib.tensor(2.0))
        assert scaler.get_scale() == 2.0
        assert scaler._growth_tracker.item() == 0


def test_growth_stays_finite():
    torch = oracle_torch()
    got = []
    for lib in (gt, torch):
        w, _, opt, scaler = _setup(lib, init_scale=3.0e38, growth_interval=1)
        scaler.scale(w.sum() * 1e-38).backward()
        scaler.step(opt)
        scaler.update()
        got.append((scaler.get_scale(), scaler._get_growth_tracker()))
    assert got[0] == got[1]


def test_state_dict_round_trip_and_pickle():
    torch = oracle_torch()
    kw = dict(init_scale=2.0 ** 10, growth_interval=3)
    gs = _train(gt, steps=5, **kw)[2]
    ts = _train(torch, steps=5, **kw)[2]
    assert gs.state_dict() == ts.state_dict()
    assert list(gs.state_dict()) == list(ts.state_dict())
    fresh, used = gt.amp.GradScaler("cpu"), gt.amp.GradScaler("cpu")
    used.scale(gt.ones(1))                     # live tensors are refilled, not replaced
    for target in (fresh, used):
        target.load_state_dict(ts.state_dict())
        assert target.state_dict() == ts.state_dict()
    clone = pickle.loads(pickle.dumps(gs))
    assert clone.state_dict() == gs.state_dict() and clone._scale is None
    assert gt.amp.GradScaler("cpu").state_dict() == torch.amp.GradScaler("cpu").state_dict()


def test_getters_setters():
    s = gt.amp.GradScaler("cpu", init_scale=4.0, growth_factor=3.0, backoff_factor=0.25,
                          growth_interval=7)
    assert (s.get_scale(), s.get_growth_factor(), s.get_backoff_factor(),
            s.get_growth_interval(), s.is_enabled()) == (4.0, 3.0, 0.25, 7, True)
    s.set_growth_factor(5.0)
    s.set_backoff_factor(0.125)
    s.set_growth_interval(9)
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == \
        (5.0, 0.125, 9)


def test_cuda_without_cuda_warns_and_disables():
    torch = oracle_torch()
    caught = []
    for lib in (torch, gt):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = lib.amp.GradScaler()
        caught.append([(x.category, str(x.message)) for x in w])
        assert not s.is_enabled()
    assert caught[0] == caught[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not gt.amp.GradScaler(enabled=False).is_enabled()


def test_disabled_is_a_pass_through():
    torch = oracle_torch()
    params = []
    for lib in (gt, torch):
        w, b, opt, scaler = _setup(lib, enabled=False)
        loss = (w * w).sum() + b.sum()
        assert scaler.scale(loss) is loss
        loss.backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        assert (scaler.get_scale(), scaler.state_dict(), scaler.is_enabled()) == (1.0, {}, False)
        scaler.load_state_dict({})
        params.append(w)
    assert_same(params[0], params[1])


def test_step_skipped_indicator():
    w, _, opt, scaler = _setup(gt)
    assert scaler.step_skipped is None
    scaler.scale(w.sum()).backward()
    scaler.step(opt)
    assert scaler.step_skipped is False
    scaler.update()
    opt.zero_grad()
    scaler.scale(w.sum() * float("inf")).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.step_skipped is True
    disabled = gt.amp.GradScaler("cpu", enabled=False)
    disabled.step(opt)
    assert disabled.step_skipped is False


def _order_warnings(lib, first_grad_bad, step_first=True):
    w, _, opt, scaler = _setup(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if step_first:
            scaler.scale(w.sum() * (float("inf") if first_grad_bad else 1.0)).backward()
            scaler.step(opt)
            scaler.update()
        sched.step()
    return [str(x.message) for x in caught if "lr_scheduler.step()" in str(x.message)]


def test_no_order_warning_after_a_skipped_step():
    torch = oracle_torch()
    assert _order_warnings(torch, first_grad_bad=True)      # torch's misleading warning
    assert _order_warnings(gt, first_grad_bad=True) == []
    assert _order_warnings(gt, first_grad_bad=False) == []
    genuine = _order_warnings(gt, first_grad_bad=False, step_first=False)
    assert genuine == _order_warnings(torch, first_grad_bad=False, step_first=False)
    assert genuine and genuine[0].startswith("Detected call of `lr_scheduler.step()` before")
