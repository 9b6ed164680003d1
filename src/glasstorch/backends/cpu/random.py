"""How the random samplers make their values: NumPy arrays drawn from a generator's NumPy
stream, in the compute dtype (float32 for float16/bfloat16, keeping the dtype's mantissa
digits of randomness), and their write through a tensor's strided view."""
from __future__ import annotations

import math

import numpy as np

from ...core import dtype as dt
from ...core.shape import has_internal_overlap
from ...core.tensor import Tensor
from ..arrays import asarray


_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}


def _compute(real: dt.dtype):
    """The NumPy dtype samples of a real floating dtype are computed in."""
    return np.float64 if real is dt.float64 else np.float32


def _write(t: Tensor, values) -> None:
    """ranges.write on any device: host samples go to a CUDA tensor's GPU first."""
    a = t._array()
    if a.__class__ is not np.ndarray:
        values = asarray(values, like=a)
    np.copyto(a, values, casting="unsafe")


def _check_writable(t: Tensor) -> None:
    if has_internal_overlap(t._shape, t._stride) and t.numel() > 1:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a"
            " single memory location. Please clone() the tensor before performing the "
            "operation.")


def uniform01(rng, shape, real: dt.dtype) -> np.ndarray:
    """Uniform in [0, 1) with `real`'s mantissa digits of randomness (never rounds to 1)."""
    if real is dt.float64:
        return rng.random(shape)
    if real is dt.float32:
        return rng.random(shape, dtype=np.float32)
    digits = _DIGITS[real]
    top = rng.bit_generator.random_raw(shape) >> np.uint64(64 - digits)
    return top.astype(np.float32) * np.float32(2.0 ** -digits)


def standard_normal(rng, shape, d: dt.dtype) -> np.ndarray:
    """N(0, 1); complex dtypes get N(0, 1/2) real and imaginary parts (variance 1)."""
    real = d.to_real()
    if d.category == dt.COMPLEX:
        z = rng.standard_normal(shape + (2,), dtype=_compute(real)) * _compute(real)(
            math.sqrt(0.5))
        return z.view(np.complex128 if real is dt.float64 else np.complex64)[..., 0]
    return rng.standard_normal(shape, dtype=_compute(real))


def _as(value, real: dt.dtype):
    """A Python float rounded to `real`, in the compute dtype (PyTorch casts bounds first)."""
    return np.asarray(value, real.np).astype(_compute(real))


def draw_uniform(rng, shape, d, from_, to):
    real = d.to_real()
    lo, hi = _as(from_, real), _as(to, real)
    if d.category == dt.COMPLEX:
        return (uniform01(rng, shape, real) * (hi - lo) + lo) + \
            1j * (uniform01(rng, shape, real) * (hi - lo) + lo)
    return uniform01(rng, shape, real) * (hi - lo) + lo


def draw_normal(rng, shape, d, mean, std):
    real = _compute(d.to_real())
    if d.category == dt.COMPLEX:
        z = standard_normal(rng, shape, d) * real(std)
        return z + (real(mean) + 1j * real(mean))
    return standard_normal(rng, shape, d) * real(std) + real(mean)


def draw_bernoulli(rng, shape, d, p):
    return rng.random(shape) < p


def draw_bernoulli_tensor(rng, shape, d, p):
    a = p._array()
    return asarray(rng.random(shape), like=a) < np.broadcast_to(a, shape)


def _adjust_from(from_: int, d: dt.dtype) -> int:
    """Raise `from` until it survives the cast to float dtype `d` (so no sample is below it)."""
    rounded = np.asarray(from_ + 1, d.np)
    if np.isfinite(rounded) and int(rounded.astype(np.float64)) < from_:
        from_ = int(np.nextafter(rounded, np.asarray(np.inf, d.np)).astype(np.float64))
    return from_


