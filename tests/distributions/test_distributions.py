"""torch.distributions against PyTorch: the same parameters give the same shapes, log
densities, CDFs, moments, entropies, KL divergences and gradients; samples have the right
shapes, supports and means; errors are PyTorch's."""
import math

import numpy as np
import pytest

import glasstorch
import glasstorch.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

R = np.random.default_rng(0)


def _pos(*shape):
    return R.uniform(0.5, 2.5, shape)


def _prob(*shape):
    return R.uniform(0.1, 0.9, shape)


def _simplex(*shape):
    p = R.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _spd(n, batch=()):
    a = R.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


# name: (args as NumPy arrays or numbers, kwargs)
CASES = {
    "Normal": ((R.normal(size=3), _pos(3)), {}),
    "Uniform": ((np.array([-1.0, 0.0, 2.0]), np.array([0.5, 3.0, 2.5])), {}),
    "Bernoulli": ((), {"probs": _prob(4)}),
    "Categorical": ((), {"logits": R.normal(size=(2, 5))}),
    "OneHotCategorical": ((), {"probs": _simplex(2, 4)}),
    "Binomial": ((np.array([5.0, 8.0, 3.0]),), {"probs": _prob(3)}),
    "Multinomial": ((6,), {"probs": _simplex(2, 3)}),
    "Geometric": ((), {"probs": _prob(3)}),
    "Poisson": ((_pos(4),), {}),
    "NegativeBinomial": ((_pos(3) * 3,), {"probs": _prob(3)}),
    "Exponential": ((_pos(3),), {}),
    "Gamma": ((_pos(3), _pos(3)), {}),
    "Chi2": ((_pos(3) * 2,), {}),
    "Beta": ((_pos(3), _pos(3)), {}),
    "Dirichlet": ((_pos(2, 4),), {}),
    "StudentT": ((_pos(3) + 2, R.normal(size=3), _pos(3)), {}),
    "Laplace": ((R.normal(size=3), _pos(3)), {}),
    "Cauchy": ((R.normal(size=3), _pos(3)), {}),
    "Gumbel": ((R.normal(size=3), _pos(3)), {}),
    "LogNormal": ((R.normal(size=3), _pos(3)), {}),
    "HalfNormal": ((_pos(3),), {}),
    "HalfCauchy": ((_pos(3),), {}),
    "Weibull": ((_pos(3), _pos(3)), {}),
    "Pareto": ((_pos(3), _pos(3) + 2), {}),
    "InverseGamma": ((_pos(3) + 2, _pos(3)), {}),
    "LogisticNormal": ((R.normal(size=3), _pos(3)), {}),
    "MultivariateNormal": ((R.normal(size=(2, 3)),), {"covariance_matrix": _spd(3, (2,))}),
    "RelaxedBernoulli": ((np.array(0.7),), {"probs": _prob(3)}),
    "RelaxedOneHotCategorical": ((np.array(0.7),), {"probs": _simplex(2, 3)}),
    "ContinuousBernoulli": ((), {"probs": np.array([0.2, 0.4995, 0.5, 0.8])}),
    "FisherSnedecor": ((_pos(3) + 3, _pos(3) + 5), {}),
    "Kumaraswamy": ((_pos(3) + 1, _pos(3) + 1), {}),
    "LowRankMultivariateNormal": ((R.normal(size=(2, 3)), R.normal(size=(2, 3, 2)), _pos(2, 3)),
                                  {}),
    "VonMises": ((R.normal(size=3), np.array([1e-6, 0.5, 4.0])), {}),
    "GeneralizedPareto": ((R.normal(size=4), _pos(4), np.array([0.3, 0.0, -0.2, -1.0])), {}),
    "Wishart": ((_pos(2) + 4,), {"covariance_matrix": _spd(3, (2,))}),
    "LKJCholesky": ((3, _pos(2)), {}),
}


