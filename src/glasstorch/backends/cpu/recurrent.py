"""CPU kernels of the recurrent layers: one layer, one direction, the whole sequence per call.

A sequence is always packed: rows of every time step stacked, step t holding `sizes[t]` rows
(a padded (T, N, *) batch is the packed one whose steps all hold N rows). Batch sizes never
grow with t, so a step's rows are a prefix of the previous step's.

Forward: the input projection of the whole sequence is one GEMM; each step then is one
hidden-to-hidden GEMM plus the gate math, in place on row blocks of preallocated arrays.
What the backward needs is kept in the workspace (`ws`): the gate activations, and for the
LSTM the cell states and their tanh. The sigmoid gates are computed as 0.5 + 0.5 tanh(x/2),
with the 1/2 folded into the weights, so every step takes one tanh over all its gates.

Backward: the reverse-time loop carries dh (and dc), one GEMM with W_hh per step; the
whole-sequence factors of the chain rule are computed before the loop, and the gradients
of the input and the weights are GEMMs over the whole sequence after it.

Modes use ideep's numbering, which PyTorch's aten::mkldnn_rnn_layer takes: RNN_RELU 0,
RNN_TANH 1, LSTM 2, GRU 3.
"""
from __future__ import annotations

import functools

import numpy as np

from . import native
from .activation import tanh_grad, threshold_grad
from .linalg import blas_matmul, blas_product
from .native import pointers, threads

RNN_RELU, RNN_TANH, LSTM, GRU = 0, 1, 2, 3
GATES = {RNN_RELU: 1, RNN_TANH: 1, LSTM: 4, GRU: 3}
# workspace columns per hidden unit: LSTM i f g o c tanh(c); GRU r z n (W_hn h + b_hn)
WORKSPACE = {RNN_RELU: 0, RNN_TANH: 0, LSTM: 6, GRU: 4}
# native/recurrent.c's flags: which optional arrays are given
_BIAS_INPUT, _BIAS_HIDDEN, _GRAD_HY, _GRAD_CY = 1, 2, 4, 8


class Schedule:
    """Where each step's rows are, in the order the recurrence visits them, and which row
    holds each row's previous state (an index into [outputs; initial state])."""

    def __init__(self, sizes, reverse: bool):
        sizes = [int(s) for s in sizes]
        starts = np.zeros(len(sizes), dtype=np.int64)
        np.cumsum(sizes[:-1], out=starts[1:])
        self.total = int(starts[-1]) + sizes[-1]
        self.batch = sizes[0]
        order = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
        self.steps = [(int(starts[t]), sizes[t]) for t in order]
        self.reverse = reverse
        self._sizes, self._starts = np.asarray(sizes, dtype=np.int64), starts

    def previous_rows(self) -> np.ndarray:
        """For each row, the index of its previous state in [outputs (S rows); initial (N)]."""
        sizes, starts, total = self._sizes, self._starts, self.total
        t = np.repeat(np.arange(len(sizes)), sizes)
        b = np.arange(total) - starts[t]
        first = total + b
        if self.reverse:
            nxt = np.minimum(t + 1, len(sizes) - 1)
            has = (t < len(sizes) - 1) & (b < sizes[nxt])
            return np.where(has, starts[nxt] + b, first)
        return np.where(t > 0, starts[np.maximum(t - 1, 0)] + b, first)

    def final_rows(self) -> np.ndarray:
        """For each batch row, the index of the row holding its last state."""
        rows = np.arange(self.batch)
        if self.reverse:
            return rows
        # the last step at which row b runs: sizes fall, so sizes[t] > b for the first ones
        last = np.searchsorted(-self._sizes, -rows, side="left") - 1
        return self._starts[last] + rows


def _previous(rows_out, start, bs, prev, initial):
    """This step's previous state: the last step's rows (a prefix of them), joined by
    initial states of rows that start now (reverse direction, packed input)."""
    if prev is None:
        return initial[:bs]
    p_start, p_bs = prev
    if bs <= p_bs:
        return rows_out[p_start:p_start + bs]
    return np.concatenate((rows_out[p_start:p_start + p_bs], initial[p_bs:bs]))


