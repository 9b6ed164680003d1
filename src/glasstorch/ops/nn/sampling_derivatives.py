"""Derivative formulas of sampling.py.

Padding and interpolation are linear maps: each gradient is the op's `_backward` op (the
adjoint), and the gradient of a `_backward` op is the forward op again. Grid sampling's
gradients come from its fused `_backward` op, or, when the backward pass is recorded
(create_graph), from the same computation written in differentiable ops. Shuffles are
permutations: the gradient is the inverse permutation.
"""
from __future__ import annotations

import inspect

from ..derivative import derivative
from ...core.grad_state import state as _grad_state
from . import sampling as _s


@derivative(_s.constant_pad_nd, "ConstantPadNdBackward0")
def _constant_pad(grad, pad):
    return (_s.constant_pad_nd(grad, tuple(-p for p in pad)),)


def _pad_derivatives(name: str, node: str) -> None:
    forward = getattr(_s, name)
    backward = getattr(_s, name + "_backward")

    @derivative(forward, f"{node}Backward0")
    def first(grad, self, padding):
        return (backward(grad, self, padding),)

    @derivative(backward, f"{node}BackwardBackward0")
    def second(grad, self, padding):
        return forward(grad, padding), None


for _nd in (1, 2, 3):
    _pad_derivatives(f"reflection_pad{_nd}d", f"ReflectionPad{_nd}D")
    _pad_derivatives(f"replication_pad{_nd}d", f"ReplicationPad{_nd}D")


def _keyword_signature(*names) -> inspect.Signature:
    P = inspect.Parameter
    return inspect.Signature([P("grad", P.POSITIONAL_OR_KEYWORD)]
                             + [P(n, P.KEYWORD_ONLY) for n in names])


def _upsample_derivatives(kind: str, nd: int) -> None:
    """UpsampleXxxNDBackward0 is the `_backward` op; its own gradient is the forward op.
    The formulas take the schema's arguments by name, which differ between the ops."""
    forward, backward, _ = _s.UPSAMPLE[kind, nd]
    node = _s._MODES[kind][0]
    names = [a.name for a in forward.schema.arguments[1:]]   # output_size, ..., scales

    def first(grad, **saved):
        rest = [saved[n] for n in names[1:]]
        return (backward(grad, saved["output_size"], tuple(saved["self_shape"]), *rest),)

    def second(grad, **saved):
        return (forward(grad, *[saved[n] for n in names]),)
    first.__signature__ = _keyword_signature("self_shape", *names)
    second.__signature__ = _keyword_signature(*names)     # the same names in the backward op
    derivative(forward, f"{node}{nd}DBackward0")(first)
    derivative(backward, f"{node}{nd}DBackwardBackward0")(second)


for _kind, _nd in _s.UPSAMPLE:
    _upsample_derivatives(_kind, _nd)


@derivative(_s.pixel_shuffle, "PixelShuffleBackward0")
def _pixel_shuffle(grad, upscale_factor):
    return (_s.pixel_unshuffle(grad, upscale_factor),)


@derivative(_s.pixel_unshuffle, "PixelUnshuffleBackward0")
def _pixel_unshuffle(grad, downscale_factor):
    return (_s.pixel_shuffle(grad, downscale_factor),)


@derivative(_s.channel_shuffle, "ChannelShuffleBackward0")
def _channel_shuffle(grad, self_shape, groups):
    return (_s.channel_shuffle(grad, self_shape[1] // groups),)


def _grid_sampler_derivative(nd: int) -> None:
    backward = getattr(_s, f"grid_sampler_{nd}d_backward")

    @derivative(getattr(_s, f"grid_sampler_{nd}d"), f"GridSampler{nd}DBackward0")
    def formula(grad, input, grid, interpolation_mode, padding_mode, align_corners):
        if _grad_state.enabled:      # create_graph: gradients in differentiable ops
            return _s.grid_sampler_grads(grad, input, grid, interpolation_mode, padding_mode,
                                         align_corners)
        return backward(grad, input, grid, interpolation_mode, padding_mode, align_corners,
                        (True, True))


_grid_sampler_derivative(2)
_grid_sampler_derivative(3)


@derivative(_s.affine_grid_generator, "AffineGridGeneratorBackward0")
def _affine_grid(grad, theta, size, align_corners):
    base = _s.base_grid_tensor(theta, tuple(size)[2:], align_corners)
    k = len(size) - 2
    return (grad.reshape(size[0], -1, k).transpose(1, 2).matmul(base),)

# Draws: sample indices carry no gradient.
