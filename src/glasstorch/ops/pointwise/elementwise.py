"""Pointwise ops: arithmetic, math functions, comparisons, logical and bitwise ops.

Each op is one `structured` declaration (schema + meta) plus its CPU kernel from
`backends/cpu/pointwise.py`; the function, method, in-place and `out=` variants come from the
declaration, and aliases (arcsin, clip, greater, ...) share it. The meta functions hold the
checks PyTorch makes before any kernel runs, so they apply on every device; the Python
operators on Tensor are at the end.
"""
from __future__ import annotations

import builtins

import numpy as np

from ...backends.cpu import pointwise as cpu
from ...core import dtype as dt
from ...core.tensor import Tensor
from .meta import bool_meta, float_meta, pointwise_spec, promoting_meta
from ...core.promotion import common_dtype, float_dtype
from ..registry import (composite, export, overload, require_tensor, resize_output, spec,
                        structured)
from ..wrappers import OPERATORS_SEEN_AS_METHOD, operator_method
from ..autocast import FP32, PROMOTE, autocast_policy

_POINTWISE = ("pointwise",)


_NUMBER = "{%s}.__class__ in _SCALARS"     # the argument is a Python number (a Scalar)


def _declare(schema, meta, kernel, *, aliases=(), scalar=None, overloads=(), **options):
    """One structured pointwise op with its CPU kernel, its other overloads and its aliases.
    `scalar` names the argument whose Python number selects the op's `.Scalar` overload
    (same meta and kernel); `overloads` are (schema, when, meta, kernel) of others."""
    decl = structured(schema, meta, tags=_POINTWISE, **options)
    decl.impl("CPU")(kernel)
    if scalar is not None:
        head, _, rest = schema.partition("(")
        rest = rest.replace(f"Tensor {scalar}", f"Scalar {scalar}", 1)
        overload(decl, f"{head.split('.')[0]}.Scalar({rest}", meta, kernel,
                 when=_NUMBER % scalar)
    for other, when, other_meta, other_kernel in overloads:
        overload(decl, other, other_meta, other_kernel, when=when,
                 inplace=None if other.split("(")[1].startswith("Tensor self") else False)
    for alias in aliases:
        _alias(alias, decl, options.get("function", True), options.get("method", True))
    return decl


def _alias(alias, decl, function=True, method=True):
    if function:
        export(alias, decl.function)
    if method:
        setattr(Tensor, alias, getattr(Tensor, decl.name))
        if decl.inplace is not None:
            setattr(Tensor, alias + "_", getattr(Tensor, decl.name + "_"))


# ---- meta functions --------------------------------------------------------------------

def _same_meta(self, *args):
    """The output has the input's dtype (neg, floor, sign, ...)."""
    return pointwise_spec((self,), self.dtype)


def _real_meta(message: str):
    """_same_meta for ops with no complex form: refused before any check of an in-place
    or out= destination, as PyTorch's meta functions do."""
    def meta(self, *args):
        if self.dtype.is_complex:
            raise NotImplementedError(message)
        return _same_meta(self, *args)
    return meta


def _unary_float_meta(self, *args):
    return pointwise_spec((self,), float_dtype(self))


def _unary_bool_meta(self, *args):
    return pointwise_spec((self,), dt.bool)


def _abs_meta(self):
    """abs keeps the dtype; a complex tensor's is its real dtype."""
    return pointwise_spec((self,), self.dtype.to_real())


def _angle_meta(self):
    """The angle is real: the real dtype of complex inputs, else a float dtype."""
    d = self.dtype
    return pointwise_spec((self,), d.to_real() if d.is_complex else float_dtype(self))


def _complex_parts_meta(name, second):
    """complex/polar: two tensors of one floating dtype make its complex dtype."""
    def meta(a, b):
        require_tensor(name, second, 2, b)
        if a.dtype is not b.dtype:
            raise RuntimeError(f"Expected object of scalar type {a.dtype.cname} but got scalar "
                               f"type {b.dtype.cname} for second argument")
        if a.dtype is dt.float16 and name == "polar":
            raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
        if a.dtype not in (dt.float16, dt.float32, dt.float64):
            raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                               f"{a.dtype.cname} and {b.dtype.cname}")
        return pointwise_spec((a, b), a.dtype.to_complex())
    return meta


