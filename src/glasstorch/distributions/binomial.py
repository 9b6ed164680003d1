"""Binomial(total_count, probs | logits)."""
from __future__ import annotations

import glasstorch

from . import constraints
from .distribution import Distribution
from .utils import BinaryProbsOrLogits

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # max(x, 0) with a gradient of 1/2 at 0, as the log-density's terms need
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(BinaryProbsOrLogits, Distribution):
    """torch.distributions.Binomial: successes in `total_count` Bernoulli trials."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        (total_count,) = self._set_probs_or_logits(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = glasstorch.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        super(Binomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new


    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=glasstorch.Size()):
        shape = self._extended_shape(sample_shape)
        with glasstorch.no_grad():
            n = int(self.total_count.max()) if self.total_count.numel() else 0
            if n == 0:
                return glasstorch.zeros(shape, dtype=self.probs.dtype, device=self.probs.device)
            trials = glasstorch.rand(glasstorch.Size((n,)) + shape, dtype=self.probs.dtype,
                                     device=self.probs.device)
            counted = glasstorch.arange(n, device=self.probs.device).view(
                (n,) + (1,) * len(shape)) < self.total_count.expand(shape)
            return ((trials < self.probs.expand(shape)) & counted).sum(0).to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = glasstorch.lgamma(self.total_count + 1)
        log_factorial_k = glasstorch.lgamma(value + 1)
        log_factorial_nmk = glasstorch.lgamma(self.total_count - value + 1)
        # k log p + (n-k) log(1-p) = k*logits - n*log1p(exp(logits)), computed stably
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * glasstorch.log1p(
                              glasstorch.exp(-glasstorch.abs(self.logits)))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not bool(self.total_count.min() == total_count):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(glasstorch.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True):
        total_count = int(self.total_count.max())
        if not bool(self.total_count.min() == total_count):
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = glasstorch.arange(1 + total_count, dtype=self._param.dtype,
                                   device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
