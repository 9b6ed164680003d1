"""Views in the host code: an op that only reads a view of a buffer gets an alias made
without the dispatcher; an output that is a view of an input stays a view of it (its base,
its memory, its version counter)."""
import numpy as np
import pytest

import glasstorch as torch
from glasstorch.compiler.inductor import build

from inductor_helpers import assert_same, compiled

needs_cc = pytest.mark.skipif(build.compiler() is None, reason="no C compiler")


def _x(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(
        np.float32))


def fn(x, w):
    a = (x @ w.t()).relu()           # mm reads w transposed: a direct alias
    return a, x.t(), a.view(-1), (x * 2).sum(0)


@needs_cc
def test_read_only_views_are_direct_aliases_and_views_of_inputs_stay_views():
    x, w = _x(4, 3), _x(5, 3, seed=1)
    c = compiled(fn, x, w)
    host = c.artefacts.host_source
    assert "_alias(" in host and "_view(" in host
    out = c(x, w)
    assert_same(out, fn(x, w), rtol=1e-6, atol=1e-6)
    _, xt, _, _ = out
    assert xt._base is x and xt.data_ptr() == x.data_ptr()     # a view of the input
    before = xt._version
    x.add_(1)
    assert xt._version == before + 1                          # its version counter too


@needs_cc
def test_an_output_covering_a_whole_buffer_is_that_buffer():
    x = _x(6, 4)
    c = compiled(lambda x: ((x * 3).exp().t(),), x)
    assert "_view(" not in c.artefacts.host_source
    (out,) = c(x)
    assert_same(out, (x * 3).exp().t(), rtol=1e-6, atol=1e-6)


@needs_cc
def test_split_results_are_views_read_without_a_split_call():
    # attention's q, k and v out of one projection: slices of its buffer, and of an input
    x, y = _x(2, 4, 12, seed=2), _x(2, 4, 9, seed=3)

    def attention_inputs(x, y):
        q, k, v = (x + 1).split(4, dim=2)
        a, b = y.split_with_sizes([5, 4], dim=-1)
        return torch.bmm(q, k.transpose(1, 2)) + v.sum(), a * b.sum(), b
    c = compiled(attention_inputs, x, y)
    assert "split" not in c.artefacts.host_source
    out = c(x, y)
    assert_same(out, attention_inputs(x, y), rtol=1e-6, atol=1e-6)
    b = out[2]
    assert b._base is y and b.storage_offset() == 5           # still a view of the input