def _tensor_other(name, meta):
    """Ops whose `other` must be a tensor (PyTorch has no Scalar overload for them)."""
    def checked(self, other):
        require_tensor(name, "other", 2, other)
        return meta(self, other)
    return checked


def _is_bool(x):
    return x.dtype is dt.bool if isinstance(x, Tensor) else isinstance(x, bool)


def _add_meta(self, other, alpha=1):
    return promoting_meta(self, other)     # alpha is checked by the kernel, after the output


def _check_bool_sub(self, other):
    if _is_bool(self) and _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(self) or _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _sub_meta(self, other, alpha=1):
    _check_bool_sub(self, other)
    return promoting_meta(self, other)


def _rsub_meta(self, other, alpha=1):
    _check_bool_sub(self, other)
    return promoting_meta(other, self)     # computed as other - self: other leads the layout


def _neg_meta(self):
    if self.dtype is dt.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return _same_meta(self)


def _div_meta(self, other, rounding_mode=None):
    if rounding_mode is None:
        return float_meta(self, other)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    return promoting_meta(self, other)


def _scalar_base_spec(exponent, d):
    """pow(number, tensor) allocates a fresh row-major result whatever the exponent's layout."""
    return spec(exponent._shape, d)


def _pow_meta(self, exponent):
    if not isinstance(self, Tensor):
        return _scalar_base_spec(exponent, common_dtype(self, exponent))
    if self.dtype.category <= dt.INT and isinstance(exponent, int) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    result = promoting_meta(self, exponent)
    if not isinstance(exponent, Tensor):
        _check_bound_fits(exponent, result.dtype)
    return result


def _float_power_dtype(*operands):
    complex_ = any(isinstance(x, complex) or (isinstance(x, Tensor) and x.dtype.is_complex)
                   for x in operands)
    return dt.complex128 if complex_ else dt.float64


def _float_power_meta(self, exponent):
    d = _float_power_dtype(self, exponent)
    if not isinstance(self, Tensor):
        return _scalar_base_spec(exponent, d)
    return pointwise_spec((self, exponent), d)


def _float_power_out(spec, out, *args):
    if out.dtype is not spec.dtype:
        raise RuntimeError(f"the output given to float_power has dtype {out.dtype.cname} but "
                           f"the operation's result requires dtype {spec.dtype.cname}")


def _exact_out(spec, out, *args):
    """Ops whose out= tensor must have the result's dtype exactly."""
    if out.dtype is not spec.dtype:
        raise RuntimeError(f"Found dtype {out.dtype.cname} but expected {spec.dtype.cname}")


def _bool_out(name):
    def check(spec, out, *args):
        if out.dtype is not dt.bool:
            raise RuntimeError(f"{name} does not support non-boolean outputs.")
    return check


def _nan_to_num_out(spec, out, self, *args):
    if out.dtype is not self.dtype:
        raise RuntimeError(f"nan_to_num: dtype of out: {out.dtype.cname} should be same as "
                           f"input: {self.dtype.cname}")
    if self.dtype.category <= dt.INT and out._shape != spec.shape:
        resize_output(out, spec.shape)    # integers are copied into a plain resized out


def _min_max_meta(name):
    def meta(self, other):
        require_tensor(name, "other", 2, other)
        if self.dtype.is_complex or other.dtype.is_complex:
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        return promoting_meta(self, other)
    return meta


# C++ names PyTorch prints for dtypes (caffe2::TypeMeta) in lerp's dtype check.
_TYPE_META_NAMES = {
    dt.bool: "bool", dt.uint8: "unsigned char", dt.int8: "signed char", dt.int16: "short int",
    dt.int32: "int", dt.int64: "long int", dt.float16: "c10::Half",
    dt.bfloat16: "c10::BFloat16", dt.float32: "float", dt.float64: "double",
    dt.complex64: "c10::complex<float>", dt.complex128: "c10::complex<double>"}


