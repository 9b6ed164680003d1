"""KL(p || q) between distributions of different families, registered into kl.py's registry.

Each finite closed form below is KL = -H(p) - E_p[log q(X)], with E_p taken from p's
moments: E[X], Var[X], E[log X], E[exp(-X/b)] as each pair needs. Where q's support does not
cover p's (a Normal against an Exponential, anything unbounded against a Uniform), the
divergence is infinite, with p's batch shape."""
from __future__ import annotations

import math

import glasstorch

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .continuous_bernoulli import ContinuousBernoulli
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .kl import _KL_REGISTRY, _infinite_like, _kl_multivariatenormal_multivariatenormal, \
    register_kl
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .pareto import Pareto
from .poisson import Poisson
from .uniform import Uniform
from .utils import _sum_rightmost

_EULER = 0.57721566490153286060
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


# ---- E_p[log q] for each q, from the moments of p --------------------------------------

def _expected_log_normal(q, mean, variance):
    return -q.scale.log() - _HALF_LOG_2PI - (variance + (mean - q.loc).pow(2)) / (2 * q.scale.pow(2))


def _expected_log_exponential(q, mean):
    return q.rate.log() - q.rate * mean


def _expected_log_gamma(q, mean, mean_log):
    k = q.concentration
    return k * q.rate.log() - k.lgamma() + (k - 1) * mean_log - q.rate * mean


def _expected_log_gumbel(q, mean, mean_exp_neg):
    """mean_exp_neg(b): E_p[exp(-X / b)]."""
    return -q.scale.log() - (mean - q.loc) / q.scale \
        - (q.loc / q.scale).exp() * mean_exp_neg(q.scale)


def _expected_log_cont_bernoulli(q, mean):
    return q._cont_bern_log_norm() + mean * q.probs.log() + (1 - mean) * (-q.probs).log1p()


# ---- moments of a Uniform(a, b) ---------------------------------------------------------

def _uniform_mean_log(low, high):
    """E[log X] for X ~ Uniform(low, high), 0 <= low: (b log b - a log a) / (b - a) - 1."""
    return (glasstorch.xlogy(high, high) - glasstorch.xlogy(low, low)) / (high - low) - 1


def _uniform_mean_log1m(low, high):
    """E[log(1 - X)] for X ~ Uniform(low, high) within [0, 1]."""
    up, down = 1 - low, 1 - high
    return (glasstorch.xlogy(up, up) - glasstorch.xlogy(down, down)) / (high - low) - 1


def _outside(result, mask):
    return glasstorch.where(mask, glasstorch.full_like(result, math.inf), result)


# ---- infinite: q cannot have produced what p produces ----------------------------------

def _infinite(first_param):
    def kl(p, q):
        return _infinite_like(getattr(p, first_param))
    return kl


_UNBOUNDED = {Normal: "loc", Laplace: "loc", Gumbel: "loc"}
_POSITIVE = {Exponential: "rate", Gamma: "concentration", Pareto: "scale"}
for _p, _param in {**_UNBOUNDED, **_POSITIVE}.items():
    for _q in (Beta, ContinuousBernoulli, Uniform, Pareto):
        if (_p, _q) not in _KL_REGISTRY and not (_p is Pareto and _q is Pareto):
            register_kl(_p, _q)(_infinite(_param))
for _p, _param in _UNBOUNDED.items():
    for _q in (Exponential, Gamma):
        register_kl(_p, _q)(_infinite(_param))
for _p in (Beta, ContinuousBernoulli):
    register_kl(_p, Pareto)(_infinite("mean"))
register_kl(Poisson, Bernoulli)(_infinite("rate"))
register_kl(Poisson, Binomial)(_infinite("rate"))


# ---- against a Normal --------------------------------------------------------------------

def _against_normal(p, q, mean, variance):
    return -p.entropy() - _expected_log_normal(q, mean, variance)


@register_kl(Beta, Normal)
@register_kl(ContinuousBernoulli, Normal)
@register_kl(Exponential, Normal)
@register_kl(Gamma, Normal)
@register_kl(Gumbel, Normal)
@register_kl(Laplace, Normal)
def _kl_moments_normal(p, q):
    return _against_normal(p, q, p.mean, p.variance)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    result = _against_normal(p, q, p.mean, p.variance)
    return _outside(result, p.alpha <= 2)              # no finite variance


