"""Activation functions (relu, elu, gelu, softplus, hardtanh, glu, prelu, rrelu...) and dropout.

Each activation is one `structured` declaration whose output has the input's dtype; its
kernel computes in `opmath` (float32 for float16/bfloat16) and rounds once. Formulas are the
numerically stable ones PyTorch uses (softplus switches to the identity above `threshold`,
log_sigmoid never exponentiates a positive number). Ops PyTorch keeps in `torch._C._nn`
(leaky_relu, elu, gelu, ...) are not exported as `glasstorch.<name>`; nn.functional calls
their generated wrappers, kept here as module attributes.

Dropout: `native_dropout` is the op returning (output, mask); `dropout`, `feature_dropout`,
`alpha_dropout` and `feature_alpha_dropout` are composites multiplying by a noise tensor, as
PyTorch's CPU path is (their gradients go through MulBackward0).
"""
from __future__ import annotations

import math

import numpy as np

from ...backends import arrays
from ...backends.cpu import parallel, special
from ...backends.cpu.pointwise import (COMPLEX, FLOATING, INTS, REDUCED, assign, check_dtype,
                                      scalar)
from ...core import dtype as dt
from ...core.shape import (Size, broadcast_shapes2, is_non_overlapping_and_dense, iterator_strides,
                          wrap_dim)
from ...core.tensor import Tensor
from ..creation.factories import empty_like, empty_like_op, zeros
from ..pointwise import elementwise
from ..pointwise.meta import pointwise_spec
from ...core.promotion import common_dtype, opmath
from ..random.samplers import _stream, uniform01
from ..registry import TensorSpec, composite, export, kernel_op, spec, structured
from ..autocast import FP32, LOWER_PRECISION, autocast_policy
from ..wrappers import generate_wrapper

_POINTWISE = ("pointwise",)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _same_meta(self, *args):
    return pointwise_spec((self,), self.dtype)


def _inplace_wrapper(decl):
    """The `name_(input, ...)` function of a declaration that has no Tensor method (the
    node names PyTorch gives some of them, ...Backward1, are declared with the derivative)."""
    return generate_wrapper(decl.name + "_", decl.inplace.schema, decl.inplace)


def _pointwise(schema, fn, kname, allowed=FLOATING, meta=_same_meta, **options):
    """Declare an activation: `fn(x, *params)` maps a NumPy array (in opmath) to the result;
    `params` are the schema's Scalar arguments, converted to the dtype for integer inputs."""
    decl = structured(schema, meta, tags=_POINTWISE, **options)

    @decl.impl("CPU")
    def kernel(out, self, *params):
        d = self.dtype
        check_dtype(kname, d, allowed)
        x = self._array()
        if d.category == dt.INT or d in REDUCED:     # bounds rounded to the dtype first
            params = tuple(_rounded(p, d) for p in params)
        cd = opmath(d)
        def part(xp, op):
            np.copyto(op, fn(xp if xp.dtype == cd else xp.astype(cd), *params),
                      casting="unsafe")
        with np.errstate(all="ignore"):
            parallel.chunked(part, [x, out._array()], parallel.BLOCK)
    kernel.__qualname__ = f"cpu_{decl.name}"
    return decl


def _rounded(p, d):
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        return p
    return scalar(p, d) if d.category == dt.INT else float(d.np.type(p))


# ---- formulas on NumPy arrays ----------------------------------------------------------

def _relu(x):
    return np.maximum(x, x.dtype.type(0))


def _leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope)


def _elu(x, alpha=1, scale=1, input_scale=1):
    return np.where(x <= 0, np.expm1(x * input_scale) * (alpha * scale), x * scale)


def _celu(x, alpha=1.0):
    return _elu(x, alpha, 1.0, 1.0 / alpha)