def _lerp_meta(self, end, weight):
    require_tensor("lerp", "end", 2, end)
    for argname, x in (("end", end), ("weight", weight)):
        if isinstance(x, Tensor) and x.dtype is not self.dtype:
            raise RuntimeError(f"expected dtype {_TYPE_META_NAMES[self.dtype]} for `{argname}`"
                               f" but got dtype {_TYPE_META_NAMES[x.dtype]}")
    return pointwise_spec((self, end, weight), self.dtype)


def _addcmul_meta(self, tensor1, tensor2, value=1):
    return promoting_meta(self, tensor1, tensor2)


def _addcdiv_meta(self, tensor1, tensor2, value=1):
    if tensor1.dtype.category <= dt.INT and tensor2.dtype.category <= dt.INT:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    return promoting_meta(self, tensor1, tensor2)


# C++ type names in PyTorch's "value cannot be converted" error.
_SCALAR_T_NAMES = {
    dt.uint8: "uint8_t", dt.int8: "int8_t", dt.int16: "int16_t", dt.int32: "int",
    dt.int64: "int64_t", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16",
    dt.float32: "float", dt.float64: "double"}
# The values c10's checked conversion accepts; unsigned types also take negative values
# that wrap (two's complement), floating types take inf and nan.
_SCALAR_RANGES = {
    **{d: (-dt.iinfo(d).max if d is dt.uint8 else dt.iinfo(d).min, dt.iinfo(d).max)
       for d in (dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64)},
    **{d: (-dt.finfo(d).max, dt.finfo(d).max)
       for d in (dt.float16, dt.bfloat16, dt.float32, dt.float64)}}


def _check_bound_fits(value, d: dt.dtype):
    """A Python number (clamp bound, pow exponent) must be representable in the op's dtype."""
    bounds = _SCALAR_RANGES.get(d)
    if bounds is None or bounds[0] <= value <= bounds[1]:
        return
    if d.category == dt.FLOAT and (builtins.abs(value) == float("inf") or value != value):
        return
    raise RuntimeError(f"value cannot be converted to type {_SCALAR_T_NAMES[d]} without "
                       "overflow")


_AS_NUMBER = {dt.BOOL: False, dt.INT: 0, dt.FLOAT: 0.0, dt.COMPLEX: 0j}


def _clamp_meta(self, min=None, max=None, one_bound=False):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if self.dtype.is_complex and not (one_bound and isinstance(
            max if min is None else min, Tensor)):
        # clamp_min/clamp_max with a tensor bound are PyTorch's maximum/minimum kernels:
        # their dtype error comes after the shape checks (cpu.clamp raises it)
        raise NotImplementedError("clamp is not supported for complex types")
    if isinstance(min, complex) or isinstance(max, complex):
        # PyTorch's clamp converts a bound to double for a floating input; clamp_min/max
        # and integer inputs promote to complex first, which no clamp kernel takes
        if one_bound or self.dtype.category != dt.FLOAT:
            raise NotImplementedError("clamp is not supported for complex types")
        raise RuntimeError("value cannot be converted to type double without overflow")
    operands = [x for x in (self, min, max) if x is not None]
    if len(operands) == 3 and isinstance(min, Tensor) != isinstance(max, Tensor):
        # PyTorch's parser then picks clamp.Scalar, taking the 0-d tensor bound as a number:
        # it promotes as a Python number of its kind would; a tensor of more dims fits neither
        bound = min if isinstance(min, Tensor) else max
        if bound.dim() != 0:
            raise TypeError(
                "clamp() received an invalid combination of arguments - got a Tensor of "
                f"{bound.dim()} dims and a number as bounds, but expected either two tensors "
                "(Tensor input, Tensor min = None, Tensor max = None) or two numbers "
                "(Tensor input, Number min = None, Number max = None)")
        operands = [_AS_NUMBER[x.dtype.category] if isinstance(x, Tensor) and x is not self
                    and x.dim() == 0 else x for x in operands]
    d = common_dtype(*operands)
    for bound in (min, max):
        if bound is not None and not isinstance(bound, Tensor):
            _check_bound_fits(bound, d)
    return pointwise_spec(operands, d)


def _clamp_min_meta(self, min):
    return _clamp_meta(self, min, None, one_bound=True)


def _clamp_max_meta(self, max):
    return _clamp_meta(self, None, max, one_bound=True)