# PyTorch 2.13's GeneralizedPareto compares its concentration with a float32 zero by isclose,
# which raises for float64 parameters: that one is compared in float32.
FLOAT32_ONLY = {"GeneralizedPareto"}


def _make(lib, name, requires_grad=False):
    """The distribution in `lib` (glasstorch or torch), float64 parameters; with the leaf
    tensors made, to read their gradients."""
    mod = D if lib is glasstorch else TD
    args, kwargs = CASES[name]
    leaves = []
    dtype = lib.float32 if name in FLOAT32_ONLY else lib.float64

    def conv(v, differentiable=True):
        if isinstance(v, np.ndarray):
            t = lib.tensor(v, dtype=dtype)
            if requires_grad and differentiable and v.ndim:
                t.requires_grad_()
                leaves.append(t)
            return t
        return v
    counts = name in ("Binomial", "NegativeBinomial")      # total_count: not differentiated
    d = getattr(mod, name)(*[conv(a, not counts) for a in args],
                           **{k: conv(v) for k, v in kwargs.items()})
    return d, leaves


def _values(name, td):
    """Points to evaluate densities at: PyTorch's samples (inside the support)."""
    torch.manual_seed(0)
    return td.sample((4,)).float() if name in FLOAT32_ONLY else td.sample((4,)).double()


def _close(ours, theirs, rtol=1e-6, atol=1e-8):
    if theirs.dtype == torch.float32:
        rtol, atol = max(rtol, 1e-5), max(atol, 1e-6)
    np.testing.assert_allclose(np.asarray(ours.detach().numpy()), theirs.detach().numpy(),
                               rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_and_shapes_match_pytorch(name):
    ours, _ = _make(glasstorch, name)
    theirs, _ = _make(torch, name)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    values = _values(name, theirs)
    _close(ours.log_prob(glasstorch.tensor(values.numpy())), theirs.log_prob(values), rtol=1e-5)


# PyTorch's Kumaraswamy.mode is NaN for every concentration above 1 (its formula takes
# log1p(-concentration0)); glasstorch keeps ((a - 1) / (ab - 1))^(1/a), checked below.
PYTORCH_WRONG = {("Kumaraswamy", "mode")}


def test_kumaraswamy_mode_is_the_density_maximum():
    a, b = glasstorch.tensor([1.5, 2.0, 3.0]), glasstorch.tensor([2.0, 2.5, 1.2])
    d = D.Kumaraswamy(a, b)
    grid = glasstorch.linspace(1e-4, 1 - 1e-4, 20001).unsqueeze(-1)
    argmax = grid[d.log_prob(grid).argmax(0), 0]
    np.testing.assert_allclose(d.mode.numpy(), argmax.numpy(), atol=1e-3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_moments_entropy_cdf_match_pytorch(name):
    ours, _ = _make(glasstorch, name)
    theirs, _ = _make(torch, name)
    checked = 0
    for attr in ("mean", "variance", "stddev", "mode"):
        if (name, attr) in PYTORCH_WRONG:
            continue
        try:
            expected = getattr(theirs, attr)
        except NotImplementedError:
            continue
        _close(getattr(ours, attr), expected, rtol=1e-5)
        checked += 1
    try:
        expected = theirs.entropy()
    except NotImplementedError:
        expected = None
    if expected is not None:
        _close(ours.entropy(), expected, rtol=1e-5)
    values = _values(name, theirs)
    for method in ("cdf",):
        try:
            expected = getattr(theirs, method)(values)
        except NotImplementedError:
            continue
        _close(getattr(ours, method)(glasstorch.tensor(values.numpy())), expected, rtol=1e-5)
    assert checked or name in ("LogisticNormal", "RelaxedBernoulli", "RelaxedOneHotCategorical",
                               "LKJCholesky")


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_gradients_match_pytorch(name):
    ours, our_leaves = _make(glasstorch, name, requires_grad=True)
    theirs, their_leaves = _make(torch, name, requires_grad=True)
    values = _values(name, theirs).detach()
    theirs.log_prob(values).sum().backward()
    ours.log_prob(glasstorch.tensor(values.numpy())).sum().backward()
    # PyTorch's VonMises takes log I0 from a polynomial fit good to ~1e-7; glasstorch from
    # i0e, so where the gradient's two terms cancel only that much agrees.
    atol = 1e-6 if name == "VonMises" else 1e-7
    for a, b in zip(our_leaves, their_leaves):
        _close(a.grad, b.grad, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_samples_have_the_shape_and_stay_in_the_support(name):
    ours, _ = _make(glasstorch, name)
    glasstorch.manual_seed(1)
    x = ours.sample((5, 2))
    assert tuple(x.shape) == (5, 2) + tuple(ours.batch_shape) + tuple(ours.event_shape)
    if name not in ("LogisticNormal",):
        assert bool(ours.support.check(x).all())
    assert not x.requires_grad


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Beta", "Dirichlet", "Exponential",
                                  "Poisson", "Binomial", "Categorical", "StudentT",
                                  "Laplace", "Geometric", "MultivariateNormal", "Weibull"])
def test_sample_means_approach_the_mean(name):
    ours, _ = _make(glasstorch, name)
    glasstorch.manual_seed(0)
    n = 20000
    x = ours.sample((n,)).double()
    if name == "Categorical":
        mean = (ours.probs * glasstorch.arange(ours.probs.shape[-1]).double()).sum(-1)
    else:
        mean = ours.mean
    sd = ours.stddev if name != "Categorical" else glasstorch.ones_like(mean) * 3
    err = (x.mean(0) - mean).abs() / (sd / math.sqrt(n))
    assert float(err.max()) < 5, (x.mean(0), mean)


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Beta", "Dirichlet", "Exponential",
                                  "Laplace", "StudentT", "LogNormal", "MultivariateNormal"])