@functools.lru_cache(maxsize=64)
def _sigmoid_by_tanh(mode: int, hidden: int, dtype) -> tuple:
    """(scale, offset): sigmoid gates as offset + scale tanh(scale x), with scale 1/2 and
    offset 1/2 there and 1, 0 for tanh gates (read-only, cached per shape)."""
    scale = _gate_scale(mode, hidden, dtype)
    offset = 1 - scale
    scale.flags.writeable = offset.flags.writeable = False
    return scale, offset


def _gate_scale(mode: int, hidden: int, dtype) -> np.ndarray:
    """1/2 for sigmoid gates (computed as 0.5 + 0.5 tanh(x/2)), 1 for the others."""
    scale = np.ones(GATES[mode] * hidden, dtype=dtype)
    if mode == LSTM:
        scale[:2 * hidden] = scale[3 * hidden:] = 0.5
    elif mode == GRU:
        scale[:2 * hidden] = 0.5
    return scale


def layer_forward(mode, x, w_ih, w_hh, b_ih, b_hh, w_hr, hx, cx, sizes, reverse,
                  out, hy, cy, ws):
    """Run one layer and direction over packed `x` (S, I), filling `out` (S, Hr), the final
    states `hy` (N, Hr) and `cy` (N, H; LSTM only) and the workspace `ws` (S, k H)."""
    sched = Schedule(sizes, reverse)
    hidden = w_hh.shape[0] // GATES[mode]
    scale = _sigmoid_by_tanh(mode, hidden, x.dtype)[0]
    # the gates' 1/2 folded into the (small) weights and biases, not the (S, G H) products:
    # scaling by a power of two is exact either way. W^T row-major: OpenBLAS multiplies a
    # 20-row h by a transposed (column-major) matrix at less than half the speed (20x64 @
    # 64x256: 17 us against 7 us)
    gated = mode == LSTM or mode == GRU
    if gated:
        gi = blas_product(x, np.multiply(w_ih.T, scale, order="C"))
        w_hh_t = np.multiply(w_hh.T, scale, order="C")
    else:
        gi = blas_product(x, w_ih.T)
        w_hh_t = np.ascontiguousarray(w_hh.T)
    if b_ih is not None:
        bias = b_ih + b_hh
        if mode == GRU:     # b_hn stays inside r * (W_hn h + b_hn)
            bias[2 * hidden:] = b_ih[2 * hidden:]
        gi += bias * scale if gated else bias
    run = {LSTM: _lstm_steps, GRU: _gru_steps}.get(mode, _rnn_steps)
    run(mode, sched, gi, w_hh_t, b_hh, w_hr, hx, cx, out, ws, hidden)
    final = sched.final_rows()
    np.take(out, final, axis=0, out=hy)
    if mode == LSTM:
        np.take(ws[:, 4 * hidden:5 * hidden], final, axis=0, out=cy)


def _rnn_steps(mode, sched, gi, w_hh_t, b_hh, w_hr, hx, cx, out, ws, hidden):
    act = np.tanh if mode == RNN_TANH else None
    prev = None
    for start, bs in sched.steps:
        h = _previous(out, start, bs, prev, hx)
        step = out[start:start + bs]
        np.matmul(h, w_hh_t, out=step)
        step += gi[start:start + bs]
        if act is None:
            np.maximum(step, 0, out=step)
        else:
            act(step, out=step)
        prev = (start, bs)


def _lstm_steps(mode, sched, gi, w_hh_t, b_hh, w_hr, hx, cx, out, ws, H):
    if w_hr is None and _native_lstm_steps(sched, gi, w_hh_t, hx, cx, out, ws, H):
        return
    gates, cell, tanh_cell = ws[:, :4 * H], ws[:, 4 * H:5 * H], ws[:, 5 * H:]
    half, offset = _sigmoid_by_tanh(LSTM, H, gi.dtype)
    product = np.empty((sched.batch, H), dtype=gi.dtype)
    hidden_pre = None if w_hr is None else np.empty((sched.batch, H), dtype=gi.dtype)
    w_hr_t = None if w_hr is None else np.ascontiguousarray(w_hr.T)
    prev = None
    for start, bs in sched.steps:
        rows = slice(start, start + bs)
        h = _previous(out, start, bs, prev, hx)
        c = _previous(cell, start, bs, prev, cx)
        a = gates[rows]
        np.matmul(h, w_hh_t, out=a)
        a += gi[rows]
        np.tanh(a, out=a)
        a *= half
        a += offset                     # i, f, o: sigmoids; g: tanh
        c_new, tmp = cell[rows], product[:bs]
        np.multiply(a[:, H:2 * H], c, out=c_new)
        np.multiply(a[:, :H], a[:, 2 * H:3 * H], out=tmp)
        c_new += tmp
        t = tanh_cell[rows]
        np.tanh(c_new, out=t)
        if w_hr_t is None:
            np.multiply(a[:, 3 * H:], t, out=out[rows])
        else:
            np.multiply(a[:, 3 * H:], t, out=hidden_pre[:bs])
            np.matmul(hidden_pre[:bs], w_hr_t, out=out[rows])
        prev = (start, bs)