def _infinity_test_meta(name):
    def meta(self):
        if self.dtype.is_complex:
            raise RuntimeError(f"{name} does not support complex inputs.")
        return _unary_bool_meta(self)
    return meta


def _compare_meta(self, other):
    common_dtype(self, other)       # raises TypeError for operands that are not numbers
    return bool_meta(self, other)


def _square_meta(self):
    return pointwise_spec((self,), common_dtype(self, 2))


# ---- arithmetic ------------------------------------------------------------------------

add = _declare("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _add_meta,
               cpu.add, number_self=True,
               doc="input + alpha * other, broadcasting and promoting dtypes.")
sub = _declare("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _sub_meta,
               cpu.sub, aliases=("subtract",), number_self=True,
               doc="input - alpha * other, broadcasting and promoting dtypes.")
rsub = _declare("rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                _rsub_meta, cpu.rsub, method=False, inplace=False, out=False, overloads=[(
                    "rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
                    _NUMBER % "other", _rsub_meta, cpu.rsub)],
                doc="other - alpha * input (sub with the operands swapped).")
mul = _declare("mul.Tensor(Tensor self, Tensor other) -> Tensor", promoting_meta, cpu.mul,
               aliases=("multiply",), number_self=True,
               doc="input * other, broadcasting and promoting dtypes.")
div = _declare("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode=None) -> "
               "Tensor", _div_meta, cpu.div, aliases=("divide", "true_divide"),
               number_self=True, overloads=[(
                   "div.Tensor(Tensor self, Tensor other) -> Tensor", "{rounding_mode} is None",
                   lambda self, other: _div_meta(self, other, None),
                   lambda out, self, other: cpu.div(out, self, other, None))],
               doc="input / other; integers give the default float dtype unless rounding_mode "
                   "is 'trunc' or 'floor', which keep the promoted dtype.")
# The .Scalar overloads PyTorch's C++ calls by name (decompositions, composite ops): a Python
# number passed to torch.add/mul/... takes the .Tensor overload, as in PyTorch.
overload(add, "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", _add_meta,
         cpu.add, when=None)
overload(sub, "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", _sub_meta,
         cpu.sub, when=None)
overload(mul, "mul.Scalar(Tensor self, Scalar other) -> Tensor", promoting_meta, cpu.mul,
         when=None)
overload(div, "div.Scalar(Tensor self, Scalar other) -> Tensor",
         lambda self, other: _div_meta(self, other, None),
         lambda out, self, other: cpu.div(out, self, other, None), when=None)
overload(div, "div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
         _div_meta, cpu.div, when=None)
# Small same-dtype float calls skip the meta function and promotion (ops/registry.py).
add.plain_float_ufunc(np.add, 1)
sub.plain_float_ufunc(np.subtract, 1)
mul.plain_float_ufunc(np.multiply)
div.plain_float_ufunc(np.true_divide, None)
div.overload("Tensor").plain_float_ufunc(np.true_divide)
floor_divide = _declare("floor_divide(Tensor self, Tensor other) -> Tensor", promoting_meta,
                        cpu.floor_divide, number_self=True,
                        doc="input // other, rounding toward minus infinity.")
remainder = _declare("remainder.Tensor(Tensor self, Tensor other) -> Tensor", promoting_meta,
                     cpu.remainder, number_self=True, scalar="other",
                     doc="Python's modulus: the result has the sign of the divisor.")
fmod = _declare("fmod.Tensor(Tensor self, Tensor other) -> Tensor", promoting_meta, cpu.fmod,
                scalar="other",
                doc="C's fmod: the result has the sign of the dividend.")
pow = _declare("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", _pow_meta, cpu.pow,
               number_self=True, overloads=[(
                   "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
                   _NUMBER % "exponent", _pow_meta, cpu.pow), (
                   "pow.Scalar(Scalar self, Tensor exponent) -> Tensor", _NUMBER % "self",
                   _pow_meta, cpu.pow)], doc="input ** exponent, promoting dtypes.")
float_power = _declare("float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
                       _float_power_meta, cpu.float_power, number_self=True,
                       check_out=_float_power_out,
                       doc="input ** exponent computed in float64 (complex128 for complex).")
