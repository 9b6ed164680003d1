"""Derivatives of recurrent.py's layer operators: one node per layer and direction.

The node saves the layer's inputs and outputs (the workspace holds the gate activations)
and its backward is one call of the backward operator, which runs the reverse-time loop.
That operator has no derivative of its own; under create_graph the backward instead runs
the layer again in per-step ops and differentiates that, so that the gradient is itself
differentiable, as PyTorch's CPU LSTM's is.

The fused cells (PyTorch's CUDA cells, run here on the CPU too, and glasstorch's Elman cell)
take their kernel's backward, or, under create_graph or a dispatch mode (forward AD's
tangents), a formula in ops (over recomputed activations; the Elman cell's over its saved
output), so cells keep their higher derivatives as PyTorch's do.
"""
from __future__ import annotations

from ...core.grad_state import state as _grad_state
from ...dispatch.modes import _len_torch_dispatch_stack
from ..creation.factories import zeros_like
from ..derivative import derivative, derivative_not_implemented
from ..shape.joining import cat
from .activation import tanh_backward, threshold_backward
from . import recurrent
from .recurrent import LSTM


def _outputs(grads) -> tuple:
    """The gradients of (output, h_n, c_n): the engine passes a lone tensor when only the
    output's arrived, or a tuple as long as the last output that received one."""
    if not isinstance(grads, tuple):
        return grads, None, None
    return (tuple(grads) + (None,) * 3)[:3]


def _recomputed(mode, input, weights, hx_, cx_, reverse, batch_sizes, batch_first, grads):
    """The layer's vector-Jacobian product, differentiable (create_graph): the layer run
    again in per-step ops on the saved inputs, then differentiated by the engine, whose
    graph of that backward is recorded. Gradients of (input, w_ih, w_hh, b_ih, b_hh, w_hr,
    hx, cx); None for those absent or not requiring grad."""
    from ...autograd import grad     # a backward that calls the engine again (reentrant)
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    has_biases = b_ih is not None
    params = [w_ih, w_hh] + ([b_ih, b_hh] if has_biases else []) + (
        [] if w_hr is None else [w_hr])
    swap = batch_first and not batch_sizes
    x = input.transpose(0, 1) if swap else input
    h0 = hx_.reshape(-1, hx_.shape[-1])
    c0 = None if cx_ is None else cx_.reshape(-1, cx_.shape[-1])
    out, hy, cy = recurrent._layer_by_steps(mode, x, params, has_biases, h0, c0, reverse,
                                            batch_sizes)
    if swap:
        out = out.transpose(0, 1)
    pairs = [(o, g) for o, g in zip((out, hy, cy), grads) if o is not None and g is not None]
    outputs = [o for o, _ in pairs]
    grad_outputs = [g.reshape(o.shape) for o, g in pairs]
    candidates = [input, w_ih, w_hh, b_ih, b_hh, w_hr, hx_, cx_]
    wanted = [t for t in candidates if t is not None and t.requires_grad]
    found = iter(grad(outputs, wanted, grad_outputs, create_graph=True, allow_unused=True))
    return tuple(next(found) if t is not None and t.requires_grad else None
                 for t in candidates)


