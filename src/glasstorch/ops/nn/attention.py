"""PyTorch's fused CPU attention operators, behind F.scaled_dot_product_attention for 4-D
inputs without dropout (nn/functional/attention.py chooses): one op forward, one backward,
where the math form is about ten of each. Kernels in backends/cpu/attention.py; derivative
in attention_derivatives.py."""
from __future__ import annotations

from ...backends.cpu.attention import (flash_attention_backward_cpu, flash_attention_cpu,
                                       heads_last_strides)
from ...core import dtype as dt
from ...core.device import META
from ...core.promotion import opmath
from ...core.tensor import Tensor
from ..registry import TensorSpec, kernel_op, structured

_NAME = "scaled_dot_product_attention_flash_attention"


def _flash_meta(query, key, value, dropout_p=0.0, is_causal=False, attn_mask=None,
                scale=None):
    if dropout_p > 0.0:
        raise RuntimeError(f"{_NAME}: Currently do not support dropout > 0")
    if not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        raise RuntimeError(f"{_NAME}: Q/K/V should have the same head size")
    if attn_mask is not None:
        raise NotImplementedError(f"{_NAME}: glasstorch's kernel takes no attn_mask; "
                                  "F.scaled_dot_product_attention applies masks")
    b, h, n = query.shape[:3]
    shape = tuple(query._shape)
    return (TensorSpec(shape, query.dtype, heads_last_strides(shape)),
            TensorSpec((b, h, n), dt.from_numpy_dtype(opmath(query.dtype)), (n * h, 1, h)))


_scaled_dot_product_flash_attention_for_cpu = structured(
    "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, "
    "float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) "
    "-> (Tensor output, Tensor logsumexp)", _flash_meta, method=False, inplace=False,
    out=False, promotes=False,
    doc="softmax(q k^T * scale) v over 4-D inputs, with the rows' logsumexp.")
_scaled_dot_product_flash_attention_for_cpu.impl("CPU")(flash_attention_cpu)


_scaled_dot_product_flash_attention_for_cpu_backward = kernel_op(
    "_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, "
    "Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, "
    "*, Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query, Tensor grad_key, "
    "Tensor grad_value)", method=False, function=False)
_scaled_dot_product_flash_attention_for_cpu_backward.impl("CPU")(flash_attention_backward_cpu)


def _flash_backward_meta(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal,
                         attn_mask=None, scale=None):
    return tuple(Tensor._empty(t._shape, t.dtype, META, heads_last_strides(tuple(t._shape)))
                 for t in (query, key, value))


_scaled_dot_product_flash_attention_for_cpu_backward.impl("Meta")(_flash_backward_meta)
