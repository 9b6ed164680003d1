"""NumPy 2.x's negative loop writes the wrong elements when its *output* is strided with some
byte strides (float32 every 4th element, float64 every 8th); the eager kernel works around it
(backends/cpu/pointwise.py). The primitive never hands NumPy a strided output, so it is right
as it is (the inductor's NumPy code: tests/compiler/inductor/test_numpy_negative.py)."""
import numpy as np
import pytest

import glasstorch as torch


@pytest.mark.parametrize("dtype, step", [("float32", 4), ("float64", 8), ("int32", 4),
                                         ("int64", 8)])
def test_prims_neg_of_a_strided_view(dtype, step):
    x = torch.arange(64).to(getattr(torch, dtype))
    expected = -np.arange(64).astype(dtype)[::step]
    np.testing.assert_array_equal(torch.ops.prims.neg(x[::step]).numpy(), expected)
