"""Cumulative extrema, differences, products of structure (kron, trace), comparisons with
tolerance.

Also the pointwise functions the other math modules lack: logaddexp(2), heaviside, sinc,
i0, polygamma, mvlgamma, igamma(c), and torch.special's own operators (special_i0e, ...,
exposed by glasstorch.special). float16/bfloat16 compute in float32; the special functions
in float64, from `backends/cpu/special.py`. Most kernels are in
`backends/cpu/special_functions.py`.
"""
from __future__ import annotations

import math

import numpy as np

from ... import return_types
from ...backends import arrays
from ...backends.cpu import pointwise as cpu
from ...backends.cpu import special as sp
from ...core import dtype as dt
from ...core.shape import wrap_dim
from ...core.device import META
from ...core.tensor import Tensor
from ..copying.copies import assign_array
from .meta import pointwise_spec
from ...core.promotion import common_dtype, float_dtype, opmath
from ..registry import composite, export, kernel_op, resize_output, spec, structured
from ..autocast import FP32, autocast_policy
from ...backends.cpu.special_functions import (INDEX_REDUCTIONS, _entr, arrays_equal,
    close_array, cum_extremum_kernel, frexp_kernel, heaviside_kernel, index_reduce_kernel,
    integer_binary_kernel, logaddexp_kernel, mvlgamma_kernel, nextafter_kernel,
    polygamma_kernel, renorm_kernel, sinc_kernel, trace_kernel, xlog1py_kernel, zeta_kernel)

_POINTWISE = ("pointwise",)


def _require_tensor(fname, argname, position, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {position}) must be Tensor, "
                        f"not {type(value).__name__}")


def into_out(out, result: Tensor) -> Tensor:
    """The out= form of a composite: resize `out` to the result and copy it in."""
    if out is None:
        return result
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got "
                           f"{out.dtype} instead")
    if out._shape != result._shape:
        resize_output(out, result._shape)
    return out.copy_(result)


# ---- cummax / cummin ---------------------------------------------------------------------

def _cum_extremum_meta(name):
    def meta(self, dim):
        if self.dtype.is_complex:
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{self.dtype.cname}'")
        wrap_dim(dim, self.dim())
        return spec(self._shape, self.dtype), spec(self._shape, dt.int64)
    return meta


def _cum_extremum(name, ufunc, result_type, result_out_type):
    decl = structured(f"{name}(Tensor self, int dim) -> (Tensor values, Tensor indices)",
                      _cum_extremum_meta(name), inplace=False, function=False, method=False,
                      promotes=False,
                      doc=f"The running {name[3:]} along `dim` and where it was last reached.")
    decl.impl("CPU")(cum_extremum_kernel(ufunc))
    op = decl.function

    def fn(input, dim, *, out=None):
        if out is None:
            return result_type(op(input, dim))
        return result_out_type(op(input, dim, out=out))
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "glasstorch"
    fn.__doc__ = (f"{name}(input, dim) -> return_types.{name}(values, indices): the running "
                  f"{name[3:]} along `dim`; nan propagates, ties give the latest index.")
    export(name, fn, method=True)
    return decl


cummax = _cum_extremum("cummax", np.maximum, return_types.cummax, return_types.cummax_out)
cummin = _cum_extremum("cummin", np.minimum, return_types.cummin, return_types.cummin_out)


# ---- binary pointwise: logaddexp, logaddexp2, heaviside ------------------------------------

def _logaddexp_meta(name):
    def meta(self, other):
        _require_tensor(name, "other", 2, other)
        d = common_dtype(self, other)
        if d.category < dt.FLOAT or (d.is_complex and name == "logaddexp2"):
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{d.cname}\'')
        return pointwise_spec((self, other), d)
    return meta


logaddexp = structured("logaddexp(Tensor self, Tensor other) -> Tensor",
                       _logaddexp_meta("logaddexp"), inplace=False, tags=_POINTWISE,
                       doc="log(exp(input) + exp(other)), without overflow.")
