"""How the random samplers make their values: PyTorch's CPU transforms over a Generator's
MT19937 words, so that a seeded program draws PyTorch's numbers.

Each transform takes the engine's words in bulk (`gen._random(n)`: 32-bit words,
`gen._random64(n)`: two words each, high first) and computes what PyTorch's serial CPU
kernels compute one element at a time:

- uniform: float32 (and float16/bfloat16, computed in float32) keep the low 24 bits of one
  word, float64 the low 53 bits of a 64-bit value; x * (to - from) + from, and a value that
  rounds to `to` becomes `from`.
- normal: a contiguous tensor of 16 or more elements is filled with uniforms first, then
  each block of 16 becomes 8 Box-Muller pairs (the last, partial block is redrawn over the
  tail); otherwise each value comes from a double Box-Muller pair whose sine half the
  generator keeps for the next value.
- integers: `(word % range) + from`, with 64-bit values once the range reaches 2**28.
- bernoulli, exponential, geometric, cauchy: one double uniform per element.

Values are produced in the order PyTorch's TensorIterator visits the elements (by memory
order: the dimension with the smallest stride innermost), so an in-place sample into a
transposed view matches too.

uniform and normal of float32 and float64 run as one C pass each (native/random.c), written
straight into a contiguous CPU tensor; elsewhere (float16/bfloat16, no compiler,
GLASSTORCH_NATIVE=0) NumPy formulas do the same steps. The uniforms are the same bits on
both paths. The normals are PyTorch's bits on the C path: its float32 blocks evaluate log,
sin and cos with Cephes' polynomials (PyTorch's AVX2 kernel, which AVX512 CPUs run too),
which random.c follows step for step, fused multiply-adds included; its other normals call
libm's scalar log/log1p, sin and cos, as random.c does. The NumPy formulas round float32
log/sin/cos from NumPy's float64 ones and use NumPy's vector float64 functions, so they
differ from PyTorch (and from C) in the last bit or two: about 17% of float32 block values,
0.2% of float64 block values, a few % of the other float64 normals.
"""
from __future__ import annotations

import math

import numpy as np

from ...core import dtype as dt
from ...core.shape import has_internal_overlap
from ...core.tensor import Tensor
from ..arrays import asarray, is_device_array
from . import native


_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}
_TWO_PI = 2.0 * math.pi
_LOW24 = np.uint64((1 << 24) - 1)
_LOW53 = np.uint64((1 << 53) - 1)
_SUFFIX = {dt.float32: "f32", dt.float64: "f64"}     # the dtypes of random.c's kernels
_NO_WORDS = np.empty(0, np.uint64)


def _compute(real: dt.dtype):
    """The NumPy dtype PyTorch computes samples of a real floating dtype in (its opmath)."""
    return np.float64 if real is dt.float64 else np.float32


def _write(t: Tensor, values) -> None:
    """Write host values through t's strided view (a CUDA tensor's go to its GPU first)."""
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


# ---- the order PyTorch visits elements in ----------------------------------------------

def _visit_order(strides) -> list:
    """Dims from outermost to innermost as TensorIterator walks them (largest stride first;
    among equal strides the later dim is inner)."""
    return sorted(range(len(strides)), key=lambda d: -strides[d])


def arrange(shape, strides, flat: np.ndarray) -> np.ndarray:
    """An array of `shape` whose k-th visited element (for `strides`) is flat[k]."""
    order = _visit_order(strides)
    visited = flat.reshape([shape[d] for d in order])
    return visited.transpose(np.argsort(order))


def _layout(t: Tensor):
    """(shape, strides) of what a sampler writes: a complex tensor's real view (…, 2)."""
    if t.dtype.category == dt.COMPLEX:
        return t._shape + (2,), tuple(2 * s for s in t._stride) + (1,)
    return t._shape, t._stride


