"""Geometric(probs | logits): failures before the first success."""
from __future__ import annotations

import numbers

import glasstorch
from glasstorch.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .distribution import Distribution
from .utils import BinaryProbsOrLogits, broadcast_all

__all__ = ["Geometric"]


class Geometric(BinaryProbsOrLogits, Distribution):
    """torch.distributions.Geometric: P(k) = (1-p)^k p, k = 0, 1, ..."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_probs_or_logits(probs, logits)
        probs_or_logits = probs if probs is not None else logits
        if isinstance(probs_or_logits, numbers.Number):
            batch_shape = glasstorch.Size()
        else:
            batch_shape = probs_or_logits.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter probs ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"{constraints.interval(0.0, 1.0)!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = glasstorch.Size(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return glasstorch.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=glasstorch.Size()):
        shape = self._extended_shape(sample_shape)
        tiny = glasstorch.finfo(self.probs.dtype).tiny
        with glasstorch.no_grad():
            u = glasstorch.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone(memory_format=glasstorch.contiguous_format)
        probs[(probs == 1) & (value == 0)] = 0
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs,
                                                reduction="none") / self.probs
