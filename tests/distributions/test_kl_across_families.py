"""kl_divergence between distributions of different families, against PyTorch: every pair
PyTorch registers, with batches that mix finite and infinite cases."""
import math

import numpy as np
import pytest

import glasstorch

torch = pytest.importorskip("torch")


def _makers(lib):
    t = lambda v: lib.tensor(v, dtype=lib.float64)      # noqa: E731
    d = lib.distributions
    return {
        "Bernoulli": lambda: d.Bernoulli(probs=t([0.2, 0.5, 0.9])),
        "Beta": lambda: d.Beta(t([0.7, 2.0, 3.5]), t([1.5, 0.8, 2.0])),
        "Binomial": lambda: d.Binomial(5, probs=t([0.3, 0.6, 0.5])),
        "ContinuousBernoulli": lambda: d.ContinuousBernoulli(probs=t([0.2, 0.45, 0.8])),
        "Exponential": lambda: d.Exponential(t([0.5, 1.0, 2.5])),
        "Gamma": lambda: d.Gamma(t([0.8, 2.0, 4.0]), t([1.5, 0.7, 2.0])),
        "Gumbel": lambda: d.Gumbel(t([0.0, 1.0, -0.5]), t([1.0, 0.5, 2.0])),
        "Laplace": lambda: d.Laplace(t([0.0, 0.3, -1.0]), t([1.0, 0.4, 2.0])),
        "Normal": lambda: d.Normal(t([0.1, 1.0, -0.5]), t([1.0, 0.5, 1.7])),
        "Pareto": lambda: d.Pareto(t([0.5, 1.0, 2.0]), t([2.5, 3.0, 4.5])),
        "Poisson": lambda: d.Poisson(t([0.5, 2.0, 4.0])),
        # the second is outside [0, 1], the third starts below zero
        "Uniform": lambda: d.Uniform(t([0.1, 0.3, -0.5]), t([0.7, 1.5, 0.6])),
    }


def _pairs():
    from torch.distributions.kl import _KL_REGISTRY
    names = set(_makers(torch))
    return sorted((p.__name__, q.__name__) for p, q in _KL_REGISTRY
                  if p.__name__ in names and q.__name__ in names
                  and p.__name__ != q.__name__)


# PyTorch 2.13 calls KL(ContinuousBernoulli || Uniform(a, b)) infinite whenever a >= 0 or
# b <= 1, so also for Uniform(0, 1), which covers the whole support; glasstorch gives the
# finite value -H(p) + log(b - a) there (and agrees where a < 0 and b > 1).
PYTORCH_WRONG = {("ContinuousBernoulli", "Uniform")}


@pytest.mark.parametrize("pair", _pairs(), ids="-".join)
def test_kl_across_families_equals_pytorchs(pair):
    ours, theirs = _makers(glasstorch), _makers(torch)
    if pair in PYTORCH_WRONG:
        pytest.skip("PyTorch's value is wrong here; see test_cont_bernoulli_uniform")
    got = glasstorch.distributions.kl_divergence(ours[pair[0]](), ours[pair[1]]())
    want = torch.distributions.kl_divergence(theirs[pair[0]](), theirs[pair[1]]())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)
    assert tuple(got.shape) == tuple(want.shape)


def test_cont_bernoulli_uniform():
    d = glasstorch.distributions
    p = d.ContinuousBernoulli(probs=glasstorch.tensor([0.3], dtype=glasstorch.float64))
    whole = d.kl_divergence(p, d.Uniform(glasstorch.tensor([0.0], dtype=glasstorch.float64),
                                         glasstorch.tensor([1.0], dtype=glasstorch.float64)))
    assert whole.item() == pytest.approx(-p.entropy().item())     # log(1 - 0) = 0
    wide = d.kl_divergence(p, d.Uniform(glasstorch.tensor([-1.0], dtype=glasstorch.float64),
                                        glasstorch.tensor([2.0], dtype=glasstorch.float64)))
    tp = torch.distributions
    want = tp.kl_divergence(tp.ContinuousBernoulli(probs=torch.tensor([0.3], dtype=torch.float64)),
                            tp.Uniform(torch.tensor([-1.0], dtype=torch.float64),
                                       torch.tensor([2.0], dtype=torch.float64)))
    assert wide.item() == pytest.approx(want.item())
    assert math.isinf(d.kl_divergence(p, d.Uniform(glasstorch.tensor([0.2]).double(),
                                                   glasstorch.tensor([1.0]).double())).item())


def test_kl_finite_forms_match_a_monte_carlo_estimate():
    """An independent check of a few closed forms: the mean of log p - log q over samples."""
    d = glasstorch.distributions
    glasstorch.manual_seed(0)
    cases = [(d.Gamma(glasstorch.tensor(2.0).double(), glasstorch.tensor(1.5).double()),
              d.Gumbel(glasstorch.tensor(0.5).double(), glasstorch.tensor(1.2).double())),
             (d.Uniform(glasstorch.tensor(0.2).double(), glasstorch.tensor(0.9).double()),
              d.Beta(glasstorch.tensor(2.0).double(), glasstorch.tensor(3.0).double())),
             (d.Pareto(glasstorch.tensor(1.0).double(), glasstorch.tensor(3.0).double()),
              d.Gamma(glasstorch.tensor(2.0).double(), glasstorch.tensor(1.0).double()))]
    for p, q in cases:
        x = p.sample((200000,))
        estimate = (p.log_prob(x) - q.log_prob(x)).mean().item()
        assert d.kl_divergence(p, q).item() == pytest.approx(estimate, rel=0.03, abs=0.01)


def test_same_exponential_family_uses_the_bregman_divergence_and_lowrank_normals():
    d, td = glasstorch.distributions, torch.distributions
    from glasstorch.distributions.kl_families import _kl_expfamily_expfamily
    p = d.Poisson(glasstorch.tensor([1.5, 3.0]).double())
    q = d.Poisson(glasstorch.tensor([2.0, 0.5]).double())
    np.testing.assert_allclose(_kl_expfamily_expfamily(p, q).detach().numpy(),
                               d.kl_divergence(p, q).numpy(), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        _kl_expfamily_expfamily(p, d.Exponential(glasstorch.tensor([1.0]).double()))
    rng = np.random.default_rng(0)
    loc, factor, diag = rng.normal(size=3), rng.normal(size=(3, 2)), rng.uniform(0.5, 1, 3)
    cov = rng.normal(size=(3, 3))
    cov = cov @ cov.T + 3 * np.eye(3)
    for lib, dist in ((glasstorch, d), (torch, td)):
        a = dist.LowRankMultivariateNormal(lib.tensor(loc), lib.tensor(factor), lib.tensor(diag))
        b = dist.MultivariateNormal(lib.tensor(-loc), covariance_matrix=lib.tensor(cov))
        values = [dist.kl_divergence(a, b).item(), dist.kl_divergence(b, a).item(),
                  dist.kl_divergence(a, a).item()]
        if lib is torch:
            np.testing.assert_allclose(ours, values, rtol=1e-9, atol=1e-12)
        ours = values
