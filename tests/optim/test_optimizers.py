"""glasstorch.optim optimizers against torch.optim: the same float64 problem stepped in both
libraries gives the same parameters and the same state_dict; round trips; errors; hooks."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy

RNG = np.random.default_rng(1234)
X = RNG.standard_normal((6, 3))
Y = RNG.standard_normal((6, 4))
INIT = [RNG.standard_normal((3, 4)), RNG.standard_normal(4), RNG.standard_normal(5)]
C = RNG.standard_normal(5)


def make_params(lib, init=INIT):
    return [lib.tensor(a, dtype=lib.float64).requires_grad_() for a in init]


def loss_fn(lib, params):
    """A smooth non-quadratic loss of all three parameters."""
    w, b, v = params
    x, y, c = (lib.tensor(a, dtype=lib.float64) for a in (X, Y, C))
    z = x @ w + b
    return ((z - y) ** 2).mean() + z.tanh().sum() + 0.1 * (v ** 4).sum() + (v * c).sum()


def groups_of(params, grouped, group_kwargs):
    if not grouped:
        return params
    return [{"params": params[:2], **group_kwargs}, {"params": params[2:]}]


def run(lib, name, kwargs, steps, grouped=False, group_kwargs=None, init=INIT, opt=None):
    params = make_params(lib, init)
    if opt is None:
        opt = getattr(lib.optim, name)(groups_of(params, grouped, group_kwargs or {}),
                                       **kwargs)
    else:
        opt = opt(params)
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(lib, params).backward()
        opt.step()
    return params, opt


def assert_params_close(gparams, tparams, rtol=1e-10):
    for g, t in zip(gparams, tparams):
        np.testing.assert_allclose(to_numpy(g), to_numpy(t), rtol=rtol, atol=1e-12)


def assert_state_dict_same(gsd, tsd, rtol=1e-10):
    assert list(gsd) == list(tsd) == ["state", "param_groups"]
    assert list(gsd["state"]) == list(tsd["state"])
    for k in tsd["state"]:
        gs, ts = gsd["state"][k], tsd["state"][k]
        assert list(gs) == list(ts), (gs.keys(), ts.keys())
        for key in ts:
            if hasattr(ts[key], "dtype"):
                assert str(gs[key].dtype) == str(ts[key].dtype), key
                assert tuple(gs[key].shape) == tuple(ts[key].shape), key
                np.testing.assert_allclose(to_numpy(gs[key]), to_numpy(ts[key]), rtol=rtol,
                                           atol=1e-12, err_msg=key)
            else:
                assert gs[key] == ts[key], key
    assert len(gsd["param_groups"]) == len(tsd["param_groups"])
    for gg, tg in zip(gsd["param_groups"], tsd["param_groups"]):
        assert gg == tg


CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.05, maximize=True, foreach=False, capturable=False, fused=False)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.2, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, centered=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.3, weight_decay=0.1,
                     maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.5, 0.6), weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, betas=(0.5, 0.6), weight_decay=0.1, decoupled_weight_decay=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08), maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                    enumerate(CASES)])
def test_matches_torch(name, kwargs, kernel_path):
    torch = oracle_torch()
    gp, gopt = run(gt, name, kwargs, 7)
    tp, topt = run(torch, name, kwargs, 7)
    assert_params_close(gp, tp)
    assert_state_dict_same(gopt.state_dict(), topt.state_dict())
    assert repr(gopt) == repr(topt)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "NAdam", "RAdam"])
def test_param_groups_with_their_own_lr(name, kernel_path):
    torch = oracle_torch()
    kwargs = dict(lr=0.02, weight_decay=0.05)
    if name == "SGD":
        kwargs["momentum"] = 0.9
    gp, gopt = run(gt, name, kwargs, 6, grouped=True, group_kwargs=dict(lr=0.2))
    tp, topt = run(torch, name, kwargs, 6, grouped=True, group_kwargs=dict(lr=0.2))
    assert_params_close(gp, tp)
    gsd, tsd = gopt.state_dict(), topt.state_dict()
    assert_state_dict_same(gsd, tsd)
    assert [g["params"] for g in gsd["param_groups"]] == [[0, 1], [2]]
    assert [g["lr"] for g in gsd["param_groups"]] == [0.2, 0.02]


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.05, momentum=0.9)),
                                         ("Adam", dict(lr=0.05, amsgrad=True)),
                                         ("RMSprop", dict(centered=True, momentum=0.3)),
                                         ("Adagrad", dict(lr_decay=0.1)),
                                         ("NAdam", dict()), ("Adamax", dict()),
                                         ("Adadelta", dict()), ("RAdam", dict()),
                                         ("Rprop", dict()), ("ASGD", dict(t0=2))])
def test_state_dict_round_trip(name, kwargs):
    """Save after 4 steps, load a deep copy into a fresh optimizer on copied parameters,
    continue 4 steps; torch doing the same gives the same parameters and state."""
    torch = oracle_torch()
    out = []
    for lib in (gt, torch):
        params, opt = run(lib, name, kwargs, 4)
        sd = copy.deepcopy(opt.state_dict())
        params2, opt2 = run(lib, name, kwargs, 0, init=[to_numpy(p) for p in params])
        opt2.load_state_dict(sd)
        assert [g["params"] for g in opt2.param_groups] == [params2]
        for _ in range(4):
            opt2.zero_grad()
            loss_fn(lib, params2).backward()
            opt2.step()
        out.append((params2, opt2.state_dict()))
    assert_params_close(out[0][0], out[1][0])
    assert_state_dict_same(out[0][1], out[1][1])
    if name not in ("NAdam", "ASGD"):  # loading casts their float32 scalar state
        # (mu_product; eta, mu) to the parameter's float64, as torch does
        tp, _ = run(torch, name, kwargs, 8)
        assert_params_close(out[0][0], tp)


def test_load_state_dict_casts_state_to_parameter_dtype_but_keeps_step():
    torch = oracle_torch()
    gp, gopt = run(gt, "Adam", dict(lr=0.1), 2)
    sd = copy.deepcopy(gopt.state_dict())
    for s in sd["state"].values():
        s["exp_avg"] = s["exp_avg"].float()
    gopt.load_state_dict(sd)
    tp, topt = run(torch, "Adam", dict(lr=0.1), 2)
    tsd = copy.deepcopy(topt.state_dict())
    for s in tsd["state"].values():
        s["exp_avg"] = s["exp_avg"].float()
    topt.load_state_dict(tsd)
    for k in (0, 1, 2):
        for key in ("step", "exp_avg"):
            assert str(gopt.state[gp[k]][key].dtype) == str(topt.state[tp[k]][key].dtype)


def test_load_state_dict_errors():
    torch = oracle_torch()
    for lib in (gt, torch):
        params = make_params(lib)
        opt = lib.optim.SGD(params, lr=0.1)
        other = lib.optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1)
        with pytest.raises(ValueError, match="different number of parameter groups"):
            opt.load_state_dict(other.state_dict())
        small = lib.optim.SGD(params[:2], lr=0.1)
        with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
            opt.load_state_dict(small.state_dict())


def test_parameters_without_grad_are_skipped():
    torch = oracle_torch()
    results = []
    for lib in (gt, torch):
        params = make_params(lib)
        frozen = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        opt = lib.optim.Adam(params + [frozen], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss_fn(lib, params).backward()
            opt.step()
        results.append((opt.state_dict(), to_numpy(frozen)))
    assert_state_dict_same(results[0][0], results[1][0])
    assert list(results[0][0]["state"]) == [0, 1, 2]
    np.testing.assert_array_equal(results[0][1], [1.0, 2.0])


@pytest.mark.parametrize("name,kwargs,rtol", [
    ("LBFGS", dict(lr=0.5, max_iter=5, history_size=3), 1e-9),
    ("LBFGS", dict(lr=1, max_iter=6, history_size=4, line_search_fn="strong_wolfe"), 1e-8),
])
def test_lbfgs_matches_torch(name, kwargs, rtol):
    torch = oracle_torch()
    out = []
    for lib in (gt, torch):
        params = make_params(lib)
        opt = lib.optim.LBFGS(params, **kwargs)
        losses = []

        def closure():
            opt.zero_grad()
            loss = loss_fn(lib, params)
            loss.backward()
            return loss

        for _ in range(3):
            losses.append(opt.step(closure).item())
        out.append((params, losses, opt.state_dict()))
    (gp, gl, gsd), (tp, tl, tsd) = out
    assert_params_close(gp, tp, rtol=rtol)
    np.testing.assert_allclose(gl, tl, rtol=rtol)
    gs, ts = gsd["state"][0], tsd["state"][0]
    assert list(gs) == list(ts)
    assert gs["func_evals"] == ts["func_evals"] and gs["n_iter"] == ts["n_iter"]
    assert len(gs["old_dirs"]) == len(ts["old_dirs"])
    np.testing.assert_allclose(to_numpy(gs["d"]), to_numpy(ts["d"]), rtol=1e-6, atol=1e-9)


def test_lbfgs_rejects_groups_and_unknown_line_search():
    params = make_params(gt)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        gt.optim.LBFGS([{"params": params[:1]}, {"params": params[1:]}])
    opt = gt.optim.LBFGS(params, line_search_fn="backtracking")
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(lambda: _backward(loss_fn(gt, params)))


def _backward(loss):
    loss.backward()
    return loss


def test_closure_runs_with_grad_and_step_without():
    torch = oracle_torch()
    for lib in (gt, torch):
        params = make_params(lib)
        seen = []

        def closure():
            seen.append(lib.is_grad_enabled())
            opt.zero_grad()
            return _backward(loss_fn(lib, params))

        opt = lib.optim.SGD(params, lr=0.1)
        with lib.no_grad():
            loss = opt.step(closure)
        assert seen == [True]
        assert loss.grad_fn is not None  # the closure built a graph despite no_grad
        assert lib.is_grad_enabled()
        assert all(p.is_leaf and p.requires_grad for p in params)


def test_zero_grad():
    for set_to_none in (True, False):
        params = make_params(gt)
        opt = gt.optim.SGD(params, lr=0.1)
        loss_fn(gt, params).backward()
        opt.zero_grad(set_to_none=set_to_none)
        for p in params:
            if set_to_none:
                assert p.grad is None
            else:
                assert p.grad is not None and not p.grad.any().item()
    params = make_params(gt)
    opt = gt.optim.SGD(params)
    loss_fn(gt, params).backward()
    opt.zero_grad()
    assert all(p.grad is None for p in params)


def test_step_hooks():
    params = make_params(gt)
    opt = gt.optim.SGD(params, lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    post = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    loss_fn(gt, params).backward()
    opt.step()
    assert calls == [("pre", True), ("post", True)]
    pre.remove()
    post.remove()
    opt.step()
    assert len(calls) == 2
    handle = gt.optim.optimizer.register_optimizer_step_pre_hook(
        lambda o, a, k: calls.append("global"))
    opt.step()
    handle.remove()
    opt.step()
    assert calls[2:] == ["global"]


def test_pre_hook_may_replace_arguments():
    params = make_params(gt)
    opt = gt.optim.SGD(params, lr=0.1)
    seen = []

    def closure():
        seen.append(1)
        return _backward(loss_fn(gt, params))

    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": closure}))
    opt.step()
    assert seen == [1]
    opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()


def test_add_param_group_and_defaults():
    torch = oracle_torch()
    for lib in (gt, torch):
        params = make_params(lib)
        opt = lib.optim.SGD(params[:2], lr=0.1, momentum=0.5)
        opt.add_param_group({"params": params[2], "lr": 0.01})
        assert opt.param_groups[1]["params"] == [params[2]]
        assert opt.param_groups[1]["lr"] == 0.01
        assert opt.param_groups[1]["momentum"] == 0.5
        with pytest.raises(ValueError, match="some parameters appear in more than one "
                                             "parameter group"):
            opt.add_param_group({"params": [params[0]]})
        with pytest.raises(TypeError, match="param_group must be a dict"):
            opt.add_param_group(params[0])
        with pytest.raises(TypeError, match="ordering of tensors in sets"):
            opt.add_param_group({"params": {params[0]}})


@pytest.mark.parametrize("build,exc,message", [
    (lambda lib, p: lib.optim.SGD([], lr=0.1), ValueError,
     "optimizer got an empty parameter list"),
    (lambda lib, p: lib.optim.SGD(p[0], lr=0.1), TypeError,
     "params argument given to the optimizer should be an iterable of Tensors or dicts, but "
     "got torch.DoubleTensor"),
    (lambda lib, p: lib.optim.SGD(p, lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda lib, p: lib.optim.SGD(p, lr=0.1, momentum=-0.5), ValueError,
     "Invalid momentum value: -0.5"),
    (lambda lib, p: lib.optim.SGD(p, lr=0.1, nesterov=True), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda lib, p: lib.optim.Adam(p, betas=(1.0, 0.9)), ValueError,
     "Invalid beta parameter at index 0: 1.0"),
    (lambda lib, p: lib.optim.Adam(p, betas=(0.9, -0.1)), ValueError,
     "Invalid beta parameter at index 1: -0.1"),
    (lambda lib, p: lib.optim.Adam(p, eps=-1e-3), ValueError, "Invalid epsilon value: -0.001"),
    (lambda lib, p: lib.optim.AdamW(p, weight_decay=-1.0), ValueError,
     "Invalid weight_decay value: -1.0"),
    (lambda lib, p: lib.optim.Adadelta(p, rho=1.5), ValueError, "Invalid rho value: 1.5"),
    (lambda lib, p: lib.optim.RMSprop(p, alpha=-0.5), ValueError, "Invalid alpha value: -0.5"),
    (lambda lib, p: lib.optim.Adagrad(p, lr_decay=-0.5), ValueError,
     "Invalid lr_decay value: -0.5"),
    (lambda lib, p: lib.optim.NAdam(p, momentum_decay=-0.5), ValueError,
     "Invalid momentum_decay value: -0.5"),
    (lambda lib, p: lib.optim.Rprop(p, etas=(1.5, 1.2)), ValueError,
     "Invalid eta values: 1.5, 1.2"),
    (lambda lib, p: lib.optim.SGD([p[0] * 2], lr=0.1), ValueError,
     "can't optimize a non-leaf Tensor"),
    (lambda lib, p: lib.optim.SGD([1.0], lr=0.1), TypeError,
     "optimizer can only optimize Tensors, but one of the params is float"),
    (lambda lib, p: lib.optim.Adam(p, lr=lib.tensor([0.1, 0.2])), ValueError,
     "Tensor lr must be 1-element"),
])
def test_errors_match_torch(build, exc, message):
    torch = oracle_torch()
    for lib in (gt, torch):
        with pytest.raises(exc) as info:
            build(lib, make_params(lib))
        assert str(info.value) == message


def test_duplicate_parameter_warns():
    torch = oracle_torch()
    for lib in (gt, torch):
        p = make_params(lib)
        with pytest.warns(UserWarning, match="parameter group with duplicate parameters"):
            lib.optim.SGD([p[0], p[0]], lr=0.1)


def test_state_is_keyed_by_parameter_and_defaults_exposed():
    params = make_params(gt)
    opt = gt.optim.Adam(params, lr=0.1)
    assert opt.defaults["betas"] == (0.9, 0.999) and opt.defaults["lr"] == 0.1
    assert len(opt.state) == 0
    loss_fn(gt, params).backward()
    opt.step()
    assert set(map(id, opt.state)) == set(map(id, params))
    assert opt.state[params[0]]["step"].dtype == gt.float32
    assert opt.state[params[0]]["step"].item() == 1.0


def test_step_dtype_follows_default_dtype():
    torch = oracle_torch()
    dtypes = []
    for lib in (gt, torch):
        prev = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            params = make_params(lib)
            opt = lib.optim.Adagrad(params)
            dtypes.append(str(opt.state[params[0]]["step"].dtype))
        finally:
            lib.set_default_dtype(prev)
    assert dtypes[0] == dtypes[1] == "torch.float64"


def test_float32_parameters_match_torch():
    torch = oracle_torch()
    init = [a.astype(np.float32) for a in INIT]
    out = []
    for lib in (gt, torch):
        params = [lib.tensor(a).requires_grad_() for a in init]
        opt = lib.optim.NAdam(params, lr=0.05)
        for _ in range(5):
            opt.zero_grad()
            w, b, v = params
            x = lib.tensor(X.astype(np.float32))
            ((x @ w + b).tanh().sum() + (v * v).sum()).backward()
            opt.step()
        out.append(params)
        assert str(opt.state[params[0]]["mu_product"].dtype) == "torch.float32"
    assert_params_close(out[0], out[1], rtol=1e-5)


def test_no_warnings_during_normal_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(gt, "Adam", dict(lr=0.1), 2)


COMPLEX_CASES = [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=0.05, amsgrad=True)),
                 ("AdamW", dict(lr=0.05)),
                 ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
                 ("Adagrad", dict(lr=0.1)), ("Adadelta", dict(weight_decay=0.1)),
                 ("Adamax", dict(lr=0.05)), ("NAdam", dict(lr=0.05, weight_decay=0.1)),
                 ("RAdam", dict(lr=0.05, betas=(0.5, 0.6))), ("Rprop", dict(lr=0.05)),
                 ("ASGD", dict(lr=0.05, t0=2))]


@pytest.mark.parametrize("name,kwargs", COMPLEX_CASES, ids=[n for n, _ in COMPLEX_CASES])
def test_complex_parameters_match_torch(name, kwargs):
    """Adaptive optimizers treat real and imaginary parts as separate coordinates."""
    torch = oracle_torch()
    z0 = INIT[2] + 1j * RNG.standard_normal(5)
    out = []
    for lib in (gt, torch):
        z = lib.tensor(z0, dtype=lib.complex128, requires_grad=True)
        c = lib.tensor(C, dtype=lib.float64)
        opt = getattr(lib.optim, name)([z], **kwargs)
        for _ in range(5):
            opt.zero_grad()
            ((z * z.conj()).real.sum() + (z.real ** 3 * c).sum() + (z.imag * c).sum()).backward()
            opt.step()
        out.append((z, opt.state_dict()))
    assert_params_close([out[0][0]], [out[1][0]])
    assert_state_dict_same(out[0][1], out[1][1])


def test_state_dict_hooks():
    params = make_params(gt)
    opt = gt.optim.SGD(params, lr=0.1, momentum=0.9)
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    assert calls == ["pre"] and sd["extra"] == 1
    opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append("load-pre"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load-post"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("first"), prepend=True)
    opt.load_state_dict(sd)
    assert calls == ["pre", "load-pre", "first", "load-post"]


def test_user_defined_optimizer_gets_hooks_and_schedulers():
    torch = oracle_torch()
    out = []
    for lib in (gt, torch):
        class SignSGD(lib.optim.Optimizer):
            def __init__(self, params, lr=0.1):
                super().__init__(params, dict(lr=lr))

            @lib.no_grad()
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.add_(p.grad.sign(), alpha=-group["lr"])

        params = make_params(lib)
        opt = SignSGD(params)
        calls = []
        opt.register_step_post_hook(lambda o, a, k: calls.append(1))
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        for _ in range(5):
            opt.zero_grad()
            loss_fn(lib, params).backward()
            opt.step()
            sched.step()
        assert calls == [1] * 5
        out.append(params)
        assert repr(opt).startswith("SignSGD (\nParameter Group 0\n    initial_lr: 0.1\n")
    assert_params_close(out[0], out[1])


@pytest.mark.parametrize("name,kwargs,state", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1), ["momentum_buffer"]),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), ["momentum_buffer"]),
    ("RAdam", dict(lr=0.1), ["exp_avg", "exp_avg_sq"]),
    ("RAdam", dict(lr=0.1, betas=(0.5, 0.6), weight_decay=0.1), ["exp_avg", "exp_avg_sq"]),
])
def test_differentiable_step_matches_torch_gradients(name, kwargs, state):
    """Gradients flow from the updated parameter and state back to the old ones."""
    torch = oracle_torch()
    init = [INIT[2], C, INIT[2] * 0.5, np.abs(C) + 0.1]
    out = []
    for lib in (gt, torch):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True)
                  for a in init[:2 + len(state)]]
        p = leaves[0].clone()
        p.grad = leaves[1]
        opt = getattr(lib.optim, name)([p], differentiable=True, **kwargs)
        opt.state[p].update({k: v.clone() for k, v in zip(state, leaves[2:])})
        if name == "RAdam":
            opt.state[p]["step"] = lib.tensor(6.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading .grad of a non-leaf
            opt.step()
        outs = [p] + [v for v in opt.state[p].values() if v.requires_grad]
        sum((o * o).sum() for o in outs).backward()
        out.append([to_numpy(x.grad) for x in leaves])
    for g, t in zip(*out):
        np.testing.assert_allclose(g, t, rtol=1e-10)


def test_differentiable_refused_where_unsupported():
    with pytest.raises(RuntimeError, match="Adam does not support differentiable=True"):
        gt.optim.Adam(make_params(gt), differentiable=True)


def test_differentiable_sgd_through_tensor_lr_and_weight_decay():
    torch = oracle_torch()
    out = []
    for lib in (gt, torch):
        w0 = lib.tensor(INIT[2], dtype=lib.float64, requires_grad=True)
        lr = lib.tensor(0.1, dtype=lib.float64, requires_grad=True)
        wd = lib.tensor(0.05, dtype=lib.float64, requires_grad=True)
        p = w0.clone()
        p.grad = lib.tensor(C, dtype=lib.float64) * w0
        opt = lib.optim.SGD([p], lr=lr, weight_decay=wd, differentiable=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading .grad of a non-leaf
            opt.step()
        (p ** 2).sum().backward()
        out.append([to_numpy(x.grad) for x in (w0, lr, wd)])
    for g, t in zip(*out):
        np.testing.assert_allclose(g, t, rtol=1e-10)


def test_required_hyper_parameter():
    torch = oracle_torch()
    import importlib
    for lib in (gt, torch):
        required = importlib.import_module(lib.__name__ + ".optim.optimizer").required

        class Needy(lib.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, dict(lr=required, k=2))

        p = make_params(lib)
        with pytest.raises(ValueError, match="parameter group didn't specify a value of "
                                             "required optimization parameter lr"):
            Needy(p)
        opt = Needy([{"params": p, "lr": 0.5}])
        assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["k"] == 2


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.3, 0.99), weight_decay=0.1, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.05, betas=(0.7, 0.9), weight_decay=0.2, amsgrad=True)),
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
])
def test_array_update_matches_torch_values_and_versions(name, kwargs):
    """float32 parameters (contiguous and transposed) take the in-place NumPy update;
    float16 ones the op-by-op one: both as torch, version counters included."""
    torch = oracle_torch()
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((4, 3)).astype(np.float32),
              rng.standard_normal((3, 5)).astype(np.float32),
              rng.standard_normal(6).astype(np.float16)]
    results = []
    for lib in (gt, torch):
        params = [lib.tensor(arrays[0]).requires_grad_(),
                  lib.tensor(arrays[1]).t().detach().requires_grad_(),
                  lib.tensor(arrays[2]).requires_grad_()]
        opt = getattr(lib.optim, name)(params, **kwargs)
        for i in range(4):
            opt.zero_grad()
            loss = ((params[0] * (i + 1.0)).sin().sum() + (params[1] ** 2).sum()
                    + params[2].float().cos().sum())
            loss.backward()
            opt.step()
        states = [opt.state[p] for p in params]
        results.append((params, [p._version for p in params],
                        [{k: v._version for k, v in s.items()} for s in states], states))
    (gp, gv, gsv, gs), (tp, tv, tsv, ts) = results
    assert gv == tv and gsv == tsv

    def close(a, e):        # float16 steps round in half precision: a unit in the last place
        tol = dict(rtol=2e-3, atol=2e-3) if str(e.dtype) == "torch.float16" else \
            dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_numpy(a).astype(float), to_numpy(e).astype(float), **tol)
    for a, e in zip(gp, tp):
        close(a, e)
    for a, e in zip(gs, ts):
        for k in e:
            close(a[k], e[k])