atan2 = _declare("atan2(Tensor self, Tensor other) -> Tensor",
                 _tensor_other("atan2", float_meta), cpu.atan2, aliases=("arctan2",),
                 tensor_args=("other",),
                 doc="The angle of the point (other, input), in radians.")
copysign = _declare("copysign.Tensor(Tensor self, Tensor other) -> Tensor", float_meta,
                    cpu.copysign, doc="|input| with the sign of other.")
hypot = _declare("hypot(Tensor self, Tensor other) -> Tensor",
                 _tensor_other("hypot", promoting_meta), cpu.hypot, tensor_args=("other",),
                 doc="sqrt(input**2 + other**2) without overflow.")
xlogy = _declare("xlogy.Tensor(Tensor self, Tensor other) -> Tensor", float_meta, cpu.xlogy,
                 number_self=True, overloads=[(
                     "xlogy.Scalar_Other(Tensor self, Scalar other) -> Tensor",
                     _NUMBER % "other", float_meta, cpu.xlogy)],
                 doc="input * log(other), and 0 where input is 0.")
maximum = _declare("maximum(Tensor self, Tensor other) -> Tensor", _min_max_meta("maximum"),
                   cpu.maximum, inplace=False, tensor_args=("other",),
                   doc="Elementwise maximum; nan propagates.")
minimum = _declare("minimum(Tensor self, Tensor other) -> Tensor", _min_max_meta("minimum"),
                   cpu.minimum, inplace=False, tensor_args=("other",),
                   doc="Elementwise minimum; nan propagates.")
fmax = _declare("fmax(Tensor self, Tensor other) -> Tensor", _min_max_meta("fmax"), cpu.fmax,
                inplace=False, tensor_args=("other",),
                doc="Elementwise maximum ignoring nan (nan only if both are).")
fmin = _declare("fmin(Tensor self, Tensor other) -> Tensor", _min_max_meta("fmin"), cpu.fmin,
                inplace=False, tensor_args=("other",),
                doc="Elementwise minimum ignoring nan (nan only if both are).")
lerp = _declare("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", _lerp_meta,
                cpu.lerp, check_out=_exact_out, scalar="weight", tensor_args=("end",),
                doc="input + weight * (end - input); weight is a number or a tensor.")
addcmul = _declare("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> "
                   "Tensor", _addcmul_meta, cpu.addcmul,
                   doc="input + value * tensor1 * tensor2.")
addcdiv = _declare("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> "
                   "Tensor", _addcdiv_meta, cpu.addcdiv,
                   doc="input + value * tensor1 / tensor2 (true division).")
_NUMBER_OR_NONE = "({0} is None or {0}.__class__ in _SCALARS)"
clamp = _declare("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
                 _clamp_meta, cpu.clamp, aliases=("clip",), overloads=[(
                     "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
                     f"{_NUMBER_OR_NONE.format('{min}')} and {_NUMBER_OR_NONE.format('{max}')}",
                     _clamp_meta, cpu.clamp)],
                 doc="min(max(input, min), max); bounds are numbers or tensors, nan propagates.")
clamp_min = _declare("clamp_min.Tensor(Tensor self, Tensor min) -> Tensor", _clamp_min_meta,
                     cpu.clamp_min, overloads=[(
                         "clamp_min(Tensor self, Scalar min) -> Tensor", _NUMBER % "min",
                         _clamp_min_meta, cpu.clamp_min)], doc="max(input, min).")
clamp_max = _declare("clamp_max.Tensor(Tensor self, Tensor max) -> Tensor", _clamp_max_meta,
                     cpu.clamp_max, overloads=[(
                         "clamp_max(Tensor self, Scalar max) -> Tensor", _NUMBER % "max",
                         _clamp_max_meta, cpu.clamp_max)], doc="min(input, max).")
for _decl in (clamp, clamp_min, clamp_max):       # with number bounds, out= must match exactly
    _decl.overloads[0][1].check_out = _exact_out

# ---- unary math ------------------------------------------------------------------------

