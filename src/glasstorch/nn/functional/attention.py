"""softmax family and scaled_dot_product_attention as in torch.nn.functional."""
from __future__ import annotations

import math
import warnings

from ...core import dtype as dt
from ...core.tensor import Tensor
from ...core.device import CPU
from ...ops.nn import loss as _ops
from ...ops.nn.attention import _scaled_dot_product_flash_attention_for_cpu as _flash
from ...ops.creation.ranges import arange
from ..attention import SDPBackend, _cur_sdpa_kernel_backends

__all__ = ["softmax", "log_softmax", "softmin", "gumbel_softmax",
           "scaled_dot_product_attention"]


def _implicit_dim(name: str, ndim: int, stacklevel: int) -> int:
    """The legacy choice when dim is None: 0 for 0-, 1- and 3-dim inputs, else 1. (The
    warning skips one more frame than PyTorch's: the public function's __torch_function__
    wrapper.)"""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel + 1)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`, computed stably (shifted by the maximum)."""
    if dim is None:
        dim = _implicit_dim("softmax", input.dim(), _stacklevel)
    return _ops.softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along `dim`."""
    if dim is None:
        dim = _implicit_dim("softmin", input.dim(), _stacklevel)
    return _ops.softmax(-input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along `dim`, without forming softmax (no log(0) underflow)."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.dim(), _stacklevel)
    return _ops.log_softmax(input, dim, dtype)


def _one_hot_along(index: Tensor, n: int, dim: int, like: Tensor) -> Tensor:
    """A tensor like `like` with 1 where its position along `dim` equals `index` (keepdim)."""
    shape = [1] * like.dim()
    shape[dim] = n
    return (arange(n, device=like.device).view(shape) == index).to(like.dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution; with `hard`, one-hot samples whose
    gradient is the soft sample's (straight-through estimator)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.",
                      stacklevel=3)      # past the __torch_function__ wrapper
    gumbels = -logits.new_empty(logits.shape).exponential_().log()
    y_soft = _ops.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    dim = dim % max(logits.dim(), 1)
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _one_hot_along(index, logits.shape[dim], dim, y_soft)
    return y_hard - y_soft.detach() + y_soft


# ---- scaled_dot_product_attention ----------------------------------------------------------

def _check_sdpa(query, key, value, attn_mask, enable_gqa):
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} "
            "instead.")
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_c_name(query.dtype)} key.dtype: {_c_name(key.dtype)} and value.dtype: "
            f"{_c_name(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype is not dt.bool and (
            attn_mask.dtype is not query.dtype):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_c_name(attn_mask.dtype)} and  query.dtype: "
            f"{_c_name(query.dtype)} instead.")
    if enable_gqa and query.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in query")


_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}


def _c_name(d) -> str:
    """The C++ type name PyTorch's attention checks print for a dtype."""
    return _C_NAMES.get(d.name, d.name)


_FLOATS = (dt.float32, dt.float64, dt.float16, dt.bfloat16)


def _fused_cpu(query, key, value, attn_mask, dropout_p) -> bool:
    """Whether PyTorch's CPU kernel choice takes its fused (flash) kernel here, where
    glasstorch's has no mask: 4-D CPU inputs of the same batch, heads and head size, unit
    last strides, no empty sequence, no dropout."""
    if (attn_mask is not None or dropout_p > 0.0 or query.dim() != 4 or key.dim() != 4
            or value.dim() != 4 or query.device is not CPU or query.dtype not in _FLOATS):
        return False
    b, h, n_q, e = query.shape
    n_k = key.shape[2]
    return (key.shape == value.shape == (b, h, n_k, e) and n_q > 0 and n_k > 0
            and all(t.shape[-1] == 1 or t.stride(-1) == 1 for t in (query, key, value))
            and SDPBackend.FLASH_ATTENTION in _cur_sdpa_kernel_backends())


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v over the last two dims: PyTorch's fused CPU kernel
    (one op, and one for the backward) where PyTorch takes it without a mask, else its math
    backend.

    A boolean `attn_mask` marks the positions that may be attended (True); a float mask is
    added to the scores. `is_causal` lets position i attend to positions j <= i (top-left
    aligned when L != S). Rows where every position is masked give zeros, as PyTorch's CPU
    kernels do. Dropout draws from glasstorch's generator.
    """
    _check_sdpa(query, key, value, attn_mask, enable_gqa)
    if _fused_cpu(query, key, value, attn_mask, dropout_p):
        return _flash(query, key, value, 0.0, is_causal, scale=scale)[0]
    n_q, n_k = query.shape[-2], key.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if enable_gqa and query.dim() >= 3:
        hq = query.shape[-3]
        key = key.repeat_interleave(hq // key.shape[-3], -3)
        value = value.repeat_interleave(hq // value.shape[-3], -3)
    scores = query.matmul(key.transpose(-2, -1)) * scale
    blocked = None
    if is_causal:       # above the diagonal
        blocked = arange(n_q, device=query.device).unsqueeze(1) < arange(
            n_k, device=query.device)
    if attn_mask is not None:
        if attn_mask.dtype is dt.bool:
            closed = attn_mask.logical_not()
            blocked = closed if blocked is None else blocked.logical_or(closed)
        else:
            scores = scores + attn_mask
    if blocked is not None:
        scores = scores.masked_fill(blocked, float("-inf"))
    if attn_mask is not None:
        # fully masked rows give zeros (and a zero gradient), not softmax's NaN; the causal
        # mask alone always leaves position 0 open
        blocked = (scores == float("-inf")).all(-1, keepdim=True)
        attn = _ops.softmax(scores.masked_fill(blocked, 0.0), -1).masked_fill(blocked, 0.0)
    else:
        attn = _ops.softmax(scores, -1)
    if dropout_p > 0.0:
        dropped = attn.new_empty(attn.shape).uniform_() < dropout_p
        attn = (attn / (1 - dropout_p)).masked_fill(dropped, 0.0)
    return attn.matmul(value)
