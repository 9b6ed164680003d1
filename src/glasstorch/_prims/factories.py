"""Factory primitives (iota, full, empty_strided) and random numbers from an explicit seed
and offset.

The random primitives are counter-based: element i of a call with (seed, offset) is a pure
function of (seed, offset + i), computed by Philox4x32-10 (Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", 2011; the generator cuRAND and PyTorch's CUDA kernels use).
So a fused kernel can compute any element on its own, in any order, and a compiled graph
reproduces the same numbers from the same (seed, offset): the generator's state is an
argument, not a hidden side effect.
"""
from __future__ import annotations

import math

import numpy as np

from ..ops.registry import spec
from .declaration import prim


def _check_shape(shape, name):
    if any(s < 0 for s in shape):
        raise RuntimeError(f"prims::{name}: negative dimension in shape {list(shape)}")


def _iota_meta(length, start, step, dtype, device, requires_grad):
    if length < 0:
        raise RuntimeError(f"prims::iota: length must be non-negative, got {length}")
    if step == 0:
        raise RuntimeError("prims::iota: step must be nonzero")
    if dtype.category not in (1, 2):
        raise RuntimeError(f"prims::iota: dtype must be integer or floating, got {dtype}")
    return spec((length,), dtype)


def _iota(length, start, step, dtype, device, requires_grad):
    return start + step * np.arange(length, dtype=np.int64)


def _full_meta(shape, fill_value, dtype, device, requires_grad):
    _check_shape(shape, "full")
    return spec(shape, dtype)


def _full(shape, fill_value, dtype, device, requires_grad):
    return fill_value


def _empty_strided_meta(shape, strides, dtype, device, requires_grad):
    _check_shape(shape, "empty_strided")
    if len(shape) != len(strides):
        raise RuntimeError(f"prims::empty_strided: shape {list(shape)} and strides "
                           f"{list(strides)} have different lengths")
    return spec(shape, dtype, tuple(strides))


def _empty_strided(shape, strides, dtype, device, requires_grad):
    return np.zeros((), dtype.np)       # defined contents, though none are promised


prim("iota(SymInt length, *, SymInt start, SymInt step, ScalarType dtype, Device device, "
     "bool requires_grad) -> Tensor", kind="factory", meta=_iota_meta, impl=_iota,
     doc="start, start + step, ..., length values")
prim("full(SymInt[] shape, Scalar fill_value, *, ScalarType dtype, Device device, "
     "bool requires_grad) -> Tensor", kind="factory", meta=_full_meta, impl=_full)
prim("empty_strided(SymInt[] shape, SymInt[] strides, *, ScalarType dtype, Device device, "
     "bool requires_grad) -> Tensor", kind="factory", meta=_empty_strided_meta,
     impl=_empty_strided)


# ---- Philox4x32-10 -----------------------------------------------------------------------------

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85        # the key's bump per round
_LOW = np.uint64(0xFFFFFFFF)


def philox4x32(counter: np.ndarray, key: tuple) -> np.ndarray:
    """Philox4x32 with 10 rounds: `counter` is (n, 4) uint32, `key` two uint32 words;
    returns (n, 4) uint32 random words."""
    x0, x1, x2, x3 = (counter[:, i].astype(np.uint64) for i in range(4))
    k0, k1 = key
    for _ in range(10):
        p0, p1 = _M0 * x0, _M1 * x2
        x0, x1, x2, x3 = ((p1 >> np.uint64(32)) ^ x1 ^ np.uint64(k0), p1 & _LOW,
                          (p0 >> np.uint64(32)) ^ x3 ^ np.uint64(k1), p0 & _LOW)
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    return np.stack([x0, x1, x2, x3], axis=1).astype(np.uint32)


def _words(numel: int, seed: int, offset: int) -> np.ndarray:
    """One 32-bit word per element: element i uses counter (offset + i) and key seed."""
    index = np.arange(numel, dtype=np.uint64) + np.uint64(offset)
    counter = np.zeros((numel, 4), np.uint32)
    counter[:, 0] = (index & _LOW).astype(np.uint32)
    counter[:, 1] = (index >> np.uint64(32)).astype(np.uint32)
    return philox4x32(counter, (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF))


def _uniform(shape, seed, offset):
    """Uniform in [0, 1): the top 24 bits of word 0 (exact in float32 and float64)."""
    words = _words(math.prod(shape), seed, offset)[:, 0]
    return ((words >> np.uint32(8)).astype(np.float64) * 2.0 ** -24).reshape(shape)


def _normal(shape, seed, offset):
    """Standard normal by Box-Muller on words 0 and 1 (u1 in (0, 1], so log(u1) is finite)."""
    words = _words(math.prod(shape), seed, offset)
    u1 = ((words[:, 0] >> np.uint32(8)).astype(np.float64) + 1) * 2.0 ** -24
    u2 = (words[:, 1] >> np.uint32(8)).astype(np.float64) * 2.0 ** -24
    return (np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)).reshape(shape)


def _random_meta(shape, seed, offset, dtype, device):
    _check_shape(shape, "philox_rand")
    if dtype.category != 2:
        raise RuntimeError(f"random primitives make floating tensors, not {dtype}")
    if seed < 0 or offset < 0:
        raise RuntimeError("random primitives take a non-negative seed and offset")
    return spec(shape, dtype)


def _rand(shape, seed, offset, dtype, device):
    return _uniform(tuple(shape), seed, offset)


def _randn(shape, seed, offset, dtype, device):
    return _normal(tuple(shape), seed, offset)


prim("philox_rand(SymInt[] shape, *, int seed, int offset, ScalarType dtype, Device device) "
     "-> Tensor", kind="random", meta=_random_meta, impl=_rand,
     doc="uniform in [0, 1): element i from Philox4x32-10 at counter offset + i")
prim("philox_randn(SymInt[] shape, *, int seed, int offset, ScalarType dtype, Device device) "
     "-> Tensor", kind="random", meta=_random_meta, impl=_randn,
     doc="standard normal: element i from Philox4x32-10 at counter offset + i")