def _adjust_to(to: int, d: dt.dtype) -> int:
    """Lower `to` until to - 1 cast to float dtype `d` stays below it."""
    rounded = np.asarray(to - 1, d.np)
    if np.isfinite(rounded) and int(rounded.astype(np.float64)) >= to:
        to = int(np.nextafter(rounded, np.asarray(-np.inf, d.np)).astype(np.float64))
    return to


def draw_random(rng, shape, d, first, count):
    """`count` consecutive integers from `first` (count up to 2**64), as int64.

    Counts up to 2**32 reduce raw 64-bit words modulo count (bias below 2**-32, and much
    cheaper than an exact bounded draw); larger counts draw exactly."""
    if count == 1 << 64:
        offsets = rng.bit_generator.random_raw(shape)
    elif count <= 1 << 32:
        offsets = rng.bit_generator.random_raw(shape) % np.uint64(count)
    else:
        offsets = rng.integers(0, count, shape, dtype=np.uint64)
    return (offsets + np.uint64(first & ((1 << 64) - 1))).view(np.int64)


def draw_exponential(rng, shape, d, lambd):
    cd = _compute(d)
    return rng.standard_exponential(shape, dtype=cd) / cd(lambd)


def draw_geometric(rng, shape, d, p):
    return rng.geometric(p, shape)


def draw_log_normal(rng, shape, d, mean, std):
    cd = _compute(d)
    return np.exp(standard_normal(rng, shape, d) * cd(std) + cd(mean))


def draw_cauchy(rng, shape, d, median, sigma):
    cd = _compute(d)
    return np.tan(cd(math.pi) * (uniform01(rng, shape, d) - cd(0.5))) * cd(sigma) + cd(median)


def _check_distribution(p: np.ndarray, sequential: bool) -> None:
    """PyTorch's checks: the one-pass sampler (no replacement, or one sample) and the
    cumulative sampler (with replacement) word their errors differently."""
    if sequential:
        if not ((p >= 0) & (p < np.inf)).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    else:
        if not (p >= 0).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        if not np.isfinite(p).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
    if (p.sum(axis=-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def draw_multinomial(rng, p: np.ndarray, n: int, replacement: bool) -> np.ndarray:
    """Rows of p (2-D float64) -> (rows, n) int64 indices."""
    if not replacement or n == 1:
        # Without replacement: the n largest p / Exp(1) keys (the Gumbel top-k trick). Ties
        # (zero-probability categories) are taken in index order once the others run out.
        keys = p / rng.standard_exponential(p.shape)
        return np.argsort(-keys, axis=1, kind="stable")[:, :n]
    cdf = np.cumsum(p, axis=1)
    u = rng.random((p.shape[0], n)) * cdf[:, -1:]
    last = p.shape[1] - 1 - np.argmax(p[:, ::-1] > 0, axis=1)    # last category with p > 0
    idx = np.stack([np.searchsorted(c, row, side="right") for c, row in zip(cdf, u)])
    return np.minimum(idx, last[:, None])


def normal_values(rng, out: Tensor, mean, std) -> Tensor:
    """out = N(0, 1) * std + mean, broadcasting the operands (arrays or floats)."""
    if out.numel():
        z = asarray(standard_normal(rng, out._shape, out.dtype), like=out._array())
        _write(out, z * std + mean)
    return out


def _operand(x, out_dtype: dt.dtype):
    if not isinstance(x, Tensor):
        return x
    return x._array().astype(_compute(out_dtype.to_real()) if x.dtype.category < dt.COMPLEX
                             else x._array().dtype)


def bernoulli_into(out, self, rng) -> None:
    """out = 1 where a uniform draw is below self's probability, else 0."""
    a = self._array()
    _write(out, asarray(rng.random(self._shape), like=a) < a)


def multinomial_into(out, self, rng, replacement: bool) -> None:
    """out's category indices drawn from the rows of self (unnormalised weights)."""
    shape = out._shape
    p = self._array().astype(np.float64).reshape(-1, self._shape[-1])
    sequential = not replacement or shape[-1] == 1
    _check_distribution(p, sequential)
    out._array()[...] = draw_multinomial(rng, p, shape[-1], replacement).reshape(shape)