def _kernel(name: str, arrays: tuple, shapes: tuple, signature: str):
    """native/recurrent.c's `name` for the arrays' dtype, when every array is dense, of one
    float dtype and of its shape in `shapes`; None otherwise (the NumPy steps run)."""
    if not native.dense(*arrays) or any(a.shape != s for a, s in zip(arrays, shapes)):
        return None
    return native.function("recurrent", f"{name}_{native.suffix(arrays[0])}", signature)


def _native_lstm_steps(sched, gi, w_hh_t, hx, cx, out, ws, H) -> bool:
    """_lstm_steps' loop with each step's gate math in one call of native/recurrent.c's
    lstm_step (the product stays NumPy's), when the arrays are dense, of one dtype; False
    (nothing done) otherwise. The previous cell state's rows are found by address: the
    last step's workspace rows, the initial state's, or (reverse, packed) both joined."""
    cx = np.ascontiguousarray(cx)
    S = gi.shape[0]
    fn = _kernel("lstm_step", (gi, ws, out, cx),
                 ((S, 4 * H), (S, 6 * H), (S, H), (sched.batch, H)), "nnpnpnpnpni")
    if fn is None:
        return False
    item, width = gi.itemsize, ws.shape[1]
    gi_at, ws_at, out_at, cx_at = (native.address(a) for a in (gi, ws, out, cx))
    gates = ws[:, :4 * H]
    prev = None
    for start, bs in sched.steps:
        h = _previous(out, start, bs, prev, hx)
        np.matmul(h, w_hh_t, out=gates[start:start + bs])
        if prev is None:
            c_at, c_stride = cx_at, H
        elif bs <= prev[1]:
            c_at, c_stride = ws_at + (prev[0] * width + 4 * H) * item, width
        else:
            c = _previous(ws[:, 4 * H:5 * H], start, bs, prev, cx)
            c_at, c_stride = native.address(c), H
        fn(bs, H, gi_at + start * 4 * H * item, 4 * H, ws_at + start * width * item, width,
           c_at, c_stride, out_at + start * H * item, H, threads(bs * 4 * H))
        prev = (start, bs)
    return True


def _gru_steps(mode, sched, gi, w_hh_t, b_hh, w_hr, hx, cx, out, ws, H):
    gates, hn = ws[:, :3 * H], ws[:, 3 * H:]
    gh = np.empty((sched.batch, 3 * H), dtype=gi.dtype)
    b_hn = None if b_hh is None else b_hh[2 * H:]
    if _native_gru_steps(sched, gi, w_hh_t, b_hn, hx, out, ws, gh, H):
        return
    prev = None
    for start, bs in sched.steps:
        rows = slice(start, start + bs)
        h = _previous(out, start, bs, prev, hx)
        g = gh[:bs]
        np.matmul(h, w_hh_t, out=g)
        a = gates[rows]
        rz = a[:, :2 * H]
        np.add(gi[rows, :2 * H], g[:, :2 * H], out=rz)
        np.tanh(rz, out=rz)
        rz *= 0.5
        rz += 0.5
        n_h = hn[rows]
        if b_hn is None:
            np.copyto(n_h, g[:, 2 * H:])
        else:
            np.add(g[:, 2 * H:], b_hn, out=n_h)
        n = a[:, 2 * H:]
        np.multiply(a[:, :H], n_h, out=n)
        n += gi[rows, 2 * H:]
        np.tanh(n, out=n)
        new = out[rows]                 # h' = n + z (h - n)
        np.subtract(h, n, out=new)
        new *= a[:, H:2 * H]
        new += n
        prev = (start, bs)


