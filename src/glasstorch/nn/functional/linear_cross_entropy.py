"""linear_cross_entropy: cross entropy of a linear layer's logits, as in
torch.nn.functional.

PyTorch computes it in batch chunks when given `options`, so that the (batch, classes)
logits never exist at once; the value is the same as the unchunked one. Here it is always
`cross_entropy(linear(input, weight, bias), target)`: `options` is accepted and changes
nothing but memory.
"""
from __future__ import annotations

import warnings

from .linear import linear
from .loss import cross_entropy

__all__ = ["linear_cross_entropy"]


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """Cross entropy of the logits input @ linear_weight^T + linear_bias; a linear_weight of
    shape (classes, *out_features, in_features) gives K-dimensional logits."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    if options is not None and (out_features or reduction not in ("mean", "sum", "none")
                                or label_smoothing != 0.0 or str(target.dtype) != "torch.int64"):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction "
                      "in {'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, "
                      f"out_features == (). Got reduction={reduction!r}, label_smoothing="
                      f"{label_smoothing}, target.dtype={target.dtype}, out_features="
                      f"{out_features}", stacklevel=2)
    if out_features:
        flat = 1
        for s in out_features:
            flat *= s
        linear_weight = linear_weight.reshape(classes * flat, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(classes * flat)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)