_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu(x, approximate="none"):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) or 0.5 x (1 + erf(x / sqrt(2))), in
    place on one temporary (the kernel calls this on cache-sized parts)."""
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
        r = _normal_cdf_float32(x)[0]
        r *= x
        return r
    else:
        r = special.erf(x * _SQRT_HALF)
    r += 1
    r *= x
    r *= 0.5
    return r


# Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7): PyTorch's vectorised float erf, so
# float32 gelu agrees with PyTorch's where it is far from erf's exact value (x < -4).
# Taking x (not z = x / sqrt 2), 1 / (1 + p |z|) = q / (q + |x|) with q = sqrt 2 / p; the
# coefficients (Horner order, a5 first) are halved, which is exact, to give the cdf directly.
_AS_Q = np.float32(1 / (0.3275911 * _SQRT_HALF))
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
    np.subtract(0.5, r, out=r)             # |erf(z)| / 2
    np.copysign(r, x, out=r)
    r += 0.5
    return r, e


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


# ---- checks ------------------------------------------------------------------------------

def _relu_meta(self):
    if self.dtype is dt.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    if self.dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    return _same_meta(self)


def _hardtanh_meta(self, min_val=-1, max_val=1):
    if self.dtype is dt.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if self.dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    if self.dtype is dt.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return _empty_like_meta(self)


def _empty_like_meta(self, *args):
    """Ops whose output PyTorch allocates with empty_like(self): a dense input's strides are
    kept exactly (size-1 dimensions included), others get dense strides in the input's
    dimension order."""
    shape = self._shape
    if is_non_overlapping_and_dense(shape, self._stride):
        return TensorSpec(shape, self.dtype, self._stride)
    return TensorSpec(shape, self.dtype, iterator_strides(shape, [(shape, self._stride)]))


def _contiguous_meta(self, *args):
    """Ops whose CPU output PyTorch allocates row-major whatever the input's layout."""
    return spec(self._shape, self.dtype)


def _celu_meta(self, alpha=1.0):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _same_meta(self)


