"""The fused LSTM and GRU cells' C kernels (backends/cpu/native/recurrent.c) against the
NumPy steps they replace (backends/cpu/recurrent.py; the cells' PyTorch-oracle tests in
tests/nn run on both paths through `kernel_path`): used where they apply and not
elsewhere, and the same values for every combination of optional biases and gradients,
threaded, for odd widths and an empty batch."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cpu import native
from glasstorch.backends.cpu import recurrent as R
from native_paths import both_paths, needs_compiler, spy_kernels, threaded_kernels



def _assert_close(c, np_, dtype):
    """Only tanh (the vector libm's against NumPy's) may round differently: a few ulps."""
    eps = np.finfo(dtype).eps
    for a, b in zip(c, np_):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=8 * eps, atol=8 * eps)


def _lstm(rng, dtype, n, H, biases, grads):
    ig, hg = (rng.standard_normal((n, 4 * H)).astype(dtype) * 3 for _ in range(2))
    cx = rng.standard_normal((n, H)).astype(dtype)
    ib, hb = (rng.standard_normal(4 * H).astype(dtype) if b else None for b in biases)
    ghy, gcy = (rng.standard_normal((n, H)).astype(dtype) if g else None for g in grads)

    def run():
        hy, cy = np.empty((n, H), dtype), np.empty((n, H), dtype)
        ws, dg, dcx = np.empty((n, 4 * H), dtype), np.empty((n, 4 * H), dtype), \
            np.empty((n, H), dtype)
        R.lstm_cell_forward(ig, hg, cx, ib, hb, hy, cy, ws)
        R.lstm_cell_backward(ghy, gcy, cx, cy, ws, dg, dcx)
        return hy, cy, ws, dg, dcx
    return run


def _gru(rng, dtype, n, H, biases, grads):
    ig, hg = (rng.standard_normal((n, 3 * H)).astype(dtype) * 3 for _ in range(2))
    hx = rng.standard_normal((n, H)).astype(dtype)
    ib, hb = (rng.standard_normal(3 * H).astype(dtype) if b else None for b in biases)
    ghy = rng.standard_normal((n, H)).astype(dtype)

    def run():
        hy, ws = np.empty((n, H), dtype), np.empty((n, 5 * H), dtype)
        d_ig, d_hg, d_hx = (np.empty(s, dtype) for s in ((n, 3 * H), (n, 3 * H), (n, H)))
        R.gru_cell_forward(ig, hg, hx, ib, hb, hy, ws)
        R.gru_cell_backward(ghy, ws, d_ig, d_hg, d_hx)
        return hy, ws, d_ig, d_hg, d_hx
    return run


@needs_compiler
def test_the_c_kernels_are_used(monkeypatch):
    calls = spy_kernels(monkeypatch, "recurrent")
    for dtype in (gt.float32, gt.float64):
        x = gt.randn(3, 2, dtype=dtype)
        for cell, states in ((gt.nn.LSTMCell(2, 5, dtype=dtype), 2),
                             (gt.nn.GRUCell(2, 5, dtype=dtype), 1)):
            h = cell(x)[0] if states == 2 else cell(x)
            h.backward(gt.randn_like(h))     # (a sum's gradient, broadcast, is not dense)
    assert calls == ["lstm_cell_forward_f32", "lstm_cell_backward_f32",
                     "gru_cell_forward_f32", "gru_cell_backward_f32",
                     "lstm_cell_forward_f64", "lstm_cell_backward_f64",
                     "gru_cell_forward_f64", "gru_cell_backward_f64"]


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,H", [(97, 51), (1, 16), (5, 3), (4, 33)])
@pytest.mark.parametrize("biases", list(itertools.product([True, False], repeat=2)))
def test_cells_agree_with_the_numpy_steps(dtype, n, H, biases, monkeypatch):
    rng = np.random.default_rng(n * H)
    for grads in itertools.product([True, False], repeat=2):
        _assert_close(*both_paths(_lstm(rng, dtype, n, H, biases, grads), monkeypatch), dtype)
    _assert_close(*both_paths(_gru(rng, dtype, n, H, biases, None), monkeypatch), dtype)


@needs_compiler
def test_results_do_not_depend_on_threads(monkeypatch):
    with threaded_kernels(monkeypatch):
        monkeypatch.setattr(native, "ENABLED", True)
        runs = [make(np.random.default_rng(0), np.float32, 37, 21, (True, True), (True, True))
                for make in (_lstm, _gru)]
        runs += [_layer(mode, np.random.default_rng(1), np.float32, [9, 9, 7, 3], True, True,
                        True, H=21) for mode in (R.LSTM, R.GRU)]
        for run in runs:
            threaded = run()
            gt.set_num_threads(1)
            single = run()
            gt.set_num_threads(3)
            for a, b in zip(threaded, single):
                assert np.array_equal(a, b)


@needs_compiler
def test_an_empty_batch(monkeypatch):
    rng = np.random.default_rng(0)
    for make in (_lstm, _gru):
        c, np_ = both_paths(make(rng, np.float64, 0, 4, (True, False), (True, True)),
                             monkeypatch)
        assert [a.shape for a in c] == [a.shape for a in np_]


@needs_compiler
@pytest.mark.parametrize("case", ["strided state", "mixed dtypes", "disabled"])
def test_arrays_the_kernels_do_not_take_fall_back(case, monkeypatch):
    calls = spy_kernels(monkeypatch, "recurrent")
    if case == "disabled":
        monkeypatch.setattr(native, "ENABLED", False)
    rng = np.random.default_rng(1)
    n, H = 3, 4
    ig, hg = (rng.standard_normal((n, 4 * H)) for _ in range(2))
    cx = rng.standard_normal((H, n)).T if case == "strided state" else \
        rng.standard_normal((n, H))
    if case == "mixed dtypes":
        hg = hg.astype(np.float32)
    hy, cy, ws = np.empty((n, H)), np.empty((n, H)), np.empty((n, 4 * H))
    R.lstm_cell_forward(ig, hg, cx, None, None, hy, cy, ws)
    assert calls == []
    # the NumPy steps' result: h' = o tanh(f c + i g)
    a = ig + hg
    sig = 1 / (1 + np.exp(-a))
    i, f, g, o = sig[:, :H], sig[:, H:2 * H], np.tanh(a[:, 2 * H:3 * H]), sig[:, 3 * H:]
    np.testing.assert_allclose(cy, f * cx + i * g, rtol=1e-6)
    np.testing.assert_allclose(hy, o * np.tanh(cy), rtol=1e-6)


def _layer(mode, rng, dtype, sizes, reverse, g_out_given, g_cy_given, proj=0, I=3, H=5):
    """layer_forward then layer_backward of one LSTM or GRU layer over packed rows."""
    S, n, gates = sum(sizes), sizes[0], R.GATES[mode]
    real = proj or H
    x = rng.standard_normal((S, I)).astype(dtype)
    w_ih, w_hh = (rng.standard_normal((gates * H, k)).astype(dtype) * 0.5 for k in (I, real))
    b_ih, b_hh = (rng.standard_normal(gates * H).astype(dtype) for _ in range(2))
    w_hr = rng.standard_normal((proj, H)).astype(dtype) if proj else None
    hx, cx = rng.standard_normal((n, real)).astype(dtype), rng.standard_normal((n, H)).astype(dtype)
    g_out = rng.standard_normal((S, real)).astype(dtype) if g_out_given else None
    g_hy = rng.standard_normal((n, real)).astype(dtype)
    g_cy = rng.standard_normal((n, H)).astype(dtype) if g_cy_given else None
    lstm = mode == R.LSTM

    def run():
        out, hy = np.empty((S, real), dtype), np.empty((n, real), dtype)
        cy = np.empty((n, H), dtype) if lstm else None
        ws = np.empty((S, R.WORKSPACE[mode] * H), dtype)
        R.layer_forward(mode, x, w_ih, w_hh, b_ih, b_hh, w_hr, hx, cx, sizes, reverse, out,
                        hy, cy, ws)
        grads = [np.empty_like(a) for a in (x, w_ih, w_hh, b_ih, b_hh)] + \
            [None if w_hr is None else np.empty_like(w_hr), np.empty_like(hx),
             np.empty_like(cx) if lstm else None]
        R.layer_backward(mode, x, w_ih, w_hh, w_hr, hx, cx, out, ws, g_out,
                         g_hy, g_cy if lstm else None, sizes, reverse, grads)
        return [a for a in [out, hy, cy, ws] + grads if a is not None]
    return run


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sizes,reverse", [([4] * 6, False), ([4] * 6, True),
                                           ([5, 5, 4, 2, 1], False), ([5, 5, 4, 2, 1], True)])
@pytest.mark.parametrize("grads", [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize("mode", [R.LSTM, R.GRU])
def test_layer_steps_agree_with_the_numpy_steps(mode, dtype, sizes, reverse, grads,
                                                monkeypatch):
    """Padded and packed (the reverse direction joins initial states as rows start)."""
    run = _layer(mode, np.random.default_rng(len(sizes)), dtype, sizes, reverse, *grads)
    _assert_close(*both_paths(run, monkeypatch), dtype)


@needs_compiler
@pytest.mark.parametrize("case", ["plain", "projection", "strided output gradient", "gru"])
def test_layer_steps_use_the_c_kernels_where_they_apply(case, monkeypatch):
    calls = spy_kernels(monkeypatch, "recurrent")
    rng = np.random.default_rng(2)
    run = _layer(R.GRU if case == "gru" else R.LSTM, rng, np.float64, [3] * 4, False, True,
                 False, proj=2 if case == "projection" else 0)
    if case == "strided output gradient":
        g = np.asfortranarray(rng.standard_normal((12, 5)))
        real_backward = R.layer_backward

        def backward(*args):
            args = list(args)
            args[9] = g                                        # g_out: column-major
            return real_backward(*args)
        monkeypatch.setattr(R, "layer_backward", backward)
    run()
    expected = {"plain": ["lstm_step_f64", "lstm_backward_step_f64"], "projection": [],
                "strided output gradient": ["lstm_step_f64"],
                "gru": ["gru_step_f64", "gru_backward_step_f64"]}[case]
    assert calls == expected