def test_rsample_gradients_are_unbiased(name):
    """d/dθ E[f(x)] by rsample gradients against the same derivative of PyTorch's closed form
    (E[x] and E[x^2] via mean and variance)."""
    ours, leaves = _make(glasstorch, name, requires_grad=True)
    theirs, their_leaves = _make(torch, name, requires_grad=True)
    glasstorch.manual_seed(0)
    x = ours.rsample((40000,))
    x.mean(0).sum().backward()
    theirs.mean.sum().backward()
    # LogNormal's pathwise estimator of d E[x] / d scale has variance ~exp(2 scale^2): with
    # scales up to 2.5, 40000 draws give it only ~10%
    rtol = 0.15 if name == "LogNormal" else 0.05
    for a, b in zip(leaves, their_leaves):
        expected = b.grad.numpy() if b.grad is not None else np.zeros(tuple(a.shape))
        np.testing.assert_allclose(a.grad.numpy(), expected, rtol=rtol, atol=0.02)


def test_standard_gamma_gradient_is_the_implicit_one():
    """d x/d alpha at fixed CDF, against a finite difference of PyTorch's quantile function
    is unavailable; compare with PyTorch's _standard_gamma_grad at the same points."""
    from glasstorch.distributions.gamma import _standard_gamma_grad
    alpha = np.array([0.3, 1.0, 2.5, 10.0])
    x = np.array([0.1, 0.7, 2.0, 9.0])
    ours = _standard_gamma_grad(glasstorch.tensor(alpha), glasstorch.tensor(x))
    theirs = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4)


KL_PAIRS = [("Normal", "Normal"), ("Bernoulli", "Bernoulli"), ("Beta", "Beta"),
            ("Gamma", "Gamma"), ("Exponential", "Exponential"), ("Laplace", "Laplace"),
            ("Poisson", "Poisson"), ("Dirichlet", "Dirichlet"), ("Geometric", "Geometric"),
            ("Categorical", "Categorical"), ("OneHotCategorical", "OneHotCategorical"),
            ("MultivariateNormal", "MultivariateNormal"), ("Gumbel", "Gumbel"),
            ("LogNormal", "LogNormal"), ("HalfNormal", "HalfNormal"), ("Cauchy", "Cauchy"),
            ("Uniform", "Uniform")]