def _gelu_meta(self, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _same_meta(self)


def _softshrink_meta(self, lambd=0.5):
    if self.dtype in FLOATING:
        highest = dt.finfo(self.dtype).max
        if not 0 <= lambd <= highest:
            raise RuntimeError(f"lambda must be in range [0, {highest:g}] for input dtype "
                               f"{self.dtype.cname}, but found {lambd:g}")
    return _same_meta(self)


# ---- declarations --------------------------------------------------------------------------

_INTEGER_OR_FLOAT = INTS | FLOATING

relu = _pointwise("relu(Tensor self) -> Tensor", _relu, "clamp_min_cpu", _INTEGER_OR_FLOAT,
                  _relu_meta, out=False, doc="max(input, 0); relu'(0) is 0.")
leaky_relu = _pointwise("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
                        _leaky_relu, "leaky_relu_cpu", function=False, method=False,
                        doc="input where input > 0, else input * negative_slope.")
elu = _pointwise("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> "
                 "Tensor", _elu, "elu_cpu", function=False, method=False,
                 doc="scale * input where input > 0, else alpha * scale * "
                     "(exp(input * input_scale) - 1).")
celu = _pointwise("celu(Tensor self, Scalar alpha=1.0) -> Tensor", _celu, "elu_cpu",
                  meta=_celu_meta, method=False, out=False,
                  doc="max(0, input) + min(0, alpha * (exp(input / alpha) - 1)).")
gelu = _pointwise('gelu(Tensor self, *, str approximate="none") -> Tensor', _gelu,
                  "GeluKernelImpl", meta=_gelu_meta, function=False, method=False,
                  doc="input * Phi(input) (exact with erf, or the tanh approximation).")
silu = _pointwise("silu(Tensor self) -> Tensor", _silu, "silu_cpu", FLOATING | COMPLEX,
                  function=False, method=False, doc="input * sigmoid(input).")
mish = _pointwise("mish(Tensor self) -> Tensor", _mish, "mish_cpu", function=False,
                  method=False, doc="input * tanh(softplus(input)).")
softplus = _pointwise("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
                      _softplus, "softplus_cpu", function=False, method=False, inplace=False,
                      doc="log(1 + exp(beta * input)) / beta; the identity where beta * input "
                          "> threshold.")
hardtanh = _pointwise("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
                      _hardtanh, "hardtanh_cpu", _INTEGER_OR_FLOAT, _hardtanh_meta,
                      function=False, method=False, doc="input clamped to [min_val, max_val].")
hardsigmoid = _pointwise("hardsigmoid(Tensor self) -> Tensor", _hardsigmoid, "hardsigmoid_cpu",
                         function=False, method=False, doc="relu6(input + 3) / 6.")
hardswish = _pointwise("hardswish(Tensor self) -> Tensor", _hardswish, "hardswish_cpu",
                       function=False, method=False, doc="input * relu6(input + 3) / 6.")
softshrink = _pointwise("softshrink(Tensor self, Scalar lambd=0.5) -> Tensor", _softshrink,
                        "softshrink_check", meta=_softshrink_meta, function=False,
                        method=False, inplace=False,
                        doc="input - lambd above lambd, input + lambd below -lambd, else 0.")
hardshrink = _pointwise("hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", _hardshrink,
                        "hardshrink_cpu", inplace=False,
                        doc="input where |input| > lambd, else 0.")
threshold = _pointwise("threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor",
                       _threshold, "threshold_cpu", _INTEGER_OR_FLOAT, method=False,
                       doc="value where input <= threshold, else input.")
log_sigmoid = _pointwise("log_sigmoid(Tensor self) -> Tensor", _log_sigmoid, "log_sigmoid_cpu",
                         meta=_contiguous_meta, function=False, method=False, inplace=False,
                         doc="log(sigmoid(input)), stable for large |input|.")

# ---- backward kernels (PyTorch's gelu_backward and threshold_backward) --------------------

def _backward_meta(name):
    def meta(grad_output, self, *args):
        d = common_dtype(grad_output, self)
        if name == "gelu_backward" and args[0] not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        return pointwise_spec((grad_output, self), d)
    return meta


def _backward_kernel(decl, kname, allowed, part):
    """A fused CPU kernel out = part(grad, x, *params), in the op's compute dtype, walked in
    cache-sized blocks (split across threads when large)."""
    @decl.impl("CPU")
    def kernel(out, grad_output, self, *params):
        d = out.dtype
        check_dtype(kname, d, allowed)
        cd = opmath(d)
        o = out._array()
        g, x = (np.broadcast_to(t._array(), o.shape) for t in (grad_output, self))

        def run(gp, xp, op):
            r = part(gp if gp.dtype == cd else gp.astype(cd),
                     xp if xp.dtype == cd else xp.astype(cd), *params)
            np.copyto(op, r, casting="unsafe")
        with np.errstate(all="ignore"):
            parallel.chunked(run, [g, x, o], parallel.BLOCK)
    kernel.__qualname__ = f"cpu_{decl.name}"


def _gelu_grad(g, x, approximate):
    """g * gelu'(x), on temporaries of x's size."""
    if x.ndim == 0:                        # NumPy makes scalars, not arrays, of 0-d results
        return _gelu_grad(g.reshape(1), x.reshape(1), approximate).reshape(())
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
    r *= g
    return r


_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _threshold_grad(g, x, threshold):
    """g where x > threshold, else 0 (a NaN x passes g on, as PyTorch's kernel). Floats are
    masked bitwise: exact (a NaN gradient where x <= threshold still gives 0) and without
    the per-element branches a select over a random mask costs."""
    if x.ndim == 0:                        # NumPy makes scalars, not arrays, of 0-d results
        return _threshold_grad(g.reshape(1), x.reshape(1), threshold).reshape(())
    keep = np.less_equal(x, threshold)
    np.logical_not(keep, out=keep)
    if g.dtype.kind != "f":
        return np.multiply(g, keep)
    bits = _BITS[g.dtype.itemsize]
    mask = keep.view(np.uint8).astype(bits)
    np.negative(mask, out=mask)                     # all ones where g is kept
    r = arrays.module_of(g).empty(np.broadcast_shapes(g.shape, mask.shape), g.dtype)
    np.bitwise_and(g.view(bits), mask, out=r.view(bits))
    return r


gelu_backward = structured(
    'gelu_backward(Tensor grad_output, Tensor self, *, str approximate="none") -> Tensor',
    _backward_meta("gelu_backward"), method=False, function=False, inplace=False,
    tags=_POINTWISE, doc="grad_output * gelu'(self): GELU's gradient in one pass.")
_backward_kernel(gelu_backward, "GeluBackwardKernelImpl", FLOATING, _gelu_grad)

threshold_backward = structured(
    "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
    _backward_meta("threshold_backward"), method=False, function=False, inplace=False,
    tags=_POINTWISE, doc="grad_output where self > threshold, else 0: relu's gradient.")
_backward_kernel(threshold_backward, "threshold_backward_cpu", _INTEGER_OR_FLOAT,
                 _threshold_grad)

leaky_relu_ = _inplace_wrapper(leaky_relu)
elu_ = _inplace_wrapper(elu)
gelu_ = _inplace_wrapper(gelu)
silu_ = _inplace_wrapper(silu)
mish_ = _inplace_wrapper(mish)
hardtanh_ = _inplace_wrapper(hardtanh)
hardsigmoid_ = _inplace_wrapper(hardsigmoid)
hardswish_ = _inplace_wrapper(hardswish)
celu_ = _inplace_wrapper(celu)
threshold_ = _inplace_wrapper(threshold)
export("relu_", Tensor.relu_)
export("celu_", celu_)
export("threshold_", threshold_)


@composite()
def selu(input):
    """scale * elu(input, alpha) with SELU's fixed constants (an EluBackward0 node)."""
    return elu.function(input, SELU_ALPHA, SELU_SCALE)


@composite()
def selu_(input):
    return elu_(input, SELU_ALPHA, SELU_SCALE)


# ---- glu ---------------------------------------------------------------------------------

def _glu_meta(self, dim=-1):
    if self.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, self.dim())
    size = self._shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    shape = Size(self._shape[:d] + (size // 2,) + self._shape[d + 1:])
    return TensorSpec(shape, self.dtype, iterator_strides(shape, [(shape, self._stride)]))


glu = structured("glu(Tensor self, int dim=-1) -> Tensor", _glu_meta, function=False,
                 method=False, inplace=False,
                 doc="first half * sigmoid(second half), halving `dim`.")


@glu.impl("CPU")
def _glu_cpu(out, self, dim=-1):
    check_dtype("glu_cpu", self.dtype, FLOATING)
    d = wrap_dim(dim, self.dim())
    a, b = np.split(self._array().astype(opmath(self.dtype), copy=False), 2, axis=d)
    with np.errstate(all="ignore"):
        assign(out, a / (1 + np.exp(-b)))


# ---- prelu -------------------------------------------------------------------------------

def _prelu_kernel_meta(self, weight):
    if weight.dtype is not self.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {self.dtype.cname} and "
                           f"{weight.dtype.cname}")
    if Size(broadcast_shapes2(self._shape, weight._shape)) != self._shape:
        return pointwise_spec((self, weight), self.dtype)
    return _empty_like_meta(self)


_prelu_kernel = structured("_prelu_kernel(Tensor self, Tensor weight) -> Tensor",
                           _prelu_kernel_meta, method=False, inplace=False, out=False,
                           tags=_POINTWISE,
                           doc="input where input > 0, else weight * input (broadcast).")


@_prelu_kernel.impl("CPU")
def _prelu_kernel_cpu(out, self, weight):
    check_dtype("prelu_cpu", self.dtype, FLOATING)
    cd = opmath(self.dtype)
    x, w = self._array().astype(cd, copy=False), weight._array().astype(cd, copy=False)
    assign(out, np.where(x > 0, x, w * x))


@composite(method=True)
def prelu(input, weight):
    """input where input > 0, else weight * input; `weight` holds one slope or one per
    channel (dimension 1 of input)."""
    if weight.dim() > 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    n = weight.numel()
    ndim = input.dim()
    if n != 1:
        if ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if ndim > 1 else 1
        if channels != n:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype.cname} and "
                           f"{weight.dtype.cname}")
    w = weight
    if ndim != weight.dim():
        shape = [1] * ndim
        if ndim > 1:
            shape[1] = n
        w = weight.reshape(shape)
    return _prelu_kernel.function(input, w)


