"""Random number generation: generators, seeding, state, samplers and their checks.

Streams are glasstorch's own (PyTorch's differ), so values are checked for reproducibility,
ranges and statistics; shapes, dtypes, strides and errors are checked against PyTorch.
"""
import pickle
import warnings

import numpy as np
import pytest

import glasstorch as gt
from oracle import oracle_torch, to_numpy

N = 100_000    # draws for the statistics (bounds below are > 5 standard errors wide)


def _run(lib, expr):
    """Evaluate `expr` with `torch` bound to lib: ('ok', result) or ('err', type, message)."""
    env = {"torch": lib, "f": lib.zeros(4), "i": lib.zeros(4, dtype=lib.int64),
           "b": lib.zeros(4, dtype=lib.bool), "u8": lib.zeros(4, dtype=lib.uint8)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", eval(expr, env))
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return ("err", type(e).__name__, str(e))


# ---- reproducibility and independence --------------------------------------------------

SAMPLERS = {
    "rand": lambda g: gt.rand(3, 4, generator=g),
    "rand_f16": lambda g: gt.rand(7, dtype=gt.float16, generator=g),
    "randn": lambda g: gt.randn(5, generator=g),
    "randn_c64": lambda g: gt.randn(5, dtype=gt.complex64, generator=g),
    "randint": lambda g: gt.randint(0, 1000, (50,), generator=g),
    "randint_big": lambda g: gt.randint(-2 ** 62, 2 ** 62, (9,), generator=g),
    "randperm": lambda g: gt.randperm(50, generator=g),
    "normal": lambda g: gt.normal(gt.zeros(20), gt.ones(20), generator=g),
    "normal_size": lambda g: gt.normal(1.0, 2.0, (20,), generator=g),
    "bernoulli": lambda g: gt.bernoulli(gt.full((64,), 0.5), generator=g),
    "multinomial": lambda g: gt.multinomial(gt.ones(2, 30), 10, generator=g),
    "multinomial_repl": lambda g: gt.multinomial(gt.ones(30), 10, True, generator=g),
    "poisson": lambda g: gt.poisson(gt.full((20,), 4.0), g),
    "uniform_": lambda g: gt.empty(20).uniform_(-1, 1, generator=g),
    "normal_": lambda g: gt.empty(20, dtype=gt.float64).normal_(generator=g),
    "bernoulli_": lambda g: gt.empty(64).bernoulli_(0.5, generator=g),
    "random_": lambda g: gt.empty(20, dtype=gt.int32).random_(generator=g),
    "exponential_": lambda g: gt.empty(20).exponential_(generator=g),
    "geometric_": lambda g: gt.empty(20).geometric_(0.3, generator=g),
    "log_normal_": lambda g: gt.empty(20).log_normal_(generator=g),
    "cauchy_": lambda g: gt.empty(20, dtype=gt.bfloat16).cauchy_(generator=g),
}


@pytest.mark.parametrize("name", SAMPLERS)
def test_same_seed_gives_same_values_and_other_seeds_differ(name):
    draw = SAMPLERS[name]
    a = to_numpy(draw(gt.Generator().manual_seed(5)))
    b = to_numpy(draw(gt.Generator().manual_seed(5)))
    c = to_numpy(draw(gt.Generator().manual_seed(6)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("name", SAMPLERS)
def test_state_round_trip_continues_exactly(name):
    draw = SAMPLERS[name]
    g = gt.Generator().manual_seed(11)
    gt.rand(3, generator=g)         # an odd number of 32-bit draws leaves half a word buffered
    state = g.get_state()
    assert state.dtype is gt.uint8 and state.dim() == 1
    first, second = to_numpy(draw(g)), to_numpy(draw(g))
    assert g.set_state(state) is g
    np.testing.assert_array_equal(to_numpy(draw(g)), first)
    np.testing.assert_array_equal(to_numpy(draw(g)), second)


def test_default_generator_is_seeded_by_manual_seed():
    assert gt.manual_seed(7) is gt.default_generator
    assert gt.random.manual_seed is gt.manual_seed and gt.random.default_generator is \
        gt.default_generator
    a = to_numpy(gt.rand(5))
    gt.random.manual_seed(7)
    np.testing.assert_array_equal(to_numpy(gt.rand(5)), a)
    assert gt.initial_seed() == 7 == gt.random.initial_seed()


def test_generators_are_independent_of_each_other_and_of_the_default():
    g1, g2 = gt.Generator().manual_seed(3), gt.Generator().manual_seed(3)
    gt.manual_seed(0)
    default_state = to_numpy(gt.get_rng_state())
    ref = to_numpy(gt.randn(10, generator=gt.Generator().manual_seed(3)))
    gt.rand(100, generator=g1)
    gt.randperm(30, generator=g1)
    np.testing.assert_array_equal(to_numpy(gt.randn(10, generator=g2)), ref)
    np.testing.assert_array_equal(to_numpy(gt.get_rng_state()), default_state)


def test_get_state_is_a_copy_and_set_state_restores_the_initial_seed():
    g = gt.Generator().manual_seed(123)
    state = g.get_state()
    before = to_numpy(state).copy()
    g.manual_seed(9)
    gt.rand(4, generator=g)
    np.testing.assert_array_equal(to_numpy(state), before)
    assert g.set_state(state).initial_seed() == 123


def test_module_rng_state_round_trip():
    gt.manual_seed(1)
    state = gt.get_rng_state()
    a = to_numpy(gt.randn(6))
    gt.random.set_rng_state(state)
    np.testing.assert_array_equal(to_numpy(gt.randn(6)), a)
    gt.set_rng_state(gt.random.get_rng_state())


def test_generator_pickles_with_its_state():
    g = gt.Generator().manual_seed(77)
    gt.rand(3, generator=g)
    h = pickle.loads(pickle.dumps(g))
    assert h.initial_seed() == 77
    np.testing.assert_array_equal(to_numpy(gt.rand(9, generator=h)),
                                  to_numpy(gt.rand(9, generator=g)))


# ---- fork_rng ----------------------------------------------------------------------

def test_fork_rng_restores_the_state_even_after_an_exception():
    gt.manual_seed(0)
    with gt.random.fork_rng():
        a = to_numpy(gt.rand(3))
    np.testing.assert_array_equal(to_numpy(gt.rand(3)), a)
    gt.manual_seed(0)
    with pytest.raises(KeyError):
        with gt.random.fork_rng(devices=[]):
            gt.rand(3)
            raise KeyError
    np.testing.assert_array_equal(to_numpy(gt.rand(3)), a)


def test_fork_rng_disabled_does_not_restore():
    gt.manual_seed(0)
    with gt.random.fork_rng(enabled=False):
        a = to_numpy(gt.rand(3))
    assert not np.array_equal(to_numpy(gt.rand(3)), a)


# ---- seeds and state validation against torch --------------------------------------------

@pytest.mark.parametrize("seed", [0, 5, -1, -2 ** 63, 2 ** 64 - 1, 2 ** 63])
def test_seed_wrapping_matches_torch(seed):
    T = oracle_torch()
    assert gt.Generator().manual_seed(seed).initial_seed() == \
        T.Generator().manual_seed(seed).initial_seed()


def test_fresh_generator_and_seed_like_torch():
    T = oracle_torch()
    assert gt.Generator().initial_seed() == T.Generator().initial_seed()
    assert gt.Generator("cpu").device == gt.device("cpu")
    assert gt.Generator(device=gt.device("cpu")).device.type == "cpu"
    s = gt.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 64 and gt.initial_seed() == s
    g = gt.Generator()
    assert g.seed() == g.initial_seed()
    assert gt.manual_seed("7").initial_seed() == T.manual_seed("7").initial_seed() == 7
    assert gt.manual_seed(7.9).initial_seed() == 7


SEED_AND_STATE_ERRORS = [
    "torch.Generator().manual_seed(2**64)",
    "torch.Generator().manual_seed(-2**63 - 1)",
    "torch.manual_seed(2**64)",
    "torch.Generator().manual_seed(1.5)",
    "torch.Generator().manual_seed('1')",
    "torch.Generator(device='meta')",
    "torch.Generator().set_state([1, 2])",
    "torch.Generator().set_state(torch.zeros(3))",
    "torch.Generator().set_state(torch.zeros(3, dtype=torch.uint8))",
]


@pytest.mark.parametrize("expr", SEED_AND_STATE_ERRORS)
def test_seed_and_state_errors_have_torch_types(expr):
    T = oracle_torch()
    ours, theirs = _run(gt, expr), _run(T, expr)
    assert ours[0] == theirs[0] == "err"
    assert ours[1] == theirs[1], (ours, theirs)
    if "size" not in ours[2] and "seed in" not in ours[2]:
        assert ours[2] == theirs[2]


def test_bad_state_is_rejected_and_leaves_the_generator_unchanged():
    g = gt.Generator().manual_seed(4)
    twin = gt.Generator().manual_seed(4)
    good = to_numpy(g.get_state())
    bad_states = []
    for corrupt in (lambda s: s.__setitem__(8, 0),                 # left = 0
                    lambda s: s.__setitem__(12, 0),                # not seeded
                    lambda s: s.__setitem__(9, 7)):                # left > 624
        raw = good.copy()
        corrupt(raw)
        bad_states.append(gt.from_numpy(raw))
    bad_states.append(gt.from_numpy(good[:-1].copy()))
    for state in bad_states:
        with pytest.raises(RuntimeError, match="RNG state|Invalid mt19937 state"):
            g.set_state(state)
    assert g.initial_seed() == 4
    np.testing.assert_array_equal(to_numpy(gt.rand(8, generator=g)),
                                  to_numpy(gt.rand(8, generator=twin)))


def test_generator_argument_is_checked():
    with pytest.raises(TypeError, match="Generator"):
        gt.rand(2, generator=5)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but "
                                           "found 'cuda'"):
        gt.rand(2, generator=gt.Generator("cuda"))


# ---- shapes, dtypes, strides, devices -----------------------------------------------------

FACTORY_CALLS = [
    "torch.rand(2, 3)", "torch.rand((2, 3))", "torch.rand([2, 3])", "torch.rand(size=(2,))",
    "torch.rand(0)", "torch.rand(2, 0, 3)", "torch.rand(4, dtype=torch.float64)",
    "torch.rand(4, dtype=torch.float16)", "torch.rand(4, dtype=torch.bfloat16)",
    "torch.rand(3, dtype=torch.complex64)", "torch.randn(2, 3, dtype=torch.complex128)",
    "torch.randn(2, 3)", "torch.rand(2, requires_grad=True)",
    "torch.randint(5, (3,))", "torch.randint(2, 5, (3, 2), dtype=torch.int16)",
    "torch.randint(0, 2, (3,), dtype=torch.bool)", "torch.randint(3, (3,), dtype=torch.float32)",
    "torch.randint(high=4, size=(2,))", "torch.randint(low=1, high=4, size=(2,))",
    "torch.randint(0, 256, (4,), dtype=torch.uint8)",
    "torch.randperm(5)", "torch.randperm(0)", "torch.randperm(6, dtype=torch.float32)",
    "torch.randperm(256, dtype=torch.uint8)", "torch.randperm(2049, dtype=torch.float16)",
    "torch.normal(2, 3, (2, 3))", "torch.normal(0., 1., size=(2,), dtype=torch.float64)",
    "torch.normal(0., 1., size=(2,), requires_grad=True)",
    "torch.normal(torch.zeros(3, 1), torch.ones(2))",
    "torch.normal(torch.zeros(2, dtype=torch.float64), 1.)",
    "torch.normal(torch.zeros(3, dtype=torch.float16), 1.)",
    "torch.normal(torch.zeros(2, 3).t(), 1.)", "torch.normal(1., torch.ones(2, 2))",
    "torch.normal(mean=torch.zeros(2))", "torch.normal(torch.zeros(()), torch.ones(()))",
    "torch.normal(torch.zeros(3), torch.ones(3, dtype=torch.float64))",
    "torch.bernoulli(torch.full((2, 3), 0.5))", "torch.bernoulli(torch.zeros(3, 2).t())",
    "torch.bernoulli(torch.zeros(2, dtype=torch.float64), 0.5)",
    "torch.bernoulli(torch.zeros(2, dtype=torch.int64), 0.5)",
    "torch.tensor([0., 1.]).bernoulli()", "torch.tensor([0., 1.]).bernoulli(0.3)",
    "torch.multinomial(torch.ones(4), 2)", "torch.multinomial(torch.ones(3, 4), 4)",
    "torch.multinomial(torch.ones(3, 4), 9, True)", "torch.multinomial(torch.ones(0, 3), 1)",
    "torch.multinomial(torch.ones(3, dtype=torch.float16), 2)",
    "torch.tensor([1., 2.]).multinomial(1)",
    "torch.poisson(torch.ones(2, 3, dtype=torch.float64))", "torch.poisson(torch.ones(3, 2).t())",
    "torch.rand_like(torch.zeros(3, 2).t())",
    "torch.randn_like(torch.zeros(2, 2, 3).permute(2, 0, 1))",
    "torch.rand_like(torch.zeros(2), dtype=torch.float64)",
    "torch.randint_like(torch.zeros(3), 4)", "torch.randint_like(torch.zeros(3, 2).t(), 2, 5)",
    "torch.randint_like(torch.zeros(3), torch.tensor(5))",
    "torch.randint_like(torch.zeros(3), 5, dtype=torch.int32)",
    "torch.rand(2, 3, device='meta')", "torch.randn(2, dtype=torch.float64, device='meta')",
    "torch.randint(3, (2,), device='meta')", "torch.randperm(4, device='meta')",
    "torch.normal(0., 1., (2,), device='meta')",
    "torch.rand_like(torch.empty(2, 3, device='meta'))",
    "torch.multinomial(torch.ones(2, 5, device='meta'), 3)",
    "torch.empty(3, 4, device='meta').uniform_()", "torch.empty(3, device='meta').random_(5)",
]


@pytest.mark.parametrize("expr", FACTORY_CALLS)
def test_results_have_torch_shapes_dtypes_strides_and_devices(expr):
    T = oracle_torch()
    # torch's meta kernels cost seconds to import; its CPU results have the same metadata.
    (s1, ours), (s2, theirs) = _run(gt, expr), _run(T, expr.replace(", device='meta'", ""))
    assert s1 == s2 == "ok", (ours, theirs)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype)
    assert ours.device.type == ("meta" if "meta" in expr else theirs.device.type)
    assert ours.requires_grad == theirs.requires_grad
    if ours.numel() > 1:
        assert ours.stride() == theirs.stride()


def test_out_tensors_are_resized_filled_and_bumped_like_torch():
    T = oracle_torch()
    out = gt.zeros(5)
    v = out._version
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = gt.rand(2, 3, out=out)
    assert r is out and out.shape == (2, 3) and out._version > v
    assert ((to_numpy(out) >= 0) & (to_numpy(out) < 1)).all()
    out = gt.zeros(3, 2).t()
    gt.randn(2, 3, out=out)
    assert out.stride() == (1, 2)
    r = gt.randperm(3, out=gt.zeros(5))
    assert sorted(to_numpy(r).tolist()) == [0, 1, 2] and r.dtype is gt.float32
    assert gt.randint(0, 3, (2,), out=gt.zeros(2)).dtype is gt.float32
    b = gt.bernoulli(gt.tensor([0., 1.]), out=gt.zeros(3, dtype=gt.int64))
    assert b.tolist() == [0, 1]
    m = gt.multinomial(gt.ones(2, 3), 2, out=gt.zeros(1, dtype=gt.int64))
    assert m.shape == (2, 2)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        gt.normal(gt.zeros(2), gt.ones(2), out=gt.zeros(5))
    for expr in ("torch.rand(2, out=torch.zeros(2), dtype=torch.float64)",
                 "torch.multinomial(torch.ones(3), 2, out=torch.zeros(2))",
                 "torch.normal(torch.zeros(3), 1., out=torch.zeros(2))"):
        ours, theirs = _run(gt, expr), _run(T, expr)
        assert ours[:2] == theirs[:2] and ours[2] == theirs[2], (ours, theirs)


# ---- value ranges -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64"])
def test_rand_is_in_zero_one_for_every_dtype(dtype):
    x = to_numpy(gt.rand(N, dtype=getattr(gt, dtype), generator=gt.Generator().manual_seed(1)))
    parts = (x.real, x.imag) if np.iscomplexobj(x) else (x,)
    for p in parts:
        assert p.min() >= 0 and p.max() < 1
        assert abs(p.mean() - 0.5) < 0.01


def test_uniform_bounds_and_mean():
    x = to_numpy(gt.empty(N).uniform_(-2, 3))
    assert x.min() >= -2 and x.max() < 3 and abs(x.mean() - 0.5) < 0.05


def test_randint_bounds_are_exclusive_and_all_values_appear():
    x = to_numpy(gt.randint(-3, 4, (10_000,)))
    assert set(np.unique(x).tolist()) == set(range(-3, 4))
    u = to_numpy(gt.randint(0, 256, (20_000,), dtype=gt.uint8))
    assert u.min() == 0 and u.max() == 255
    assert set(to_numpy(gt.randint(0, 2, (100,), dtype=gt.bool)).tolist()) == {False, True}
    assert set(to_numpy(gt.randint_like(gt.zeros(1000), 2, 5)).tolist()) == {2.0, 3.0, 4.0}


def test_random_default_ranges_per_dtype():
    f = to_numpy(gt.empty(N).random_())
    assert f.min() >= 0 and f.max() <= 2 ** 24 and f.max() > 2 ** 23
    assert (f == np.round(f)).all()
    c = to_numpy(gt.empty(N, dtype=gt.int8).random_())
    assert c.min() == 0 and c.max() == 127
    h = to_numpy(gt.empty(N, dtype=gt.float16).random_())
    assert h.max() <= 2 ** 11 and h.min() >= 0
    assert set(to_numpy(gt.empty(100, dtype=gt.bool).random_()).tolist()) == {False, True}
    assert set(to_numpy(gt.empty(1000).random_(5)).tolist()) == {0, 1, 2, 3, 4}
    assert set(to_numpy(gt.empty(1000).random_(to=3)).tolist()) == {0, 1, 2}
    assert set(to_numpy(gt.empty(1000).random_(2, 5)).tolist()) == {2, 3, 4}
    assert set(to_numpy(gt.empty(1000).random_(**{"from": 2, "to": 4})).tolist()) == {2, 3}
    assert set(to_numpy(gt.empty(1000).random_(2 ** 24 - 1, None)).tolist()) == {
        2 ** 24 - 1, 2 ** 24}
    full = to_numpy(gt.empty(1000, dtype=gt.int64).random_(-2 ** 63, None))
    assert full.min() < -2 ** 62 and full.max() > 2 ** 62


def test_randperm_is_a_permutation():
    for n, dtype in ((1000, gt.int64), (2049, gt.float16), (256, gt.uint8), (257, gt.bfloat16)):
        p = to_numpy(gt.randperm(n, dtype=dtype)).astype(np.int64)
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    assert not np.array_equal(to_numpy(gt.randperm(1000)), np.arange(1000))


# ---- statistics ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_normal_moments(dtype):
    x = to_numpy(gt.randn(N, dtype=getattr(gt, dtype))).astype(np.float64)
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02
    y = to_numpy(gt.empty(N, dtype=getattr(gt, dtype)).normal_(3, 2)).astype(np.float64)
    assert abs(y.mean() - 3) < 0.04 and abs(y.std() - 2) < 0.04


def test_complex_normal_has_half_variance_per_part():
    z = to_numpy(gt.randn(N, dtype=gt.complex128))
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
    w = to_numpy(gt.empty(N, dtype=gt.complex64).normal_(1, 2))
    assert abs(w.real.mean() - 1) < 0.03 and abs(w.imag.mean() - 1) < 0.03
    assert abs(w.real.std() - 2 ** 0.5) < 0.03


def test_normal_with_tensor_arguments_broadcasts_means_and_stds():
    mean = gt.tensor([[-5.0], [0.0], [5.0]])
    std = gt.tensor([0.5, 1.0, 2.0, 0.0])
    x = to_numpy(gt.normal(mean.expand(3, 4).contiguous(), std.expand(N // 10, 3, 4)))
    np.testing.assert_allclose(x.mean(axis=0), np.repeat([[-5.0], [0.0], [5.0]], 4, 1),
                               atol=0.1)
    np.testing.assert_allclose(x.std(axis=0), np.tile([0.5, 1.0, 2.0, 0.0], (3, 1)), atol=0.07)
    y = to_numpy(gt.normal(10.0, gt.full((N,), 3.0)))
    assert abs(y.mean() - 10) < 0.05 and abs(y.std() - 3) < 0.05


def test_discrete_and_continuous_distribution_means():
    assert abs(to_numpy(gt.empty(N).bernoulli_(0.3)).mean() - 0.3) < 0.01
    p = gt.tensor([0.0, 0.2, 0.9, 1.0])
    draws = to_numpy(gt.empty(N // 10, 4).bernoulli_(p))
    np.testing.assert_allclose(draws.mean(axis=0), [0.0, 0.2, 0.9, 1.0], atol=0.02)
    draws = to_numpy(gt.bernoulli(p.expand(N // 10, 4)))
    np.testing.assert_allclose(draws.mean(axis=0), [0.0, 0.2, 0.9, 1.0], atol=0.02)
    e = to_numpy(gt.empty(N).exponential_(2))
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01
    geo = to_numpy(gt.empty(N, dtype=gt.int64).geometric_(0.25))
    assert geo.min() >= 1 and abs(geo.mean() - 4) < 0.1
    ln = to_numpy(gt.empty(N).log_normal_(0, 0.5))
    assert ln.min() > 0 and abs(np.median(ln) - 1) < 0.02
    ca = to_numpy(gt.empty(N, dtype=gt.float64).cauchy_(1, 2))
    assert abs(np.median(ca) - 1) < 0.05
    po = to_numpy(gt.poisson(gt.full((N,), 3.0)))
    assert (po == np.round(po)).all() and po.min() >= 0 and abs(po.mean() - 3) < 0.05


def test_multinomial_with_replacement_follows_the_weights():
    w = gt.tensor([[1.0, 0.0, 3.0, 4.0], [0.0, 0.0, 0.0, 2.0]])
    idx = to_numpy(gt.multinomial(w, N // 2, replacement=True))
    freq = np.bincount(idx[0], minlength=4) / idx.shape[1]
    np.testing.assert_allclose(freq, [0.125, 0.0, 0.375, 0.5], atol=0.01)
    assert (idx[1] == 3).all()


def test_multinomial_without_replacement_gives_distinct_indices():
    rows = gt.rand(500, 20) + 0.01
    idx = to_numpy(gt.multinomial(rows, 20))
    assert all(len(set(r)) == 20 for r in idx.tolist())
    w = gt.tensor([1.0, 0.0, 2.0, 0.0, 1.0])
    idx = to_numpy(gt.multinomial(w.expand(5000, 5), 3))
    assert all(sorted(r) == [0, 2, 4] for r in idx.tolist())    # zero weight never drawn
    first = np.bincount(idx[:, 0], minlength=5) / 5000
    np.testing.assert_allclose(first, [0.25, 0, 0.5, 0, 0.25], atol=0.03)
    # Zero-weight categories come last, in index order, when positive ones run out.
    assert to_numpy(gt.multinomial(gt.tensor([1.0, 0.0, 0.0]), 3)).tolist() == [0, 1, 2]


# ---- errors against torch ---------------------------------------------------------------

ERRORS_LIKE_TORCH = [
    "f.uniform_(1, 0)", "f.uniform_(0, float('inf'))", "f.uniform_(-3e38, 3e38)",
    "f.uniform_(float('nan'), 1)", "torch.zeros(2, dtype=torch.float16).uniform_(-1e5, 1e5)",
    "torch.zeros(2, dtype=torch.bfloat16).uniform_(-3.4e38, 3.4e38)",
    "f.normal_(0, -1)", "f.normal_(0, float('nan'))", "torch.normal(0., -1., (3,))",
    "torch.normal(torch.zeros(3), -1.)", "torch.normal(0., torch.tensor([1., -1.]))",
    "torch.normal(torch.zeros(3), torch.tensor([1., -1., 1]))",
    "torch.normal(torch.zeros(3), torch.ones(2))", "torch.normal(torch.zeros(6), torch.ones(2, 3))",
    "torch.rand(2, -1)", "torch.randperm(-1)", "torch.randperm(257, dtype=torch.uint8)",
    "torch.randperm(70000, dtype=torch.float16)",
    "torch.randint(5, 5, (3,))", "torch.randint(5, 4, (3,))",
    "torch.randint(0, 300, (3,), dtype=torch.uint8)",
    "torch.randint(-1, 3, (3,), dtype=torch.uint8)",
    "torch.randint(0, 3, (3,), dtype=torch.bool)", "torch.randint(3, 5)",
    "torch.randint(1.5, (3,))",
    "torch.randint_like(i, 5, 5)", "torch.randperm(5.0)", "torch.randperm(5, requires_grad=True)",
    "f.bernoulli_(2)", "f.bernoulli_(-0.1)", "f.bernoulli_(float('nan'))",
    "f.bernoulli_(torch.tensor([0.5, 0.5]))", "torch.bernoulli(torch.tensor([0., 1.]), p=2.)",
    "torch.multinomial(torch.tensor([1., 2.]), 3)", "torch.multinomial(torch.tensor([1., 2.]), 0)",
    "torch.multinomial(torch.tensor([1., 2.]), -1)", "torch.multinomial(torch.tensor([1, 2]), 1)",
    "torch.multinomial(torch.tensor([-1., 2.]), 1)", "torch.multinomial(torch.tensor([0., 0.]), 1)",
    "torch.multinomial(torch.tensor([float('inf'), 2.]), 1)",
    "torch.multinomial(torch.tensor([float('nan'), 2.]), 1)",
    "torch.multinomial(torch.ones(2, 2, 2), 1)", "torch.multinomial(torch.tensor(1.), 1)",
    "torch.multinomial(torch.ones(0), 1)", "torch.multinomial(torch.ones(2, 0), 1)",
    "torch.multinomial(torch.ones(2**24 + 1), 1)",
    "torch.multinomial(torch.tensor([[1., 2.], [0., 0.]]), 1)",
    "torch.multinomial(torch.tensor([-1., 2.]), 2, True)",
    "torch.multinomial(torch.tensor([float('inf'), 2.]), 2, True)",
    "torch.multinomial(torch.tensor([float('nan'), 2.]), 2, True)",
    "torch.multinomial(torch.tensor([[1., 2.], [0., 0.]]), 2, True)",
    "torch.multinomial(torch.tensor([1., 2.]), 1.5)",
    "torch.multinomial(torch.tensor([1.+0j, 2.]), 1)",
    "torch.poisson(torch.tensor([1., -1.]))", "torch.poisson(torch.tensor([1., float('nan')]))",
    "f.random_(5, 3)", "f.random_(3, 3)", "f.random_(0)", "f.random_(-1)",
    "u8.random_(-1, 3)", "u8.random_(0, 257)", "u8.random_(300, None)", "b.random_(0, 3)",
    "torch.zeros(2, dtype=torch.int8).random_(-200, 3)",
    "torch.zeros(2, dtype=torch.int16).random_(-2**40, 3)",
    "torch.zeros(2, dtype=torch.int32).random_(-2**40, 3)",
    "torch.zeros(2, dtype=torch.bool).random_(-2**40, 3)",
    "torch.zeros(2, dtype=torch.float16).random_(-2**20, None)",
    "f.random_(2**24, None)", "torch.zeros(2).random_(2**30 + 1, 2**30 + 10)",
    "f.exponential_(0)", "f.exponential_(-1)", "f.exponential_(float('nan'))", "i.exponential_()",
    "torch.zeros(2, dtype=torch.complex64).exponential_()",
    "f.geometric_(0)", "f.geometric_(1)", "f.geometric_(1.5)",
    "f.log_normal_(1, 0)", "f.log_normal_(1, -1)",
    "f.cauchy_(0, 0)", "f.cauchy_(0, -1)", "i.cauchy_()",
    "torch.zeros(2, dtype=torch.int16).cauchy_()", "torch.zeros(2, dtype=torch.bool).cauchy_()",
    "torch.zeros(3, 1).expand(3, 4).uniform_()", "torch.zeros(3, 1).expand(3, 4).random_()",
    "torch.zeros(3, 1).expand(3, 4).bernoulli_(0.5)",
    "torch.zeros(0).normal_(0, -1)", "torch.zeros(0).random_(3, 1)",
]


@pytest.mark.parametrize("expr", ERRORS_LIKE_TORCH)
def test_errors_match_torch(expr):
    T = oracle_torch()
    ours, theirs = _run(gt, expr), _run(T, expr)
    assert theirs[0] == "err"
    assert ours[:2] == theirs[:2], (ours, theirs)
    if "(position" not in theirs[2] and "Overflow" not in theirs[2] and \
            "Only Tensors" not in theirs[2]:
        assert ours[2] == theirs[2]


# PyTorch names internal kernels here ("check_uniform_bounds", "normal_kernel_cpu", ...);
# glasstorch names the op, keeping the type and the "not implemented for '<dtype>'" part.
DTYPE_ERRORS = [
    "i.uniform_()", "b.uniform_()", "i.normal_()", "torch.rand(2, 3, dtype=torch.int64)",
    "torch.randn(2, dtype=torch.int32)", "torch.rand_like(i)", "torch.randn_like(i)",
    "torch.normal(torch.zeros(3, dtype=torch.int64), 1.)",
    "torch.normal(0, torch.ones(3, dtype=torch.int64))",
    "torch.normal(0, 1, (2, 3), dtype=torch.int64)",
    "torch.normal(0., 1., (2,), out=torch.zeros(3, dtype=torch.int64))",
    "f.bernoulli_(torch.tensor([1, 0, 1, 1]))", "torch.bernoulli(torch.tensor([0, 1]))",
    "torch.zeros(2, dtype=torch.complex64).bernoulli_()", "torch.randperm(3, dtype=torch.bool)",
    "torch.randperm(3, dtype=torch.complex64)", "torch.poisson(torch.tensor([1, 2]))",
    "torch.zeros(2, dtype=torch.complex64).random_()", "b.geometric_(0.5)", "i.log_normal_()",
]


@pytest.mark.parametrize("expr", DTYPE_ERRORS)
def test_dtype_errors_match_torch_type_and_dtype(expr):
    T = oracle_torch()
    ours, theirs = _run(gt, expr), _run(T, expr)
    assert theirs[0] == "err" and ours[:2] == theirs[:2], (ours, theirs)
    assert ours[2].split(" not implemented")[1] == theirs[2].split(" not implemented")[1]


def test_clearer_errors_than_torch():
    with pytest.raises(RuntimeError, match=r"bernoulli expects all probabilities in p to be in "
                                           r"\[0, 1\], but found p=2"):
        gt.bernoulli(gt.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        gt.poisson(gt.tensor([1.0, float("inf")]))
    with pytest.raises(RuntimeError, match="n cannot be greater than 257 for BFloat16"):
        gt.randperm(258, dtype=gt.bfloat16)
    with pytest.raises(TypeError, match="size is required"):
        gt.normal(2.0, 3.0)


@pytest.mark.parametrize("expr", ["torch.empty(3).random_(0, 2**24 + 2)",
                                  "torch.empty(3, dtype=torch.float16).random_(2**11 + 5, 2**12)",
                                  "torch.empty(3, dtype=torch.float64).random_(-2**60, 0)"])
def test_random_warns_beyond_exact_float_integers_like_torch(expr):
    T = oracle_torch()
    messages = []
    for lib in (gt, T):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            eval(expr, {"torch": lib})
        messages.append([str(w.message).split(" (Triggered internally")[0] for w in caught
                         if w.category is UserWarning])
    assert messages[0] == messages[1] and messages[0]


# ---- in-place samplers on views ---------------------------------------------------------

INPLACE = {
    "uniform_": (gt.float32, lambda v: v.uniform_(2, 3)),
    "normal_": (gt.float64, lambda v: v.normal_(5, 1)),
    "bernoulli_float": (gt.int64, lambda v: v.bernoulli_(0.5)),
    "bernoulli_tensor": (gt.float32, lambda v: v.bernoulli_(gt.full((), 0.5))),
    "random_": (gt.int32, lambda v: v.random_()),
    "random_to": (gt.float16, lambda v: v.random_(10)),
    "random_from": (gt.uint8, lambda v: v.random_(3, 9)),
    "exponential_": (gt.bfloat16, lambda v: v.exponential_()),
    "geometric_": (gt.int16, lambda v: v.geometric_(0.5)),
    "log_normal_": (gt.float32, lambda v: v.log_normal_()),
    "cauchy_": (gt.float64, lambda v: v.cauchy_()),
}


def _views(base):
    yield base.as_strided((3, 2), (5, 2), 1)                 # every other column, offset
    yield base.t().narrow(0, 1, 3)                           # transposed, offset
    yield base.as_strided((2, 2, 2), (10, 1, 5), 3)          # 3-D permuted strides


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_samplers_write_only_the_view_and_bump_versions(name):
    dtype, sample = INPLACE[name]
    sentinel = 100 if dtype in (gt.uint8, gt.int16) else -7
    for make in range(3):
        base = gt.full((6, 5), sentinel, dtype=dtype)
        view = list(_views(base))[make]
        marker = gt.zeros(30, dtype=gt.int64)
        marker.as_strided(view.shape, view.stride(), view.storage_offset()).fill_(1)
        inside = to_numpy(marker).astype(bool).reshape(6, 5)
        v0 = base._version
        assert sample(view) is view
        assert base._version == view._version == v0 + 1
        after = to_numpy(base).astype(np.float64)
        assert (after[~inside] == sentinel).all()
        assert (after[inside] != sentinel).mean() > 0.5


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_sampler_errors_leave_tensor_and_version_alone(name):
    dtype, sample = INPLACE[name]
    x = gt.full((3,), 1, dtype=dtype).expand(2, 3)
    v0, before = x._version, to_numpy(x).copy()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        sample(x)
    assert x._version == v0
    np.testing.assert_array_equal(to_numpy(x), before)


def test_inplace_samplers_dispatch_and_return_self_on_meta():
    m = gt.empty(3, 4, device="meta")
    for _, sample in INPLACE.values():
        assert sample(m) is m
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        gt.empty(2, dtype=gt.int64, device="meta").normal_()
    assert gt.randint(0, 5, (3,), device="meta").dtype is gt.int64