@pytest.mark.parametrize("pair", KL_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_kl_divergence_matches_pytorch(pair):
    p_name, q_name = pair
    ours_p, _ = _make(glasstorch, p_name)
    theirs_p, _ = _make(torch, p_name)
    saved = CASES[q_name]
    args, kwargs = saved
    shifted = (tuple(a * 1.3 if isinstance(a, np.ndarray) and p_name != "Uniform" else a
                     for a in args),
               {k: (_simplex(*v.shape) if k == "probs" and v.ndim > 1 and p_name != "Bernoulli"
                    else v * 0.7 if k == "probs" else v * 1.2 if k in ("logits",)
                    else (v + np.eye(v.shape[-1]) if k == "covariance_matrix" else v))
                for k, v in kwargs.items()})
    if p_name == "Uniform":
        shifted = ((args[0] - 0.5, args[1] + 0.5), {})
    CASES[q_name] = shifted
    try:
        ours_q, _ = _make(glasstorch, q_name)
        theirs_q, _ = _make(torch, q_name)
    finally:
        CASES[q_name] = saved
    _close(D.kl_divergence(ours_p, ours_q), TD.kl_divergence(theirs_p, theirs_q), rtol=1e-5)


def test_kl_of_an_unregistered_pair_raises():
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\)"):
        D.kl_divergence(D.Poisson(glasstorch.tensor(1.0)), D.Cauchy(0.0, 1.0))
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(D.Poisson(glasstorch.tensor(1.0)), D.Normal(0.0, 1.0))


def test_register_kl_prefers_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return glasstorch.tensor(42.0)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0))) == 42.0
    assert float(D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(0.0, 1.0))) == 0.0


def test_validation_errors_are_pytorchs():
    """validate_args=True on both sides: PyTorch's default can be switched off by other
    test modules (its internal test utilities do)."""
    with pytest.raises(ValueError) as ours:
        D.Normal(glasstorch.tensor([0.0]), glasstorch.tensor([-1.0]), validate_args=True)
    with pytest.raises(ValueError) as theirs:
        TD.Normal(torch.tensor([0.0]), torch.tensor([-1.0]), validate_args=True)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Bernoulli(probs=glasstorch.tensor([0.5]), logits=glasstorch.tensor([0.0]))
    d = D.Poisson(glasstorch.tensor(2.0), validate_args=True)
    t = TD.Poisson(torch.tensor(2.0), validate_args=True)
    with pytest.raises(ValueError) as ours:
        d.log_prob(glasstorch.tensor(1.5))
    with pytest.raises(ValueError) as theirs:
        t.log_prob(torch.tensor(1.5))
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError) as ours:
        D.Normal(glasstorch.zeros(2), 1.0, validate_args=True).log_prob(glasstorch.zeros(1, 3))
    with pytest.raises(ValueError) as theirs:
        TD.Normal(torch.zeros(2), 1.0, validate_args=True).log_prob(torch.zeros(1, 3))
    assert str(ours.value) == str(theirs.value)
    D.Normal(glasstorch.tensor([0.0]), glasstorch.tensor([-1.0]), validate_args=False)


def test_validation_is_on_by_default():
    with pytest.raises(ValueError, match="to satisfy the constraint"):
        D.Normal(glasstorch.tensor([0.0]), glasstorch.tensor([-1.0]))


def test_repr_and_expand_match_pytorch():
    assert repr(D.Normal(glasstorch.zeros(2), 1.0)) == repr(TD.Normal(torch.zeros(2), 1.0))
    assert repr(D.Categorical(probs=glasstorch.tensor([0.2, 0.8]))) == \
        repr(TD.Categorical(probs=torch.tensor([0.2, 0.8])))
    assert repr(D.constraints.interval(0, 1)) == repr(TD.constraints.interval(0, 1))
    assert repr(D.constraints.positive) == repr(TD.constraints.positive)
    e = D.Gamma(glasstorch.tensor([1.0, 2.0]), 1.0).expand((3, 2))
    assert tuple(e.batch_shape) == (3, 2) and tuple(e.sample().shape) == (3, 2)


