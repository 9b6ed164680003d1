"""The optimizers' C kernels (backends/cpu/native/optim.c) against the NumPy updates they
replace (optim/adam.py _adam_arrays, optim/sgd.py _sgd_arrays; the PyTorch-oracle tests of
tests/optim run on both paths through `kernel_path`): that they are used where they apply
and not elsewhere, and that every option combination gives the NumPy path's bits, step
after step, with special values, threaded, and for empty parameters."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cpu import native
from glasstorch.optim import adam, sgd
from native_paths import needs_compiler, spy_kernels, threaded_kernels



@pytest.fixture(autouse=True)
def small_parameters_too(monkeypatch):
    """The C kernels for parameters of any size (not only from _NATIVE_FROM elements)."""
    monkeypatch.setattr(adam, "_NATIVE_FROM", 0)
    monkeypatch.setattr(sgd, "_NATIVE_FROM", 0)


def _grads(shape, dtype, steps, seed=1, special=False):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        g = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 2)
        if special:
            flat = g.reshape(-1)
            flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30]
            rng.shuffle(flat)
        out.append(g.astype(dtype))
    return out


def _trajectory(optimizer, kwargs, grads, enabled, monkeypatch, init=None):
    """Parameters, state and version counters after each step, on one path."""
    monkeypatch.setattr(native, "ENABLED", enabled)
    rng = np.random.default_rng(0)
    start = rng.standard_normal(grads[0].shape).astype(grads[0].dtype) if init is None else init
    p = gt.nn.Parameter(gt.from_numpy(start.copy()))
    opt = optimizer([p], **kwargs)
    history = []
    for g in grads:
        p.grad = gt.from_numpy(g.copy())
        opt.step()
        state = {k: v.numpy().copy() for k, v in opt.state[p].items()}
        versions = {k: v._version for k, v in opt.state[p].items()}
        history.append((p.detach().numpy().copy(), p._version, state, versions))
    return history


def _assert_same_trajectories(a, b):
    for step, ((pa, va, sa, ta), (pb, vb, sb, tb)) in enumerate(zip(a, b)):
        assert np.array_equal(pa, pb, equal_nan=True), step
        assert va == vb and ta == tb, step
        assert sorted(sa) == sorted(sb)
        for k in sa:
            assert np.array_equal(sa[k], sb[k], equal_nan=True), (step, k)


ADAM_OPTIONS = [dict(amsgrad=a, maximize=m, weight_decay=w, decoupled_weight_decay=d,
                     betas=(b1, 0.99))
                for a, m, w, d, b1 in itertools.product([False, True], [False, True],
                                                         [0, 0.1], [False, True], [0.9, 0.3])]
SGD_OPTIONS = [dict(maximize=m, weight_decay=w, momentum=mu, dampening=d, nesterov=n)
               for m, w, mu, d, n in itertools.product([False, True], [0, 0.1], [0, 0.9],
                                                       [0, 0.3], [False, True])
               if not (n and (mu == 0 or d != 0))]


@needs_compiler
def test_the_c_kernels_are_used(monkeypatch):
    calls = spy_kernels(monkeypatch)
    for dtype in (gt.float32, gt.float64):
        p = gt.nn.Parameter(gt.randn(5, 3, dtype=dtype))
        for opt in (gt.optim.Adam([p]), gt.optim.AdamW([p], amsgrad=True),
                    gt.optim.SGD([p], lr=0.1, momentum=0.9)):
            for _ in range(2):
                p.grad = gt.randn(5, 3, dtype=dtype)
                opt.step()
    # SGD's first momentum step creates the buffer op by op
    assert calls == ["adam_f32"] * 4 + ["sgd_f32"] + ["adam_f64"] * 4 + ["sgd_f64"]


@needs_compiler
@pytest.mark.parametrize("case", ["transposed", "grad transposed", "float16", "complex",
                                  "disabled"])
def test_layouts_and_dtypes_the_kernels_do_not_take_fall_back(case, monkeypatch):
    calls = spy_kernels(monkeypatch)
    dtype = {"float16": gt.float16, "complex": gt.complex64}.get(case, gt.float32)
    base = gt.randn(4, 6, dtype=dtype)
    p = gt.nn.Parameter(base.t().contiguous().t() if case == "transposed" else base)
    if case == "disabled":
        monkeypatch.setattr(native, "ENABLED", False)
    for opt in (gt.optim.Adam([p]), gt.optim.SGD([p], lr=0.1, momentum=0.9)):
        for _ in range(2):
            g = gt.randn(6, 4, dtype=dtype).t() if case == "grad transposed" \
                else gt.randn(4, 6, dtype=dtype)
            p.grad = g
            opt.step()
    assert [c for c in calls if c.startswith(("adam", "sgd"))] == []


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "optimizer, kwargs",
    [(gt.optim.Adam, k) for k in ADAM_OPTIONS] + [(gt.optim.SGD, k) for k in SGD_OPTIONS],
    ids=lambda v: v.__name__ if isinstance(v, type) else
    "-".join(f"{a}{b}" for a, b in v.items()))
def test_update_gives_the_numpy_path_bits(dtype, optimizer, kwargs, monkeypatch):
    grads = _grads((37, 29), dtype, 6)
    c, np_ = (_trajectory(optimizer, dict(lr=0.01, **kwargs), grads, enabled, monkeypatch)
              for enabled in (True, False))
    _assert_same_trajectories(c, np_)


@needs_compiler
@pytest.mark.parametrize("amsgrad", [False, True])
def test_special_values_propagate_as_in_numpy(amsgrad, monkeypatch):
    """NaN, infinities and signed zeros in the gradients (max_exp_avg_sq keeps a NaN as
    np.maximum does)."""
    grads = _grads((301,), np.float32, 4, special=True)
    for optimizer, kwargs in ((gt.optim.AdamW, dict(amsgrad=amsgrad, weight_decay=0.1)),
                              (gt.optim.SGD, dict(momentum=0.9, nesterov=True,
                                                  weight_decay=0.1))):
        c, np_ = (_trajectory(optimizer, dict(lr=0.01, **kwargs), grads, enabled,
                              monkeypatch) for enabled in (True, False))
        _assert_same_trajectories(c, np_)


@needs_compiler
def test_results_do_not_depend_on_threads(monkeypatch):
    with threaded_kernels(monkeypatch):
        grads = _grads((1001,), np.float32, 3)
        for optimizer, kwargs in ((gt.optim.Adam, dict(amsgrad=True)),
                                  (gt.optim.SGD, dict(momentum=0.5, dampening=0.2))):
            c, np_ = (_trajectory(optimizer, dict(lr=0.01, **kwargs), grads, enabled,
                                  monkeypatch) for enabled in (True, False))
            _assert_same_trajectories(c, np_)


@needs_compiler
def test_empty_parameters(monkeypatch):
    grads = [np.zeros((0, 3), np.float32)] * 2
    for optimizer, kwargs in ((gt.optim.Adam, {}), (gt.optim.SGD, dict(momentum=0.9))):
        c, np_ = (_trajectory(optimizer, dict(lr=0.01, **kwargs), grads, enabled,
                              monkeypatch) for enabled in (True, False))
        _assert_same_trajectories(c, np_)


@needs_compiler
def test_small_parameters_keep_the_numpy_update(monkeypatch):
    """Below _NATIVE_FROM elements the C call's fixed cost is more than it saves."""
    monkeypatch.undo()
    calls = spy_kernels(monkeypatch)
    small = gt.nn.Parameter(gt.randn(adam._NATIVE_FROM - 1))
    large = gt.nn.Parameter(gt.randn(sgd._NATIVE_FROM))
    for opt in (gt.optim.Adam([small, large]), gt.optim.SGD([small, large], lr=0.1)):
        small.grad, large.grad = gt.randn_like(small), gt.randn_like(large)
        opt.step()
    assert calls == ["adam_f32", "sgd_f32"]


def test_pointers_are_the_arrays_addresses():
    """Every array passes its data address as an int, read from the ndarray object:
    read-only, empty, 0-dim, a view at an offset and a strided one alike."""
    a = np.arange(4.0)
    a.flags.writeable = False
    arrays = [a, np.zeros(0), np.ones(()), np.arange(6.0)[2:],
              np.arange(12.0, dtype=np.float32).reshape(3, 4)[:, 1]]
    pointers = native.pointers(*arrays)
    assert pointers == [native.address(x) for x in arrays]
    assert all(type(p) is int for p in pointers)
    assert pointers[3] == native.address(arrays[3].base) + 2 * 8