@derivative(recurrent.mkldnn_rnn_layer, "MkldnnRnnLayerBackward0", outputs=(0, 1, 2))
def _rnn_layer(grads, input, weight0, weight1, weight2, weight3, hx_, cx_, reverse,
               batch_sizes, mode, hidden_size, num_layers, has_biases, bidirectional,
               batch_first, train, result0, result1, result2, result3):
    g_out, g_hy, g_cy = _outputs(grads)
    lstm = mode == LSTM
    if g_out is None and g_hy is None and (g_cy is None or not lstm):
        return (None,) * 7
    if _grad_state.enabled:
        biases = [weight2, weight3] if has_biases else [None, None]
        d = _recomputed(mode, input, [weight0, weight1, *biases, None], hx_,
                        cx_ if lstm else None, reverse, batch_sizes, batch_first,
                        (g_out, g_hy, g_cy if lstm else None))
        return d[:5] + (d[6], d[7])
    d = recurrent.mkldnn_rnn_layer_backward.functional(
        input, weight0, weight1, weight2, weight3, hx_, cx_, result0, result1, result2,
        g_out, g_hy, g_cy, reverse, mode, hidden_size, num_layers, has_biases, train,
        bidirectional, batch_sizes, batch_first, result3)
    biases = (d[3], d[4]) if has_biases else (None, None)
    return (d[0], d[1], d[2]) + biases + (d[5], d[6] if mode == LSTM else None)


@derivative(recurrent._lstm_proj_layer, "LstmProjLayerBackward0", outputs=(0, 1, 2))
def _lstm_proj_layer(grads, input, weight0, weight1, weight2, weight3, weight4, hx_, cx_,
                     reverse, batch_sizes, has_biases, batch_first, result0, result3):
    g_out, g_hy, g_cy = _outputs(grads)
    if g_out is None and g_hy is None and g_cy is None:
        return (None,) * 8
    if _grad_state.enabled:
        biases = [weight2, weight3] if has_biases else [None, None]
        return _recomputed(LSTM, input, [weight0, weight1, *biases, weight4], hx_, cx_,
                           reverse, batch_sizes, batch_first, (g_out, g_hy, g_cy))
    d = recurrent._lstm_proj_layer_backward.functional(
        input, weight0, weight1, weight4, hx_, cx_, result0, result3, g_out, g_hy, g_cy,
        reverse, batch_sizes, has_biases, batch_first)
    biases = (d[3], d[4]) if has_biases else (None, None)
    return (d[0], d[1], d[2]) + biases + (d[5], d[6], d[7])


derivative_not_implemented(recurrent.mkldnn_rnn_layer_backward,
                           recurrent._lstm_proj_layer_backward)


# ---- the fused cells: the kernel's backward, or (create_graph, modes) a formula in ops ------

def _kernel_backward() -> bool:
    """Whether a fused cell's gradient may come from its backward kernel, which has no
    derivative: not under create_graph, and no dispatch mode on the thread (a forward-AD
    level is one: jacfwd over jacrev, a hessian, sends tangents through the backward)."""
    return not _grad_state.enabled and not _len_torch_dispatch_stack()


def _any_bias(input_bias, hidden_bias) -> bool:
    """The backward kernels' `has_bias`: whether to sum the bias gradients. Either bias
    alone counts (testing the input bias alone left a lone hidden bias without one)."""
    return input_bias is not None or hidden_bias is not None


def _given(d_input_bias, input_bias, d_hidden_bias, hidden_bias) -> tuple:
    """The bias gradients, None for a bias not given."""
    return (d_input_bias if input_bias is not None else None,
            d_hidden_bias if hidden_bias is not None else None)


def _lstm_gates(input_gates, hidden_gates, input_bias, hidden_bias):
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias
    if hidden_bias is not None:
        gates = gates + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    return i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()