_FLOAT_UNARY = {
    "exp": (), "exp2": (), "expm1": (), "log": (), "log2": (), "log10": (), "log1p": (),
    "sqrt": (), "rsqrt": (), "sin": (), "cos": (), "tan": (), "asin": ("arcsin",),
    "acos": ("arccos",), "atan": ("arctan",), "sinh": (), "cosh": (), "tanh": (),
    "asinh": ("arcsinh",), "acosh": ("arccosh",), "atanh": ("arctanh",), "sigmoid": (),
    "erf": (), "erfc": (), "erfinv": (), "lgamma": (), "digamma": (), "reciprocal": (),
}
for _name, _aliases in _FLOAT_UNARY.items():
    globals()[_name] = _declare(
        f"{_name}(Tensor self) -> Tensor", _unary_float_meta, getattr(cpu, _name),
        aliases=_aliases,
        doc=f"{_name} of each element; integer and bool inputs give the default float dtype.")

logit = _declare("logit(Tensor self, float? eps=None) -> Tensor", _unary_float_meta, cpu.logit,
                 doc="log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given.")
def _abs_inplace(spec, self):
    if self.dtype.is_complex:            # |z| is real: it cannot be stored back into z
        raise RuntimeError("In-place abs is not supported for complex tensors.")


abs = _declare("abs(Tensor self) -> Tensor", _abs_meta, cpu.abs, aliases=("absolute",),
               check_out=_exact_out, check_inplace=_abs_inplace,
               doc="|input|; complex inputs give their real dtype.")
neg = _declare("neg(Tensor self) -> Tensor", _neg_meta, cpu.neg, aliases=("negative",),
               check_out=_exact_out,
               doc="-input (not for bool tensors).")
square = _declare("square(Tensor self) -> Tensor", _square_meta, cpu.square,
                  doc="input * input (bool gives int64, as pow(input, 2) does).")
floor = _declare("floor(Tensor self) -> Tensor",
                 _real_meta("floor is not supported for complex inputs"), cpu.floor,
                 check_out=_exact_out,
                 doc="Round down; integer tensors are returned unchanged (copied).")
ceil = _declare("ceil(Tensor self) -> Tensor",
                _real_meta("ceil is not supported for complex inputs"), cpu.ceil,
                check_out=_exact_out,
                doc="Round up; integer tensors are returned unchanged (copied).")
trunc = _declare("trunc(Tensor self) -> Tensor",
                 _real_meta("trunc is not supported for complex inputs"), cpu.trunc,
                 aliases=("fix",),
                 check_out=_exact_out,
                 doc="Round toward zero; integer tensors are returned unchanged (copied).")
round = _declare("round.decimals(Tensor self, *, int? decimals=None) -> Tensor", _same_meta,
                 cpu.round, check_out=_exact_out,
                 doc="Round half to even, to `decimals` decimal places.")
frac = _declare("frac(Tensor self) -> Tensor", _same_meta, cpu.frac, check_out=_exact_out,
                doc="input - trunc(input).")
