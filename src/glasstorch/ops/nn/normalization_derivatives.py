"""Derivative formulas of normalization.py (and of one_hot, which has none).

The normalizations share one closed form: with xhat = (x - mean) * rstd over N elements and
gxhat the gradient reaching xhat (the output's, times the weight),
    dx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)),
plus the terms of the saved mean and rstd outputs when those receive gradients (as they do
in double backward, where the formula's own use of them is differentiated). float16 and
bfloat16 compute in float32; the engine casts the gradients back. Embedding gradients
scatter-add rows with embedding_dense_backward, whose own derivative gathers them back.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..derivative import derivative, derivative_not_implemented, not_differentiable
from ...core import dtype as dt
from ...core.grad_state import state as _grad_state
from ..creation.factories import from_numpy
from ...backends.cpu.normalization import embedding_grad_scale
from .normalization import embedding, embedding_dense_backward
from . import normalization


def _three(grad) -> tuple:
    """The gradients of (output, mean, rstd): the engine passes a lone tensor when only the
    output's arrived, or a tuple as long as the last output that received one."""
    if not isinstance(grad, tuple):
        return _up(grad), None, None
    return tuple(_up(g) for g in grad) + (None,) * (3 - len(grad))


def _up(t):
    """float16/bfloat16 tensors in float32, as PyTorch's backward kernels compute."""
    if t is not None and (t.dtype is dt.float16 or t.dtype is dt.bfloat16):
        return t.float()
    return t


def _const(array: np.ndarray, like):
    """A constant tensor (no graph) with the dtype and device of `like`."""
    return from_numpy(np.ascontiguousarray(array, dtype=np.float64)).to(like)


def _input_grad(gxhat, xhat, rstd, axes, count, g_mean=None, g_rstd=None):
    """dL/dx for xhat = (x - mean) * rstd, statistics over `axes` of `count` elements."""
    dx = None
    if gxhat is not None:
        dx = (gxhat - gxhat.mean(axes, keepdim=True)
              - xhat * (gxhat * xhat).mean(axes, keepdim=True)) * rstd
    if g_mean is not None:              # mean = sum(x) / count
        term = (g_mean / count).expand(xhat.shape)
        dx = term if dx is None else dx + term
    if g_rstd is not None:              # rstd = (var + eps)^-1/2: d/dx = -rstd^2 xhat / count
        term = -(g_rstd * rstd * rstd / count) * xhat
        dx = term if dx is None else dx + term
    return dx


def _param_grads(g, xhat, axes, weight):
    """Weight and bias gradients, summed over the dims the parameters broadcast along."""
    if g is None:
        return None, None
    if not axes:
        return (g * xhat if weight is not None else None), g
    return ((g * xhat).sum(axes) if weight is not None else None), g.sum(axes)


def _channel_axes(dim: int) -> tuple:
    return (0,) + tuple(range(2, dim))


# mean and rstd (batch norm: save_mean and save_invstd) are outputs without history, as in
# PyTorch, whose formulas read only the output's gradient; saved for the formula, they
# unpack with this node as their history where it is differentiated again (create_graph)
@derivative(normalization.native_layer_norm, "NativeLayerNormBackward0", outputs=(0,))
def _layer_norm(grads, input, normalized_shape, weight, bias, result1, result2,
                grad_input_mask):
    g, g_mean, g_rstd = _three(grads)
    if (g is not None and g_mean is None and g_rstd is None and not _grad_state.enabled
            and input.is_cpu):
        return normalization.native_layer_norm_backward.function(   # its plain CPU path
            g, input, normalized_shape, result1, result2, weight, bias, grad_input_mask)
    x, mean, rstd, w = _up(input), _up(result1), _up(result2), _up(weight)
    lead = x.dim() - len(normalized_shape)
    axes = tuple(range(lead, x.dim()))
    xhat = (x - mean) * rstd
    gxhat = None if g is None else (g * w if w is not None else g)
    dx = _input_grad(gxhat, xhat, rstd, axes, prod(normalized_shape), g_mean, g_rstd)
    dw, db = _param_grads(g, xhat, tuple(range(lead)), w)
    return dx, dw, db


@derivative(normalization.native_batch_norm, "NativeBatchNormBackward0", outputs=(0,))
def _batch_norm(grads, input, weight, running_mean, running_var, training, eps, result1,
                result2):
    g, g_mean, g_rstd = _three(grads)
    x, w = _up(input), _up(weight)
    cshape = (x.shape[1],) + (1,) * (x.dim() - 2)
    axes = _channel_axes(x.dim())
    if training:
        mean, rstd = _up(result1).reshape(cshape), _up(result2).reshape(cshape)
    else:
        mean = _up(running_mean).reshape(cshape)
        rstd = (_up(running_var).reshape(cshape) + eps).rsqrt()
    xhat = (x - mean) * rstd
    gxhat = None if g is None else (g * w.reshape(cshape) if w is not None else g)
    if training:
        dx = _input_grad(gxhat, xhat, rstd, axes, x.numel() // x.shape[1],
                         None if g_mean is None else g_mean.reshape(cshape),
                         None if g_rstd is None else g_rstd.reshape(cshape))
    else:
        dx = None if gxhat is None else gxhat * rstd
    dw, db = _param_grads(g, xhat, axes, w)
    return dx, dw, db, None, None


