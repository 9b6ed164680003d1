"""Recurrent layers: one operator per layer and direction over the whole sequence.

`lstm`, `gru`, `rnn_tanh` and `rnn_relu` (aten's `.input` overloads for padded input,
`.data` for packed) are composites, as PyTorch's are: they stack layers and directions,
apply dropout between layers, and run each layer and direction as one call of
`aten::mkldnn_rnn_layer`, the operator PyTorch's CPU LSTM runs per layer, so autograd records
one `MkldnnRnnLayerBackward0` node per layer and direction. That operator takes the mode
(ideep's numbering: RNN_RELU 0, RNN_TANH 1, LSTM 2, GRU 3) and packed batch sizes, so GRU,
RNN and packed input go through it too where PyTorch decomposes them into per-step ops; an
LSTM with projections (no slot for `weight_hr` in PyTorch's schema) runs `_lstm_proj_layer`,
the same kernel with one more weight. The kernels are backends/cpu/recurrent.py; the
derivatives, recurrent_derivatives.py.

CUDA tensors, and dtypes other than float32/float64, run the layers step by step in other
ops (`_layer_by_steps`), one matmul plus the gate math per time step; meta tensors take the
operators, whose meta kernels give the shapes.
"""
from __future__ import annotations

import numpy as np

from ...backends.cpu import recurrent as kernels
from ...core import dtype as dt
from ...core.device import CPU, META
from ...core.tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.keys import DispatchKey, local_keys
from ..creation.factories import zeros
from ..registry import composite, kernel_op
from ..shape.joining import cat, stack
from .activation import dropout as _dropout
from .normalization import linear

RNN_RELU, RNN_TANH, LSTM, GRU = kernels.RNN_RELU, kernels.RNN_TANH, kernels.LSTM, kernels.GRU
_FAST_DTYPES = (dt.float32, dt.float64)


# ---- one layer, one direction --------------------------------------------------------------

def _layer_meta(device, input, hx_, cx_, batch_sizes, mode, hidden):
    """(output, h_n, c_n, workspace) allocated on `device`: the output is packed (S, .) rows
    or a padded (T, N, .) batch (batch-first: (N, T, .)), as the input; c_n is empty except
    for the LSTM."""
    if not batch_sizes and input.dim() != 3:
        raise RuntimeError(f"mkldnn_rnn_layer: expected a 3-D input (or 2-D with batch "
                           f"sizes), got {input.dim()}-D")
    lead = tuple(input._shape[:-1])
    rows = lead[0] if batch_sizes else lead[0] * lead[1]
    d = input.dtype
    return (Tensor._empty(lead + (hx_._shape[-1],), d, device),
            Tensor._empty(hx_._shape, d, device),
            Tensor._empty(cx_._shape if mode == LSTM else (0,), d, device),
            Tensor._empty((rows, kernels.WORKSPACE[mode] * hidden), d, device))


def _check_layer(input, weights, hx_, cx_, mode):
    if mode not in kernels.GATES:
        raise RuntimeError(f"mkldnn_rnn_layer: unknown mode {mode} (0: RNN_RELU, 1: RNN_TANH, "
                           "2: LSTM, 3: GRU)")
    for t in (*weights, hx_, cx_):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"mkldnn_rnn_layer: expected all tensors to have dtype "
                               f"{input.dtype}, got {t.dtype}")


def _rows(t, swap: bool):
    """A tensor's elements as (rows, features), time step after time step; `swap`: the
    tensor is a batch-first (N, T, .) batch (then the rows are a copy)."""
    a = t._array()
    if swap:
        a = a.swapaxes(0, 1)
    return a.reshape(-1, a.shape[-1])


def _sizes(input, batch_sizes, swap):
    if batch_sizes:
        return list(batch_sizes)
    steps, batch = input._shape[1::-1] if swap else input._shape[:2]
    return [batch] * steps


def _run_layer(mode, input, w_ih, w_hh, b_ih, b_hh, w_hr, hx_, cx_, reverse, batch_sizes,
               has_biases, batch_first):
    _check_layer(input, [w for w in (w_ih, w_hh, b_ih, b_hh, w_hr) if w is not None], hx_,
                 cx_, mode)
    hidden = w_hh._shape[0] // kernels.GATES[mode]
    out, hy, cy, ws = _layer_meta(CPU, input, hx_, cx_, batch_sizes, mode, hidden)
    swap = batch_first and not batch_sizes
    sizes = _sizes(input, batch_sizes, swap)
    if not sizes:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    steps = _rows(input, swap)
    # the recurrence writes a step's rows at a time: into the output, or time-major rows
    # copied into a batch-first output at the end
    out_rows = _rows(out, False) if not swap else np.empty(
        (steps.shape[0], out._shape[-1]), dtype=steps.dtype)
    kernels.layer_forward(
        mode, steps, w_ih._array(), w_hh._array(),
        b_ih._array() if has_biases else None, b_hh._array() if has_biases else None,
        None if w_hr is None else w_hr._array(), _rows(hx_, False),
        _rows(cx_, False) if mode == LSTM else None, sizes, reverse, out_rows, _rows(hy, False), _rows(cy, False) if mode == LSTM else None,
        ws._array())
    if swap:
        out._array()[...] = out_rows.reshape(out._shape[1], out._shape[0], -1).swapaxes(0, 1)
    return out, hy, cy, ws