def _native_gru_steps(sched, gi, w_hh_t, b_hn, hx, out, ws, gh, H) -> bool:
    """_gru_steps' loop with each step's gate math in one call of native/recurrent.c's
    gru_step (the product stays NumPy's), when the arrays are dense, of one dtype; False
    (nothing done) otherwise."""
    hx = np.ascontiguousarray(hx)
    S = gi.shape[0]
    arrays = (gi, ws, out, hx, gh) + (() if b_hn is None else (b_hn,))
    shapes = ((S, 3 * H), (S, 4 * H), (S, H), (sched.batch, H), (sched.batch, 3 * H), (H,))
    fn = _kernel("gru_step", arrays, shapes, "nnppppppii")
    if fn is None:
        return False
    item = gi.itemsize
    gi_at, ws_at, out_at, hx_at, gh_at, *b_at = (native.address(a) for a in arrays)
    b_at, flags = (b_at[0], _BIAS_HIDDEN) if b_at else (gh_at, 0)
    prev = None
    for start, bs in sched.steps:
        h = _previous(out, start, bs, prev, hx)
        np.matmul(h, w_hh_t, out=gh[:bs])
        if prev is None:
            h_at = hx_at
        elif bs <= prev[1]:
            h_at = out_at + prev[0] * H * item
        else:
            h_at = native.address(h)
        fn(bs, H, gi_at + start * 3 * H * item, gh_at, b_at, h_at,
           ws_at + start * 4 * H * item, out_at + start * H * item, flags, threads(bs * 4 * H))
        prev = (start, bs)
    return True


def layer_backward(mode, x, w_ih, w_hh, w_hr, hx, cx, out, ws, g_out, g_hy, g_cy, sizes,
                   reverse, grads):
    """The gradients of one layer and direction, written into `grads` = (input, w_ih, w_hh,
    b_ih, b_hh, w_hr, hx, cx) arrays (None where not wanted). `g_out`, `g_hy`, `g_cy` are
    the gradients reaching the outputs (None: zero)."""
    d_x, d_w_ih, d_w_hh, d_b_ih, d_b_hh, d_w_hr, d_hx, d_cx = grads
    sched = Schedule(sizes, reverse)
    hidden = w_hh.shape[0] // GATES[mode]
    prev_rows = sched.previous_rows()
    h_prev = np.concatenate((out, hx)).take(prev_rows, axis=0)
    dh = np.zeros_like(hx) if g_hy is None else g_hy.astype(hx.dtype, copy=True)
    run = {LSTM: _lstm_backward_steps, GRU: _gru_backward_steps}.get(mode, _rnn_backward_steps)
    d_gi, d_gh, d_cell = run(mode, sched, prev_rows, h_prev, w_hh, w_hr, cx, out, ws, g_out,
                             g_cy, dh, hidden, d_w_hr)
    if d_x is not None:
        blas_matmul(d_gi, w_ih, d_x)
    if d_w_ih is not None:
        blas_matmul(d_gi.T, x, d_w_ih)
    if d_w_hh is not None:
        blas_matmul(d_gh.T, h_prev, d_w_hh)
    if d_b_ih is not None:
        np.add.reduce(d_gi, axis=0, out=d_b_ih)
    if d_b_hh is not None:
        np.add.reduce(d_gh, axis=0, out=d_b_hh)
    if d_hx is not None:
        np.copyto(d_hx, dh)
    if d_cx is not None:
        np.copyto(d_cx, d_cell)


def _grad_at_h(dh, g_out, rows, bs, into):
    """The whole gradient reaching this step's h: through the recurrence and the output."""
    if g_out is None:
        np.copyto(into, dh[:bs])
    else:
        np.add(dh[:bs], g_out[rows], out=into)


def _rnn_backward_steps(mode, sched, prev_rows, h_prev, w_hh, w_hr, cx, out, ws, g_out, g_cy,
                        dh, H, d_w_hr):
    slope = (1 - out * out) if mode == RNN_TANH else (out > 0).astype(out.dtype)
    d_pre = np.empty_like(out)
    for start, bs in reversed(sched.steps):
        rows = slice(start, start + bs)
        d = d_pre[rows]
        _grad_at_h(dh, g_out, rows, bs, d)
        d *= slope[rows]
        np.matmul(d, w_hh, out=dh[:bs])
    return d_pre, d_pre, None


