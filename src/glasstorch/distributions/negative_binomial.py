"""NegativeBinomial(total_count, probs | logits): successes before total_count failures."""
from __future__ import annotations

import glasstorch
import glasstorch.nn.functional as F

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import BinaryProbsOrLogits, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(BinaryProbsOrLogits, Distribution):
    """torch.distributions.NegativeBinomial (a Gamma-Poisson mixture when sampled)."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        (total_count,) = self._set_probs_or_logits(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = glasstorch.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new


    @property
    def mean(self):
        return self.total_count * glasstorch.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / glasstorch.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=glasstorch.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=glasstorch.Size()):
        with glasstorch.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return glasstorch.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * F.logsigmoid(-self.logits)
                                 + value * F.logsigmoid(self.logits))
        log_normalization = (-glasstorch.lgamma(self.total_count + value)
                             + glasstorch.lgamma(1.0 + value)
                             + glasstorch.lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(
            self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