def _mkldnn_rnn_layer_cpu(input, weight0, weight1, weight2, weight3, hx_, cx_, reverse,
                          batch_sizes, mode, hidden_size, num_layers, has_biases,
                          bidirectional, batch_first, train):
    return _run_layer(mode, input, weight0, weight1, weight2, weight3, None, hx_, cx_, reverse,
                      batch_sizes, has_biases, batch_first)


def _mkldnn_rnn_layer_meta(input, weight0, weight1, weight2, weight3, hx_, cx_, reverse,
                           batch_sizes, mode, hidden_size, num_layers, has_biases,
                           bidirectional, batch_first, train):
    hidden = weight1._shape[0] // kernels.GATES[mode]
    return _layer_meta(META, input, hx_, cx_, batch_sizes, mode, hidden)


mkldnn_rnn_layer = kernel_op(
    "mkldnn_rnn_layer(Tensor input, Tensor weight0, Tensor weight1, Tensor weight2, "
    "Tensor weight3, Tensor hx_, Tensor cx_, bool reverse, int[] batch_sizes, int mode, "
    "int hidden_size, int num_layers, bool has_biases, bool bidirectional, bool batch_first, "
    "bool train) -> (Tensor, Tensor, Tensor, Tensor)", method=False)
mkldnn_rnn_layer.impl("CPU")(_mkldnn_rnn_layer_cpu)
mkldnn_rnn_layer.impl("Meta")(_mkldnn_rnn_layer_meta)


def _lstm_proj_layer_cpu(input, weight0, weight1, weight2, weight3, weight4, hx_, cx_,
                         reverse, batch_sizes, has_biases, batch_first, train):
    return _run_layer(LSTM, input, weight0, weight1, weight2, weight3, weight4, hx_, cx_,
                      reverse, batch_sizes, has_biases, batch_first)


def _lstm_proj_layer_meta(input, weight0, weight1, weight2, weight3, weight4, hx_, cx_,
                          reverse, batch_sizes, has_biases, batch_first, train):
    return _layer_meta(META, input, hx_, cx_, batch_sizes, LSTM, weight4._shape[1])


_lstm_proj_layer = kernel_op(
    "_lstm_proj_layer(Tensor input, Tensor weight0, Tensor weight1, Tensor weight2, "
    "Tensor weight3, Tensor weight4, Tensor hx_, Tensor cx_, bool reverse, int[] batch_sizes, "
    "bool has_biases, bool batch_first, bool train) -> (Tensor, Tensor, Tensor, Tensor)",
    method=False, function=False,
    doc="mkldnn_rnn_layer's LSTM with a projection of h (weight4 = weight_hr).")
_lstm_proj_layer.impl("CPU")(_lstm_proj_layer_cpu)
_lstm_proj_layer.impl("Meta")(_lstm_proj_layer_meta)


# ---- their backward ------------------------------------------------------------------------

def _layer_backward(mode, input, w_ih, w_hh, w_hr, hx_, cx_, output, workspace, grad_output,
                    grad_hy, grad_cy, reverse, batch_sizes, batch_first, has_biases):
    """(d input, d w_ih, d w_hh, d b_ih, d b_hh, d w_hr, d hx, d cx) as tensors; d cx is an
    empty tensor unless the mode is LSTM, the bias gradients zeros without biases."""
    d = input.dtype

    def like(t):
        return Tensor._empty(t._shape, d, CPU)
    gates = (w_hh._shape[0],)
    grads = (like(input), like(w_ih), like(w_hh), Tensor._empty(gates, d, CPU),
             Tensor._empty(gates, d, CPU), None if w_hr is None else like(w_hr), like(hx_),
             like(cx_) if mode == LSTM else Tensor._empty((0,), d, CPU))
    if not has_biases:
        grads[3]._array().fill(0)
        grads[4]._array().fill(0)
    swap = batch_first and not batch_sizes
    steps = _rows(input, swap)
    d_x = np.empty_like(steps) if swap else _rows(grads[0], False)
    lstm = mode == LSTM

    def rows(t, wanted=True):
        return None if t is None or not wanted else _rows(t, False)
    kernels.layer_backward(
        mode, steps, w_ih._array(), w_hh._array(), rows(w_hr), rows(hx_), rows(cx_, lstm),
        _rows(output, swap), workspace._array(),
        None if grad_output is None else _rows(grad_output, swap), rows(grad_hy),
        rows(grad_cy, lstm), _sizes(input, batch_sizes, swap), reverse,
        (d_x, grads[1]._array(), grads[2]._array(), grads[3]._array() if has_biases else None,
         grads[4]._array() if has_biases else None, rows(grads[5]), rows(grads[6]),
         rows(grads[7], lstm)))
    if swap:
        n, t = input._shape[:2]
        grads[0]._array()[...] = d_x.reshape(t, n, -1).swapaxes(0, 1)
    return grads