def _place(t: Tensor, flat: np.ndarray) -> np.ndarray:
    """Host values for t (its shape) from values in visiting order (a complex tensor's real
    and imaginary parts interleaved as its real view holds them)."""
    shape, strides = _layout(t)
    values = arrange(shape, strides, flat)
    if t.dtype.category == dt.COMPLEX:
        values = values[..., 0] + 1j * values[..., 1]
    return values


def _count(t: Tensor) -> int:
    return t.numel() * (2 if t.dtype.category == dt.COMPLEX else 1)


def _kernel(name: str, real: dt.dtype, signature: str):
    """random.c's kernel `name` for `real`, or None: float16/bfloat16, or no C kernels."""
    if real not in _SUFFIX:
        return None
    return native.function("random", f"{name}_{_SUFFIX[real]}", signature)


def _host_flat(t: Tensor):
    """t's own memory as one flat array of its real dtype (a complex tensor's parts
    interleaved), for a C kernel to write in visiting order: where t is a C-contiguous,
    writable CPU tensor; else None."""
    a = t._array()
    if a.__class__ is not np.ndarray:
        return None
    flags = a.flags
    if not (flags.c_contiguous and flags.writeable):
        return None
    flat = a.reshape(-1)
    return flat.view(t.dtype.to_real().np) if t.dtype.category == dt.COMPLEX else flat


# ---- fused multiply-add: PyTorch's build contracts `x * scale + shift` into one rounding ----

_SPLIT = 134217729.0          # 2**27 + 1: Dekker's splitter for float64


def _two_product_error(a, b, p):
    """The exact error a * b - p of the float64 product p = a * b (Dekker)."""
    t = a * _SPLIT
    ah = t - (t - a)
    al = a - ah
    t = b * _SPLIT
    bh = t - (t - b)
    bl = b - bh
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma(a, b, c, cd):
    """a * b + c rounded once, in compute dtype cd (float32: the float64 product is exact;
    float64: a double-double product and sum)."""
    if cd is np.float32:
        return (np.asarray(a, np.float64) * np.float64(b) + np.float64(c)).astype(np.float32)
    a, b, c = np.asarray(a, np.float64), np.float64(b), np.float64(c)
    p = a * b
    e = _two_product_error(a, b, p)
    total = p + c
    back = total - p
    return total + (((p - (total - back)) + (c - back)) + e)


# ---- uniform ---------------------------------------------------------------------------

def uniform_float(gen, n: int) -> np.ndarray:
    """n float32 uniforms in [0, 1): the low 24 bits of n words."""
    return (gen._random(n) & _LOW24).astype(np.float32) * np.float32(2.0 ** -24)


def uniform_double(gen, n: int) -> np.ndarray:
    """n float64 uniforms in [0, 1): the low 53 bits of n 64-bit values."""
    return (gen._random64(n) & _LOW53).astype(np.float64) * 2.0 ** -53


def uniform01(gen, shape, real: dt.dtype) -> np.ndarray:
    """Uniforms in [0, 1) in `real`'s compute dtype, in C order."""
    n = math.prod(shape)
    draw = uniform_double if real is dt.float64 else uniform_float
    return draw(gen, n).reshape(shape)


def fill_uniform(gen, t: Tensor, from_: float, to: float) -> None:
    real = t.dtype.to_real()
    fn = _kernel("uniform", real, "nppddi")
    if fn is not None:          # one C pass, the NumPy formula's roundings, into t if it can
        out = _host_flat(t)
        n = _count(t)
        values = np.empty(n, real.np) if out is None else out
        words = gen._random(2 * n if real is dt.float64 else n)
        fn(n, native.pointer(words), native.pointer(values), from_, to, native.threads(n))
        if out is None:
            _write(t, _place(t, values))
        return
    cd = _compute(real)
    lo, hi = cd(from_), cd(to)
    x = uniform01(gen, (_count(t),), real)
    values = fma(x, hi - lo, lo, cd).astype(real.np)
    values[values == real.np.type(to)] = real.np.type(from_)
    _write(t, _place(t, values))


