"""Derivative of the fused CPU attention (attention.py): its backward operator, as PyTorch's
ScaledDotProductFlashAttentionForCpuBackward0 calls it; that operator has no derivative of
its own (PyTorch's neither), so double backward through it raises."""
from __future__ import annotations

from ..derivative import derivative, derivative_not_implemented
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