def _mkldnn_rnn_layer_backward_cpu(input, weight1, weight2, weight3, weight4, hx_, cx_tmp,
                                   output, hy_, cy_, grad_output, grad_hy, grad_cy, reverse,
                                   mode, hidden_size, num_layers, has_biases, train,
                                   bidirectional, batch_sizes, batch_first, workspace):
    g = _layer_backward(mode, input, weight1, weight2, None, hx_, cx_tmp, output, workspace,
                        grad_output, grad_hy, grad_cy, reverse, batch_sizes, batch_first,
                        has_biases)
    return g[:5] + g[6:]       # no weight_hr


mkldnn_rnn_layer_backward = kernel_op(
    "mkldnn_rnn_layer_backward(Tensor input, Tensor weight1, Tensor weight2, Tensor weight3, "
    "Tensor weight4, Tensor hx_, Tensor cx_tmp, Tensor output, Tensor hy_, Tensor cy_, "
    "Tensor? grad_output, Tensor? grad_hy, Tensor? grad_cy, bool reverse, int mode, "
    "int hidden_size, int num_layers, bool has_biases, bool train, bool bidirectional, "
    "int[] batch_sizes, bool batch_first, Tensor workspace) -> (Tensor, Tensor, Tensor, "
    "Tensor, Tensor, Tensor, Tensor)", method=False, function=False)
mkldnn_rnn_layer_backward.impl("CPU")(_mkldnn_rnn_layer_backward_cpu)


def _like_on_meta(*tensors):
    return tuple(Tensor._empty(t._shape, t.dtype, META) for t in tensors)


def _mkldnn_rnn_layer_backward_meta(input, weight1, weight2, weight3, weight4, hx_, cx_tmp,
                                    output, hy_, cy_, grad_output, grad_hy, grad_cy, reverse,
                                    mode, hidden_size, num_layers, has_biases, train,
                                    bidirectional, batch_sizes, batch_first, workspace):
    d_cx = Tensor._empty(cx_tmp._shape if mode == LSTM else (0,), input.dtype, META)
    return _like_on_meta(input, weight1, weight2, weight3, weight4, hx_) + (d_cx,)


mkldnn_rnn_layer_backward.impl("Meta")(_mkldnn_rnn_layer_backward_meta)


def _lstm_proj_layer_backward_cpu(input, weight0, weight1, weight4, hx_, cx_, output,
                                  workspace, grad_output, grad_hy, grad_cy, reverse,
                                  batch_sizes, has_biases, batch_first):
    return _layer_backward(LSTM, input, weight0, weight1, weight4, hx_, cx_, output, workspace,
                           grad_output, grad_hy, grad_cy, reverse, batch_sizes, batch_first,
                           has_biases)


_lstm_proj_layer_backward = kernel_op(
    "_lstm_proj_layer_backward(Tensor input, Tensor weight0, Tensor weight1, Tensor weight4, "
    "Tensor hx_, Tensor cx_, Tensor output, Tensor workspace, Tensor? grad_output, "
    "Tensor? grad_hy, Tensor? grad_cy, bool reverse, int[] batch_sizes, bool has_biases, "
    "bool batch_first) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
    method=False, function=False)
_lstm_proj_layer_backward.impl("CPU")(_lstm_proj_layer_backward_cpu)


def _lstm_proj_layer_backward_meta(input, weight0, weight1, weight4, hx_, cx_, output,
                                   workspace, grad_output, grad_hy, grad_cy, reverse,
                                   batch_sizes, has_biases, batch_first):
    biases = tuple(Tensor._empty((weight1._shape[0],), input.dtype, META) for _ in range(2))
    return (_like_on_meta(input, weight0, weight1) + biases
            + _like_on_meta(weight4, hx_, cx_))


_lstm_proj_layer_backward.impl("Meta")(_lstm_proj_layer_backward_meta)


# ---- the layer stacks ------------------------------------------------------------------------

def _fast(input, states, params) -> bool:
    """Whether the whole-sequence kernels serve this call (CPU or meta, float32/float64)."""
    device = input.device.type
    return (device in ("cpu", "meta") and input.dtype in _FAST_DTYPES
            and all(t.device.type == device for t in (*states, *params)))


def _layer_by_op(mode, x, w, has_biases, h0, c0, reverse, batch_sizes, train):
    """One layer and direction through its operator: (output rows, h_n, c_n)."""
    w_ih, w_hh = w[0], w[1]
    if has_biases:
        b_ih, b_hh = w[2], w[3]
    else:
        b_ih = b_hh = zeros(w_ih.shape[0], dtype=x.dtype, device=x.device)
    if len(w) == (5 if has_biases else 3):      # weight_hr: an LSTM with projections
        out, h, c, _ = _lstm_proj_layer.functional(
            x, w_ih, w_hh, b_ih, b_hh, w[-1], h0, c0, reverse, batch_sizes, has_biases,
            False, train)
        return out, h, c
    hidden = w_hh.shape[0] // kernels.GATES[mode]
    out, h, c, _ = mkldnn_rnn_layer.functional(
        x, w_ih, w_hh, b_ih, b_hh, h0, h0 if c0 is None else c0, reverse, batch_sizes, mode,
        hidden, 1, has_biases, False, False, train)
    return out, h, (c if mode == LSTM else None)