# ---- rrelu -------------------------------------------------------------------------------

def _rrelu_meta(self, noise, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    return _contiguous_meta(self)


rrelu_with_noise = structured(
    "rrelu_with_noise(Tensor self, Tensor noise, Scalar lower=0.125, "
    "Scalar upper=0.3333333333333333, bool training=False, Generator? generator=None) -> Tensor",
    _rrelu_meta, function=False, method=False, out=False,
    doc="Training: input * r where input <= 0, r ~ U(lower, upper) (r written to noise, 1 "
        "elsewhere); eval: leaky_relu with slope (lower + upper) / 2.")


@rrelu_with_noise.impl("CPU")
def _rrelu_with_noise_cpu(out, self, noise, lower=0.125, upper=1.0 / 3.0, training=False,
                          generator=None):
    d = self.dtype
    check_dtype("leaky_relu_cpu" if not training else "rrelu_with_noise_out_cpu", d, FLOATING)
    cd = opmath(d)
    x = self._array().astype(cd, copy=False)
    if not training:
        assign(out, _leaky_relu(x, (lower + upper) / 2))
        return
    rng = _stream(generator, self)
    r = uniform01(rng, x.shape, dt.float64 if d is dt.float64 else dt.float32)
    r = arrays.asarray((r * (upper - lower) + lower).astype(cd), like=x)   # host draws
    slopes = np.where(x <= 0, r, cd.type(1))
    assign(noise, slopes)
    assign(out, x * slopes)


rrelu_with_noise_ = _inplace_wrapper(rrelu_with_noise)


@composite()
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomized leaky relu: negative inputs scaled by a slope drawn from U(lower, upper)
    in training, by (lower + upper) / 2 otherwise."""
    return rrelu_with_noise.function(input, empty_like(input), lower, upper, training,
                                     generator)


@composite()
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu_with_noise_(input, empty_like(input), lower, upper, training, generator)


# ---- dropout -------------------------------------------------------------------------------

def _dropout_mask(input: Tensor, keep: float) -> np.ndarray:
    """Bernoulli(keep) draws shaped like `input`, from the default generator."""
    return _stream(None, input).random(tuple(input._shape)) < keep


native_dropout = kernel_op("native_dropout(Tensor input, float p, bool? train) -> "
                           "(Tensor, Tensor)", method=False,
                           doc="(input * mask / (1 - p), mask) with mask ~ Bernoulli(1 - p) "
                               "when training; (a copy of input, all True) otherwise.")


def _native_dropout_outputs(input, p, train):
    """The two outputs, laid out like input; checks p when training."""
    if input.numel() == 0:
        return empty_like(input), empty_like(input)
    if train is None or train:
        if not 0 <= 1 - p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p:g}")
    return empty_like(input), empty_like(input, dtype=dt.bool)


@native_dropout.impl("CPU")
def _native_dropout_cpu(input, p, train):
    out, mask = _native_dropout_outputs(input, p, train)
    if input.numel() == 0:
        return out, mask
    if train is None or train:
        keep = 1 - p
        x = input._array().astype(opmath(input.dtype), copy=False)
        m = arrays.asarray(_dropout_mask(input, keep), like=x)     # drawn on the host
        assign(mask, m)
        assign(out, x * m * (0.0 if keep == 0 else 1 / keep))
    else:
        assign(mask, True)
        assign(out, input._array())
    return out, mask


native_dropout.on_cuda = "shared"


@native_dropout.impl("Meta")
def _native_dropout_meta(input, p, train):
    return _native_dropout_outputs(input, p, train)


def _check_p(p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p:g}")


_ALPHA = 1.7580993408473766     # SELU's alpha * scale: the value alpha dropout drops to


# The overloads PyTorch's dropout composite calls by name: a mode sees div_.Scalar, as there.
_add_scalar = elementwise.add.overload("Scalar").functional
_add_scalar_ = elementwise.add.overload("Scalar").inplace
_mul_scalar_ = elementwise.mul.overload("Scalar").inplace
_div_scalar_ = elementwise.div.overload("Scalar").inplace


def _dropout(input, p, train, *, feature=False, alpha=False, inplace=False):
    """PyTorch's dropout composite: input times a scaled Bernoulli(1 - p) noise (one draw per
    (batch, channel) for feature dropout); alpha dropout also shifts, to keep SELU's mean
    and variance. The noise is drawn from the default generator."""
    _check_p(p)
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        z = zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(z) if inplace else input * z
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        noise = input.new_empty((input.shape[0], input.shape[1]) + (1,) * (input.dim() - 2))
    else:
        noise = empty_like_op(input)      # no options given, as PyTorch's C++ calls it
    noise.bernoulli_(1 - p)
    if not alpha:
        _div_scalar_(noise, 1 - p)
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    shift = _add_scalar_(_mul_scalar_(_add_scalar(noise, -1), _ALPHA * a), _ALPHA * a * p)
    _mul_scalar_(noise, a)
    return (input.mul_(noise) if inplace else input * noise).add_(shift)


def _export_dropout(name, **kind):
    def functional(input, p, train):
        return _dropout(input, p, train, **kind)

    def inplace(input, p, train):
        return _dropout(input, p, train, inplace=True, **kind)
    functional.__name__, inplace.__name__ = name, name + "_"
    functional.__doc__ = inplace.__doc__ = _dropout.__doc__
    export(name, functional)
    export(name + "_", inplace)
    return functional, inplace


dropout, dropout_ = _export_dropout("dropout")
feature_dropout, feature_dropout_ = _export_dropout("feature_dropout", feature=True)
alpha_dropout, alpha_dropout_ = _export_dropout("alpha_dropout", alpha=True)
feature_alpha_dropout, feature_alpha_dropout_ = _export_dropout("feature_alpha_dropout",
                                                                feature=True, alpha=True)

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(_prelu_kernel, cpu=LOWER_PRECISION, cuda=LOWER_PRECISION)
autocast_policy(softplus, cuda=FP32)
