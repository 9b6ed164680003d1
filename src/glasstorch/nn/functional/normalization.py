"""Normalization layers' functions as in torch.nn.functional, over ops/normalization.py."""
from __future__ import annotations

from math import prod

from ...ops.nn import normalization as _ops

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
           "local_response_norm"]

local_response_norm = _ops.local_response_norm


def _verify_batch_size(size) -> None:
    if size[0] * prod(size[2:]) == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"{size!r}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Normalize each channel of an (N, C, *) input; see torch.nn.BatchNorm2d."""
    if training:
        _verify_batch_size(input.shape)
    return _ops.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                           eps, True)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Normalize each channel of each sample over its spatial dims."""
    if use_input_stats and prod(input.shape[2:]) == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{input.shape!r}")
    return _ops.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                              momentum, eps, True)


_native_layer_norm = _ops.native_layer_norm.function


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalize over the trailing `normalized_shape` dims."""
    # torch.layer_norm's body (ops/nn/normalization.layer_norm), in this frame: every
    # transformer block calls it twice
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _native_layer_norm(input, tuple(normalized_shape), weight, bias, eps)[0]


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalize groups of channels over the group's channels and spatial dims."""
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    if num_groups > 0:
        n, c = input.shape[0], input.shape[1]
        _verify_batch_size([n * c // num_groups, num_groups] + list(input.shape[2:]))
    return _ops.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Scale by the root mean square over the trailing `normalized_shape` dims."""
    return _ops.rms_norm(input, normalized_shape, weight, eps)
