"""Derivatives of recurrent.py's layer operators: one node per layer and direction.

The node saves the layer's inputs and outputs (the workspace holds the gate activations)
and its backward is one call of the backward operator, which runs the reverse-time loop.
That operator has no derivative of its own: a second derivative through a recurrent layer
raises (PyTorch's CPU LSTM, whose mkldnn_rnn_layer_backward has none either, does the same).
"""
from __future__ import annotations

from ..derivative import derivative, derivative_not_implemented
from . import recurrent
from .recurrent import LSTM


def _outputs(grads) -> tuple:
    """The gradients of (output, h_n, c_n): the engine passes a lone tensor when only the
    output's arrived, or a tuple as long as the last output that received one."""
    if not isinstance(grads, tuple):
        return grads, None, None
    return (tuple(grads) + (None,) * 3)[:3]


@derivative(recurrent.mkldnn_rnn_layer, "MkldnnRnnLayerBackward0", outputs=(0, 1, 2))
def _rnn_layer(grads, input, weight0, weight1, weight2, weight3, hx_, cx_, reverse,
               batch_sizes, mode, hidden_size, num_layers, has_biases, bidirectional,
               batch_first, train, result0, result1, result2, result3):
    g_out, g_hy, g_cy = _outputs(grads)
    if g_out is None and g_hy is None and (g_cy is None or mode != LSTM):
        return (None,) * 7
    d = recurrent.mkldnn_rnn_layer_backward.functional(
        input, weight0, weight1, weight2, weight3, hx_, cx_, result0, result1, result2,
        g_out, g_hy, g_cy, reverse, mode, hidden_size, num_layers, has_biases, train,
        bidirectional, batch_sizes, batch_first, result3)
    biases = (d[3], d[4]) if has_biases else (None, None)
    return (d[0], d[1], d[2]) + biases + (d[5], d[6] if mode == LSTM else None)


@derivative(recurrent._lstm_proj_layer, "LstmProjLayerBackward0", outputs=(0, 1, 2))
def _lstm_proj_layer(grads, input, weight0, weight1, weight4, hx_, cx_, reverse,
                     batch_sizes, has_biases, batch_first, result0, result3):
    g_out, g_hy, g_cy = _outputs(grads)
    if g_out is None and g_hy is None and g_cy is None:
        return (None,) * 8
    d = recurrent._lstm_proj_layer_backward.functional(
        input, weight0, weight1, weight4, hx_, cx_, result0, result3, g_out, g_hy, g_cy,
        reverse, batch_sizes, has_biases, batch_first)
    biases = (d[3], d[4]) if has_biases else (None, None)
    return (d[0], d[1], d[2]) + biases + (d[5], d[6], d[7])


derivative_not_implemented(recurrent.mkldnn_rnn_layer_backward,
                           recurrent._lstm_proj_layer_backward)