TRANSFORMS = ["ExpTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform",
              "StickBreakingTransform", "LowerCholeskyTransform", "CorrCholeskyTransform"]


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_match_pytorch(name):
    x = R.normal(size=(2, 3, 3) if name == "LowerCholeskyTransform" else (2, 3))
    ours, theirs = getattr(D.transforms, name)(), getattr(TD.transforms, name)()
    gx, tx = glasstorch.tensor(x), torch.tensor(x)
    gy, ty = ours(gx), theirs(tx)
    _close(gy, ty)
    _close(ours.inv(gy), theirs.inv(ty), rtol=1e-5, atol=1e-7)
    if name != "LowerCholeskyTransform":
        _close(ours.log_abs_det_jacobian(gx, gy), theirs.log_abs_det_jacobian(tx, ty),
               rtol=1e-5, atol=1e-7)


def test_affine_and_compose_transforms():
    t = D.transforms.ComposeTransform([D.transforms.AffineTransform(1.0, 2.0),
                                       D.transforms.ExpTransform()])
    x = glasstorch.tensor([0.1, -0.3], dtype=glasstorch.float64)
    y = t(x)
    np.testing.assert_allclose(y.numpy(), np.exp(1 + 2 * x.numpy()))
    np.testing.assert_allclose(t.inv(y).numpy(), x.numpy())
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).numpy(),
                               math.log(2) + (1 + 2 * x.numpy()))


@pytest.mark.parametrize("constraint", ["positive", "unit_interval", "simplex",
                                        "lower_cholesky", "real", "greater_than"])
def test_biject_to_maps_reals_into_the_constraint(constraint):
    c = getattr(D.constraints, constraint)
    if constraint == "greater_than":
        c = c(2.0)
    shape = (4, 3, 3) if constraint == "lower_cholesky" else (4, 3)
    x = glasstorch.tensor(R.normal(size=shape))
    t = D.transform_to(c) if constraint == "lower_cholesky" else D.biject_to(c)
    y = t(x)
    assert bool(c.check(y).all())
    if constraint == "lower_cholesky":      # only the lower triangle of x is used
        np.testing.assert_allclose(t(t.inv(y)).numpy(), y.numpy(), rtol=1e-6)
    else:
        np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-6, atol=1e-8)


def test_transformed_distribution_log_prob_is_the_change_of_variables():
    base = D.Normal(glasstorch.tensor(0.3, dtype=glasstorch.float64), 0.8)
    d = D.TransformedDistribution(base, [D.transforms.ExpTransform()])
    ref = TD.LogNormal(torch.tensor(0.3, dtype=torch.float64), 0.8)
    v = torch.tensor([0.5, 1.0, 3.0], dtype=torch.float64)
    _close(d.log_prob(glasstorch.tensor(v.numpy())), ref.log_prob(v))


def test_mixture_same_family_matches_pytorch():
    logits, locs, scales = R.normal(size=3), R.normal(size=3), _pos(3)
    ours = D.MixtureSameFamily(D.Categorical(logits=glasstorch.tensor(logits)),
                               D.Normal(glasstorch.tensor(locs), glasstorch.tensor(scales)))
    theirs = TD.MixtureSameFamily(TD.Categorical(logits=torch.tensor(logits)),
                                  TD.Normal(torch.tensor(locs), torch.tensor(scales)))
    v = torch.linspace(-2, 2, 7, dtype=torch.float64)
    gv = glasstorch.tensor(v.numpy())
    _close(ours.log_prob(gv), theirs.log_prob(v))
    _close(ours.cdf(gv), theirs.cdf(v))
    _close(ours.mean, theirs.mean)
    _close(ours.variance, theirs.variance)
    assert tuple(ours.sample((5,)).shape) == (5,)


