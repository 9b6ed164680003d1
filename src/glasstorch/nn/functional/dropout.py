"""Dropout variants as in torch.nn.functional, over the dropout composites of
ops/activation.py. The noise comes from the default generator, so `manual_seed` replays a
run (glasstorch's stream, not PyTorch's).

    >>> import glasstorch as torch
    >>> import glasstorch.nn.functional as F
    >>> x = torch.ones(4)
    >>> bool((F.dropout(x, 0.5, training=False) == x).all())
    True
"""
from __future__ import annotations

import warnings

from ...core.tensor import Tensor
from ...ops.nn import activation as _A

__all__ = ["dropout", "alpha_dropout", "dropout1d", "dropout2d", "dropout3d",
           "feature_alpha_dropout"]


def _check_probability(p) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training)."""
    _check_probability(p)
    return _A.dropout_(input, p, training) if inplace else _A.dropout(input, p, training)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value and
    an affine correction keeps the mean and variance."""
    _check_probability(p)
    if inplace:
        return _A.alpha_dropout_(input, p, training)
    return _A.alpha_dropout(input, p, training)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels."""
    _check_probability(p)
    if inplace:
        return _A.feature_alpha_dropout_(input, p, training)
    return _A.feature_alpha_dropout(input, p, training)


def _feature_dropout(input, p, training, inplace):
    if inplace:
        return _A.feature_dropout_(input, p, training)
    return _A.feature_dropout(input, p, training)


def _unbatched_feature_dropout(input, p, training, inplace):
    """Channel dropout of an input without its batch dimension (added for the call)."""
    if inplace:
        _A.feature_dropout_(input.unsqueeze(0), p, training)   # writes through the view
        return input
    return _A.feature_dropout(input.unsqueeze(0), p, training).squeeze(0)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability p."""
    _check_probability(p)
    ndim = input.dim()
    if ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    if ndim == 2:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


def _warn_rank(name, ndim, spatial, ranks):
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result "
        "in an error in a future release. To retain the behavior and silence this warning, "
        f"please use dropout instead. Note that {name} exists to provide channel-wise dropout "
        f"on inputs with {spatial} spatial dimensions, a channel dimension, and an optional "
        f"batch dimension (i.e. {ranks} inputs).",
        stacklevel=4)      # the caller of the public function's __torch_function__ wrapper


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) or (C, H, W) inputs with probability p.

    As in PyTorch, a 3-D input is taken as (N, C, L) (with a warning)."""
    _check_probability(p)
    ndim = input.dim()
    if ndim not in (3, 4):
        _warn_rank("dropout2d", ndim, 2, "3D or 4D")
    if ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability p."""
    _check_probability(p)
    ndim = input.dim()
    if ndim not in (4, 5):
        _warn_rank("dropout3d", ndim, 3, "4D or 5D")
    if ndim != 5:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)
