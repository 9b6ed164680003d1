"""CPU kernels for the activations: the formulas on NumPy arrays (in opmath, with the numerically
stable forms PyTorch uses), the blocked kernels that apply them and their fused gradients
(gelu_backward, threshold_backward), glu and prelu. They also run on CuPy arrays for CUDA
tensors."""
from __future__ import annotations

import math

import numpy as np

from . import native, parallel, special
from .. import arrays
from ...core import dtype as dt
from ...core.promotion import opmath
from ...core.shape import wrap_dim
from .pointwise import FLOATING, REDUCED, assign, check_dtype, clamp_arrays_native, scalar
from .random import fma, uniform_double


def _finish(op, r) -> None:
    """Store a formula's result in the output block unless it was written there."""
    if r is not op:
        np.copyto(op, r, casting="unsafe")


def activation_kernel(name, fn, kname, allowed, into=False, block=parallel.BLOCK,
                      native_fn=None):
    """The kernel of an activation: `fn(x, *params)` on the input in opmath, walked in
    parts of `block` elements (split across threads when large; None for a one-pass fn,
    which gains nothing from blocks but their call overhead); `params` are the op's Scalars,
    rounded to the dtype for integer and 16-bit inputs. With `into`, fn also takes
    `out=`, the output block when it has the compute dtype, and may write its last pass
    there (saving a temporary and a copy); it only writes `out` in passes that no longer
    read x, so an in-place call stays right. `native_fn(x, out, *params)`, where given,
    runs the C kernel instead and says whether it applied (see native/)."""
    def kernel(out, self, *params):
        d = self.dtype
        check_dtype(kname, d, allowed)
        x = self._array()
        if native_fn is not None and native_fn(x, out._array(), *params):
            return
        if d.category == dt.INT or d in REDUCED:     # bounds rounded to the dtype first
            params = tuple(_rounded(p, d) for p in params)
        cd = opmath(d)
        def part(xp, op):
            xc = xp if xp.dtype == cd else xp.astype(cd)
            if into and op.dtype == cd:
                _finish(op, fn(xc, *params, out=op))
            else:
                _finish(op, fn(xc, *params))
        with np.errstate(all="ignore"):
            parallel.chunked(part, [x, out._array()], block)
    kernel.__qualname__ = f"cpu_{name}"
    return kernel


def backward_kernel(name, kname, allowed, part, block=parallel.BLOCK, native_fn=None):
    """A fused kernel out = part(grad, x, *params, out=...), in the op's compute dtype,
    walked in parts of `block` elements (split across threads when large). `out` is the output
    block when it has the compute dtype (else None): part may write its last pass there.
    `native_fn(grad, x, out, *params)`, where given, runs the C kernel instead and says
    whether it applied (see native/)."""
    def kernel(out, grad_output, self, *params):
        d = out.dtype
        check_dtype(kname, d, allowed)
        cd = opmath(d)
        o = out._array()
        g, x = (a if a.shape == o.shape else np.broadcast_to(a, o.shape)
                for a in (grad_output._array(), self._array()))
        if native_fn is not None and native_fn(g, x, o, *params):
            return

        def run(gp, xp, op):
            r = part(gp if gp.dtype == cd else gp.astype(cd),
                     xp if xp.dtype == cd else xp.astype(cd), *params,
                     out=op if op.dtype == cd else None)
            _finish(op, r)
        with np.errstate(all="ignore"):
            parallel.chunked(run, [g, x, o], block)
    kernel.__qualname__ = f"cpu_{name}"
    return kernel


def _leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope)


def glu_cpu(out, self, dim=-1):
    check_dtype("glu_cpu", self.dtype, FLOATING)
    d = wrap_dim(dim, self.dim())
    a, b = np.split(self._array().astype(opmath(self.dtype), copy=False), 2, axis=d)
    with np.errstate(all="ignore"):
        assign(out, a / (1 + np.exp(-b)))


def prelu_kernel_cpu(out, self, weight):
    check_dtype("prelu_cpu", self.dtype, FLOATING)
    cd = opmath(self.dtype)
    x, w = self._array().astype(cd, copy=False), weight._array().astype(cd, copy=False)
    assign(out, np.where(x > 0, x, w * x))


def _rounded(p, d):
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        return p
    return scalar(p, d) if d.category == dt.INT else float(d.np.type(p))