# ---- normal ----------------------------------------------------------------------------

def _box_muller_16(u: np.ndarray, mean, std, cd) -> np.ndarray:
    """PyTorch's normal_fill_16 on rows of 16 uniforms: (1 - u[:8], u[8:]) -> 8 pairs."""
    u1, u2 = cd(1) - u[:, :8], u[:, 8:]
    if cd is np.float64:
        radius = np.sqrt(-2.0 * np.log(u1))
        theta = _TWO_PI * u2
        return np.concatenate([fma(radius * np.cos(theta), std, mean, cd),
                               fma(radius * np.sin(theta), std, mean, cd)], axis=1)
    # float32 throughout; log/cos/sin rounded from float64 (PyTorch's are Cephes' polynomials)
    log = np.log(u1.astype(np.float64)).astype(np.float32)
    radius = np.sqrt(np.float32(-2.0) * log)
    theta = (np.float32(_TWO_PI) * u2).astype(np.float64)
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    return np.concatenate([fma(radius * cos, std, mean, cd), fma(radius * sin, std, mean, cd)],
                          axis=1)


def _normal_blocks(gen, n: int, mean: float, std: float, real: dt.dtype) -> np.ndarray:
    """PyTorch's normal_fill for n >= 16 contiguous elements, in the compute dtype."""
    cd = _compute(real)
    draw = uniform_double if real is dt.float64 else uniform_float
    full = n // 16
    if real in (dt.float32, dt.float64):
        out = draw(gen, n)         # uniforms for every element, then a redrawn tail block
    else:
        out = np.empty(n, cd)      # float16/bfloat16 draw block by block
        out[:16 * full] = draw(gen, 16 * full)
    out[:16 * full] = _box_muller_16(out[:16 * full].reshape(full, 16), cd(mean), cd(std),
                                     cd).reshape(-1)
    if n % 16:
        tail = draw(gen, 16).reshape(1, 16)
        out[n - 16:] = _box_muller_16(tail, cd(mean), cd(std), cd).reshape(-1)
    return out


# How much more a normal_fill element costs than a simple elementwise one (Cephes' float
# polynomials; libm's scalar log, sin and cos), for the element count that splits the C
# kernel across threads.
_FILL_COST = {dt.float32: 4, dt.float64: 64}


def _normal_blocks_native(gen, out: np.ndarray, mean: float, std: float, real) -> bool:
    """_normal_blocks by C (native/random.c), into `out` (16 or more contiguous values of
    `real`); False where the kernel does not apply."""
    fn = _kernel("normal_fill", real, "nppddi")
    if fn is None:
        return False
    n = out.size
    words = gen._random((2 if real is dt.float64 else 1) * (n + 16 if n % 16 else n))
    fn(n, native.pointer(words), native.pointer(out), mean, std,
       native.threads(n * _FILL_COST[real]))
    return True


def normal_doubles(gen, n: int, mean: float = 0.0, std: float = 1.0,
                   log_normal: bool = False) -> np.ndarray:
    """n values of PyTorch's normal_distribution<double>(mean, std), each z * std + mean
    rounded once (with `log_normal`, its lognormal_distribution: the exp of that): z is the
    cached sine half first, then (cos, sin) of fresh Box-Muller draws; an unused sine is
    cached."""
    cached = gen._next_double_normal
    start = 0 if cached is None or not n else 1
    pairs = (n - start + 1) // 2
    fn = native.function("random", "normal_doubles", "npidddpi")
    if fn is not None:          # one C call; out[n] gets the last pair's sine
        words = gen._random(4 * pairs) if pairs else _NO_WORDS
        out = np.empty(n + 1, np.float64)
        fn(n, native.pointer(words), start, cached or 0.0, mean, std, native.pointer(out),
           log_normal)
        sine, out = out[n], out[:n]
    else:
        out = np.empty(n, np.float64)
        if start:
            out[0] = cached
        if pairs:
            u = uniform_double(gen, 2 * pairs).reshape(pairs, 2)
            radius = np.sqrt(-2.0 * np.log1p(-u[:, 1]))
            theta = _TWO_PI * u[:, 0]
            both = np.stack([radius * np.cos(theta), radius * np.sin(theta)],
                            axis=1).reshape(-1)
            out[start:] = both[:n - start]
            sine = both[-1]
        out = fma(out, std, mean, np.float64)
        if log_normal:
            out = np.exp(out)
    if start:
        gen._next_double_normal = None
    if (n - start) % 2:
        gen._next_double_normal = float(sine)
    return out


