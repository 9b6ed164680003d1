"""ContinuousBernoulli(probs | logits): a density on [0, 1] proportional to
p^x (1 - p)^(1 - x), with its normaliser computed by a Taylor expansion near p = 1/2."""
from __future__ import annotations

import math
import numbers

import glasstorch
from glasstorch.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .exp_family import ExponentialFamily
from .utils import (BinaryProbsOrLogits, broadcast_all, clamp_probs, lazy_property,
                    logits_to_probs)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(BinaryProbsOrLogits, ExponentialFamily):
    """torch.distributions.ContinuousBernoulli; inside `lims` (around 1/2) the closed forms
    cancel badly, so mean, variance and the normaliser use their Taylor series there."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._set_probs_or_logits(probs, logits)
        if probs is not None:
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        given = probs if probs is not None else logits
        batch_shape = glasstorch.Size() if isinstance(given, numbers.Number) \
            else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = glasstorch.Size(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """probs, with those inside the unstable region moved to its edge (their closed-form
        value is discarded by a where; this keeps its gradient finite)."""
        return glasstorch.where(self._outside_unstable_region(), self.probs,
                                self._lims[0] * glasstorch.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(p), C(p) = 2 artanh(1 - 2p) / (1 - 2p); C(1/2) = 2."""
        p = self._cut_probs()
        below = glasstorch.where(p <= 0.5, p, glasstorch.zeros_like(p))
        above = glasstorch.where(p >= 0.5, p, glasstorch.ones_like(p))
        log_norm = (glasstorch.log(glasstorch.abs(glasstorch.log1p(-p) - glasstorch.log(p)))
                    - glasstorch.where(p <= 0.5, glasstorch.log1p(-2.0 * below),
                                       glasstorch.log(2.0 * above - 1.0)))
        x = glasstorch.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return glasstorch.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        p = self._cut_probs()
        closed = p / (2.0 * p - 1.0) + 1.0 / (glasstorch.log1p(-p) - glasstorch.log(p))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * glasstorch.pow(x, 2)) * x
        return glasstorch.where(self._outside_unstable_region(), closed, taylor)

    @property
    def mode(self):
        return glasstorch.where(self.probs < 0.5, 0.0, 1.0).to(self.probs)

    @property
    def stddev(self):
        return glasstorch.sqrt(self.variance)

    @property
    def variance(self):
        p = self._cut_probs()
        closed = (p * (p - 1.0) / glasstorch.pow(1.0 - 2.0 * p, 2)
                  + 1.0 / glasstorch.pow(glasstorch.log1p(-p) - glasstorch.log(p), 2))
        x = glasstorch.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return glasstorch.where(self._outside_unstable_region(), closed, taylor)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def sample(self, sample_shape=glasstorch.Size()):
        shape = self._extended_shape(sample_shape)
        u = glasstorch.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with glasstorch.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=glasstorch.Size()):
        shape = self._extended_shape(sample_shape)
        u = glasstorch.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        closed = (glasstorch.pow(p, value) * glasstorch.pow(1.0 - p, 1.0 - value) + p - 1.0) \
            / (2.0 * p - 1.0)
        unbounded = glasstorch.where(self._outside_unstable_region(), closed, value)
        return glasstorch.where(value <= 0.0, glasstorch.zeros_like(value),
                                glasstorch.where(value >= 1.0, glasstorch.ones_like(value),
                                                 unbounded))

    def icdf(self, value):
        p = self._cut_probs()
        closed = ((glasstorch.log1p(-p + value * (2.0 * p - 1.0)) - glasstorch.log1p(-p))
                  / (glasstorch.log(p) - glasstorch.log1p(-p)))
        return glasstorch.where(self._outside_unstable_region(), closed, value)

    def entropy(self):
        log_probs0 = glasstorch.log1p(-self.probs)
        log_probs1 = glasstorch.log(self.probs)
        return (self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm()
                - log_probs0)

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """log of the normaliser as a function of the natural parameter (the logits)."""
        out_unst_reg = (x <= self.logits.new_tensor(-1e-4)) | (x > 1e-4)
        cut_nat_params = glasstorch.where(out_unst_reg, x,
                                          -1e-4 * glasstorch.ones_like(x))
        log_norm = (glasstorch.log(glasstorch.abs(glasstorch.exp(cut_nat_params) - 1.0))
                    - glasstorch.log(glasstorch.abs(cut_nat_params)))
        taylor = 0.5 * x + glasstorch.pow(x, 2) / 24.0 - glasstorch.pow(x, 4) / 2880.0
        return glasstorch.where(out_unst_reg, log_norm, taylor)