@derivative(recurrent._thnn_fused_lstm_cell, "ThnnFusedLstmCellBackward0", outputs=(0, 1))
def _fused_lstm_cell(grads, input_gates, hidden_gates, cx, input_bias, hidden_bias, result1,
                     result2):
    g_hy, g_cy, _ = _outputs(grads)
    if _kernel_backward():
        d_gates, d_cx, d_bias = recurrent._thnn_fused_lstm_cell_backward_impl.functional(
            g_hy, g_cy, cx, result1, result2, _any_bias(input_bias, hidden_bias))
        return (d_gates, d_gates, d_cx) + _given(d_bias, input_bias, d_bias, hidden_bias)
    # differentiable: the activations recomputed from the inputs, so that this is too
    i, f, g, o = _lstm_gates(input_gates, hidden_gates, input_bias, hidden_bias)
    tanh_c = (f * cx + i * g).tanh()
    d_c = zeros_like(cx) if g_cy is None else g_cy
    if g_hy is not None:
        d_c = d_c + g_hy * o * (1 - tanh_c * tanh_c)
        d_o = g_hy * tanh_c * o * (1 - o)
    else:
        d_o = zeros_like(cx)
    d_gates = cat([d_c * g * i * (1 - i), d_c * cx * f * (1 - f), d_c * i * (1 - g * g), d_o],
                  1)
    d_bias = d_gates.sum(0) if _any_bias(input_bias, hidden_bias) else None
    return (d_gates, d_gates, d_c * f) + _given(d_bias, input_bias, d_bias, hidden_bias)


@derivative(recurrent._thnn_fused_gru_cell, "ThnnFusedGruCellBackward0", outputs=(0,))
def _fused_gru_cell(grads, input_gates, hidden_gates, hx, input_bias, hidden_bias, result1):
    g_hy = grads[0] if isinstance(grads, tuple) else grads
    if g_hy is None:
        return (None,) * 5
    if _kernel_backward():
        d = recurrent._thnn_fused_gru_cell_backward.functional(
            g_hy, result1, _any_bias(input_bias, hidden_bias))
        return d[:3] + _given(d[3], input_bias, d[4], hidden_bias)
    ir, iz, i_n = input_gates.chunk(3, 1)
    hr, hz, h_n = hidden_gates.chunk(3, 1)
    if input_bias is not None:
        b_r, b_z, b_n = input_bias.chunk(3)
        ir, iz, i_n = ir + b_r, iz + b_z, i_n + b_n
    if hidden_bias is not None:
        c_r, c_z, c_n = hidden_bias.chunk(3)
        hr, hz, h_n = hr + c_r, hz + c_z, h_n + c_n
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (i_n + r * h_n).tanh()
    d_n = g_hy * (1 - z) * (1 - n * n)
    d_r = d_n * h_n * r * (1 - r)
    d_z = g_hy * (hx - n) * z * (1 - z)
    d_input = cat([d_r, d_z, d_n], 1)
    d_hidden = cat([d_r, d_z, d_n * r], 1)
    return (d_input, d_hidden, g_hy * z, d_input.sum(0) if input_bias is not None else None,
            d_hidden.sum(0) if hidden_bias is not None else None)


@derivative(recurrent._fused_rnn_cell, "FusedRnnCellBackward0")
def _fused_rnn_cell(grad, input, hx, w_ih, w_hh, b_ih, b_hh, relu, result, grad_input_mask):
    want_bias = grad_input_mask[4] or grad_input_mask[5]
    if _kernel_backward():
        d = recurrent._fused_rnn_cell_backward.functional(
            grad, input, hx, w_ih, w_hh, result, relu, list(grad_input_mask[:4]) + [want_bias])
        return d[:4] + (d[4] if grad_input_mask[4] else None,
                        d[4] if grad_input_mask[5] else None)
    # differentiable: the same chain rule in ops (the saved output carries the graph back)
    d_pre = threshold_backward(grad, result, 0) if relu else tanh_backward(grad, result)
    d_bias = d_pre.sum(0) if want_bias else None
    return (d_pre.mm(w_ih) if grad_input_mask[0] else None,
            d_pre.mm(w_hh) if grad_input_mask[1] else None,
            d_pre.t().mm(input) if grad_input_mask[2] else None,
            d_pre.t().mm(hx) if grad_input_mask[3] else None,
            d_bias if grad_input_mask[4] else None, d_bias if grad_input_mask[5] else None)


derivative_not_implemented(recurrent._thnn_fused_lstm_cell_backward_impl,
                           recurrent._thnn_fused_gru_cell_backward,
                           recurrent._fused_rnn_cell_backward)