logaddexp.impl("CPU")(logaddexp_kernel(False))
logaddexp2 = structured("logaddexp2(Tensor self, Tensor other) -> Tensor",
                        _logaddexp_meta("logaddexp2"), inplace=False, tags=_POINTWISE,
                        doc="log2(2**input + 2**other), without overflow.")
logaddexp2.impl("CPU")(logaddexp_kernel(True))


def _heaviside_meta(self, values):
    _require_tensor("heaviside", "values", 2, values)
    if self.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if self.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    return pointwise_spec((self, values), self.dtype)


heaviside = structured("heaviside(Tensor self, Tensor values) -> Tensor", _heaviside_meta,
                       tags=_POINTWISE, doc="0 where input < 0, values where input == 0, "
                                            "1 where input > 0 (0 for nan).")
heaviside.impl("CPU")(heaviside_kernel)


# ---- unary special functions: sinc, i0, polygamma, mvlgamma -------------------------------

def _unary_float_meta(self, *args):
    return pointwise_spec((self,), float_dtype(self))


def _real_float_meta(kname):
    def meta(self, *args):
        d = float_dtype(self)
        if d.is_complex:
            raise NotImplementedError(f'"{kname}" not implemented for \'{d.cname}\'')
        return pointwise_spec((self,), d)
    return meta


sinc = structured("sinc(Tensor self) -> Tensor", _unary_float_meta, tags=_POINTWISE,
                  doc="sin(pi x) / (pi x), and 1 at 0.")
sinc.impl("CPU")(sinc_kernel)

i0 = structured("i0(Tensor self) -> Tensor", _real_float_meta("i0_vml_cpu"), tags=_POINTWISE,
                doc="The modified Bessel function of the first kind, order 0.")
i0.impl("CPU")(cpu.special_kernel(sp.i0, "i0"))


def _polygamma_meta(n, self):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _real_float_meta({0: "digamma", 1: "trigamma"}.get(n, "polygamma"))(self)


polygamma_op = structured("polygamma(int n, Tensor self) -> Tensor", _polygamma_meta,
                          inplace=False, function=False, method=False, tags=_POINTWISE,
                          doc="The n-th derivative of digamma.")
polygamma_op.impl("CPU")(polygamma_kernel)


@composite()
def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma (n >= 0)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' (position 2) must be Tensor, not "
                        f"{type(input).__name__}")
    return polygamma_op.function(n, input, out=out)


def _polygamma_method(self, n):
    return polygamma_op.function(n, self)


def _polygamma_(self, n):
    """In place: polygamma(n, self) written back into self."""
    result = polygamma_op.function(n, self)
    if result.dtype is not self.dtype and not dt.can_cast(result.dtype, self.dtype):
        raise RuntimeError(f"result type {result.dtype.cname} can't be cast to the desired "
                           f"output type {self.dtype.cname}")
    return self.copy_(result)


export("polygamma", _polygamma_method, method=True, function=False)
export("polygamma_", _polygamma_, method=True, function=False)


def _mvlgamma_meta(self, p):
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return _real_float_meta("arange_cpu")(self)     # the kernel PyTorch's error names


mvlgamma = structured("mvlgamma(Tensor self, int p) -> Tensor", _mvlgamma_meta,
                      tags=_POINTWISE,
                      doc="The multivariate log-gamma of dimension p.")
mvlgamma.impl("CPU")(mvlgamma_kernel)


# ---- trace, renorm -------------------------------------------------------------------------

def _trace_meta(self):
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    if self.dtype is dt.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    d = dt.int64 if self.dtype.category == dt.INT else self.dtype
    return spec((), d)


trace = structured("trace(Tensor self) -> Tensor", _trace_meta, inplace=False, out=False,
                   doc="The sum of the main diagonal of a matrix (integers give int64).")
trace.impl("CPU")(trace_kernel)