def _grouped(t, n, group, per_group):
    """(N, C, *) as (N, group, elements per group); contiguous first, so that the copy of a
    channels_last tensor is recorded as a clone followed by a view."""
    return t.contiguous().view(n, group, per_group)


@derivative(normalization.native_group_norm, "NativeGroupNormBackward0")
def _group_norm(grads, input, weight, N, C, HxW, group, result1, result2):
    g, g_mean, g_rstd = _three(grads)
    x, w = _up(input), _up(weight)
    shape, per_group = x.shape, C // group * HxW
    cshape = (C,) + (1,) * (x.dim() - 2)
    rstd = _up(result2).unsqueeze(-1)
    xhat = (_grouped(x, N, group, per_group) - _up(result1).unsqueeze(-1)) * rstd
    gxhat = None
    if g is not None:
        gxhat = _grouped(g * w.reshape(cshape) if w is not None else g, N, group, per_group)
    dx = _input_grad(gxhat, xhat, rstd, (2,), per_group,
                     None if g_mean is None else g_mean.unsqueeze(-1),
                     None if g_rstd is None else g_rstd.unsqueeze(-1))
    dw, db = _param_grads(g, xhat.reshape(shape), _channel_axes(len(shape)), w)
    return (None if dx is None else dx.reshape(shape)), dw, db


# ---- embeddings --------------------------------------------------------------------------

@derivative(normalization.embedding, "EmbeddingBackward0")
def _embedding(grad, weight_shape, indices, padding_idx, scale_grad_by_freq):
    return (embedding_dense_backward(grad, indices, weight_shape[0], padding_idx,
                                     scale_grad_by_freq), None)


@derivative(normalization.embedding_dense_backward, "EmbeddingDenseBackwardBackward0")
def _embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    idx = indices._array().astype(np.int64)
    scale = embedding_grad_scale(idx, num_weights, padding_idx, scale_grad_by_freq,
                                 np.float64)
    return embedding(grad, indices) * _const(scale, grad).unsqueeze(-1), None


@derivative(normalization._embedding_bag, "EmbeddingBagBackward0")
def _embedding_bag(grads, weight, indices, scale_grad_by_freq, mode, per_sample_weights,
                   padding_idx, result1, result2, result3):
    g = grads[0] if isinstance(grads, tuple) else grads
    if g is None:
        return None, None, None, None
    num, dim = weight.shape
    bags = g.shape[0]
    idx = indices._array().astype(np.int64)
    bag_of, bag_size = result1._array(), result2._array()
    if mode == 2:               # each output element came from one row: scatter it there
        flat = result3._array() * dim + np.arange(dim)
        gm = g * _const(bag_size > 0, g).unsqueeze(-1)
        gw = embedding_dense_backward(gm.contiguous().view(-1, 1), from_numpy(flat.reshape(-1)),
                                      num * dim, -1, False).view(num, dim)
        return gw, None, None, None
    if bags == 0:
        return (weight.new_zeros(weight.shape), None, None,
                None if per_sample_weights is None else per_sample_weights.new_zeros(idx.shape))
    valid = (bag_of >= 0) & (idx != padding_idx)
    into = from_numpy(np.where(bag_of >= 0, bag_of, 0))
    coef = valid.astype(np.float64)
    if mode == 1:
        coef /= np.maximum(bag_size[np.where(bag_of >= 0, bag_of, 0)], 1)
    per_index = g.index_select(0, into)
    rows = per_index * _const(coef, g).unsqueeze(-1)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(-1)
    gw = embedding_dense_backward(rows, indices, num, padding_idx, scale_grad_by_freq)
    g_psw = None
    if per_sample_weights is not None:
        picked = weight.index_select(0, indices.long())
        g_psw = (per_index * picked).sum(1) * _const(valid, g)
    return gw, None, None, g_psw


# A one-hot encoding is integers: no gradient flows through it.
not_differentiable(normalization.one_hot)
# The backward op itself is what a non-recorded backward calls; its own derivative
# (PyTorch's NativeLayerNormBackwardBackward0) comes from the formula above instead, under
# create_graph.
derivative_not_implemented(normalization.native_layer_norm_backward)