def _lstm_backward_steps(mode, sched, prev_rows, h_prev, w_hh, w_hr, cx, out, ws, g_out,
                         g_cy, dh, H, d_w_hr):
    S = out.shape[0]
    i, f, g, o = ws[:, :H], ws[:, H:2 * H], ws[:, 2 * H:3 * H], ws[:, 3 * H:4 * H]
    cell, tanh_cell = ws[:, 4 * H:5 * H], ws[:, 5 * H:]
    c_prev = np.concatenate((cell, cx)).take(prev_rows, axis=0)
    # d(gate pre-activations) = dc * k (i, f, g), dh * k_o (o); dc gets dh * through_c
    k = np.empty((S, 3, H), dtype=out.dtype)
    np.multiply(g, i * (1 - i), out=k[:, 0])
    np.multiply(c_prev, f * (1 - f), out=k[:, 1])
    np.multiply(i, 1 - g * g, out=k[:, 2])
    k_o = tanh_cell * o * (1 - o)
    through_c = o * (1 - tanh_cell * tanh_cell)
    d_pre = np.empty((S, 4 * H), dtype=out.dtype)
    d_pre3 = d_pre.reshape(S, 4, H)
    d_h = np.empty_like(out)                      # the whole gradient reaching each h_t
    d_hidden = d_h if w_hr is None else np.empty((S, H), dtype=out.dtype)
    dc = np.zeros_like(cx) if g_cy is None else g_cy.astype(cx.dtype, copy=True)
    dc_t = np.empty_like(dc)
    native_step = None if w_hr is not None else \
        _native_lstm_backward_step(dh, g_out, d_h, through_c, dc, k, k_o, d_pre, ws, H)
    for start, bs in reversed(sched.steps):
        rows = slice(start, start + bs)
        if native_step is not None:
            native_step(start, bs)
        else:
            _grad_at_h(dh, g_out, rows, bs, d_h[rows])
            if w_hr is not None:
                np.matmul(d_h[rows], w_hr, out=d_hidden[rows])
            dhid, dct = d_hidden[rows], dc_t[:bs]
            np.multiply(dhid, through_c[rows], out=dct)
            dct += dc[:bs]
            np.multiply(k[rows], dct[:, None, :], out=d_pre3[rows, :3])
            np.multiply(dhid, k_o[rows], out=d_pre3[rows, 3])
            np.multiply(dct, f[rows], out=dc[:bs])
        np.matmul(d_pre[rows], w_hh, out=dh[:bs])
    if d_w_hr is not None:
        blas_matmul(d_h.T, o * tanh_cell, d_w_hr)
    return d_pre, d_pre, dc


def _native_lstm_backward_step(dh, g_out, d_h, through_c, dc, k, k_o, d_pre, ws, H):
    """`step(start, bs)`: one reverse step of _lstm_backward_steps before its product with
    W_hh, as one call of native/recurrent.c's lstm_backward_step, when the arrays are
    dense, of one dtype and of the shapes that loop gives them; None otherwise."""
    S, N = d_h.shape[0], dh.shape[0]
    arrays = (dh, d_h, through_c, dc, k, k_o, d_pre, ws) + (() if g_out is None else (g_out,))
    shapes = ((N, H), (S, H), (S, H), (N, H), (S, 3, H), (S, H), (S, 4 * H), (S, 6 * H),
              (S, H))
    fn = _kernel("lstm_backward_step", arrays, shapes, "nn" + "p" * 9 + "nii")
    if fn is None:
        return None
    item, width = dh.itemsize, ws.shape[1]
    dh_at, d_h_at, tc_at, dc_at, k_at, k_o_at, d_pre_at, ws_at, *g_out_at = \
        (native.address(a) for a in arrays)
    g_out_at = g_out_at[0] if g_out_at else dh_at       # (not read without GRAD_HY)
    flags = 0 if g_out is None else _GRAD_HY

    def step(start, bs):
        row = start * H * item
        fn(bs, H, dh_at, g_out_at + row, d_h_at + row, tc_at + row, dc_at, k_at + 3 * row,
           k_o_at + row, d_pre_at + 4 * row, ws_at + (start * width + H) * item, width, flags,
           threads(bs * 4 * H))
    return step