def _renorm_meta(self, p, dim, maxnorm):
    if self.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.dim()} "
                           "dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    wrap_dim(dim, self.dim())
    if self.dtype.category < dt.FLOAT:
        raise RuntimeError(f"renorm: expected a floating point or complex input, got "
                           f"{self.dtype.cname}")
    return spec(self._shape, self.dtype)


renorm = structured("renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
                    _renorm_meta, doc="Rescale each slice along `dim` whose p-norm exceeds "
                                      "maxnorm to have norm maxnorm.")
renorm.impl("CPU")(renorm_kernel)


# ---- composites: kron, diff, isclose, allclose, equal ---------------------------------------

@composite(method=True)
def kron(input, other, *, out=None):
    """The Kronecker product; the operand with fewer dims gets leading 1s."""
    _require_tensor("kron", "other", 2, other)
    n = max(input.dim(), other.dim())
    a_shape = (1,) * (n - input.dim()) + tuple(input.shape)
    b_shape = (1,) * (n - other.dim()) + tuple(other.shape)
    a = input.reshape([s for d in a_shape for s in (d, 1)])
    b = other.reshape([s for d in b_shape for s in (1, d)])
    result = (a * b).reshape([x * y for x, y in zip(a_shape, b_shape)])
    return into_out(out, result)


def _diff_operand(input, other, dim):
    if other.dim() != input.dim():
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(input.dim()):
        if i != dim and other.shape[i] != input.shape[i]:
            raise RuntimeError("diff expects the shape of tensor to prepend or append to match "
                               "that of input except along the differencing dimension; input."
                               f"size({i}) = {input.shape[i]}, but tensor.size({i}) = "
                               f"{other.shape[i]}")
    return other


@composite(method=True)
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The n-th forward difference along `dim` (logical xor for bool), after concatenating
    `prepend` and `append` (numbers count as 1-element tensors broadcast to fit)."""
    from ..shape.joining import cat
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.dim())
    parts = []
    for extra in (prepend, append):
        if extra is not None and not isinstance(extra, Tensor):
            shape = list(input.shape)
            shape[d] = 1
            from ..creation.factories import full
            extra = full(shape, extra, dtype=input.dtype, device=input.device)
        parts.append(None if extra is None else _diff_operand(input, extra, d))
    x = input
    if parts[0] is not None or parts[1] is not None:
        x = cat([t for t in (parts[0], input, parts[1]) if t is not None], d)
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        hi, lo = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = hi.logical_xor(lo) if x.dtype is dt.bool else hi - lo
    if n == 0 and x is input:
        x = input.clone()
    return into_out(out, x)


def _compared(xs, d: dt.dtype) -> list:
    """Arrays to compare in dtype d, the operands' common dtype: a GPU holds bfloat16 as bit
    patterns (what the structured kernels are spared by ops/gpu_kernels), so there they are
    compared as float32 (exact)."""
    if d is dt.bfloat16 and any(isinstance(x, Tensor) and x.device.type == "cuda" for x in xs):
        return cpu.operands([x.float() if isinstance(x, Tensor) else x for x in xs],
                            dt.float32)
    return cpu.operands(xs, d)


def _bool_tensor(values: np.ndarray, device) -> Tensor:
    out = Tensor._empty(values.shape, dt.bool, device)
    assign_array(out._array(), values)
    return out


def _check_close_args(name, input, other, rtol, atol):
    _require_tensor(name, "other", 2, other)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.cname} did not match {other.dtype.cname}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")


@composite(method=True)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (equal values, infinities
    included, are always close; nan only with equal_nan)."""
    _check_close_args("isclose", input, other, rtol, atol)
    a, b = _compared((input, other), input.dtype)
    return _bool_tensor(close_array(a, b, input.dtype, rtol, atol, equal_nan), input.device)