def _stack_layers(mode, x, batch_sizes, hx, cx, params, has_biases, num_layers, dropout,
                  train, bidirectional):
    """Layers over time-major `x` (T, N, I) or packed rows (S, I): (output, h_n, c_n)."""
    directions = 2 if bidirectional else 1
    per = len(params) // (num_layers * directions)
    states = (hx,) if cx is None else (hx, cx)
    _check_dtypes(x, states, params)
    fast = _fast(x, states, params)
    h_n, c_n = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            w = params[k * per:(k + 1) * per]
            c0 = None if cx is None else cx[k]
            if fast:
                out, h, c = _layer_by_op(mode, x, w, has_biases, hx[k], c0, d == 1,
                                         batch_sizes, train)
            else:
                out, h, c = _layer_by_steps(mode, x, w, has_biases, hx[k], c0, d == 1,
                                            batch_sizes)
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        x = outs[0] if directions == 1 else cat(outs, -1)
        if dropout and train and layer < num_layers - 1:
            x = _dropout(x, dropout, True)
    return x, stack(h_n), (None if cx is None else stack(c_n))


def _check_dtypes(input, states, params):
    for kind, tensors in (("hidden", states), ("parameter", params)):
        for t in tensors:
            if t.dtype is not input.dtype:
                raise RuntimeError(f"Input and {kind} tensors are not the same dtype, found "
                                   f"input tensor with {input.dtype.cname} and {kind} tensor "
                                   f"with {t.dtype.cname}")


def _check_params(params, has_biases, num_layers, bidirectional):
    groups = num_layers * (2 if bidirectional else 1)
    per = 4 if has_biases else 2
    if len(params) not in (groups * per, groups * (per + 1)):
        raise RuntimeError(f"rnn: expected {groups * per} parameter tensors ({groups} layers "
                           f"and directions of {per}; with projections {per + 1}), got "
                           f"{len(params)}")


def _padded(mode, input, hx, cx, params, has_biases, num_layers, dropout, train,
             bidirectional, batch_first):
    _check_params(params, has_biases, num_layers, bidirectional)
    x = input.transpose(0, 1) if batch_first else input
    out, h, c = _stack_layers(mode, x.contiguous(), [], hx, cx, params, has_biases,
                              num_layers, dropout, train, bidirectional)
    return out.transpose(0, 1) if batch_first else out, h, c


def _packed(mode, data, batch_sizes, hx, cx, params, has_biases, num_layers, dropout, train,
            bidirectional):
    _check_params(params, has_biases, num_layers, bidirectional)
    sizes = [int(s) for s in batch_sizes.tolist()]
    return _stack_layers(mode, data.contiguous(), sizes, hx, cx, params, has_biases,
                         num_layers, dropout, train, bidirectional)


def _lstm_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                batch_first):
    return _padded(LSTM, input, hx[0], hx[1], params, has_biases, num_layers, dropout, train,
                   bidirectional, batch_first)


def _lstm_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
               bidirectional):
    return _packed(LSTM, data, batch_sizes, hx[0], hx[1], params, has_biases, num_layers,
                   dropout, train, bidirectional)