def _relu(x, out=None):
    """x where x >= 0 or NaN, else 0; -0.0 stays -0.0, as PyTorch's `x < 0 ? 0 : x`.
    Floats take np.clip(x, 0, inf), one pass about 3x faster than np.maximum (NumPy 2.4
    vectorises clip, not maximum) where it keeps -0.0, else the exact bitwise select. CuPy
    arrays take one maximum kernel, glasstorch's own when large (-0.0 stays -0.0)."""
    if x.__class__ is not np.ndarray and out is not None:
        parallel.ufunc(np.maximum, (x, x.dtype.type(0)), out)
        return out
    if x.dtype.kind != "f" or x.__class__ is not np.ndarray:
        return np.maximum(x, x.dtype.type(0), out=out)
    if _CLIP_KEEPS_NEGATIVE_ZERO:
        return np.clip(x, 0, math.inf, out=out)
    if x.ndim == 0:                        # NumPy makes scalars, not arrays, of 0-d results
        return _relu(x.reshape(1)).reshape(())
    return _zero_where(x, np.less(x, 0), out)


def _clip_keeps_negative_zero() -> bool:
    """Whether np.clip(x, 0, inf) gives relu's -0.0 for -0.0 in both opmath dtypes, over a
    length that reaches NumPy's vector loop and its scalar tail (a scalar
    `x > lo ? x : lo` would give +0.0)."""
    return all(np.signbit(np.clip(np.full(67, -0.0, d), 0, math.inf)).all()
               for d in (np.float32, np.float64))


_CLIP_KEEPS_NEGATIVE_ZERO = _clip_keeps_negative_zero()


def _elu(x, alpha=1, scale=1, input_scale=1):
    return np.where(x <= 0, np.expm1(x * input_scale) * (alpha * scale), x * scale)


def _celu(x, alpha=1.0):
    return _elu(x, alpha, 1.0, 1.0 / alpha)


_SQRT_HALF = math.sqrt(0.5)

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu(x, approximate="none", out=None):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) or 0.5 x (1 + erf(x / sqrt(2))), in
    place on one temporary (the kernel calls this on cache-sized parts), the last pass into
    `out` when given."""
    if x.ndim == 0:                        # NumPy makes scalars, not arrays, of 0-d results
        return _gelu(x.reshape(1), approximate).reshape(())
    if approximate == "tanh":
        r = np.multiply(x, x)
        r *= x
        r *= 0.044715
        r += x
        r *= _SQRT_2_OVER_PI
        np.tanh(r, out=r)
    elif x.dtype == np.float32:            # x Phi(x)
        return np.multiply(_normal_cdf_float32(x)[0], x, out=out)
    else:
        r = special.erf(x * _SQRT_HALF)
    r += 1
    r *= 0.5
    return np.multiply(r, x, out=out)


# Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7): PyTorch's vectorised float erf, so
# float32 gelu agrees with PyTorch's where it is far from erf's exact value (x < -4).
# Taking x (not z = x / sqrt 2), 1 / (1 + p |z|) = q / (q + |x|) with q = sqrt 2 / p; the
# coefficients (Horner order, a5 first) are halved, which is exact, to give the cdf directly.
_AS_Q = np.float32(1 / (0.3275911 * _SQRT_HALF))

_SIGN_BIT = np.int32(-2 ** 31)

_AS_HALF_COEFFS = tuple(np.float32(c / 2) for c in (1.061405429, -1.453152027, 1.421413741,
                                                    -0.284496736, 0.254829592))


def _normal_cdf_float32(x: np.ndarray) -> tuple:
    """(Phi(x) = (1 + erf(x / sqrt 2)) / 2, exp(-x^2 / 2)) for a float32 array x, each a
    fresh array, rounded as PyTorch's 0.5 (1 + erf) is. The exponential is returned because
    GELU's gradient needs it too: one np.exp, the costliest pass, instead of two."""
    t = np.abs(x)
    t += _AS_Q
    np.divide(_AS_Q, t, out=t)             # t = 1 / (1 + p |z|)
    e = np.multiply(x, x)
    e *= -0.5
    np.exp(e, out=e)                       # exp(-z^2)
    r = np.multiply(t, _AS_HALF_COEFFS[0])
    for c in _AS_HALF_COEFFS[1:-1]:
        r += c
        r *= t
    r += _AS_HALF_COEFFS[-1]
    r *= t
    r *= e
    np.subtract(0.5, r, out=r)             # |erf(z)| / 2, never -0.0
    sign = t.view(np.int32)                # erf(z) / 2: x's sign bit or-ed in, 4-5x faster
    np.bitwise_and(x.view(np.int32), _SIGN_BIT, out=sign)   # than NumPy's copysign
    np.bitwise_or(r.view(np.int32), sign, out=r.view(np.int32))
    r += 0.5
    return r, e


