"""Gamma(concentration, rate), and the standard-gamma sampler with its implicit
reparameterisation gradient that Gamma, Chi2, Beta, Dirichlet and StudentT share."""
from __future__ import annotations

import numbers

import glasstorch
from glasstorch.autograd import Function

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


def _draw_standard_gamma(alpha):
    """Gamma(alpha, 1) draws, float64, by Marsaglia and Tsang's squeeze (vectorised: redraw
    only the rejected); alpha < 1 is boosted as Gamma(alpha + 1) * U^(1/alpha)."""
    a = alpha.double()
    boosted = a < 1
    shape_param = glasstorch.where(boosted, a + 1, a)
    d = shape_param - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    out = glasstorch.empty_like(a)
    pending = glasstorch.arange(a.numel(), device=a.device)
    d_flat, c_flat = d.reshape(-1), c.reshape(-1)
    out_flat = out.view(-1)
    while pending.numel():
        dp, cp = d_flat[pending], c_flat[pending]
        x = glasstorch.randn(pending.shape, dtype=glasstorch.float64, device=a.device)
        v = (1 + cp * x) ** 3
        u = glasstorch.rand(pending.shape, dtype=glasstorch.float64, device=a.device)
        positive = v > 0
        logv = glasstorch.where(positive, v, glasstorch.ones_like(v)).log()
        accept = positive & (u.log() < 0.5 * x * x + dp - dp * v + dp * logv)
        out_flat[pending[accept]] = (dp * v)[accept]
        pending = pending[~accept]
    if bool(boosted.any()):
        u = glasstorch.rand(a.shape, dtype=glasstorch.float64, device=a.device)
        out = glasstorch.where(boosted, out * u.pow(1.0 / a), out)
    return out.clamp(min=glasstorch.finfo(alpha.dtype).tiny).to(alpha.dtype)


def _standard_gamma_grad(alpha, x):
    """d x / d alpha holding the CDF P(alpha, x) fixed: -(dP/dalpha) / density(x). dP/dalpha
    by a central difference of the regularised incomplete gamma function, in float64."""
    a, xd = alpha.double(), x.double()
    h = a * 1e-5
    dp_da = (glasstorch.special.gammainc(a + h, xd)
             - glasstorch.special.gammainc(a - h, xd)) / (2 * h)
    log_density = (a - 1) * xd.log() - xd - glasstorch.lgamma(a)
    return (-dp_da / log_density.exp()).to(alpha.dtype)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _draw_standard_gamma(alpha.detach())
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, x)


def standard_gamma(alpha):
    """Gamma(alpha, 1) samples, differentiable in alpha (torch._standard_gamma)."""
    return _StandardGamma.apply(alpha)


class Gamma(ExponentialFamily):
    """torch.distributions.Gamma: density rate^a x^(a-1) e^(-rate x) / Gamma(a)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number):
            batch_shape = glasstorch.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = glasstorch.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=glasstorch.Size()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=glasstorch.finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = glasstorch.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (glasstorch.xlogy(self.concentration, self.rate)
                + glasstorch.xlogy(self.concentration - 1, value)
                - self.rate * value - glasstorch.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - glasstorch.log(self.rate)
                + glasstorch.lgamma(self.concentration)
                + (1.0 - self.concentration) * glasstorch.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return glasstorch.lgamma(x + 1) + (x + 1) * glasstorch.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return glasstorch.special.gammainc(self.concentration, self.rate * value)
