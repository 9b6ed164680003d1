"""torch.binomial: one draw from Binomial(count, prob) per element (count and prob
broadcast). As for poisson, the draws are NumPy's, from a NumPy generator seeded by one
64-bit number of the glasstorch stream: seeded runs repeat, but the numbers are not
PyTorch's. PyTorch's rules at the edges are kept: count <= 0 or prob <= 0 gives 0, prob >= 1
gives count, and a nan gives nan. Outputs require grad when count does, and backward raises,
as in PyTorch."""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ...core.device import META
from ...core.shape import broadcast_shapes2
from ...core.tensor import Tensor
from ..registry import kernel_op
from ...backends.cpu.decompositions import new_tensor
from .samplers import _stream

binomial = kernel_op("binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor",
                     method=False, doc="Binomial(count, prob) samples, one per element.")


def _checked_shape(count, prob):
    if count.dtype.category != dt.FLOAT:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{count.dtype.cname}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {prob.dtype.cname} but expected {count.dtype.cname}")
    return broadcast_shapes2(tuple(count.shape), tuple(prob.shape))


@binomial.impl("CPU")
def _binomial_cpu(count, prob, generator=None):
    shape = _checked_shape(count, prob)
    n = np.broadcast_to(count._array().astype(np.float64), shape)
    p = np.broadcast_to(prob._array().astype(np.float64), shape)
    rng = np.random.Generator(np.random.PCG64(int(_stream(generator, count)._random64(1)[0])))
    valid = (n > 0) & (p > 0) & (p < 1)
    draws = np.zeros(shape)
    if valid.any():
        draws[valid] = rng.binomial(np.floor(n[valid]).astype(np.int64), p[valid])
    out = np.where(p >= 1, np.maximum(n, 0), draws)
    out = np.where(np.isnan(n) | np.isnan(p), np.nan, out)
    return new_tensor(out, count.dtype)


@binomial.impl("Meta")
def _binomial_meta(count, prob, generator=None):
    return Tensor._empty(_checked_shape(count, prob), count.dtype, META)