@composite(method=True)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element of input is close to other (see isclose)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@composite(method=True)
def equal(input, other):
    """True when both tensors have the same shape and the same values (nan is unequal)."""
    _require_tensor("equal", "other", 2, other)
    if input._shape != other._shape:
        return False
    a, b = _compared((input, other), common_dtype(input, other))
    return arrays_equal(a, b)


# ---- torch.special's own operators (exposed by glasstorch.special) -------------------------

def _special_unary(name, fn, kname, doc, *, reduced=True):
    """A special_<name> op computed in float64 by `fn`; float16/bfloat16 only if `reduced`."""
    def meta(self):
        d = float_dtype(self)
        if d.is_complex or (not reduced and d in cpu.REDUCED):
            raise NotImplementedError(f'"{kname}" not implemented for \'{d.cname}\'')
        return pointwise_spec((self,), d)
    decl = structured(f"special_{name}(Tensor self) -> Tensor", meta, inplace=False,
                      function=False, method=False, tags=_POINTWISE, doc=doc)
    decl.impl("CPU")(cpu.special_kernel(fn, kname))
    return decl


special_i0e = _special_unary("i0e", sp.i0e, "i0e_cpu", "exp(-|x|) * I0(x).")
special_i1 = _special_unary("i1", sp.i1, "i1_cpu", "The modified Bessel function I1.")
special_i1e = _special_unary("i1e", sp.i1e, "i1e_cpu", "exp(-|x|) * I1(x).")
special_erfcx = _special_unary("erfcx", sp.erfcx, "erfcx_cpu", "exp(x**2) * erfc(x).",
                               reduced=False)
special_ndtri = _special_unary("ndtri", sp.ndtri, "ndtri_cpu",
                               "The standard normal quantile function.", reduced=False)
special_log_ndtr = _special_unary("log_ndtr", sp.log_ndtr, "log_ndtr_cpu",
                                  "log of the standard normal CDF.", reduced=False)

# Bessel functions PyTorch does not differentiate (glasstorch.special runs them without
# recording); no float16/bfloat16 kernels, as in PyTorch.
special_bessel_j0 = _special_unary("bessel_j0", sp.bessel_j0, "bessel_j0_cpu",
                                   "The Bessel function J0.", reduced=False)
special_bessel_j1 = _special_unary("bessel_j1", sp.bessel_j1, "bessel_j1_cpu",
                                   "The Bessel function J1.", reduced=False)
special_airy_ai = _special_unary("airy_ai", sp.airy_ai, "airy_ai_cpu",
                                 "The Airy function Ai.", reduced=False)
special_airy_ai.on_cuda = "host"    # its series sums in long double, which CuPy lacks
special_bessel_y0 = _special_unary("bessel_y0", sp.bessel_y0, "bessel_y0_cpu",
                                   "The Bessel function of the second kind Y0.", reduced=False)
special_bessel_y1 = _special_unary("bessel_y1", sp.bessel_y1, "bessel_y1_cpu",
                                   "The Bessel function of the second kind Y1.", reduced=False)
special_spherical_bessel_j0 = _special_unary(
    "spherical_bessel_j0", sp.spherical_bessel_j0, "spherical_bessel_j0_cpu",
    "The spherical Bessel function j0, sin(x) / x.", reduced=False)
special_modified_bessel_i0 = _special_unary(
    "modified_bessel_i0", sp.i0, "modified_bessel_i0_cpu",
    "The modified Bessel function I0 (without a derivative).", reduced=False)
special_modified_bessel_i1 = _special_unary(
    "modified_bessel_i1", sp.i1, "modified_bessel_i1_cpu",
    "The modified Bessel function I1 (without a derivative).", reduced=False)

special_modified_bessel_k0 = _special_unary(
    "modified_bessel_k0", sp.bessel_k0, "modified_bessel_k0_cpu",
    "The modified Bessel function of the second kind K0.", reduced=False)
special_modified_bessel_k1 = _special_unary(
    "modified_bessel_k1", sp.bessel_k1, "modified_bessel_k1_cpu",
    "The modified Bessel function of the second kind K1.", reduced=False)
