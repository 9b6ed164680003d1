"""The compiled-graph cache: an equal graph reuses a compile, anything else compiles anew."""
import numpy as np
import pytest

import glasstorch as torch
import glasstorch.nn as nn
import glasstorch.nn.functional as F
from glasstorch.compiler.inductor import graph_cache

from inductor_helpers import as_float64, assert_same, compiled


@pytest.fixture(autouse=True)
def empty_cache():
    """Other tests compile the same small graphs: each test here starts from an empty cache."""
    graph_cache.clear()


def _randn(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_an_equal_graph_is_served_from_the_cache():
    x = _randn(16, 32)
    fn = lambda x: F.layer_norm(x * 2 + 1, (32,)).relu()          # noqa: E731
    first = compiled(fn, x)
    hits = graph_cache.hits
    again = compiled(fn, x)
    assert graph_cache.hits == hits + 1
    assert again.artefacts is first.artefacts
    assert_same(again(x), fn(x), rtol=1e-5, atol=1e-6)


def test_numbers_are_told_apart_by_type_and_sign():
    x = torch.tensor([-0.0, 1.0, -2.5])
    results = {}
    for name, fn in (("+0.0", lambda x: x + 0.0), ("-0.0", lambda x: x + -0.0),
                     ("int", lambda x: (x * 3).to(torch.int64) // 2),
                     ("float", lambda x: (x * 3).to(torch.int64) // 2.0)):
        results[name] = (compiled(fn, x)(x), fn(x))
    for name, (out, ref) in results.items():
        assert_same(out, ref)
        assert np.array_equal(np.signbit(as_float64(out)), np.signbit(as_float64(ref))), name


def test_other_strides_miss_the_cache():
    x = _randn(4, 5, seed=1)
    fn = lambda x: x * 2 + 1                                      # noqa: E731
    compiled(fn, x)
    t = _randn(5, 4, seed=2).t()
    hits = graph_cache.hits
    c = compiled(fn, t)
    assert graph_cache.hits == hits
    assert_same(c(t), fn(t))


def test_the_cache_can_be_turned_off(monkeypatch):
    x = _randn(8, seed=3)
    fn = lambda x: x.sin() * 3                                    # noqa: E731
    compiled(fn, x)
    monkeypatch.setenv("GLASSTORCH_FX_GRAPH_CACHE", "0")
    hits = graph_cache.hits
    c = compiled(fn, x)
    assert graph_cache.hits == hits
    assert_same(c(x), fn(x), rtol=1e-6, atol=1e-7)


def test_a_fresh_kernel_cache_directory_is_a_cold_compile(monkeypatch, tmp_path):
    x = _randn(8, seed=4)
    fn = lambda x: x.exp() - 1                                    # noqa: E731
    compiled(fn, x)
    monkeypatch.setenv("GLASSTORCH_CACHE_DIR", str(tmp_path))
    hits = graph_cache.hits
    compiled(fn, x)
    assert graph_cache.hits == hits


def test_a_training_step_after_reset_reuses_the_forward_and_backward():
    """After `torch._dynamo.reset()` the same model's step captures again but compiles
    nothing: both graphs come from the cache, and the gradients are eager's."""
    def make():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))

    x = _randn(5, 8, seed=5)
    grads = []
    for run in range(3):
        model = make()
        if run < 2:
            torch._dynamo.reset()
            hits = graph_cache.hits
            out = torch.compile(model)(x)
        else:
            out = model(x)
        out.square().sum().backward()
        if run == 1:
            assert graph_cache.hits == hits + 2           # the forward and the backward
        grads.append([p.grad for p in model.parameters()])
    for compiled_grads in grads[:2]:
        for got, want in zip(compiled_grads, grads[2]):
            np.testing.assert_allclose(as_float64(got), as_float64(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("other", [lambda x: x * 2 + 1.5, lambda x: x * 2 - 1])
def test_another_graph_misses(other):
    x = _randn(6, seed=6)
    compiled(lambda x: x * 2 + 1, x)
    hits = graph_cache.hits
    c = compiled(other, x)
    assert graph_cache.hits == hits
    assert_same(c(x), other(x))


def test_the_cache_keeps_no_example_input_alive():
    import gc
    import weakref
    x = _randn(64, 32, seed=7)
    alive = weakref.ref(x)
    c = compiled(lambda x: F.layer_norm(x, (32,)).softmax(-1), x)
    assert len(graph_cache._entries) == 1
    del c, x
    gc.collect()
    assert alive() is None