def normal_flat(gen, t: Tensor, mean: float, std: float, out=None) -> np.ndarray:
    """t's normal samples in visiting order (a complex tensor's parts: std / sqrt(2)), in
    `out` where given (`_host_flat(t)`: t's own memory)."""
    real = t.dtype.to_real()
    if t.dtype.category == dt.COMPLEX:
        std = std / math.sqrt(2.0)
    n = _count(t)
    if n >= 16 and t.is_contiguous():
        values = np.empty(n, real.np) if out is None else out
        if _normal_blocks_native(gen, values, mean, std, real):
            return values
        values = _normal_blocks(gen, n, mean, std, real).astype(real.np)
    else:
        values = normal_doubles(gen, n, mean, std).astype(real.np)
    if out is not None:
        out[...] = values
    return values


def fill_normal(gen, t: Tensor, mean: float, std: float) -> None:
    out = _host_flat(t)
    values = normal_flat(gen, t, mean, std, out)
    if out is None:
        _write(t, _place(t, values))


def fill_log_normal(gen, t: Tensor, mean: float, std: float) -> None:
    values = normal_doubles(gen, t.numel(), mean, std, log_normal=True)
    _write(t, _place(t, values.astype(t.dtype.np)))


def normal_values(gen, out: Tensor, mean, std) -> Tensor:
    """normal with tensor operands: out ~ N(0, s) (s = std when it is a number, else 1),
    then times std (a tensor) and plus mean, in out's dtype, as PyTorch composes it."""
    if not out.numel():
        return out
    mean, std = (x.get() if is_device_array(x) else x for x in (mean, std))   # host math
    scalar_std = not isinstance(std, np.ndarray)
    values = normal_flat(gen, out, 0.0, float(std) if scalar_std else 1.0)
    z = _place(out, values)
    if not scalar_std:
        z = (z * std).astype(z.dtype)
    _write(out, (z + mean).astype(z.dtype))
    return out


# ---- integers --------------------------------------------------------------------------

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


def fill_random(gen, t: Tensor, first: int, count: int) -> None:
    """Integers first + (word % count): 64-bit values from a count of 2**28 up; the full
    int64 range (count 2**64) is one 64-bit value as is."""
    n = t.numel()
    if count == 1 << 64:
        values = gen._random64(n).view(np.int64)
    else:
        words = gen._random64(n) if count >= 1 << 28 else gen._random(n)
        values = ((words % np.uint64(count)) + np.uint64(first & ((1 << 64) - 1))).view(np.int64)
    _write(t, _place(t, values.astype(t.dtype.np)))


def fill_random_default(gen, t: Tensor) -> None:
    """random_() without bounds: [0, max] for integers, [0, 2**digits] for floats."""
    d, n = t.dtype, t.numel()
    words = gen._random64(n) if d in (dt.float64, dt.int64) else gen._random(n)
    if d is dt.bool:
        values = (words & np.uint64(1)).astype(bool)
    elif d.category == dt.FLOAT:
        values = words % np.uint64((1 << _DIGITS[d]) + 1)
    else:
        values = words % np.uint64(int(np.iinfo(d.np).max) + 1)
    _write(t, _place(t, values.astype(d.np)))