special_scaled_modified_bessel_k0 = _special_unary(
    "scaled_modified_bessel_k0", sp.bessel_k0e, "scaled_modified_bessel_k0_cpu",
    "exp(x) * K0(x).", reduced=False)
special_scaled_modified_bessel_k1 = _special_unary(
    "scaled_modified_bessel_k1", sp.bessel_k1e, "scaled_modified_bessel_k1_cpu",
    "exp(x) * K1(x).", reduced=False)


special_entr = _special_unary("entr", _entr, "entr_cpu",
                              "-x * log(x) for x > 0, 0 at 0, -inf below.")


def _xlog1py_meta(self, other):
    d = float_dtype(self, other)
    if d.is_complex:
        raise NotImplementedError(f'"xlog1py_cpu" not implemented for \'{d.cname}\'')
    return pointwise_spec((self, other), d)


special_xlog1py = structured("special_xlog1py(Tensor self, Tensor other) -> Tensor",
                             _xlog1py_meta, inplace=False, function=False, method=False,
                             number_self=True, tags=_POINTWISE,
                             doc="input * log1p(other), and 0 where input is 0.")
special_xlog1py.impl("CPU")(xlog1py_kernel)


def _zeta_meta(self, other):
    d = float_dtype(self, other)
    if d.is_complex or d in cpu.REDUCED:
        raise NotImplementedError(f'"zeta_cpu" not implemented for \'{d.cname}\'')
    return pointwise_spec((self, other), d)


special_zeta = structured("special_zeta(Tensor self, Tensor other) -> Tensor", _zeta_meta,
                          inplace=False, function=False, method=False, number_self=True,
                          tags=_POINTWISE,
                          doc="The Hurwitz zeta function sum_k (other + k) ** -input.")
special_zeta.impl("CPU")(zeta_kernel)


# ---- regularized incomplete gamma functions ---------------------------------------------------

def _igamma_meta(name):
    def meta(self, other):
        _require_tensor(name, "other", 2, other)
        d = common_dtype(self, other)
        if d.category != dt.FLOAT:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{d.cname}\'')
        return pointwise_spec((self, other), d)
    return meta


def _igamma_kernel(fn):
    def kernel(out, self, other):
        d = common_dtype(self, other)
        a, x = cpu.computed((self, other), d)
        cpu.assign(out, fn(a, x))
    return kernel


igamma = structured("igamma(Tensor self, Tensor other) -> Tensor", _igamma_meta("igamma"),
                    tags=_POINTWISE,
                    doc="The regularized lower incomplete gamma function P(input, other).")
igamma.impl("CPU")(_igamma_kernel(sp.igamma))
igammac = structured("igammac(Tensor self, Tensor other) -> Tensor", _igamma_meta("igammac"),
                     tags=_POINTWISE,
                     doc="The regularized upper incomplete gamma function 1 - P(input, other).")
igammac.impl("CPU")(_igamma_kernel(sp.igammac))


# ---- orthogonal polynomials (torch.special, not differentiated) -----------------------------

POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")


def _polynomial_meta(name):
    def meta(x, n):
        d = float_dtype(x, n)
        if d.is_complex or d in cpu.REDUCED:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{d.cname}\'')
        return pointwise_spec((x, n), d)
    return meta


def _polynomial_kernel(name):
    def kernel(out, x, n):
        d = float_dtype(x, n)
        cpu.assign(out, sp.orthogonal_polynomial(name, *cpu.computed((x, n), d)))
    return kernel


polynomial_ops = {}
for _name in POLYNOMIALS:
    polynomial_ops[_name] = structured(
        f"special_{_name}(Tensor x, Tensor n) -> Tensor", _polynomial_meta(_name),
        inplace=False, function=False, method=False, number_self=True, tags=_POINTWISE,
        doc=f"The {_name.replace('_', ' ')} of degree n (truncated; 0 for n < 0) at x.")
    polynomial_ops[_name].impl("CPU")(_polynomial_kernel(_name))


