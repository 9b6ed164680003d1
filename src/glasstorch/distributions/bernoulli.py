"""Bernoulli(probs | logits)."""
from __future__ import annotations

import numbers

import glasstorch
from glasstorch.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .exp_family import ExponentialFamily
from .utils import BinaryProbsOrLogits, broadcast_all

__all__ = ["Bernoulli"]


class Bernoulli(BinaryProbsOrLogits, ExponentialFamily):
    """torch.distributions.Bernoulli: 1 with probability `probs` (or sigmoid(`logits`))."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_probs_or_logits(probs, logits)
        given = probs if probs is not None else logits
        batch_shape = glasstorch.Size() if isinstance(given, numbers.Number) \
            else self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = glasstorch.Size(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new


    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs)
        mode[self.probs == 0.5] = float("nan")
        return mode

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=glasstorch.Size()):
        shape = self._extended_shape(sample_shape)
        with glasstorch.no_grad():
            return glasstorch.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True):
        values = glasstorch.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values

    @property
    def _natural_params(self):
        return (glasstorch.logit(self.probs),)

    def _log_normalizer(self, x):
        return glasstorch.log1p(glasstorch.exp(x))