def _gru_backward_steps(mode, sched, prev_rows, h_prev, w_hh, w_hr, cx, out, ws, g_out,
                        g_cy, dh, H, d_w_hr):
    S = out.shape[0]
    r, z, n, hn = ws[:, :H], ws[:, H:2 * H], ws[:, 2 * H:3 * H], ws[:, 3 * H:]
    # h' = n + z (h - n): d(pre-activations of r, z, n) = dh' * p
    p = np.empty((S, 3, H), dtype=out.dtype)
    through_n = (1 - z) * (1 - n * n)
    np.multiply(through_n * hn, r * (1 - r), out=p[:, 0])
    np.multiply(h_prev - n, z * (1 - z), out=p[:, 1])
    p[:, 2] = through_n
    # the hidden side's gates: the same for r and z, times r for W_hn h + b_hn
    to_hidden = np.ones((S, 3, H), dtype=out.dtype)
    to_hidden[:, 2] = r
    d_gi = np.empty((S, 3 * H), dtype=out.dtype)
    d_gh = np.empty_like(d_gi)
    d_gi3, d_gh3 = d_gi.reshape(S, 3, H), d_gh.reshape(S, 3, H)
    d_t, direct = np.empty_like(dh), np.empty_like(dh)
    native_step = _native_gru_backward_step(dh, g_out, p, ws, d_gi, d_gh, direct, H)
    for start, bs in reversed(sched.steps):
        rows = slice(start, start + bs)
        if native_step is not None:
            native_step(start, bs)
        else:
            d = d_t[:bs]
            _grad_at_h(dh, g_out, rows, bs, d)
            np.multiply(p[rows], d[:, None, :], out=d_gi3[rows])
            np.multiply(d_gi3[rows], to_hidden[rows], out=d_gh3[rows])
            np.multiply(d, z[rows], out=direct[:bs])
        np.matmul(d_gh[rows], w_hh, out=dh[:bs])
        dh[:bs] += direct[:bs]
    return d_gi, d_gh, None


def _native_gru_backward_step(dh, g_out, p, ws, d_gi, d_gh, direct, H):
    """`step(start, bs)`: one reverse step of _gru_backward_steps before its product with
    W_hh, as one call of native/recurrent.c's gru_backward_step, when the arrays are dense,
    of one dtype and of the shapes that loop gives them; None otherwise."""
    S, N = d_gi.shape[0], dh.shape[0]
    arrays = (dh, p, ws, d_gi, d_gh, direct) + (() if g_out is None else (g_out,))
    shapes = ((N, H), (S, 3, H), (S, 4 * H), (S, 3 * H), (S, 3 * H), (N, H), (S, H))
    fn = _kernel("gru_backward_step", arrays, shapes, "nn" + "p" * 7 + "ii")
    if fn is None:
        return None
    item = dh.itemsize
    dh_at, p_at, ws_at, d_gi_at, d_gh_at, direct_at, *g_out_at = \
        (native.address(a) for a in arrays)
    g_out_at = g_out_at[0] if g_out_at else dh_at       # (not read without GRAD_HY)
    flags = 0 if g_out is None else _GRAD_HY

    def step(start, bs):
        row = start * H * item
        fn(bs, H, dh_at, g_out_at + row, p_at + 3 * row, ws_at + 4 * row, d_gi_at + 3 * row,
           d_gh_at + 3 * row, direct_at, flags, threads(bs * 4 * H))
    return step


# ---- one step (the cells) ------------------------------------------------------------------

def _native_cell(name, n, H, shapes, arrays, flags) -> bool:
    """native/recurrent.c's `name` over `arrays` (None: an absent optional one, which
    `flags` marks; flags None: the kernel takes none), when each has its shape in `shapes`
    and all are dense, of one dtype; False (nothing done: the NumPy steps run) otherwise."""
    present = [(a, s) for a, s in zip(arrays, shapes) if a is not None]
    given = [a for a, _ in present]
    fn = _kernel(name, given, [s for _, s in present],
                 "nn" + "p" * len(arrays) + ("i" if flags is None else "ii"))
    if fn is None:
        return False
    work = threads(sum(a.size for a in given))
    ints = (work,) if flags is None else (flags, work)
    fn(n, H, *pointers(*(given[0] if a is None else a for a in arrays)), *ints)
    return True