# ---- against an Exponential or a Gamma ---------------------------------------------------

@register_kl(Beta, Exponential)
@register_kl(ContinuousBernoulli, Exponential)
@register_kl(Gamma, Exponential)
@register_kl(Pareto, Exponential)
def _kl_moments_exponential(p, q):
    return -p.entropy() - _expected_log_exponential(q, p.mean)


def _mean_log(p):
    """E_p[log X] for the families with positive support that need it."""
    if isinstance(p, Beta):
        return p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma()
    return p.scale.log() + p.alpha.reciprocal()                    # Pareto


@register_kl(Beta, Gamma)
@register_kl(Pareto, Gamma)
def _kl_moments_gamma(p, q):
    return -p.entropy() - _expected_log_gamma(q, p.mean, _mean_log(p))


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = -(p.high - p.low).log() - _expected_log_exponential(q, p.mean)
    return _outside(result, p.low < 0)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    result = -(p.high - p.low).log() - _expected_log_gamma(q, p.mean,
                                                           _uniform_mean_log(p.low, p.high))
    return _outside(result, p.low < 0)


# ---- against a Gumbel ----------------------------------------------------------------------

@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    return -p.entropy() - _expected_log_gumbel(q, p.mean,
                                               lambda b: p.rate / (p.rate + b.reciprocal()))


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    return -p.entropy() - _expected_log_gumbel(
        q, p.mean, lambda b: (p.rate / (p.rate + b.reciprocal())).pow(p.concentration))


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    return -p.entropy() - _expected_log_gumbel(
        q, p.mean, lambda b: (-p.loc / b + p.scale.pow(2) / (2 * b.pow(2))).exp())


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    def mean_exp_neg(b):
        return b * ((-p.low / b).exp() - (-p.high / b).exp()) / (p.high - p.low)
    return -(p.high - p.low).log() - _expected_log_gumbel(q, p.mean, mean_exp_neg)


# ---- against a Beta, a continuous Bernoulli, a Uniform, a Pareto: bounded support -------

@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b = q.concentration1, q.concentration0
    expected = (a - 1) * _uniform_mean_log(p.low, p.high) \
        + (b - 1) * _uniform_mean_log1m(p.low, p.high) \
        - (a.lgamma() + b.lgamma() - (a + b).lgamma())
    result = -(p.high - p.low).log() - expected
    return _outside(result, (p.low < 0) | (p.high > 1))


@register_kl(Beta, ContinuousBernoulli)
@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_moments_cont_bernoulli(p, q):
    return -p.entropy() - _expected_log_cont_bernoulli(q, p.mean)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cont_bernoulli(p, q):
    result = -(p.high - p.low).log() - _expected_log_cont_bernoulli(q, p.mean)
    return _outside(result, (p.low < 0) | (p.high > 1))


@register_kl(Beta, Uniform)
@register_kl(ContinuousBernoulli, Uniform)
def _kl_unit_interval_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _outside(result, (q.low > 0) | (q.high < 1))


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    result = (p.alpha / q.alpha).log() + q.alpha * (p.scale / q.scale).log() \
        + q.alpha / p.alpha - 1
    return _outside(result, p.scale < q.scale)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    expected = q.alpha.log() + q.alpha * q.scale.log() \
        - (q.alpha + 1) * _uniform_mean_log(p.low, p.high)
    result = -(p.high - p.low).log() - expected
    return _outside(result, p.low < q.scale)


# ---- discrete --------------------------------------------------------------------------------

@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() + q.rate - p.probs * q.rate.log()


# ---- exponential families and low-rank normals -----------------------------------------------

@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer A at the natural parameters:
    A(eta_q) - A(eta_p) - <eta_q - eta_p, grad A(eta_p)>."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    with glasstorch.enable_grad():
        log_norm_p = p._log_normalizer(*p_params)
        grads = glasstorch.autograd.grad(log_norm_p.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - log_norm_p
    for eta_p, eta_q, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((eta_q - eta_p) * g, len(q.event_shape))
    return result


def _as_full(d):
    if isinstance(d, LowRankMultivariateNormal):
        return MultivariateNormal(d.loc, covariance_matrix=d.covariance_matrix,
                                  validate_args=False)
    return d


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_normals(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    return _kl_multivariatenormal_multivariatenormal(_as_full(p), _as_full(q))
