"""Derivatives of the fused CPU attention (attention.py): its backward operator, as PyTorch's
ScaledDotProductFlashAttentionForCpuBackward0 calls it; that operator has no derivative of
its own (PyTorch's neither), so double backward through it raises. Its jvp (which PyTorch
lacks) keeps forward mode working as through the math form it replaced."""
from __future__ import annotations

import math

from ...backends.cpu.attention import causal_bias
from ..creation.factories import from_numpy
from ..derivative import derivative, derivative_not_implemented, forward_derivative
from . import attention


@derivative(attention._scaled_dot_product_flash_attention_for_cpu,
            "ScaledDotProductFlashAttentionForCpuBackward0", outputs=(0,))
def _flash_attention(grads, query, key, value, dropout_p, is_causal, attn_mask, scale,
                     result0, result1):
    grad = grads[0] if isinstance(grads, tuple) else grads
    if grad is None:
        return None, None, None
    return attention._scaled_dot_product_flash_attention_for_cpu_backward.functional(
        grad, query, key, value, result0, result1, dropout_p, is_causal, attn_mask=attn_mask,
        scale=scale)


derivative_not_implemented(attention._scaled_dot_product_flash_attention_for_cpu_backward)


@forward_derivative(attention._scaled_dot_product_flash_attention_for_cpu)
def _flash_attention_jvp(primals, tangents, result):
    """With s = q k^T * scale (+ the causal bias) and p = exp(s - logsumexp): ds = (t_q k^T
    + q t_k^T) * scale, d(logsumexp) = rowsum(p ds), d(out) = p (ds - d(logsumexp)) v +
    p t_v; computed in the logsumexp's dtype (float32 for float16/bfloat16)."""
    query, key, value, _, is_causal, _, scale = primals
    out, lse = result
    q, k, v = (t.to(lse.dtype) for t in (query, key, value))
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    s = q.matmul(k.transpose(-2, -1)) * scale
    if is_causal:
        s = s + from_numpy(causal_bias(s.shape[-2], s.shape[-1], lse.dtype.np).copy())
    p = (s - lse.unsqueeze(-1)).exp()
    t_q, t_k, t_v = (None if t is None else t.to(lse.dtype) for t in tangents[:3])
    ds = None if t_q is None else t_q.matmul(k.transpose(-2, -1))
    if t_k is not None:
        term = q.matmul(t_k.transpose(-2, -1))
        ds = term if ds is None else ds + term
    d_out = d_lse = None
    if ds is not None:
        ds = ds * scale
        d_lse = (p * ds).sum(-1)
        d_out = (p * (ds - d_lse.unsqueeze(-1))).matmul(v)
    if t_v is not None:
        term = p.matmul(t_v)
        d_out = term if d_out is None else d_out + term
    return (None if d_out is None else d_out.to(out.dtype)), d_lse
