"""The pointwise math functions beyond elementwise.py's: logaddexp(2), heaviside, sinc, i0,
polygamma, mvlgamma, igamma(c), xlog1py, zeta, gcd/lcm, nextafter, frexp/ldexp,
deg2rad/rad2deg, the orthogonal polynomials, and torch.special's own operators (special_i0e,
..., exposed by glasstorch.special). float16/bfloat16 compute in float32; the special
functions in float64, from `backends/cpu/special.py`; the other kernels are in
`backends/cpu/special_functions.py`.
"""
from __future__ import annotations

import math

import numpy as np

from ... import return_types
from ...backends.cpu import pointwise as cpu
from ...backends.cpu import special as sp
from ...backends.cpu.special_functions import (_entr, frexp_kernel, heaviside_kernel,
                                               integer_binary_kernel, logaddexp_kernel,
                                               mvlgamma_kernel, nextafter_kernel,
                                               polygamma_kernel, sinc_kernel, xlog1py_kernel,
                                               zeta_kernel)
from ...core import dtype as dt
from ...core.promotion import common_dtype, float_dtype, opmath
from ...core.tensor import Tensor
from ..registry import composite, export, into_out, require_tensor, structured
from .meta import pointwise_spec

_POINTWISE = ("pointwise",)


# ---- cummax / cummin ---------------------------------------------------------------------


# ---- binary pointwise: logaddexp, logaddexp2, heaviside ------------------------------------

def _logaddexp_meta(name):
    def meta(self, other):
        require_tensor(name, "other", 2, other)
        d = common_dtype(self, other)
        if d.category < dt.FLOAT or (d.is_complex and name == "logaddexp2"):
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{d.cname}\'')
        return pointwise_spec((self, other), d)
    return meta


logaddexp = structured("logaddexp(Tensor self, Tensor other) -> Tensor",
                       _logaddexp_meta("logaddexp"), inplace=False, tags=_POINTWISE,
                       tensor_args=("other",),
                       doc="log(exp(input) + exp(other)), without overflow.")
logaddexp.impl("CPU")(logaddexp_kernel(False))
logaddexp2 = structured("logaddexp2(Tensor self, Tensor other) -> Tensor",
                        _logaddexp_meta("logaddexp2"), inplace=False, tags=_POINTWISE,
                       tensor_args=("other",),
                        doc="log2(2**input + 2**other), without overflow.")
logaddexp2.impl("CPU")(logaddexp_kernel(True))


def _heaviside_meta(self, values):
    require_tensor("heaviside", "values", 2, values)
    if self.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if self.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    return pointwise_spec((self, values), self.dtype)


heaviside = structured("heaviside(Tensor self, Tensor values) -> Tensor", _heaviside_meta,
                       tensor_args=("values",), tags=_POINTWISE,
                       doc="0 where input < 0, values where input == 0, 1 where input > 0 (0 "
                           "for nan).")
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


# ---- composites: kron, diff, isclose, allclose, equal ---------------------------------------


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
        require_tensor(name, "other", 2, other)
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
                    tensor_args=("other",), tags=_POINTWISE,
                    doc="The regularized lower incomplete gamma function P(input, other).")
igamma.impl("CPU")(_igamma_kernel(sp.igamma))
igammac = structured("igammac(Tensor self, Tensor other) -> Tensor", _igamma_meta("igammac"),
                     tensor_args=("other",), tags=_POINTWISE,
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
        require_tensor(name, "other", 2, other)
        d = common_dtype(self, other)
        if d.category != dt.INT:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{d.cname}\'')
        return pointwise_spec((self, other), d)
    return meta


gcd = structured("gcd(Tensor self, Tensor other) -> Tensor", _integer_binary_meta("gcd"),
                 tensor_args=("other",), tags=_POINTWISE,
                 doc="The greatest common divisor (non-negative; gcd(0, 0) is 0).")
gcd.impl("CPU")(integer_binary_kernel(np.gcd))
lcm = structured("lcm(Tensor self, Tensor other) -> Tensor", _integer_binary_meta("lcm"),
                 tensor_args=("other",), tags=_POINTWISE,
                 doc="The least common multiple (non-negative; 0 if either is 0).")
lcm.impl("CPU")(integer_binary_kernel(np.lcm))


def _nextafter_meta(self, other):
    require_tensor("nextafter", "other", 2, other)
    d = common_dtype(self, other)
    if d.category != dt.FLOAT or d.is_complex:
        raise NotImplementedError(f'"nextafter_cpu" not implemented for \'{d.cname}\'')
    return pointwise_spec((self, other), d)


nextafter = structured("nextafter(Tensor self, Tensor other) -> Tensor", _nextafter_meta,
                       tensor_args=("other",), tags=_POINTWISE,
                       doc="The next representable value after input "
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
    require_tensor("frexp", "input", 1, input)
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
    require_tensor(fname, "other", 2, other)
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


# ---- index_reduce ---------------------------------------------------------------------------