# ---- integer and float arithmetic: gcd, lcm, nextafter, frexp, deg2rad, rad2deg ------------

def _integer_binary_meta(name):
    def meta(self, other):
        _require_tensor(name, "other", 2, other)
        d = common_dtype(self, other)
        if d.category != dt.INT:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{d.cname}\'')
        return pointwise_spec((self, other), d)
    return meta


gcd = structured("gcd(Tensor self, Tensor other) -> Tensor", _integer_binary_meta("gcd"),
                 tags=_POINTWISE, doc="The greatest common divisor (non-negative; gcd(0, 0) "
                                      "is 0).")
gcd.impl("CPU")(integer_binary_kernel(np.gcd))
lcm = structured("lcm(Tensor self, Tensor other) -> Tensor", _integer_binary_meta("lcm"),
                 tags=_POINTWISE, doc="The least common multiple (non-negative; 0 if either "
                                      "is 0).")
lcm.impl("CPU")(integer_binary_kernel(np.lcm))


def _nextafter_meta(self, other):
    _require_tensor("nextafter", "other", 2, other)
    d = common_dtype(self, other)
    if d.category != dt.FLOAT or d.is_complex:
        raise NotImplementedError(f'"nextafter_cpu" not implemented for \'{d.cname}\'')
    return pointwise_spec((self, other), d)


nextafter = structured("nextafter(Tensor self, Tensor other) -> Tensor", _nextafter_meta,
                       tags=_POINTWISE, doc="The next representable value after input "
                                            "towards other.")
nextafter.impl("CPU")(nextafter_kernel)
nextafter.on_cuda = "host"     # a bfloat16 step needs its bit pattern, not a float32 widening


def _frexp_meta(self):
    if self.dtype.category != dt.FLOAT or self.dtype.is_complex:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return pointwise_spec((self,), self.dtype), pointwise_spec((self,), dt.int32)


frexp_op = structured("frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)",
                      _frexp_meta, inplace=False, out=False, function=False, method=False,
                      promotes=False, tags=_POINTWISE,
                      doc="input = mantissa * 2**exponent, |mantissa| in [0.5, 1).")
frexp_op.impl("CPU")(frexp_kernel)


@composite(method=True)
def frexp(input, *, out=None):
    """return_types.frexp(mantissa, exponent): input = mantissa * 2**exponent with
    |mantissa| in [0.5, 1) (0, inf and nan give themselves and exponent 0)."""
    _require_tensor("frexp", "input", 1, input)
    mantissa, exponent = frexp_op.function(input)
    if out is None:
        return return_types.frexp((mantissa, exponent))
    into_out(out[0], mantissa)
    into_out(out[1], exponent)
    return return_types.frexp_out((out[0], out[1]))


def _angle_meta(name):
    def meta(self):
        if self.dtype.is_complex:
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        return pointwise_spec((self,), float_dtype(self))
    return meta


def _scale_kernel(factor):
    def kernel(out, self):
        d = float_dtype(self)
        (x,) = cpu.computed((self,), d)
        cpu.assign(out, x * opmath(d).type(factor))
    return kernel


deg2rad = structured("deg2rad(Tensor self) -> Tensor", _angle_meta("deg2rad"), tags=_POINTWISE,
                     doc="Degrees to radians.")
deg2rad.impl("CPU")(_scale_kernel(math.pi / 180.0))
rad2deg = structured("rad2deg(Tensor self) -> Tensor", _angle_meta("rad2deg"), tags=_POINTWISE,
                     doc="Radians to degrees.")
rad2deg.impl("CPU")(_scale_kernel(180.0 / math.pi))


# ---- composites: ldexp, isin, trapezoid, unravel_index, combinations -----------------------