def _flags(*pairs) -> int:
    return sum(bit for bit, present in pairs if present)


def lstm_cell_forward(input_gates, hidden_gates, cx, input_bias, hidden_bias, hy, cy, ws):
    """PyTorch's fused LSTM cell: `ws` (N, 4H) gets the activations i, f, g, o."""
    n, H = cx.shape
    if _native_cell("lstm_cell_forward", n, H,
                    ((n, 4 * H), (n, 4 * H), (n, H), (4 * H,), (4 * H,), (n, H), (n, H),
                     (n, 4 * H)),
                    (input_gates, hidden_gates, cx, input_bias, hidden_bias, hy, cy, ws),
                    _flags((_BIAS_INPUT, input_bias is not None),
                           (_BIAS_HIDDEN, hidden_bias is not None))):
        return
    np.add(input_gates, hidden_gates, out=ws)
    if input_bias is not None and hidden_bias is not None:
        ws += input_bias + hidden_bias
    elif input_bias is not None or hidden_bias is not None:
        ws += input_bias if input_bias is not None else hidden_bias
    half, offset = _sigmoid_by_tanh(LSTM, H, ws.dtype)
    ws *= half
    np.tanh(ws, out=ws)
    ws *= half
    ws += offset
    np.multiply(ws[:, H:2 * H], cx, out=cy)
    np.multiply(ws[:, :H], ws[:, 2 * H:3 * H], out=hy)
    cy += hy
    np.tanh(cy, out=hy)
    hy *= ws[:, 3 * H:]


def lstm_cell_backward(grad_hy, grad_cy, cx, cy, ws, d_gates, d_cx):
    """Gradients of the fused LSTM cell's gate pre-activations (N, 4H) and of cx."""
    n, H = cx.shape
    if _native_cell("lstm_cell_backward", n, H,
                    ((n, H), (n, H), (n, H), (n, H), (n, 4 * H), (n, 4 * H), (n, H), (n, H)),
                    (grad_hy, grad_cy, cx, cy, ws, d_gates, d_cx, np.empty_like(cx)),
                    _flags((_GRAD_HY, grad_hy is not None), (_GRAD_CY, grad_cy is not None))):
        return
    ws3, d3 = ws.reshape(n, 4, H), d_gates.reshape(n, 4, H)
    # each gate's derivative: a (1 - a) for the sigmoids, 1 - g^2 for g
    slope = 1 - ws3
    slope *= ws3
    np.multiply(ws3[:, 2], ws3[:, 2], out=slope[:, 2])
    np.subtract(1, slope[:, 2], out=slope[:, 2])
    tanh_cy = np.tanh(cy)
    if grad_hy is None:
        d_c = np.zeros_like(cx) if grad_cy is None else grad_cy.copy()
        d3[:, 3] = 0
    else:
        np.multiply(grad_hy, tanh_cy, out=d3[:, 3])      # d o
        d_c = tanh_cy
        d_c *= d_c
        np.subtract(1, d_c, out=d_c)
        d_c *= ws3[:, 3]
        d_c *= grad_hy
        if grad_cy is not None:
            d_c += grad_cy
    # d i = dc g, d f = dc cx, d g = dc i (then times each gate's slope)
    np.multiply(ws3[:, 2], d_c, out=d3[:, 0])
    np.multiply(cx, d_c, out=d3[:, 1])
    np.multiply(ws3[:, 0], d_c, out=d3[:, 2])
    d3 *= slope
    np.multiply(d_c, ws3[:, 1], out=d_cx)


