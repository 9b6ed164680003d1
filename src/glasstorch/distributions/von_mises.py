"""VonMises(loc, concentration): a circular distribution on [-pi, pi)."""
from __future__ import annotations

import math

import glasstorch

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _rejection_sample(loc, concentration, proposal_r):
    """Best and Fisher's (1979) wrapped-Cauchy rejection sampler, vectorised: redraw only
    the rejected, in float64."""
    x = glasstorch.empty_like(loc)
    pending = glasstorch.ones_like(loc, dtype=glasstorch.bool)
    while bool(pending.any()):
        u = glasstorch.rand((3,) + loc.shape, dtype=loc.dtype, device=loc.device)
        u1, u2, u3 = u.unbind()
        z = glasstorch.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        take = accept & pending
        if bool(take.any()):
            x = glasstorch.where(take, (u3 - 0.5).sign() * f.acos(), x)
            pending = pending & ~accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """torch.distributions.VonMises: density exp(k cos(x - loc)) / (2 pi I0(k))."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch_shape = self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * glasstorch.cos(value - self.loc)
        return (log_prob - math.log(2 * math.pi)
                - (glasstorch.special.i0e(self.concentration).log() + self.concentration))

    @lazy_property
    def _loc(self):
        return self.loc.to(glasstorch.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(glasstorch.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        _proposal_r = (1 + rho ** 2) / (2 * rho)
        # a series for small concentrations, where the closed form cancels
        _proposal_r_taylor = 1 / kappa + kappa
        return glasstorch.where(kappa < 1e-5, _proposal_r_taylor, _proposal_r)

    def sample(self, sample_shape=glasstorch.Size()):
        shape = self._extended_shape(sample_shape)
        with glasstorch.no_grad():
            x = _rejection_sample(self._loc.expand(shape), self._concentration.expand(shape),
                                  self._proposal_r.expand(shape))
            return x.to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = glasstorch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(VonMises, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance 1 - I1(k)/I0(k)."""
        ratio = glasstorch.special.i1e(self._concentration) \
            / glasstorch.special.i0e(self._concentration)
        return (1 - ratio).to(self.loc.dtype)
