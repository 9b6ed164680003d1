"""Derivative formulas of the samplers whose parameters are tensors (samplers.py).

See ops/derivative.py for how a formula is declared and what it receives.
"""
from __future__ import annotations

from ..creation.factories import zeros_like
from ..derivative import derivative, not_differentiable
from . import samplers


@derivative(samplers.bernoulli_op, "BernoulliBackward0")
def _bernoulli(grad):
    return (zeros_like(grad),)


@derivative(samplers.poisson_op, "PoissonBackward0")
def _poisson(grad):
    return (zeros_like(grad),)


@derivative(samplers.normal_tensor_float, "NormalBackward1")
def _normal_mean(grad, mean_shape):
    return (grad.new_zeros(mean_shape),)


@derivative(samplers.normal_float_tensor, "NormalBackward2")
def _normal_std(grad, std_shape):
    return (grad.new_zeros(std_shape),)


@derivative(samplers.normal_tensor_tensor, "NormalBackward3")
def _normal_mean_std(grad, mean_shape, std_shape):
    return grad.new_zeros(mean_shape), grad.new_zeros(std_shape)


# A sample of category indices: no gradient flows through it.
not_differentiable(samplers.multinomial_op)