def test_independent_sums_the_reinterpreted_dims():
    loc, scale = R.normal(size=(2, 3)), _pos(2, 3)
    ours = D.Independent(D.Normal(glasstorch.tensor(loc), glasstorch.tensor(scale)), 1)
    theirs = TD.Independent(TD.Normal(torch.tensor(loc), torch.tensor(scale)), 1)
    assert tuple(ours.batch_shape) == (2,) and tuple(ours.event_shape) == (3,)
    v = torch.tensor(R.normal(size=(2, 3)))
    _close(ours.log_prob(glasstorch.tensor(v.numpy())), theirs.log_prob(v))
    _close(ours.entropy(), theirs.entropy())


def test_reparameterised_training_of_a_variational_posterior():
    """The VAE pattern: a Normal posterior trained by rsample and the KL to a prior."""
    glasstorch.manual_seed(0)
    mu = glasstorch.zeros(2, requires_grad=True)
    log_sigma = glasstorch.zeros(2, requires_grad=True)
    opt = glasstorch.optim.Adam([mu, log_sigma], lr=0.05)
    target = D.Normal(glasstorch.tensor([1.0, -2.0]), glasstorch.tensor([0.5, 0.3]))
    for _ in range(300):
        q = D.Normal(mu, log_sigma.exp())
        z = q.rsample((64,))
        loss = (q.log_prob(z) - target.log_prob(z)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(mu.detach().numpy(), [1.0, -2.0], atol=0.1)
    np.testing.assert_allclose(log_sigma.exp().detach().numpy(), [0.5, 0.3], atol=0.1)


def test_von_mises_samples_have_the_circular_mean_and_variance():
    loc, kappa = glasstorch.tensor([0.5, -2.5]), glasstorch.tensor([2.0, 8.0])
    d = D.VonMises(loc, kappa)
    glasstorch.manual_seed(0)
    x = d.sample((20000,)).double()
    assert bool(((x >= -math.pi) & (x < math.pi)).all())
    c, s = x.cos().mean(0), x.sin().mean(0)
    np.testing.assert_allclose(glasstorch.atan2(s, c).numpy(), loc.numpy(), atol=0.03)
    np.testing.assert_allclose((1 - (c * c + s * s).sqrt()).numpy(), d.variance.numpy(),
                               atol=0.01)


def test_every_public_name_of_torch_distributions_is_here():
    theirs = {n for n in dir(TD) if not n.startswith("_")} - {"Any", "Callable", "torch"}
    assert sorted(n for n in theirs if not hasattr(D, n)) == []
    for module in ("normal", "gamma", "kl", "transforms", "constraints", "utils"):
        for name in getattr(getattr(TD, module), "__all__", ()):
            assert hasattr(getattr(D, module), name), f"distributions.{module}.{name}"


def test_wishart_and_lkj_samples_lie_in_their_supports():
    glasstorch.manual_seed(0)
    w = D.Wishart(glasstorch.tensor(5.0, dtype=glasstorch.float64),
                  covariance_matrix=glasstorch.tensor(_spd(3)))
    x = w.sample((2000,))
    assert bool(D.constraints.positive_definite.check(x).all())
    z = (x.mean(0) - w.mean).abs() / (w.variance / x.shape[0]).sqrt()
    assert float(z.max()) < 5
    lkj = D.LKJCholesky(4, glasstorch.tensor(2.0))
    L = lkj.sample((100,))
    assert bool(D.constraints.corr_cholesky.check(L).all())


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Exponential", "Laplace", "Bernoulli",
                                  "Categorical"])
def test_seeded_samples_are_pytorchs(name):
    outs = []
    for lib in (glasstorch, torch):
        d, _ = _make(lib, name)
        lib.manual_seed(7)
        outs.append(np.asarray(d.sample((6,)).tolist()))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-15, atol=0)   # a log's last unit
