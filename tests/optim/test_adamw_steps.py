"""AdamW as nanoGPT configures it (weight decay on the matrices, none on the vectors), 20
steps fed the same gradients in both libraries: PyTorch's parameters, state and version
counters after every step. The gradients are given, not computed, so only the optimizer's
arithmetic is compared."""
from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy

SHAPES = [(6, 4), (4, 6), (4,), (6,), (3, 5)]


def _run(lib, steps, grads, amsgrad, transposed_last):
    rng = np.random.default_rng(21)
    params = [lib.tensor(rng.standard_normal(s).astype(np.float32)) for s in SHAPES]
    if transposed_last:         # a parameter whose memory is column-major
        params[-1] = params[-1].t().contiguous().t()
    params = [p.requires_grad_() for p in params]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = lib.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.99), amsgrad=amsgrad)
    history = []
    for i in range(steps):
        opt.zero_grad()
        for p, g in zip(params, grads[i]):
            if g is not None:
                p.grad = lib.tensor(g)
        opt.step()
        history.append(([to_numpy(p.detach()).copy() for p in params],
                        [p._version for p in params]))
    return history, opt, params


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("transposed_last", [False, True])
def test_adamw_with_decay_groups_matches_torch_for_20_steps(amsgrad, transposed_last,
                                                           kernel_path):
    torch = oracle_torch()
    rng = np.random.default_rng(5)
    grads = [[None if (i % 7 == 3 and k == 2) else   # a parameter skipped on some steps
              (rng.standard_normal(s) * 10.0 ** rng.integers(-4, 2)).astype(np.float32)
              for k, s in enumerate(SHAPES)] for i in range(20)]
    (g_hist, g_opt, g_params), (t_hist, t_opt, t_params) = (
        _run(lib, 20, grads, amsgrad, transposed_last) for lib in (gt, torch))
    for step, ((gv, gver), (tv, tver)) in enumerate(zip(g_hist, t_hist)):
        assert gver == tver, step
        for a, e in zip(gv, tv):
            np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-7, err_msg=f"step {step}")
    for gp, tp in zip(g_params, t_params):
        gs, ts = g_opt.state[gp], t_opt.state[tp]
        assert sorted(gs) == sorted(ts)
        for key in ts:
            assert gs[key]._version == ts[key]._version, key
            # PyTorch's vectorised lerp may fuse its multiply-add (one rounding, not two):
            # where the moment cancels, the two differ by a few units of the largest value
            e = ts[key].numpy()
            np.testing.assert_allclose(to_numpy(gs[key]), e, rtol=1e-6,
                                       atol=1e-6 * np.abs(e).max(), err_msg=key)
