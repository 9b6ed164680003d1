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