def relu_native(x, out) -> bool:
    """ReLU by the C clamp kernel (`x < 0 ? 0 : x`, the semantics of `_relu`), where x and
    out are dense float32/float64 arrays: one pass in C where the NumPy clip is split across
    the Python pool's threads (the CNN step's 64x16x28x28: 110 -> 68 us)."""
    return clamp_arrays_native(x, out, 0.0, math.inf)


def gelu_native(x, out, approximate="none") -> bool:
    """GELU by the C kernel, where x and out are dense float32/float64 arrays."""
    if not native.dense(x, out):
        return False
    fn = native.function("activation", "gelu_" + native.suffix(x), "nppiip")
    if fn is None:
        return False
    fn(x.size, native.pointer(x), native.pointer(out), approximate == "tanh",
       native.pool_threads(x.size), native.runner())
    return True


def gelu_grad_native(g, x, out, approximate="none") -> bool:
    """GELU's gradient by the C kernel, where g, x and out are dense float32/float64 arrays."""
    if not native.dense(g, x, out):
        return False
    fn = native.function("activation", "gelu_backward_" + native.suffix(x), "npppiip")
    if fn is None:
        return False
    fn(x.size, native.pointer(g), native.pointer(x), native.pointer(out),
       approximate == "tanh", native.pool_threads(x.size), native.runner())
    return True


def threshold_grad_native(g, x, out, threshold) -> bool:
    """ReLU's (threshold's) gradient by the C kernel, where g, x and out are dense
    float32/float64 arrays and the threshold a number: one pass where the NumPy form makes
    a mask first (the CNN step's 64x16x28x28: 438 -> 184 us)."""
    if threshold.__class__ not in (int, float) or not native.dense(g, x, out):
        return False
    fn = native.function("activation", "threshold_backward_" + native.suffix(x), "npppdi")
    if fn is None:
        return False
    fn(x.size, native.pointer(g), native.pointer(x), native.pointer(out), threshold,
       native.threads(x.size))
    return True


def _silu(x):
    return x / (1 + np.exp(-x))


def _softplus_stable(x):
    """log(1 + exp(x)) without overflow."""
    return np.logaddexp(x.dtype.type(0), x)


def _mish(x):
    return x * np.tanh(_softplus_stable(x))


def _softplus(x, beta=1, threshold=20):
    bx = x * beta
    return np.where(bx > threshold, x, np.log1p(np.exp(bx)) / beta)


def _hardtanh(x, min_val=-1, max_val=1):
    return np.minimum(np.maximum(x, min_val), max_val)


def _hardsigmoid(x):
    return np.minimum(np.maximum(x + 3, 0), 6) / 6


def _hardswish(x):
    return x * np.minimum(np.maximum(x + 3, 0), 6) / 6


def _softshrink(x, lambd=0.5):
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0))


def _hardshrink(x, lambd=0.5):
    return np.where((x >= -lambd) & (x <= lambd), x.dtype.type(0), x)


def _threshold(x, threshold, value):
    return np.where(x <= threshold, value, x)