def _ldexp_factor(fname, input, other):
    """2**other, computed in the floating promotion of both operands."""
    _require_tensor(fname, "other", 2, other)
    d = float_dtype(input, other)
    return (other if other.dtype is d else other.to(d)).exp2()


@composite(method=True)
def ldexp(input, other, *, out=None):
    """input * 2**other, in the floating promotion of both."""
    return into_out(out, input * _ldexp_factor("ldexp", input, other))


def _ldexp_(self, other):
    """In-place input *= 2**other."""
    return self.mul_(_ldexp_factor("ldexp_", self, other))


export("ldexp_", _ldexp_, method=True, function=False)


def _isin_kernel(elements, test_elements, assume_unique=False, invert=False):
    d = common_dtype(elements, test_elements)
    a, b = _compared((elements, test_elements), d)
    device = (elements if isinstance(elements, Tensor) else test_elements).device
    xp = arrays.module_of(a, b)
    return _bool_tensor(xp.isin(xp.asarray(a), xp.asarray(b).ravel(),
                                assume_unique=assume_unique, invert=invert), device)


def _isin_meta(elements, test_elements, assume_unique=False, invert=False):
    common_dtype(elements, test_elements)
    return Tensor._empty(elements._shape if isinstance(elements, Tensor) else (), dt.bool, META)


def _isin_op(schema: str):
    decl = kernel_op(schema, method=False, function=False)
    decl.impl("CPU")(_isin_kernel)
    decl.impl("Meta")(_isin_meta)
    decl.on_cuda = "shared"
    return decl.functional


# PyTorch's three overloads, so that a mode (and torch.ops.aten.isin) sees the one called
ISIN_OVERLOADS = {(True, True): _isin_op(
             "isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, "
             "bool assume_unique=False, bool invert=False) -> Tensor"),
         (True, False): _isin_op(
             "isin.Tensor_Scalar(Tensor elements, Scalar test_element, *, "
             "bool assume_unique=False, bool invert=False) -> Tensor"),
         (False, True): _isin_op(
             "isin.Scalar_Tensor(Scalar element, Tensor test_elements, *, "
             "bool assume_unique=False, bool invert=False) -> Tensor")}


@composite()
def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """Whether each element of `elements` occurs in `test_elements` (either may be a
    number; values compared in their promoted dtype)."""
    op = ISIN_OVERLOADS.get((isinstance(elements, Tensor), isinstance(test_elements, Tensor)))
    if op is None:
        raise TypeError("isin(): expected at least one of 'elements' and 'test_elements' to "
                        "be a Tensor")
    return into_out(out, op(elements, test_elements, assume_unique=assume_unique,
                            invert=invert))


def _along(t: Tensor, dim: int, start, stop) -> Tensor:
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _trapezoid_checks(fname, y, x, dim):
    _require_tensor(fname, "y", 1, y)
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, y.dim())
    if x is not None:
        _require_tensor(fname, "x", 2, x)
        if x.dim() == 1 and x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample point")
    return d


def _spacing(x: Tensor, y: Tensor, d: int) -> Tensor:
    """The differences of x along d, shaped to broadcast against y."""
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[d] = x.shape[0]
        x = x.view(shape)
        return x[(slice(None),) * d + (slice(1, None),)] - _along(x, d, None, -1)
    dd = d - y.dim() + x.dim() if x.dim() < y.dim() else d
    if dd < 0:
        raise RuntimeError(f"trapezoid: x has too few dimensions ({x.dim()}) for y ({y.dim()})")
    return _along(x, dd, 1, None) - _along(x, dd, None, -1)


def _empty_integral(y: Tensor, d: int) -> Tensor:
    from ..creation.factories import zeros
    shape = list(y.shape)
    del shape[d]
    return zeros(shape, dtype=float_dtype(y), device=y.device) + y.sum(d) * 0


