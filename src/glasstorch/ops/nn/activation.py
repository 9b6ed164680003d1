"""Activation functions (relu, elu, gelu, softplus, hardtanh, glu, prelu, rrelu...) and dropout.

Each activation is one `structured` declaration whose output has the input's dtype; its
kernel (backends/cpu/activation.py) computes in `opmath` (float32 for float16/bfloat16) and
rounds once. Formulas are the
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

from ...backends.cpu.parallel import BLOCK
from ...backends.cpu.pointwise import COMPLEX, FLOATING, INTS
from ...core import dtype as dt
from ...core.shape import (Size, broadcast_shapes2, is_non_overlapping_and_dense, iterator_strides,
                          wrap_dim)
from ...core.tensor import Tensor
from ..creation.factories import empty_like, empty_like_op, zeros
from ..pointwise import elementwise
from ..pointwise.meta import pointwise_spec
from ...core.promotion import common_dtype
from ..random.samplers import _stream
from ..registry import TensorSpec, composite, export, kernel_op, spec, structured
from ..autocast import FP32, LOWER_PRECISION, autocast_policy
from ..wrappers import generate_wrapper
from ...backends.cpu.activation import (_celu, _elu, _gelu, _hardshrink, _hardsigmoid,
    _hardswish, _hardtanh, _leaky_relu, _log_sigmoid, _mish, _relu, _silu, _softplus,
    _softshrink, _threshold, activation_kernel, backward_kernel, gelu_grad, gelu_grad_native,
    gelu_native, glu_cpu, native_dropout_into, prelu_kernel_cpu, relu_native,
    rrelu_with_noise_into, sigmoid_grad, sigmoid_grad_native, tanh_grad, tanh_grad_native,
    threshold_grad, threshold_grad_native)

_POINTWISE = ("pointwise",)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _same_meta(self, *args):
    return pointwise_spec((self,), self.dtype)


def _inplace_wrapper(decl):
    """The `name_(input, ...)` function of a declaration that has no Tensor method (the
    node names PyTorch gives some of them, ...Backward1, are declared with the derivative)."""
    return generate_wrapper(decl.name + "_", decl.inplace.schema, decl.inplace)


def _pointwise(schema, fn, kname, allowed=FLOATING, meta=_same_meta, into=False, block=BLOCK,
               native_fn=None, **options):
    """Declare an activation: `fn(x, *params)` maps a NumPy array (in opmath) to the result;
    `params` are the schema's Scalar arguments, converted to the dtype for integer inputs.
    `into`, `block`, `native_fn`: see activation_kernel."""
    decl = structured(schema, meta, tags=_POINTWISE, **options)
    decl.impl("CPU")(activation_kernel(decl.name, fn, kname, allowed, into, block, native_fn))
    return decl


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
                  _relu_meta, into=True, block=None, out=False, native_fn=relu_native,
                  doc="max(input, 0); relu'(0) is 0.")
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
                  "GeluKernelImpl", meta=_gelu_meta, into=True, native_fn=gelu_native,
                  function=False, method=False,
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
    """The output's dtype and layout; PyTorch's threshold_backward iterates (self, grad), so
    its input, not its gradient, decides the layout when they differ."""
    def meta(grad_output, self, *args):
        d = common_dtype(grad_output, self)
        if name == "gelu_backward" and args[0] not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        operands = (self, grad_output) if name == "threshold_backward" else (grad_output, self)
        return pointwise_spec(operands, d)
    return meta


gelu_backward = structured(
    'gelu_backward(Tensor grad_output, Tensor self, *, str approximate="none") -> Tensor',
    _backward_meta("gelu_backward"), method=False, function=False, inplace=False,
    tags=_POINTWISE, doc="grad_output * gelu'(self): GELU's gradient in one pass.")
gelu_backward.impl("CPU")(
    backward_kernel("gelu_backward", "GeluBackwardKernelImpl", FLOATING, gelu_grad,
                    native_fn=gelu_grad_native))


def _gradient_from_output(name, part, native_fn, doc):
    """PyTorch's `name(grad_output, output)`: a function's gradient computed from its
    forward output (tanh, sigmoid), one CPU kernel `part` (its C form `native_fn`)."""
    op = structured(f"{name}(Tensor grad_output, Tensor output) -> Tensor",
                    _backward_meta(name), method=False, function=False, inplace=False,
                    tags=_POINTWISE, doc=doc)
    op.impl("CPU")(backward_kernel(name, f"{name}_cpu", FLOATING, part, native_fn=native_fn))
    return op


tanh_backward = _gradient_from_output(
    "tanh_backward", tanh_grad, tanh_grad_native,
    "grad_output * (1 - output^2): tanh's gradient from its output.")
sigmoid_backward = _gradient_from_output(
    "sigmoid_backward", sigmoid_grad, sigmoid_grad_native,
    "grad_output * (1 - output) * output: sigmoid's gradient.")

threshold_backward = structured(
    "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
    _backward_meta("threshold_backward"), method=False, function=False, inplace=False,
    tags=_POINTWISE, doc="grad_output where self > threshold, else 0: relu's gradient.")
threshold_backward.impl("CPU")(
    backward_kernel("threshold_backward", "threshold_backward_cpu", _INTEGER_OR_FLOAT,
                    threshold_grad, block=None, native_fn=threshold_grad_native))

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
glu.impl("CPU")(glu_cpu)


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
_prelu_kernel.impl("CPU")(prelu_kernel_cpu)


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
    rrelu_with_noise_into(out, self, noise, lower, upper, training,
                          lambda: _stream(generator, self))


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
    native_dropout_into(out, mask, input, p, train, lambda: _stream(None, input))
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
