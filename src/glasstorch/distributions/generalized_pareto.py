"""GeneralizedPareto(loc, scale, concentration): the distribution of tails above a threshold
(Exponential at concentration 0, Uniform at -1)."""
from __future__ import annotations

import math
import numbers

import glasstorch

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """torch.distributions.GeneralizedPareto. A concentration within isclose of 0 takes the
    exponential limit of each formula."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(v, numbers.Number) for v in (loc, scale, concentration)):
            batch_shape = glasstorch.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = glasstorch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _exponential_limit(self):
        """(where the concentration is 0, the concentration with 1 there: safe to divide)."""
        zero = glasstorch.isclose(self.concentration, glasstorch.zeros_like(self.concentration))
        return zero, glasstorch.where(zero, glasstorch.ones_like(self.concentration),
                                      self.concentration)

    def rsample(self, sample_shape=glasstorch.Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(glasstorch.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._exponential_limit()
        power = 1 / xi + 1                       # 0 at xi = -1: a flat density
        general = glasstorch.where(power == 0, power, power * glasstorch.log1p(xi * z))
        return -self.scale.log() - glasstorch.where(zero, z, general)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._exponential_limit()
        return glasstorch.where(zero, -z, -glasstorch.log1p(xi * z) / xi)

    def log_cdf(self, value):
        return glasstorch.log1p(-glasstorch.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return glasstorch.exp(self.log_cdf(value))

    def icdf(self, value):
        zero, xi = self._exponential_limit()
        log_survival = glasstorch.log1p(-value)
        general = self.loc + self.scale / xi * glasstorch.expm1(-xi * log_survival)
        return glasstorch.where(zero, self.loc - self.scale * log_survival, general)

    @property
    def mean(self):
        finite = self.concentration < 1
        xi = glasstorch.where(finite, self.concentration, 0.5)
        return glasstorch.where(finite, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self):
        finite = self.concentration < 0.5
        xi = glasstorch.where(finite, self.concentration, 0.25)
        return glasstorch.where(finite, self.scale ** 2 / ((1 - xi) ** 2 * (1 - 2 * xi)),
                                math.nan)

    def entropy(self):
        return glasstorch.broadcast_to(self.scale.log() + self.concentration + 1,
                                       self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = glasstorch.where(self.concentration < 0,
                                 self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