sign = _declare("sign(Tensor self) -> Tensor",
               _real_meta("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                          "Please use torch.sgn instead."), cpu.sign, check_out=_exact_out,
               doc="-1, 0 or 1 (0 for nan); bool tensors are returned unchanged.")
sgn = _declare("sgn(Tensor self) -> Tensor", _same_meta, cpu.sgn, check_out=_exact_out,
               doc="sign for real tensors; input / |input| for complex ones.")
signbit = _declare("signbit(Tensor self) -> Tensor", _unary_bool_meta, cpu.signbit,
                   inplace=False, check_out=_bool_out("signbit"),
                   doc="True where the sign bit is set (-0.0 included).")
angle = _declare("angle(Tensor self) -> Tensor", _angle_meta, cpu.angle, inplace=False,
                 doc="The argument of each element: 0 or pi for real inputs.")
complex_ = _declare("complex(Tensor real, Tensor imag) -> Tensor",
                    _complex_parts_meta("complex", "imag"), cpu.complex_, inplace=False,
                    method=False, promotes=False,
                    doc="The complex tensor real + imag * 1j (inputs broadcast).")
polar = _declare("polar(Tensor abs, Tensor angle) -> Tensor",
                 _complex_parts_meta("polar", "angle"), cpu.polar, inplace=False, method=False,
                 promotes=False, doc="The complex tensor abs * (cos(angle) + sin(angle) * 1j).")
_conj_physical = _declare("conj_physical(Tensor self) -> Tensor", _same_meta, cpu.conj_physical,
                         check_out=_exact_out, function=False, method=False,
                         doc="The complex conjugate, computed.")
nan_to_num = _declare("nan_to_num(Tensor self, float? nan=None, float? posinf=None, "
                      "float? neginf=None) -> Tensor", _same_meta, cpu.nan_to_num,
                      check_out=_nan_to_num_out,
                      doc="Replace nan, +inf and -inf (by 0 and the dtype's max and min).")

# ---- predicates --------------------------------------------------------------------------

for _name in ("isnan", "isinf", "isfinite", "isreal"):
    globals()[_name] = _declare(f"{_name}(Tensor self) -> Tensor", _unary_bool_meta,
                                getattr(cpu, _name), inplace=False, out=False,
                                doc=f"{_name} of each element, as a bool tensor.")
isposinf = _declare("isposinf(Tensor self) -> Tensor",
                    _infinity_test_meta("isposinf"), cpu.isposinf,
                    inplace=False, check_out=_bool_out("isposinf"),
                    doc="True where the element is +inf.")
isneginf = _declare("isneginf(Tensor self) -> Tensor",
                    _infinity_test_meta("isneginf"), cpu.isneginf,
                    inplace=False, check_out=_bool_out("isneginf"),
                    doc="True where the element is -inf.")

# ---- bitwise and logical -----------------------------------------------------------------

for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
              "bitwise_right_shift"):
    globals()[_name] = _declare(f"{_name}.Tensor(Tensor self, Tensor other) -> Tensor",
                                promoting_meta, getattr(cpu, _name), number_self=True,
                                scalar="other", doc=f"{_name} of integer or bool tensors.")
bitwise_not = _declare("bitwise_not(Tensor self) -> Tensor", _same_meta, cpu.bitwise_not,
                       check_out=_exact_out,
                       doc="~input: bitwise for integers, logical for bool.")
for _name in ("logical_and", "logical_or", "logical_xor"):
    globals()[_name] = _declare(f"{_name}(Tensor self, Tensor other) -> Tensor",
                                _tensor_other(_name, bool_meta), getattr(cpu, _name),
                                tensor_args=("other",),
                                doc=f"{_name} of the truth values (nonzero) of two tensors.")
logical_not = _declare("logical_not(Tensor self) -> Tensor", _unary_bool_meta, cpu.logical_not,
                       doc="True where the element is zero.")

# ---- comparisons -----------------------------------------------------------------------

_COMPARISONS = {"eq": (), "ne": ("not_equal",), "lt": ("less",), "le": ("less_equal",),
                "gt": ("greater",), "ge": ("greater_equal",)}
for _name, _aliases in _COMPARISONS.items():
    globals()[_name] = _declare(f"{_name}.Tensor(Tensor self, Tensor other) -> Tensor",
                                _compare_meta, getattr(cpu, _name), aliases=_aliases,
                                scalar="other",
                                doc=f"{_name} of the promoted operands, as a bool tensor.")
    # `mask == 0`, `x > y` on float tensors skip the meta function and promotion
    for _decl in (globals()[_name], globals()[_name].overload("Scalar")):
        _decl.plain_float_ufunc(getattr(np, _aliases[0] if _aliases else "equal"),
                                result_dtype=dt.bool)


# ---- composites --------------------------------------------------------------------------

@composite(method=True)
def positive(input):
    """input itself (not for bool tensors)."""
    if input.dtype is dt.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@composite(method=True)
def conj_physical(input, *, out=None):
    """The complex conjugate, computed; a real tensor is returned itself (without out=)."""
    if out is not None or input.dtype.is_complex:
        return _conj_physical.function(input, out=out)
    return input


def conj_physical_(input):
    """Conjugate in place; a real tensor is left as it is (its version still moves on)."""
    if input.dtype.is_complex:
        return _conj_physical.inplace(input)
    input._bump_version()
    return input


def nan_to_num_(input, nan=None, posinf=None, neginf=None):
    """Replace nan and infinities in place; integer and bool tensors are left as they are."""
    if input.dtype.category <= dt.INT:
        input._bump_version()
        return input
    return _nan_to_num_inplace(input, nan, posinf, neginf)


