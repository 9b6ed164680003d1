"""Derivative formulas of the samplers whose parameters are tensors (samplers.py).

See ops/derivative.py for how a formula is declared and what it receives.
"""
from __future__ import annotations

from ..creation.factories import zeros_like
from ..derivative import derivative, not_differentiable, overwrites
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

# In-place fills whose result does not depend on self: self gets a zero gradient, through
# PyTorch's node names.
for _op, _node in ((samplers.uniform_op, "UniformBackward0"),
                   (samplers.normal_op, "NormalBackward0"),
                   (samplers.exponential_op, "ExponentialBackward0"),
                   (samplers.random_default_op, "RandomBackward2"),
                   (samplers.random_from_op, "RandomBackward0"),
                   (samplers.random_to_op, "RandomBackward1"),
                   (samplers.bernoulli_tensor_op, "BernoulliBackward1"),
                   (samplers.bernoulli_float_op, "BernoulliBackward2"),
                   (samplers.cauchy_op, "CauchyBackward0"),
                   (samplers.log_normal_op, "LogNormalBackward0"),
                   (samplers.geometric_op, "GeometricBackward0")):
    overwrites(_op, _node)
