"""Kumaraswamy(concentration1, concentration0) on [0, 1], by the inverse CDF of a uniform."""
from __future__ import annotations

import glasstorch

from . import constraints
from .gumbel import _EULER_GAMMA
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]


def _moment(a, b, n):
    """E[X^n] = b B(1 + n/a, b)."""
    arg1 = 1 + n / a
    return b * glasstorch.exp(glasstorch.lgamma(arg1) + glasstorch.lgamma(b)
                              - glasstorch.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """torch.distributions.Kumaraswamy: x = (1 - (1 - u)^(1/b))^(1/a)."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        base_dist = Uniform(glasstorch.full_like(self.concentration0, 0),
                            glasstorch.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = (a.reciprocal() * (a - 1).log() - a.reciprocal() * (a * b - 1).log())
        return glasstorch.where((a < 1) | (b < 1), float("nan"), log_mode.exp())

    @property
    def variance(self):
        return (_moment(self.concentration1, self.concentration0, 2)
                - glasstorch.pow(self.mean, 2))

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        harmonic = glasstorch.digamma(self.concentration0 + 1) + _EULER_GAMMA
        return (t0 + t1 * harmonic - glasstorch.log(self.concentration1)
                - glasstorch.log(self.concentration0))