_nan_to_num_inplace = Tensor.nan_to_num_
export("conj_physical_", conj_physical_, method=True)
export("nan_to_num_", nan_to_num_, method=True)


def _float_power_(self, exponent):
    d = _float_power_dtype(self, exponent)
    if self.dtype is not d:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.cname} but "
                           f"the operation's result requires dtype {d.cname}")
    return _float_power_inplace(self, exponent)


_float_power_inplace = Tensor.float_power_
export("float_power_", _float_power_, method=True, function=False)


# ---- Python operators ------------------------------------------------------------------

def _operator(fn, name):
    """A binary operator: unsupported operand types give NotImplemented, so that Python
    tries the reflected operation and then raises its usual TypeError."""
    if hasattr(fn, "_schema") and name in OPERATORS_SEEN_AS_METHOD:
        return operator_method(fn, name)      # a generated method: no extra call

    def op(self, other):
        try:
            return fn(self, other)
        except TypeError:
            return NotImplemented
    op.__name__ = op.__qualname__ = getattr(fn, "__name__", "op")
    return op


def _reflected(fn):
    """`number OP tensor`: Python calls tensor.__rOP__(number), which is fn(number, tensor)."""
    def op(self, other):
        return fn(other, self)
    return op


def _rtruediv(self, other):
    # PyTorch computes `number / t` as t.reciprocal() * number
    return self.reciprocal() * other


def _invert(self):
    if self.dtype.category > dt.INT:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return self.bitwise_not()


_T = Tensor
_OPERATORS = {
    "__add__": _T.add, "__radd__": _T.add, "__iadd__": _T.add_,
    "__sub__": _T.sub, "__rsub__": rsub.function, "__isub__": _T.sub_,
    "__mul__": _T.mul, "__rmul__": _T.mul, "__imul__": _T.mul_,
    "__truediv__": _T.div, "__rtruediv__": _rtruediv, "__itruediv__": _T.div_,
    "__floordiv__": _T.floor_divide, "__ifloordiv__": _T.floor_divide_,
    "__rfloordiv__": _reflected(floor_divide.function),
    "__mod__": _T.remainder, "__imod__": _T.remainder_,
    "__rmod__": _reflected(remainder.function),
    "__pow__": _T.pow, "__ipow__": _T.pow_, "__rpow__": _reflected(pow.function),
    "__and__": _T.bitwise_and, "__rand__": _T.bitwise_and, "__iand__": _T.bitwise_and_,
    "__or__": _T.bitwise_or, "__ror__": _T.bitwise_or, "__ior__": _T.bitwise_or_,
    "__xor__": _T.bitwise_xor, "__rxor__": _T.bitwise_xor, "__ixor__": _T.bitwise_xor_,
    "__lshift__": _T.bitwise_left_shift, "__ilshift__": _T.bitwise_left_shift_,
    "__rlshift__": _reflected(bitwise_left_shift.function),
    "__rshift__": _T.bitwise_right_shift, "__irshift__": _T.bitwise_right_shift_,
    "__rrshift__": _reflected(bitwise_right_shift.function),
    "__eq__": _T.eq, "__ne__": _T.ne, "__lt__": _T.lt, "__le__": _T.le, "__gt__": _T.gt,
    "__ge__": _T.ge,
}
for _name, _fn in _OPERATORS.items():
    export(_name, _operator(_fn, _name), method=True, function=False)
for _name, _fn in (("__neg__", _T.neg), ("__pos__", positive), ("__abs__", _T.abs),
                   ("__invert__", _invert)):
    export(_name, _fn, method=True, function=False)
Tensor.__hash__ = object.__hash__     # defining __eq__ must not make tensors unhashable

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(acos, asin, cosh, erfinv, exp, expm1, log, log10, log1p, log2, reciprocal, rsqrt,
                sinh, tan, pow, pow.overload("Scalar"), pow.overload("Tensor_Scalar"), cuda=FP32)
autocast_policy(addcdiv, addcmul, atan2, cuda=PROMOTE)
autocast_policy(polar, cpu=FP32)