def permutation(gen, n: int) -> np.ndarray:
    """PyTorch's randperm: swap i with i + (word % (n - i)) for i = 0 .. n - 2."""
    out = np.arange(n, dtype=np.int64)
    if n > 1:
        offsets = (gen._random(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
        for i, z in enumerate(offsets):
            j = i + z
            out[i], out[j] = out[j], out[i]
    return out


# ---- one double uniform per element ----------------------------------------------------

def fill_bernoulli(gen, t: Tensor, p: float) -> None:
    _write(t, _place(t, uniform_double(gen, t.numel()) < p))


def fill_bernoulli_tensor(gen, t: Tensor, p: Tensor) -> None:
    """1 where a uniform is below p (broadcast to t); double p draws doubles, others
    draw float32 uniforms compared in float32."""
    probs = p._array()
    probs = np.broadcast_to(probs.get() if is_device_array(probs) else probs, t._shape)
    order = _visit_order(t._stride)
    visited = probs.transpose(order).reshape(-1)
    if p.dtype is dt.float64:
        hits = uniform_double(gen, visited.size) < visited
    else:
        hits = uniform_float(gen, visited.size) < visited.astype(np.float32)
    _write(t, _place(t, hits))


def fill_exponential(gen, t: Tensor, lambd: float) -> None:
    values = (-1.0 / lambd) * np.log1p(-uniform_double(gen, t.numel()))
    _write(t, _place(t, values.astype(t.dtype.np)))


def fill_geometric(gen, t: Tensor, p: float) -> None:
    u = uniform_double(gen, t.numel())
    with np.errstate(divide="ignore"):
        values = np.ceil(np.log(u) / math.log1p(-p))
    _write(t, _place(t, values.astype(t.dtype.np)))


def fill_cauchy(gen, t: Tensor, median: float, sigma: float) -> None:
    u = uniform_double(gen, t.numel())
    values = fma(np.tan(math.pi * (u - 0.5)), sigma, median, np.float64)
    _write(t, _place(t, values.astype(t.dtype.np)))


# ---- multinomial -----------------------------------------------------------------------

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


def multinomial_into(out, self, gen, replacement: bool) -> None:
    """out's category indices drawn from the rows of self (unnormalised weights).

    Without replacement (or one sample): p / Exp(1) keys (exponential_ on self's dtype),
    the largest first; with replacement: a binary search of each double uniform in the
    row's normalised cumulative sum (in self's dtype, float32 for float16/bfloat16)."""
    shape = out._shape
    k = self._shape[-1]
    p = np.asarray(self._array()).reshape(-1, k)
    sequential = not replacement or shape[-1] == 1
    _check_distribution(p.astype(np.float64), sequential)
    if sequential:
        cd = self.dtype.np
        q = ((-1.0) * np.log1p(-uniform_double(gen, p.size))).astype(cd).reshape(p.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = (p / q).astype(cd)
        idx = np.argsort(-keys.astype(np.float64), axis=1, kind="stable")[:, :shape[-1]]
    else:
        cd = np.float64 if self.dtype is dt.float64 else np.float32
        cdf = np.cumsum(p.astype(cd), axis=1, dtype=cd)
        cdf = (cdf / cdf[:, -1:]).astype(cd)
        cdf[:, -1] = 1
        u = uniform_double(gen, p.shape[0] * shape[-1]).reshape(p.shape[0], shape[-1])
        idx = np.stack([np.searchsorted(c.astype(np.float64), row, side="left")
                        for c, row in zip(cdf, u)])
    out._array()[...] = idx.reshape(shape)


def bernoulli_into(out, self, gen) -> None:
    """out = 1 where a uniform draw is below self's probability, else 0 (bernoulli(p))."""
    fill_bernoulli_tensor(gen, out, self)


def _operand(x, out_dtype: dt.dtype):
    if not isinstance(x, Tensor):
        return x
    return x._array().astype(_compute(out_dtype.to_real()) if x.dtype.category < dt.COMPLEX
                             else x._array().dtype)
