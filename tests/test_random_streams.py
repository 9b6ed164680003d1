"""PyTorch's CPU random streams, bit for bit against the installed PyTorch: after the same
manual_seed (or on Generators seeded alike) every sampler draws the same values and leaves
the generator in the same state, across seeds, sizes, dtypes and layouts.

One PyTorch path is vectorized math whose last bits depend on the CPU build: float32
normal samples of 16+ contiguous elements (log/sin/cos approximations), compared to a few
units in the last place. PyTorch builds with MKL draw bernoulli_(p) with MKL's own stream on
Intel CPUs; those comparisons are skipped there.
"""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def _intel_mkl() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            intel = "GenuineIntel" in f.read(4096)
    except OSError:
        intel = False
    return intel and torch.backends.mkl.is_available()


SEEDS = [0, 7, 2 ** 33 + 5]
EXACT = [
    "lib.rand(5)", "lib.rand(3, 4, dtype=lib.float64)", "lib.rand(33, dtype=lib.float16)",
    "lib.rand(9, dtype=lib.bfloat16)", "lib.rand(2, 3, dtype=lib.complex64)",
    "lib.randn(5)", "lib.randn(15, dtype=lib.float64)", "lib.randn(100, dtype=lib.float64)",
    "lib.randn(37, dtype=lib.float16)", "lib.randn(3, dtype=lib.complex128)",
    "(lib.randn(3), lib.randn(3), lib.randn(2, dtype=lib.float64))[-1]",
    "lib.empty(4, 5).t().normal_(0.5, 2.0)", "lib.empty(6, 5).t().uniform_(-2, 3)",
    "lib.empty(40, dtype=lib.float64).uniform_(-2.5, 3.7)", "lib.empty(20).uniform_(-2.5, 3.7)",
    "lib.empty(40, dtype=lib.float64).normal_(0.3, 2.5)",
    "lib.randint(0, 10, (20,))", "lib.randint(-5, 2 ** 30, (9,))",
    "lib.randint(3, (5,), dtype=lib.int32)", "lib.randint(0, 2 ** 40, (5,))",
    "lib.randint(0, 7, (4, 3), dtype=lib.float32)",
    "lib.randperm(10)", "lib.randperm(1000)", "lib.randperm(50, dtype=lib.float32)",
    "lib.empty(10, dtype=lib.int32).random_()", "lib.empty(10).random_()",
    "lib.empty(10, dtype=lib.int64).random_()", "lib.empty(10, dtype=lib.uint8).random_()",
    "lib.bernoulli(lib.full((20,), 0.3))", "lib.bernoulli(lib.rand(4, 5, dtype=lib.float64))",
    "lib.multinomial(lib.tensor([0.1, 0.5, 0.4]), 1)",
    "lib.multinomial(lib.tensor([[0.1, 0.5, 0.4], [1.0, 1.0, 1.0]]), 5, True)",
    "lib.multinomial(lib.tensor([0.1, 0.5, 0.4, 0.2]), 3)",
    "lib.multinomial(lib.rand(3, 10, dtype=lib.float64), 4)",
    "lib.empty(10).exponential_(2.0)", "lib.empty(10).geometric_(0.3)",
    "lib.empty(10).cauchy_(1.5, 0.3)", "lib.empty(10).log_normal_(0.5, 0.7)",
    "lib.normal(lib.zeros(5), lib.ones(5))", "lib.normal(lib.zeros(7, dtype=lib.float64), 2.0)",
    "lib.nn.functional.rrelu(lib.linspace(-1, 1, 10), training=True)",
    "lib.nn.Linear(20, 30).weight.detach()", "lib.nn.Conv2d(3, 8, 3).weight.detach()",
    "lib.nn.init.kaiming_normal_(lib.empty(3, 4))", "lib.nn.init.xavier_uniform_(lib.empty(5, 6))",
    "lib.testing.make_tensor(4, 4, dtype=lib.float32, device='cpu')",
]
MKL_BERNOULLI = ["lib.empty(20).bernoulli_(0.7)",
                 "lib.nn.functional.dropout(lib.ones(4, 50), 0.3)",
                 "lib.nn.Dropout(0.5)(lib.ones(3, 7))"]
VECTOR_NORMAL = ["lib.randn(16)", "lib.randn(1000)", "lib.randn(4, 5).t()",
                 "lib.normal(2.0, lib.ones(20))", "lib.empty(40).normal_(0.3, 2.5)"]


def _draw(expr, seed):
    out = []
    for lib in (gt, torch):
        lib.manual_seed(seed)
        value = eval(expr, {"lib": lib})
        if value.dtype in (lib.float16, lib.bfloat16):
            value = value.float()
        out.append((value.numpy(), lib.get_rng_state().numpy()))
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("expr", EXACT)
def test_samplers_draw_pytorch_values(expr, seed):
    (ours, our_state), (theirs, their_state) = _draw(expr, seed)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(our_state, their_state)


@pytest.mark.skipif(_intel_mkl(), reason="PyTorch draws bernoulli_(p) with MKL on Intel")
@pytest.mark.parametrize("expr", MKL_BERNOULLI)
def test_bernoulli_and_dropout_masks(expr):
    (ours, our_state), (theirs, their_state) = _draw(expr, 3)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(our_state, their_state)


@pytest.mark.parametrize("expr", VECTOR_NORMAL)
def test_float32_normal_blocks_agree_to_the_last_bits(expr):
    (ours, our_state), (theirs, their_state) = _draw(expr, 11)
    np.testing.assert_allclose(ours, theirs, rtol=4e-6, atol=1e-6)
    np.testing.assert_array_equal(our_state, their_state)


def test_rng_state_moves_between_the_libraries():
    torch.manual_seed(21)
    torch.rand(5)
    torch.randn(3, dtype=torch.float64)      # leaves a cached normal in the state
    gt.set_rng_state(gt.tensor(torch.get_rng_state().numpy()))
    np.testing.assert_array_equal(gt.get_rng_state().numpy(), torch.get_rng_state().numpy())
    np.testing.assert_array_equal(gt.randn(5, dtype=gt.float64).numpy(),
                                  torch.randn(5, dtype=torch.float64).numpy())
    np.testing.assert_array_equal(gt.rand(7).numpy(), torch.rand(7).numpy())
    gt.manual_seed(4)
    assert gt.initial_seed() == 4


def test_generators_are_independent_streams():
    ours, theirs = gt.Generator().manual_seed(99), torch.Generator().manual_seed(99)
    gt.manual_seed(0)
    torch.manual_seed(0)
    for _ in range(3):
        np.testing.assert_array_equal(gt.rand(4, generator=ours).numpy(),
                                      torch.rand(4, generator=theirs).numpy())
        np.testing.assert_array_equal(gt.rand(2).numpy(), torch.rand(2).numpy())
    np.testing.assert_array_equal(ours.get_state().numpy(), theirs.get_state().numpy())
    fresh_ours, fresh_theirs = gt.Generator(), torch.Generator()
    assert fresh_ours.initial_seed() == fresh_theirs.initial_seed()
    np.testing.assert_array_equal(gt.randperm(20, generator=fresh_ours).numpy(),
                                  torch.randperm(20, generator=fresh_theirs).numpy())


def test_shuffling_data_loader_matches_pytorch():
    data = list(range(30))
    gt.manual_seed(5)
    torch.manual_seed(5)
    ours = [b.tolist() for b in gt.utils.data.DataLoader(data, batch_size=7, shuffle=True)]
    theirs = [b.tolist() for b in torch.utils.data.DataLoader(data, batch_size=7, shuffle=True)]
    assert ours == theirs