@composite()
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along `dim`: over sample points x (1-D, or broadcasting with y),
    or with constant spacing dx (default 1)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: x and dx "
                        "cannot both be given")
    d = _trapezoid_checks("trapezoid", y, x, dim)
    if y.shape[d] == 0:
        return _empty_integral(y, d)
    if x is None:
        ends = (y.select(d, 0) + y.select(d, -1)) * 0.5
        return (y.sum(d) - ends) * (1 if dx is None else dx)
    return (_spacing(x, y, d) * (_along(y, d, 1, None) + _along(y, d, None, -1))).sum(d) / 2.0


@composite()
def trapz(y, x=None, *, dx=None, dim=-1):
    """An alias of trapezoid (dx is a float, default 1)."""
    return trapezoid(y, x, dx=dx, dim=dim)


@composite()
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along `dim` (one value fewer than y)."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: "
                        "x and dx cannot both be given")
    d = _trapezoid_checks("cumulative_trapezoid", y, x, dim)
    pairs = _along(y, d, 1, None) + _along(y, d, None, -1)
    if x is None:
        return (pairs * ((1 if dx is None else dx) / 2.0)).cumsum(d)
    return (_spacing(x, y, d) * pairs).cumsum(d) / 2.0


@composite()
def unravel_index(indices, shape):
    """The coordinates (one tensor per dim of `shape`) of flat indices into a row-major
    tensor of that shape (indices outside wrap, as torch)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a Tensor, but got {type(indices).__name__}")
    if indices.dtype.category != dt.INT:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(s, int) for s in shape):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape:
        raise RuntimeError("ZeroDivisionError")
    if not shape:
        return ()
    from ..creation.factories import tensor
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]
    coords = indices.unsqueeze(-1).div(tensor(strides.tolist(), device=indices.device),
                                       rounding_mode="floor")
    return coords.remainder(tensor(list(shape), device=indices.device)).unbind(-1)


@composite()
def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-D tensor's elements, as rows (itertools order)."""
    import itertools
    _require_tensor("combinations", "input", 1, input)
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    from ..creation.factories import tensor
    return input[tensor(rows, device=input.device)]


# ---- index_reduce ---------------------------------------------------------------------------

def _index_reduce_meta(self, dim, index, source, reduce, include_self=True):
    _require_tensor("index_reduce", "index", 3, index)
    _require_tensor("index_reduce", "source", 4, source)
    if reduce not in INDEX_REDUCTIONS:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {index.dtype.cname} and size: "
                         f"{list(index.shape)}")
    if index.dtype not in (dt.int32, dt.int64):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype.cname}")
    if self.dtype.is_complex and reduce in ("amax", "amin"):
        raise NotImplementedError(f'"{"maximum" if reduce == "amax" else "minimum"}_cpu" not '
                                  f"implemented for '{self.dtype.cname}'")
    if self.dtype is not source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({self.dtype.cname}) and source "
                           f"({source.dtype.cname}) must have the same scalar type")
    src_len = source.shape[d] if source.dim() else 1
    if index.numel() != src_len:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim): ({src_len}), for dim: {d}")
    self_rest = [s for i, s in enumerate(self.shape) if i != d]
    src_rest = [s for i, s in enumerate(source.shape) if i != d]
    if self_rest != src_rest:
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self.shape)} "
                           f"source.shape = {list(source.shape)}")
    if index.numel():
        idx = index._array()
        size = self.shape[d] if self.dim() else 1
        if idx.min() < 0 or idx.max() >= size:
            raise IndexError("index out of range in self")
    return spec(self._shape, self.dtype)


index_reduce = structured("index_reduce(Tensor self, int dim, Tensor index, Tensor source, "
                          "str reduce, *, bool include_self=True) -> Tensor",
                          _index_reduce_meta, promotes=False,
                          doc="self with source's slices reduced (prod, mean, amax, amin) "
                              "into the slices index names along dim.")
index_reduce.impl("CPU")(index_reduce_kernel)

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(renorm, cuda=FP32)
autocast_policy(trace, cpu=FP32)
