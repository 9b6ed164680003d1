"""Adafactor and Muon give PyTorch's parameters step for step; SparseAdam refuses what
PyTorch's refuses (its sparse path needs sparse gradients)."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def run(lib, name, kwargs, shapes, steps=4):
    rng = np.random.default_rng(1)
    params = [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
              for s in shapes]
    opt = getattr(lib.optim, name)(params, **kwargs)
    for _ in range(steps):
        loss = sum((p * p * (j + 1)).sum() + p.sum() * 0.3 for j, p in enumerate(params))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().numpy() for p in params], opt


@pytest.mark.parametrize("name, kwargs, shapes", [
    ("Adafactor", {}, [(4, 3), (3, 5), (5,)]),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, d=1.5, eps=(1e-20, 1e-3)),
     [(2, 3, 4), (3,)]),
    ("Adafactor", dict(maximize=True, beta2_decay=-0.5), [(3, 2)]),
    ("Muon", {}, [(4, 3), (3, 5)]),
    ("Muon", dict(nesterov=False, adjust_lr_fn="match_rms_adamw", lr=0.01, momentum=0.9),
     [(6, 2)]),
])
def test_steps_match_torch(name, kwargs, shapes):
    ours, opt = run(gt, name, kwargs, shapes)
    theirs, ref = run(torch, name, kwargs, shapes)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    ours_state = opt.state_dict()["state"][0]
    theirs_state = ref.state_dict()["state"][0]
    assert sorted(ours_state) == sorted(theirs_state)
    for key in ours_state:
        np.testing.assert_allclose(np.asarray(ours_state[key]), np.asarray(theirs_state[key]),
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name, kwargs, message", [
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    ("Adafactor", dict(eps=(None, -1.0)), "epsilon2 should be >= 0 but is: -1.0"),
    ("Muon", dict(momentum=-1.0), "momentum should be >= 0 but is: -1.0"),
    ("Muon", dict(adjust_lr_fn="x"), "Adjust learning rate function x is not supported"),
    ("SparseAdam", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
])
def test_bad_settings_raise_as_torch(name, kwargs, message):
    for lib in (gt, torch):
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            getattr(lib.optim, name)([lib.zeros(2, 2, requires_grad=True)], **kwargs)


def test_muon_takes_matrices_and_sparse_adam_sparse_gradients_only():
    for lib in (gt, torch):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            lib.optim.Muon([lib.zeros(3, requires_grad=True)])
        p = lib.zeros(3, 2, requires_grad=True)
        opt = lib.optim.SparseAdam([p])
        p.grad = lib.ones(3, 2)
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            opt.step()


def test_swap_in_params_and_state_steps_the_copies_and_restores_as_torch():
    results = []
    for lib in (gt, torch):
        model = lib.nn.Linear(2, 1)
        with lib.no_grad():
            model.weight.fill_(1.0)
            model.bias.fill_(0.0)
        opt = lib.optim.Adam(model.parameters(), lr=0.1)
        model(lib.ones(1, 2)).sum().backward()
        opt.step()
        before = [p.detach().clone() for p in model.parameters()]
        copies = {n: p.detach().clone() for n, p in model.named_parameters()}
        for c in copies.values():
            c.grad = lib.ones_like(c)
        saved = opt.state_dict()
        saved["state"] = {k: {n: v.clone() for n, v in s.items()}
                          for k, s in saved["state"].items()}
        with lib.optim.swap_in_optimizer_params_and_state(opt, copies, saved):
            assert opt.param_groups[0]["params"][0] is copies["weight"]
            opt.step()
        assert opt.param_groups[0]["params"][0] is model.weight
        for p, b in zip(model.parameters(), before):
            assert lib.equal(p.detach(), b)            # the live parameters did not move
        results.append([c.numpy() for c in copies.values()] +
                       [saved["state"][0]["exp_avg"].numpy()])
        with pytest.raises(RuntimeError, match="match optimizer.param_groups ordering"):
            with lib.optim.swap_in_optimizer_params_and_state(
                    opt, {"weight": copies["weight"]}, saved):
                pass
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_sparse_adam_on_sparse_gradients_equals_pytorch():
    """Rows the sparse gradient names (one of them twice, so it must be coalesced) are
    updated; the others keep their values and get no state."""
    results = []
    for lib in (gt, torch):
        w = lib.nn.Parameter(lib.arange(12.0).reshape(4, 3))
        opt = lib.optim.SparseAdam([w], lr=0.1)
        for step in range(3):
            values = lib.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0]]) * (step + 1)
            w.grad = lib.sparse_coo_tensor(lib.tensor([[1, 3, 1]]), values, (4, 3))
            opt.step()
        results.append(w.detach().numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    assert (results[0][[0, 2]] == np.arange(12.0).reshape(4, 3)[[0, 2]]).all()
