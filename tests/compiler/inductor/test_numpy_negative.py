"""The inductor's NumPy code negates into fresh arrays, never into a strided output, so NumPy
2.x's negative loop (wrong elements for some strided outputs, see backends/cpu/pointwise.py)
does not reach it: a negation of strided views compiled to NumPy equals eager."""
import warnings

import pytest

import glasstorch as torch
from glasstorch.compiler import inductor

from inductor_helpers import assert_same, compiled


@pytest.mark.parametrize("dtype, step", [("float32", 4), ("float64", 8)])
def test_numpy_kernel_negates_strided_views(monkeypatch, dtype, step):
    monkeypatch.setenv("GLASSTORCH_INDUCTOR_CPP", "0")
    monkeypatch.setattr(inductor, "_warned_no_compiler", True)
    x = torch.arange(64).to(getattr(torch, dtype))

    def fn(x):
        return -x[::step] * 2, -(x[::step].reshape(2, -1).t() + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compiled(fn, x)
    assert c.artefacts.language == "numpy"
    assert_same(c(x), fn(x))