def _log_sigmoid(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def gelu_grad(g, x, approximate, out=None):
    """g * gelu'(x), on temporaries of x's size, the last pass into `out` when given."""
    if x.ndim == 0:                        # NumPy makes scalars, not arrays, of 0-d results
        return gelu_grad(g.reshape(1), x.reshape(1), approximate).reshape(())
    if approximate == "tanh":              # 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
        x2 = np.multiply(x, x)
        t = np.multiply(x2, 0.044715)
        t += 1
        t *= x
        t *= _SQRT_2_OVER_PI
        np.tanh(t, out=t)
        x2 *= 3 * 0.044715
        x2 += 1
        x2 *= _SQRT_2_OVER_PI
        r = np.multiply(t, t)
        np.subtract(1, r, out=r)
        r *= x2
        r *= x
        r *= 0.5
        t += 1
        t *= 0.5
        r += t
    else:                                  # Phi(x) + x phi(x)
        if x.dtype == np.float32:          # one exp serves Phi and phi
            r, x2 = _normal_cdf_float32(x)
        else:
            r = special.erf(np.multiply(x, _SQRT_HALF))
            r += 1
            r *= 0.5
            x2 = np.multiply(x, x)
            x2 *= -0.5
            np.exp(x2, out=x2)
        x2 *= _INV_SQRT_2PI
        x2 *= x
        r += x2
    return np.multiply(r, g, out=out)


_SIGNED_BITS = {2: np.int16, 4: np.int32, 8: np.int64}


def _zero_where(v, drop, out=None):
    """v where `drop` is False, else +0.0, as a bitwise and: exact (a NaN or inf v that is
    dropped still gives 0) and without the per-element branch a select over a random mask
    costs (np.where, np.copyto(where=) run ~10x slower). `drop` (a fresh bool array) is
    overwritten: its bytes become 0 / -1, which the and widens to v's width by sign
    extension, saving a pass over a widened mask."""
    keep = drop.view(np.int8)
    keep -= 1                              # 0 where dropped, all ones where kept
    bits = _SIGNED_BITS[v.dtype.itemsize]
    r = arrays.module_of(v).empty(drop.shape, v.dtype) if out is None else out
    np.bitwise_and(v.view(bits), keep, out=r.view(bits))
    return r


def tanh_grad(g, y, out=None):
    """PyTorch's tanh_backward, g * (1 - y * y) from tanh's output y, with its roundings in
    its order: three passes into one array (`out` when given) instead of three ops."""
    r = np.multiply(y, y, out=np.empty_like(y) if out is None else out)
    np.subtract(r.dtype.type(1), r, out=r)
    return np.multiply(g, r, out=r)


def sigmoid_grad(g, y, out=None):
    """PyTorch's sigmoid_backward, g * (1 - y) * y from sigmoid's output y, in its order."""
    r = np.subtract(y.dtype.type(1), y, out=np.empty_like(y) if out is None else out)
    np.multiply(g, r, out=r)
    return np.multiply(r, y, out=r)


def _from_output_native(kernel: str):
    """`native_fn` for tanh_grad/sigmoid_grad: the C kernel `kernel` (activation.c) over
    dense float32/float64 g, y and out, one pass where the NumPy form makes three
    (minGPT's 64x11x192 float32 tanh_backward: 33 -> 22 us)."""
    def native_fn(g, y, out) -> bool:
        if not native.dense(g, y, out):
            return False
        fn = native.function("activation", f"{kernel}_{native.suffix(y)}", "npppi")
        if fn is None:
            return False
        fn(y.size, native.pointer(g), native.pointer(y), native.pointer(out),
           native.threads(y.size))
        return True
    native_fn.__name__ = f"{kernel}_native"
    return native_fn


tanh_grad_native = _from_output_native("tanh_backward")
sigmoid_grad_native = _from_output_native("sigmoid_backward")


def threshold_grad(g, x, threshold, out=None):
    """g where x > threshold, else 0 (a NaN x passes g on, as PyTorch's `x <= threshold ?
    0 : g`), into `out` when given."""
    if x.ndim == 0:                        # NumPy makes scalars, not arrays, of 0-d results
        return threshold_grad(g.reshape(1), x.reshape(1), threshold).reshape(())
    drop = np.less_equal(x, threshold)
    if g.dtype.kind != "f":
        return np.multiply(g, ~drop, out=out)
    return _zero_where(g, drop, out)


def rrelu_with_noise_into(out, self, noise, lower, upper, training, stream):
    """rrelu: leaky_relu with the mean slope when not training; else, as PyTorch's CPU
    kernel, a slope drawn uniformly in [lower, upper] (a double from the generator
    `stream()` gives) for each non-positive element in order (written to `noise`)."""
    d = self.dtype
    check_dtype("leaky_relu_cpu" if not training else "rrelu_with_noise_out_cpu", d, FLOATING)
    cd = opmath(d)
    x = self._array().astype(cd, copy=False)
    if not training:
        assign(out, _leaky_relu(x, (lower + upper) / 2))
        return
    host = x.get() if arrays.is_device_array(x) else x
    negative = host <= 0
    slopes = np.ones(host.shape, cd)
    u = uniform_double(stream(), int(negative.sum()))
    lo, hi = float(cd.type(lower)), float(cd.type(upper))   # the bounds in opmath first
    slopes[negative] = fma(u, hi - lo, lo, np.float64).astype(cd)
    slopes = arrays.asarray(slopes, like=x)
    assign(noise, slopes)
    assign(out, x * slopes)


def native_dropout_into(out, mask, input, p, train, stream):
    """native_dropout's outputs: when training, as PyTorch's CPU kernel, mask ~
    Bernoulli(1 - p) (one double uniform per element from the generator `stream()` gives,
    in order) and out = input * mask * (1 / (1 - p)); otherwise a copy of input, all True."""
    if train is None or train:
        keep = 1 - p
        x = input._array().astype(opmath(input.dtype), copy=False)
        drawn = uniform_double(stream(), input.numel()).reshape(tuple(input._shape)) < keep
        m = arrays.asarray(drawn, like=x)     # drawn on the host
        assign(mask, m)
        scale = x.dtype.type(0.0 if keep == 0 else 1 / keep)
        assign(out, x * m * scale)
    else:
        assign(mask, True)
        assign(out, input._array())