def gru_cell_forward(input_gates, hidden_gates, hx, input_bias, hidden_bias, hy, ws):
    """PyTorch's fused GRU cell: `ws` (N, 5H) gets r, z, n, hx and W_hn h + b_hn."""
    n, H = hx.shape
    if _native_cell("gru_cell_forward", n, H,
                    ((n, 3 * H), (n, 3 * H), (n, H), (3 * H,), (3 * H,), (n, H), (n, 5 * H)),
                    (input_gates, hidden_gates, hx, input_bias, hidden_bias, hy, ws),
                    _flags((_BIAS_INPUT, input_bias is not None),
                           (_BIAS_HIDDEN, hidden_bias is not None))):
        return
    rz, n, h_saved, hn = ws[:, :2 * H], ws[:, 2 * H:3 * H], ws[:, 3 * H:4 * H], ws[:, 4 * H:]
    np.add(input_gates[:, :2 * H], hidden_gates[:, :2 * H], out=rz)
    np.copyto(hn, hidden_gates[:, 2 * H:])
    np.copyto(n, input_gates[:, 2 * H:])
    if input_bias is not None:
        rz += input_bias[:2 * H]
        n += input_bias[2 * H:]
    if hidden_bias is not None:
        rz += hidden_bias[:2 * H]
        hn += hidden_bias[2 * H:]
    rz *= 0.5
    np.tanh(rz, out=rz)
    rz *= 0.5
    rz += 0.5
    n += ws[:, :H] * hn
    np.tanh(n, out=n)
    np.copyto(h_saved, hx)
    np.subtract(hx, n, out=hy)          # h' = n + z (h - n)
    hy *= ws[:, H:2 * H]
    hy += n


def gru_cell_backward(grad_hy, ws, d_input_gates, d_hidden_gates, d_hx):
    """Gradients of the fused GRU cell's input and hidden gates (N, 3H) and of hx."""
    n, H = d_hx.shape
    if _native_cell("gru_cell_backward", n, H,
                    ((n, H), (n, 5 * H), (n, 3 * H), (n, 3 * H), (n, H)),
                    (grad_hy, ws, d_input_gates, d_hidden_gates, d_hx), None):
        return
    r, z, n, hx, hn = (ws[:, k * H:(k + 1) * H] for k in range(5))
    d_n = grad_hy * (1 - z) * (1 - n * n)
    np.multiply(d_n * hn, r * (1 - r), out=d_input_gates[:, :H])
    np.multiply(grad_hy * (hx - n), z * (1 - z), out=d_input_gates[:, H:2 * H])
    d_input_gates[:, 2 * H:] = d_n
    d_hidden_gates[:, :2 * H] = d_input_gates[:, :2 * H]
    np.multiply(d_n, r, out=d_hidden_gates[:, 2 * H:])
    np.multiply(grad_hy, z, out=d_hx)


def _row_major_t(w):
    """w^T laid out row-major: OpenBLAS multiplies by a transposed (column-major) matrix
    more slowly than it copies one this small (97x51 @ 51x51 float64: 18 us against 12 us
    plus 1 us for the copy)."""
    return np.ascontiguousarray(w.T)


def rnn_cell_forward(x, h, w_ih, w_hh, b_ih, b_hh, relu, out):
    """One Elman step into `out` (N, H): act(x W_ih^T + h W_hh^T + b_ih + b_hh), act relu
    or tanh; either bias may be None."""
    np.matmul(x, _row_major_t(w_ih), out=out)
    out += np.matmul(h, _row_major_t(w_hh))
    if b_ih is not None and b_hh is not None:
        out += b_ih + b_hh
    elif b_ih is not None or b_hh is not None:
        out += b_ih if b_hh is None else b_hh
    if relu:
        np.maximum(out, 0, out=out)
    else:
        np.tanh(out, out=out)


def rnn_cell_backward(grad, x, h, w_ih, w_hh, out, relu, grads):
    """The gradients of an Elman step from its output `out` and the gradient reaching it,
    written into `grads` = (input, hx, w_ih, w_hh, bias) arrays (None where not wanted; the
    bias's serves both biases, whose gradients are the same)."""
    d_x, d_h, d_w_ih, d_w_hh, d_bias = grads
    d_pre = threshold_grad(grad, out, 0) if relu else tanh_grad(grad, out)
    if d_x is not None:
        np.matmul(d_pre, w_ih, out=d_x)
    if d_h is not None:
        np.matmul(d_pre, w_hh, out=d_h)
    if d_w_ih is not None:
        np.matmul(d_pre.T, x, out=d_w_ih)
    if d_w_hh is not None:
        np.matmul(d_pre.T, h, out=d_w_hh)
    if d_bias is not None:
        np.add.reduce(d_pre, axis=0, out=d_bias)