def _one_state(mode):
    def padded(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
        return _padded(mode, input, hx, None, params, has_biases, num_layers, dropout, train,
                       bidirectional, batch_first)[:2]

    def packed(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
               bidirectional):
        return _packed(mode, data, batch_sizes, hx, None, params, has_biases, num_layers,
                       dropout, train, bidirectional)[:2]
    return padded, packed


def _declare(name, state, outputs, padded, packed):
    """aten::<name>.input and .data (CompositeImplicitAutograd), and glasstorch.<name>,
    which picks the overload by its second argument, as PyTorch's does."""
    outs = ", ".join(["Tensor"] * outputs)
    common = ("Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, "
              "bool bidirectional")
    define(f"{name}.input(Tensor input, {state} hx, {common}, bool batch_first) -> ({outs})"
           ).register("CompositeImplicitAutograd", padded)
    define(f"{name}.data(Tensor data, Tensor batch_sizes, {state} hx, {common}) -> ({outs})"
           ).register("CompositeImplicitAutograd", packed)

    def public(*args):
        # .data's second argument is the batch sizes; .input's is hx (a list for the LSTM)
        if isinstance(args[1], Tensor) and (name == "lstm" or isinstance(args[2], Tensor)):
            return packed(*args)
        return padded(*args)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = (f"{name}(input, hx, params, has_biases, num_layers, dropout, train, "
                      f"bidirectional, batch_first) or {name}(data, batch_sizes, hx, params, "
                      f"...): the whole {name.upper()} stack over a padded or packed sequence.")
    composite(name)(public)
    return public


lstm = _declare("lstm", "Tensor[]", 3, _lstm_input, _lstm_data)
gru = _declare("gru", "Tensor", 2, *_one_state(GRU))
rnn_tanh = _declare("rnn_tanh", "Tensor", 2, *_one_state(RNN_TANH))
rnn_relu = _declare("rnn_relu", "Tensor", 2, *_one_state(RNN_RELU))


# ---- step by step (CUDA, other dtypes) -----------------------------------------------------
# A step takes gi (this step's rows of the input projection), the state (h, c), W_hh^T,
# b_hh and W_hr; it returns the new (h, c). RNN and LSTM fold b_hh into gi (the sum is the
# same), so their whole pre-activation is one addmm; GRU keeps b_hn inside r * (...).

def _tanh_step(gi, h, c, w_hh_t, b_hh, w_hr):
    return gi.addmm(h, w_hh_t).tanh(), None


def _relu_step(gi, h, c, w_hh_t, b_hh, w_hr):
    return gi.addmm(h, w_hh_t).relu(), None


def _lstm_step(gi, h, c, w_hh_t, b_hh, w_hr):
    gates = gi.addmm(h, w_hh_t)
    hidden = c.size(1)
    i, f, _, o = gates.sigmoid().chunk(4, 1)
    g = gates[:, 2 * hidden:3 * hidden].tanh()
    c = f * c + i * g
    h = o * c.tanh()
    if w_hr is not None:
        h = h.mm(w_hr.t())
    return h, c


def _gru_step(gi, h, c, w_hh_t, b_hh, w_hr):
    gh = h.mm(w_hh_t) if b_hh is None else b_hh.addmm(h, w_hh_t)
    hidden = h.size(1)
    r, z = (gi[:, :2 * hidden] + gh[:, :2 * hidden]).sigmoid().chunk(2, 1)
    n = (gi[:, 2 * hidden:] + r * gh[:, 2 * hidden:]).tanh()
    return n + z * (h - n), None


_STEPS = {RNN_TANH: _tanh_step, RNN_RELU: _relu_step, LSTM: _lstm_step, GRU: _gru_step}


def _layer_by_steps(mode, x, w, has_biases, h0, c0, reverse, batch_sizes):
    """One layer and direction in per-step ops: (output, h_n, c_n), shaped as the op's."""
    padded = not batch_sizes
    if padded:
        steps, batch = x.shape[0], x.shape[1]
        sizes, rows = [batch] * steps, x.reshape(steps * batch, x.shape[2])
    else:
        sizes, rows = batch_sizes, x
    b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
    w_hr = w[-1] if len(w) == (5 if has_biases else 3) else None
    gi = linear(rows, w[0], None if b_ih is None else (b_ih if mode == GRU else b_ih + b_hh))
    starts, total = [], 0
    for bs in sizes:
        starts.append(total)
        total += bs
    out, h, c = _run_steps(_STEPS[mode], gi, sizes, starts, h0, c0, w[1].t(), b_hh, w_hr,
                           reverse)
    return (out.view(len(sizes), sizes[0], out.size(-1)) if padded else out), h, c


def _run_steps(step, gi, sizes, starts, h0, c0, w_hh_t, b_hh, w_hr, reverse):
    """The recurrence over packed gates `gi`, rows still running shrinking (forward) or
    growing (reverse) with the batch sizes: (outputs, h_n, c_n)."""
    outs, done_h, done_c = [], [], []
    if reverse:
        # batch grows as time runs backwards: sequences join with their initial state
        n = sizes[-1]
        h, c = h0[:n], (None if c0 is None else c0[:n])
        for t in range(len(sizes) - 1, -1, -1):
            bs = sizes[t]
            if bs > n:
                h = cat([h, h0[n:bs]])
                c = None if c is None else cat([c, c0[n:bs]])
                n = bs
            h, c = step(gi[starts[t]:starts[t] + bs], h, c, w_hh_t, b_hh, w_hr)
            outs.append(h)
        outs.reverse()
        return cat(outs), h, c
    h, c = h0, c0
    n = h0.size(0)
    for t, bs in enumerate(sizes):
        if bs < n:
            # the sequences at rows bs..n have ended: their state is final
            done_h.append(h[bs:n])
            h = h[:bs]
            if c is not None:
                done_c.append(c[bs:n])
                c = c[:bs]
            n = bs
        h, c = step(gi[starts[t]:starts[t] + bs], h, c, w_hh_t, b_hh, w_hr)
        outs.append(h)
    if done_h:
        h = cat([h] + done_h[::-1])
        c = None if c is None else cat([c] + done_c[::-1])
    return cat(outs), h, c


# ---- cells -------------------------------------------------------------------------------------
# PyTorch's CUDA cells: the two gate products are matmuls, the rest one fused op whose
# workspace keeps the activations for its backward.

def _arr(t):
    return None if t is None else t._array()


def _check(ok: bool, message: str):
    if not ok:
        raise RuntimeError(message)


def _check_fused_cell_sizes(name, input_gates, hidden_gates, input_bias, hidden_bias, factor,
                            prev_hidden):
    """PyTorch's checks of a fused cell's arguments, in the words of its meta kernel; a
    hidden bias may come alone (PyTorch's checks compare it to the input bias's shape).
    Last, one of glasstorch's: the state (N, gates / factor), as the kernels read it."""
    _check(input_gates.dim() == 2, f"{input_gates.dim()} != 2")
    _check(input_gates._shape == hidden_gates._shape,
           f"{input_gates.shape} != {hidden_gates.shape}")
    n, gates = input_gates._shape
    if input_bias is not None or hidden_bias is not None:
        first = input_bias if input_bias is not None else hidden_bias
        _check(first.dim() == 1, f"{first.dim()} != 1")
        _check(first.numel() == gates, f"{first.numel()} != {gates}")
        if input_bias is not None and hidden_bias is not None:
            _check(input_bias._shape == hidden_bias._shape,
                   f"{input_bias.shape} != {hidden_bias.shape}")
    _check(prev_hidden.dim() == 2, f"{prev_hidden.dim()} != 2")
    numel = n * gates // factor
    _check(prev_hidden.numel() == numel,
           f"{prev_hidden.numel()} != {n} * {gates} // {factor} (aka {numel})")
    _check(all(t is None or t.device == input_gates.device
               for t in (hidden_gates, input_bias, hidden_bias, prev_hidden)),
           "expected all inputs to be same device")
    _check(gates % factor == 0 and prev_hidden._shape == (n, gates // factor),
           f"{name}: expected a state of shape [{n}, {gates} / {factor}] for gates of shape "
           f"[{n}, {gates}], got {list(prev_hidden._shape)}")


def _fused_lstm_cell_cpu(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    _check_fused_cell_sizes("_thnn_fused_lstm_cell", input_gates, hidden_gates, input_bias,
                            hidden_bias, 4, cx)
    d = input_gates.dtype
    hy, cy = Tensor._empty(cx._shape, d, CPU), Tensor._empty(cx._shape, d, CPU)
    ws = Tensor._empty(input_gates._shape, d, CPU)
    kernels.lstm_cell_forward(input_gates._array(), hidden_gates._array(), cx._array(),
                              _arr(input_bias), _arr(hidden_bias), hy._array(), cy._array(),
                              ws._array())
    return hy, cy, ws


def _fused_lstm_cell_meta(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    _check_fused_cell_sizes("_thnn_fused_lstm_cell", input_gates, hidden_gates, input_bias,
                            hidden_bias, 4, cx)
    d = input_gates.dtype
    return (Tensor._empty(cx._shape, d, META), Tensor._empty(cx._shape, d, META),
            Tensor._empty(input_gates._shape, d, META))


_thnn_fused_lstm_cell = kernel_op(
    "_thnn_fused_lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx, "
    "Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor, Tensor)",
    method=False, function=False)
_thnn_fused_lstm_cell.impl("CPU")(_fused_lstm_cell_cpu)
_thnn_fused_lstm_cell.impl("Meta")(_fused_lstm_cell_meta)


def _fused_lstm_cell_backward_cpu(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    d = cx.dtype
    d_gates = Tensor._empty(workspace._shape, d, CPU)
    d_cx = Tensor._empty(cx._shape, d, CPU)
    kernels.lstm_cell_backward(_arr(grad_hy), _arr(grad_cy), cx._array(), cy._array(),
                               workspace._array(), d_gates._array(), d_cx._array())
    return d_gates, d_cx, (d_gates.sum(0) if has_bias else None)


_thnn_fused_lstm_cell_backward_impl = kernel_op(
    "_thnn_fused_lstm_cell_backward_impl(Tensor? grad_hy, Tensor? grad_cy, Tensor cx, "
    "Tensor cy, Tensor workspace, bool has_bias) -> (Tensor, Tensor, Tensor)",
    method=False, function=False)
_thnn_fused_lstm_cell_backward_impl.impl("CPU")(_fused_lstm_cell_backward_cpu)


def _fused_lstm_cell_backward_meta(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    d_bias = Tensor._empty((workspace._shape[1],), cx.dtype, META) if has_bias else None
    return _like_on_meta(workspace, cx) + (d_bias,)


_thnn_fused_lstm_cell_backward_impl.impl("Meta")(_fused_lstm_cell_backward_meta)


def _fused_gru_cell_cpu(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    _check_fused_cell_sizes("_thnn_fused_gru_cell", input_gates, hidden_gates, input_bias,
                            hidden_bias, 3, hx)
    d = input_gates.dtype
    hy = Tensor._empty(hx._shape, d, CPU)
    ws = Tensor._empty((hx._shape[0], 5 * hx._shape[1]), d, CPU)
    kernels.gru_cell_forward(input_gates._array(), hidden_gates._array(), hx._array(),
                             _arr(input_bias), _arr(hidden_bias), hy._array(), ws._array())
    return hy, ws


def _fused_gru_cell_meta(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    _check_fused_cell_sizes("_thnn_fused_gru_cell", input_gates, hidden_gates, input_bias,
                            hidden_bias, 3, hx)
    d = input_gates.dtype
    return (Tensor._empty(hx._shape, d, META),
            Tensor._empty((hx._shape[0], 5 * hx._shape[1]), d, META))


_thnn_fused_gru_cell = kernel_op(
    "_thnn_fused_gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx, "
    "Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor)",
    method=False, function=False)
_thnn_fused_gru_cell.impl("CPU")(_fused_gru_cell_cpu)
_thnn_fused_gru_cell.impl("Meta")(_fused_gru_cell_meta)


def _fused_gru_cell_backward_cpu(grad_hy, workspace, has_bias):
    d = workspace.dtype
    n, h = workspace._shape[0], workspace._shape[1] // 5
    d_ig, d_hg = (Tensor._empty((n, 3 * h), d, CPU) for _ in range(2))
    d_hx = Tensor._empty((n, h), d, CPU)
    kernels.gru_cell_backward(grad_hy._array(), workspace._array(), d_ig._array(),
                              d_hg._array(), d_hx._array())
    biases = (d_ig.sum(0), d_hg.sum(0)) if has_bias else (None, None)
    return (d_ig, d_hg, d_hx) + biases


_thnn_fused_gru_cell_backward = kernel_op(
    "_thnn_fused_gru_cell_backward(Tensor grad_hy, Tensor workspace, bool has_bias) -> "
    "(Tensor, Tensor, Tensor, Tensor, Tensor)", method=False, function=False)
_thnn_fused_gru_cell_backward.impl("CPU")(_fused_gru_cell_backward_cpu)


def _fused_gru_cell_backward_meta(grad_hy, workspace, has_bias):
    n, h, d = workspace._shape[0], workspace._shape[1] // 5, workspace.dtype
    gates = tuple(Tensor._empty((n, 3 * h), d, META) for _ in range(2))
    biases = tuple(Tensor._empty((3 * h,), d, META) if has_bias else None for _ in range(2))
    return gates + (Tensor._empty((n, h), d, META),) + biases


_thnn_fused_gru_cell_backward.impl("Meta")(_fused_gru_cell_backward_meta)


# The Elman cells (tanh, relu), which PyTorch fuses nowhere: the whole step, products
# included, is one op and its backward one node, where the per-op step records six (two
# transposes, two addmm, the biases' add, the activation) and the backward runs as many.

def _fused_rnn_cell_cpu(input, hx, w_ih, w_hh, b_ih=None, b_hh=None, relu=False):
    out = Tensor._empty((input._shape[0], w_hh._shape[0]), input.dtype, CPU)
    kernels.rnn_cell_forward(input._array(), hx._array(), w_ih._array(), w_hh._array(),
                             _arr(b_ih), _arr(b_hh), relu, out._array())
    return out


def _fused_rnn_cell_meta(input, hx, w_ih, w_hh, b_ih=None, b_hh=None, relu=False):
    return Tensor._empty((input._shape[0], w_hh._shape[0]), input.dtype, META)


_fused_rnn_cell = kernel_op(
    "_fused_rnn_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
    "Tensor? b_hh=None, bool relu=False) -> Tensor", method=False, function=False,
    doc="A whole Elman step, relu or tanh of input W_ih^T + hx W_hh^T + b_ih + b_hh: "
        "glasstorch's own (PyTorch has no fused op for these cells).")
_fused_rnn_cell.impl("CPU")(_fused_rnn_cell_cpu)
_fused_rnn_cell.impl("Meta")(_fused_rnn_cell_meta)


def _fused_rnn_cell_backward_cpu(grad, input, hx, w_ih, w_hh, output, relu, output_mask):
    """(d input, d hx, d w_ih, d w_hh, d bias), None where output_mask says unwanted; the
    one bias gradient serves both biases."""
    d = input.dtype
    grads = tuple(Tensor._empty(t._shape, d, CPU) if wanted else None
                  for t, wanted in zip((input, hx, w_ih, w_hh), output_mask))
    d_bias = Tensor._empty((w_hh._shape[0],), d, CPU) if output_mask[4] else None
    kernels.rnn_cell_backward(grad._array(), input._array(), hx._array(), w_ih._array(),
                              w_hh._array(), output._array(), relu,
                              tuple(_arr(g) for g in grads + (d_bias,)))
    return grads + (d_bias,)


def _fused_rnn_cell_backward_meta(grad, input, hx, w_ih, w_hh, output, relu, output_mask):
    shapes = tuple(t._shape for t in (input, hx, w_ih, w_hh)) + ((w_hh._shape[0],),)
    return tuple(Tensor._empty(shape, input.dtype, META) if wanted else None
                 for shape, wanted in zip(shapes, output_mask))


_fused_rnn_cell_backward = kernel_op(
    "_fused_rnn_cell_backward(Tensor grad, Tensor input, Tensor hx, Tensor w_ih, "
    "Tensor w_hh, Tensor output, bool relu, bool[5] output_mask) -> (Tensor, Tensor, "
    "Tensor, Tensor, Tensor)", method=False, function=False)
_fused_rnn_cell_backward.impl("CPU")(_fused_rnn_cell_backward_cpu)
_fused_rnn_cell_backward.impl("Meta")(_fused_rnn_cell_backward_meta)


# ---- the cells' size checks: PyTorch's, in its words, in its order (which differs by cell)

def _check_weights(gates, input, states, w_ih, w_hh):
    hidden = w_hh.size(1)
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.size(0) != gates * hidden:
            raise RuntimeError(f"{name} first dim must be {gates} * hidden_size = "
                               f"{gates * hidden}, but got {w.size(0)}")


def _check_input(gates, input, states, w_ih, w_hh):
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                           f"{w_ih.size(1)}")


def _check_states(gates, input, states, w_ih, w_hh):
    hidden = w_hh.size(1)
    for label, state in enumerate(states):
        if input.size(0) != state.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} "
                               f"batch size {state.size(0)}")
        if state.size(1) != hidden:
            raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got "
                               f"{state.size(1)}, expected {hidden}")


_CHECK_ORDER = {RNN_TANH: (_check_weights, _check_input, _check_states),
                RNN_RELU: (_check_weights, _check_input, _check_states),
                LSTM: (_check_input, _check_weights, _check_states),
                GRU: (_check_input, _check_states, _check_weights)}


def _check_cell_sizes(mode, input, states, w_ih, w_hh):
    """PyTorch's checks of a cell's sizes (a 1-D input or state: size(1)'s IndexError, as
    PyTorch's). Consistent 2-D sizes, every step's case, are settled from the shape tuples
    alone, for the checks in ops cost about as much as a small step."""
    x, w, u = input._shape, w_ih._shape, w_hh._shape
    if len(x) == len(w) == len(u) == 2 and w[0] == u[0] == kernels.GATES[mode] * u[1] \
            and x[1] == w[1] and all(state._shape == (x[0], u[1]) for state in states):
        return
    for check in _CHECK_ORDER[mode]:
        check(kernels.GATES[mode], input, states, w_ih, w_hh)


def _cpu_autocast_on() -> bool:
    return not local_keys.excluded >> DispatchKey.AutocastCPU & 1


def _cell_fused(input, states, w_ih, w_hh, biases) -> bool:
    """Whether a fused op serves this step (sizes checked): a batch of CPU (or meta)
    tensors of one float32/float64 dtype, biases of the gates' size (others broadcast in
    the per-op path), autocast off (under it the products run in its dtype, as ops)."""
    d, gates = input.dtype, (w_hh._shape[0],)
    weights = (w_ih, w_hh, *biases)
    return (all(len(t._shape) == 2 for t in (input, *states, w_ih, w_hh))
            and _fast(input, states, weights)
            and all(t.dtype is d for t in (*states, *weights))
            and all(b._shape == gates for b in biases) and not _cpu_autocast_on())


def _cell(name, schema_state, mode, doc):
    """aten::<name> (CompositeImplicitAutograd) and glasstorch.<name>: one step of `mode`;
    on CPU in float32/float64 LSTM and GRU steps run the fused cell op, Elman steps
    `_fused_rnn_cell`."""

    def cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        if mode == LSTM:
            if len(hx) != 2:
                raise RuntimeError("lstm_cell expects two hidden states")
            states = tuple(hx)
        else:
            states = (hx,)
        _check_cell_sizes(mode, input, states, w_ih, w_hh)
        h, c = states[0], (states[1] if mode == LSTM else None)
        if _cell_fused(input, states, w_ih, w_hh, [b for b in (b_ih, b_hh) if b is not None]):
            if mode in (RNN_TANH, RNN_RELU):
                return _fused_rnn_cell.functional(input, h, w_ih, w_hh, b_ih, b_hh,
                                                  mode == RNN_RELU)
            input_gates, hidden_gates = input.mm(w_ih.t()), h.mm(w_hh.t())
            if mode == LSTM:
                h, c, _ = _thnn_fused_lstm_cell.functional(input_gates, hidden_gates, c,
                                                           b_ih, b_hh)
                return h, c
            return _thnn_fused_gru_cell.functional(input_gates, hidden_gates, h, b_ih,
                                                   b_hh)[0]
        gi = linear(input, w_ih, b_ih)
        if mode != GRU and b_hh is not None:
            # expanded as PyTorch's addmm expands it: its error for a bias of another size
            gi = gi + b_hh.expand(gi.shape)
        h, c = _STEPS[mode](gi, h, c, w_hh.t(), None if mode != GRU else b_hh, None)
        return (h, c) if mode == LSTM else h
    cell.__name__ = cell.__qualname__ = name
    cell.__doc__ = doc
    outs = "(Tensor, Tensor)" if mode == LSTM else "Tensor"
    define(f"{name}(Tensor input, {schema_state} hx, Tensor w_ih, Tensor w_hh, "
           f"Tensor? b_ih=None, Tensor? b_hh=None) -> {outs}"
           ).register("CompositeImplicitAutograd", cell)
    composite(name)(cell)
    return cell


lstm_cell = _cell("lstm_cell", "Tensor[]", LSTM, "One LSTM step: (h', c') from input and "
                  "hx = (h, c), gates i, f, g, o.")
gru_cell = _cell("gru_cell", "Tensor", GRU, "One GRU step: h' = n + z (h - n).")
rnn_tanh_cell = _cell("rnn_tanh_cell", "Tensor", RNN_TANH,
                      "One Elman step: tanh(input W_ih^T + b_ih + h W_hh^T + b_hh).")
rnn_relu_cell = _cell("rnn_relu_cell", "Tensor", RNN_RELU,
                      "One Elman step: relu(input W_ih^T + b_ih + h W_hh^T + b_hh).")
