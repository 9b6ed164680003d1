"""Embeddings and one_hot as in torch.nn.functional, over ops/normalization.py."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.nn import normalization as _ops
from ...ops.creation.ranges import arange

__all__ = ["embedding", "embedding_bag", "one_hot"]

_MODES = {"sum": 0, "mean": 1, "max": 2}


def _sparse_unsupported(fn: str) -> NotImplementedError:
    return NotImplementedError(f"{fn}(): sparse=True (sparse gradients) is not supported by "
                               "glasstorch; use sparse=False")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by the integer `input`; padding_idx's row gets no gradient,
    max_norm renormalizes the picked rows of `weight` in place first."""
    if sparse:
        raise _sparse_unsupported("embedding")
    num = weight.shape[0]
    if padding_idx is None:
        padding_idx = -1
    elif not -num <= padding_idx < num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        padding_idx += num
    if max_norm is not None:
        input = input.contiguous()
        with no_grad():
            _ops.embedding_renorm_(weight, input, max_norm, norm_type)
    return _ops.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sum, mean or max of each bag of embedding rows, bags given by `offsets` into a 1-D
    `input` or by the rows of a 2-D `input`."""
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape!r}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape!r})")
    if weight.dim() != 2:
        raise ValueError("weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {offsets.type()}")
        bags, length = input.shape
        offsets = arange(0, bags * length, max(length, 1), dtype=input.dtype)[:bags]
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.contiguous().view(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError("input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse:
        raise _sparse_unsupported("embedding_bag")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError("padding_idx must be within the number of embeddings, "
                               f"{-num} through {num - 1}, but got {padding_idx}")
        padding_idx %= num
    if max_norm is not None:
        with no_grad():
            _ops.embedding_renorm_(weight, input, max_norm, norm_type)
    return _ops.embedding_bag(weight, input, offsets, scale_grad_by_freq, _MODES[mode], sparse,
                              per_sample_weights, include_last_offset, padding_idx)[0]


def one_hot(tensor, num_classes=-1):
    """int64 tensor with a trailing dim of num_classes (inferred as max + 1 when -1)."""
    return _ops.one_hot(tensor, num_classes)
