"""CPU kernels for pointwise ops, written over NumPy ufuncs.

A kernel fills a preallocated output (`out`) whose dtype may differ from the dtype the op
computes in (in-place and `out=` variants downcast within a category). Inputs reach NumPy
as PyTorch's TensorIterator hands them to its kernels: Python numbers converted to the
op's dtype (integers wrap as a C cast does), tensors of another dtype rounded to float16 or
bfloat16 first when that is the op's dtype, and float16/bfloat16 arithmetic done in
float32 (`opmath`) and rounded once when stored.

The kernels also run on CuPy arrays (CUDA tensors, ops/gpu_kernels.py): NumPy's functions
dispatch to CuPy, operands that are not arrays are NumPy scalars (CuPy takes those beside
device arrays, not host arrays), and ufunc keywords stay within what CuPy's ufuncs accept
(out, dtype, casting: no `where=` or `signature=` on a device array).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ...core import dtype as dt
from ...core.tensor import Tensor
from ...core.promotion import common_dtype, float_dtype, opmath
from ..arrays import round_through
from . import native, parallel, special

# ---- dtype groups a kernel supports (PyTorch's AT_DISPATCH lists) -----------------------

INTS = frozenset((dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64))
INTEGRAL = INTS | {dt.bool}
FLOATING = frozenset((dt.float16, dt.bfloat16, dt.float32, dt.float64))
COMPLEX = frozenset((dt.complex64, dt.complex128))
REAL = INTEGRAL | FLOATING
ALL = REAL | COMPLEX
REDUCED = frozenset((dt.float16, dt.bfloat16))
# the partial dtypes' few loops (PyTorch's "barebones" unsigned and float8 support)
UNSIGNED = frozenset((dt.uint16, dt.uint32, dt.uint64))
FLOAT8 = frozenset(dt.FLOAT8_DTYPES)
EQUALITY = ALL | UNSIGNED | FLOAT8 | {dt.complex32}    # eq and ne


def not_implemented(kernel_name: str, d: dt.dtype) -> NotImplementedError:
    """PyTorch's error when a kernel has no loop for a dtype."""
    return NotImplementedError(f'"{kernel_name}" not implemented for \'{d.cname}\'')


def check_dtype(kernel_name: str, d: dt.dtype, allowed) -> None:
    if d not in allowed:
        raise not_implemented(kernel_name, d)


# ---- operands --------------------------------------------------------------------------

def scalar(value, d: dt.dtype):
    """A Python number as a NumPy scalar of dtype d, converted as C++ converts it."""
    if d.category == dt.INT:
        return np.int64(value).astype(d.np)      # wraps: 1000 -> 232 for uint8
    if d is dt.complex32:
        return np.complex64(value)
    return d.np.type(value)


def opmath_scalar(value, d: dt.dtype):
    """A scalar argument (alpha, value=) in the type d computes in: float32 for 16-bit floats."""
    return scalar(value, d) if d.category <= dt.INT else opmath(d).type(value)


def operand(x, d: dt.dtype):
    """The NumPy operand for a tensor or a Python number in an op computing in dtype d."""
    if isinstance(x, Tensor):
        a = x._array()
        if x.dtype is not d and d in REDUCED:
            a = a.astype(d.np)                    # TensorIterator casts to the common dtype
        return a
    return scalar(x, d)


def operands(xs, d: dt.dtype) -> list:
    return [x._array() if x.__class__ is Tensor and x.dtype is d else operand(x, d)
            for x in xs]


def computed(xs, d: dt.dtype) -> list:
    """Operands in the type d computes in, for kernels made of several NumPy calls (copies
    only the operands whose dtype differs; integers wrap as C casts do): arrays of the
    tensors' array module, NumPy scalars for numbers and 0-dim CPU tensors."""
    cd = opmath(d)
    result = []
    for x in xs:
        a = operand(x, d)
        result.append(np.asarray(a, cd) if a.__class__ is np.ndarray and a.ndim else
                      as_type(a, cd))
    return result


def as_type(a, cd):
    """A NumPy/CuPy array or NumPy scalar as dtype cd (no copy when it already is one); a
    0-d NumPy array becomes a NumPy scalar, which CuPy also accepts beside device arrays."""
    if a.__class__ is np.ndarray:
        return a.astype(cd, copy=False) if a.ndim else a.astype(cd)[()]
    if a.dtype == cd:
        return a
    return cd.type(a) if isinstance(a, np.generic) else a.astype(cd)


def _exact_second(xs, d: dt.dtype) -> list:
    """Operands of mul/div: a CPU-scalar second operand of a float16/bfloat16 op keeps its
    float32 value instead of being rounded to the op's dtype (PyTorch's
    `original_scalar_value`)."""
    args = operands(xs, d)
    if d in REDUCED:
        b = xs[1]
        if not isinstance(b, Tensor):
            args[1] = np.float32(b)
        elif b.dim() == 0:
            args[1] = b._array().astype(np.float32)
    return args


def assign(out: Tensor, result) -> None:
    """Store a computed array into the output, casting to its dtype."""
    np.copyto(out._array(), result, casting="unsafe")


def _check_divisor(b, out: Tensor) -> None:
    """Integer division by zero raises, as in PyTorch, unless there is nothing to compute."""
    if out.numel() and not np.all(b):
        raise RuntimeError("ZeroDivisionError")


# ---- kernel factories ------------------------------------------------------------------

def ufunc_kernel(ufunc, dtype_of=common_dtype, allowed=ALL, name=None):
    """out = ufunc(*inputs), computed in `dtype_of(*inputs)` (in float32 for 16-bit floats)."""
    kname = name or ufunc.__name__

    def kernel(out, *xs):
        d = dtype_of(*xs)
        check_dtype(kname, d, allowed)
        if _same_dtype(out, xs, d):
            parallel.ufunc(ufunc, operands(xs, d), out._array())
        else:
            parallel.ufunc(ufunc, operands(xs, d), out._array(), dtype=opmath(d),
                           casting="unsafe")
    kernel.__name__ = kernel.__qualname__ = f"cpu_{kname}"
    return kernel


def float_kernel(ufunc, allowed=ALL, name=None):
    """A float function: integer and bool inputs compute in the default float dtype."""
    return ufunc_kernel(ufunc, float_dtype, allowed, name)


def special_kernel(fn, name):
    """A function from `special` (computed in float64, rounded to the output)."""
    def kernel(out, self):
        d = float_dtype(self)
        check_dtype(name, d, REAL | FLOATING)
        assign(out, fn(operand(self, d)))
    kernel.__name__ = kernel.__qualname__ = f"cpu_{fn.__name__}"
    return kernel


def compare_kernel(ufunc, allowed=ALL, name=None):
    """A comparison: inputs converted to their common dtype, the result is bool."""
    kname = name or ufunc.__name__

    def kernel(out, self, other):
        d = common_dtype(self, other)
        check_dtype(kname, d, allowed)
        cd = opmath(d)
        o = out._array()
        if d.family is not None:                 # complex32, float8: compared as values
            args = [dt.readable_array(a) if a.__class__ is np.ndarray else a
                    for a in operands((self, other), d)]
            ufunc(*args, out=o)
        elif o.__class__ is np.ndarray:
            parallel.ufunc(ufunc, operands((self, other), d), o,
                           signature=(cd, cd, np.bool_), casting="unsafe")
        else:                           # CuPy's ufuncs take no signature: cast the operands
            ufunc(*computed((self, other), d), out=o)
    kernel.__name__ = kernel.__qualname__ = f"cpu_{kname}"
    return kernel


def _truth(x):
    """Truth values of a tensor (nonzero; nan counts as true)."""
    return x._array().astype(np.bool_, copy=False)


def logical_kernel(ufunc):
    """logical_and/or/xor: any dtypes, compared against zero; the result is bool."""
    def kernel(out, self, other):
        ufunc(_truth(self), _truth(other), out=out._array(), casting="unsafe")
    kernel.__name__ = kernel.__qualname__ = f"cpu_{ufunc.__name__}"
    return kernel


def _check_alpha(d: dt.dtype, alpha) -> None:
    if isinstance(alpha, bool):
        if d is not dt.bool:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, (float, complex)) and d.category < dt.FLOAT:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    elif isinstance(alpha, complex) and d.category < dt.COMPLEX:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex"
                           " number.")


def _scaled(b, alpha, d):
    if alpha == 1 and not isinstance(alpha, bool):
        return b
    _check_alpha(d, alpha)
    return np.multiply(b, opmath_scalar(alpha, d), dtype=opmath(d), casting="unsafe")


# ---- arithmetic ------------------------------------------------------------------------

def _same_dtype(out, xs, d) -> bool:
    """Every tensor involved already has the op's dtype (not a 16-bit float): NumPy then
    computes in it without being told, which saves the casting machinery."""
    if out.dtype is not d or d in REDUCED:
        return False
    for x in xs:
        if x.__class__ is Tensor and x.dtype is not d:
            return False
    return True


def add(out, self, other, alpha=1):
    d = common_dtype(self, other)
    a, b = operands((self, other), d)
    if alpha == 1 and not isinstance(alpha, bool) and _same_dtype(out, (self, other), d):
        parallel.ufunc(np.add, (a, b), out._array())
    else:
        parallel.ufunc(np.add, (a, _scaled(b, alpha, d)), out._array(), dtype=opmath(d),
                       casting="unsafe")


def sub(out, self, other, alpha=1):
    d = common_dtype(self, other)
    a, b = operands((self, other), d)
    if alpha == 1 and not isinstance(alpha, bool) and _same_dtype(out, (self, other), d):
        parallel.ufunc(np.subtract, (a, b), out._array())
    else:
        parallel.ufunc(np.subtract, (a, _scaled(b, alpha, d)), out._array(),
                       dtype=opmath(d), casting="unsafe")


def rsub(out, self, other, alpha=1):
    sub(out, other, self, alpha)


def mul(out, self, other):
    d = common_dtype(self, other)
    parallel.ufunc(np.multiply, _exact_second((self, other), d), out._array(),
                   dtype=opmath(d), casting="unsafe")


def _trunc_divide_ints(a, b):
    """C's integer division (toward zero) from NumPy's floor division."""
    q = np.floor_divide(a, b)
    inexact = np.not_equal(np.remainder(a, b), 0)
    return q + (inexact & (np.less(a, 0) != np.less(b, 0))).astype(q.dtype)


def div(out, self, other, rounding_mode=None, *, steps_in=None):
    """`steps_in`: the dtype the operands stand for when they arrive widened (bfloat16 on a
    GPU, ops/gpu_kernels.py), whose rounding the steps of a rounded division follow."""
    if rounding_mode is None:
        d = float_dtype(self, other)
        parallel.ufunc(np.true_divide, _exact_second((self, other), d), out._array(),
                       dtype=opmath(d), casting="unsafe")
        return
    d = common_dtype(self, other)
    name = "div_trunc_cpu" if rounding_mode == "trunc" else "div_floor_cpu"
    check_dtype(name, d, REAL - {dt.bool})
    cd = opmath(d)
    if d.category == dt.INT:
        a, b = computed((self, other), d)
        _check_divisor(b, out)
        if rounding_mode == "floor":
            np.floor_divide(a, b, out=out._array(), casting="unsafe")
        else:
            assign(out, _trunc_divide_ints(a, b))
        return
    a, b = _exact_second((self, other), d)
    # A float16/bfloat16 division of two tensors: PyTorch's kernels compute in the tensors'
    # own dtype, rounding between steps (a CPU-scalar divisor keeps its float32 value).
    steps = steps_in or d
    stepwise = steps in REDUCED and isinstance(other, Tensor) and other.dim()
    if rounding_mode == "trunc":
        q = np.true_divide(a, b, dtype=cd)
        assign(out, np.trunc(round_through(q, steps) if stepwise else q))
    elif stepwise and steps is dt.bfloat16:
        assign(out, _bfloat16_floor_divide(as_type(a, cd), as_type(b, cd)))
    else:
        # NumPy's float floor_divide is Python's algorithm, which PyTorch also uses
        np.floor_divide(a, b, out=out._array(), dtype=cd, casting="unsafe")


div.takes_steps_in = True


def _bfloat16_floor_divide(a, b):
    """c10's div_floor_floating over float32 values of bfloat16 tensors, each step rounded to
    bfloat16 as PyTorch's BFloat16 arithmetic rounds it: -376 // 3.125 is -122 there, where
    the exact floor of -120.32 is -121. (float16 rounds differently per CPU vector path in
    PyTorch, and takes the exact algorithm here.)"""
    def r(x):
        return round_through(x, dt.bfloat16)
    with np.errstate(divide="ignore", invalid="ignore"):
        mod = r(np.fmod(a, b))
        q = r(np.true_divide(r(np.subtract(a, mod)), b))
        fix = np.not_equal(mod, 0) & (np.less(b, 0) != np.less(mod, 0))
        q = np.where(fix, r(np.subtract(q, 1)), q)
        floor = np.floor(q)
        floor = np.where(np.subtract(q, floor) > 0.5, floor + 1, floor)
        zero = np.copysign(np.zeros_like(q), np.true_divide(a, b))
        result = np.where(np.not_equal(q, 0), floor, zero)
        return np.where(np.equal(b, 0), np.true_divide(a, b), result)


def floor_divide(out, self, other):
    div(out, self, other, "floor")


def remainder(out, self, other):
    d = common_dtype(self, other)
    check_dtype("remainder_cpu", d, REAL - {dt.bool})
    a, b = computed((self, other), d)
    if d.category == dt.INT:
        _check_divisor(b, out)
        np.remainder(a, b, out=out._array(), casting="unsafe")
        return
    # fmod, moved into the divisor's sign (keeps fmod's signed zero, unlike NumPy)
    m = np.fmod(a, b)
    fix = np.not_equal(m, 0) & (np.less(b, 0) != np.less(m, 0))
    if m.__class__ is np.ndarray:
        np.add(m, b, out=m, where=fix)
    else:                               # a scalar, or a CuPy array (ufuncs without where=)
        m = np.where(fix, m + b, m)
    assign(out, m)


def fmod(out, self, other):
    d = common_dtype(self, other)
    check_dtype("fmod_cpu", d, REAL - {dt.bool})
    a, b = computed((self, other), d)
    if d.category == dt.INT:
        _check_divisor(b, out)
    np.fmod(a, b, out=out._array(), casting="unsafe")


def _int_power(a, b):
    """Integer power with PyTorch's answers for negative exponents (0 unless base is +-1)."""
    negative = np.less(b, 0)
    if not negative.any():
        return np.power(a, b)
    r = np.power(a, np.where(negative, 0, b).astype(b.dtype))
    odd = np.not_equal(np.remainder(b, 2), 0)
    base_one = np.where(np.equal(a, 1), 1, np.where(np.equal(a, -1), np.where(odd, -1, 1), 0))
    return np.where(negative, base_one, r)


_SPECIALISED = (dt.float32, dt.float64, dt.bfloat16)
_SPECIAL_EXPONENTS = (0.5, -0.5, -1, 2, 3, -2)


def _special_power(x, exponent, d: dt.dtype):
    """x ** exponent as PyTorch's kernel computes it for a Python-number exponent: sqrt,
    1 / sqrt, 1 / x, x * x, x * x * x and 1 / (x * x), each step rounded to d (bfloat16
    steps in float32, rounded to bfloat16 where PyTorch's own arithmetic rounds). This
    differs from a correctly rounded pow in the last bit (two roundings) and at -0.0 and
    -inf, where 1 / sqrt gives -inf and nan."""
    cd = np.float32 if d is dt.bfloat16 else d.np.type
    x = x.astype(cd, copy=False)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if exponent == 0.5:
            return np.sqrt(x)
        if exponent == -0.5:
            return np.divide(cd(1), np.sqrt(x))
        if exponent == -1:
            return np.divide(cd(1), x)
        square = x * x
        if exponent == 2:
            return square
        if d is dt.bfloat16:
            square = square.astype(d.np).astype(cd)
        return square * x if exponent == 3 else np.divide(cd(1), square)


def _product_power_into(out: Tensor, self: Tensor, exponent, d: dt.dtype) -> bool:
    """x * x or x * x * x written straight into `out` (float32/float64 of the input's dtype):
    the same products as _special_power without its temporaries and copy (minGPT's GELU
    input, 135K elements: x ** 3 56 -> 45 us). False where it does not apply: other exponents,
    bfloat16, another output dtype, or an output overlapping the input other than exactly
    (pow_)."""
    if exponent not in (2, 3) or d is dt.bfloat16:
        return False
    x, o = self._array(), out._array()
    if o.__class__ is not np.ndarray or o.dtype != x.dtype or o.dtype != d.np or \
            o.shape != x.shape:
        return False
    in_place = np.may_share_memory(o, x)
    if in_place and o.__array_interface__ != x.__array_interface__:
        return False
    if exponent == 2:
        np.multiply(x, x, out=o)
    elif in_place:                                    # x is overwritten: square it apart
        np.multiply(x * x, x, out=o)
    else:
        np.multiply(x, x, out=o)
        np.multiply(o, x, out=o)
    return True


def pow(out, self, exponent):
    if not isinstance(exponent, Tensor) and isinstance(self, Tensor):
        if exponent == 0:
            assign(out, 1)                      # x ** 0 is 1 for every dtype, nan included
            return
        if exponent == 1:
            assign(out, self._array())
            return
    if not isinstance(self, (Tensor, bool)) and self == 1:
        assign(out, 1)
        return
    d = common_dtype(self, exponent)
    check_dtype("pow", d, ALL - {dt.bool})
    if d in _SPECIALISED and isinstance(self, Tensor) and not isinstance(exponent, Tensor) \
            and exponent in _SPECIAL_EXPONENTS:
        if not _product_power_into(out, self, exponent, d):
            assign(out, _special_power(self._array(), exponent, d))
    elif d.category == dt.INT:
        assign(out, _int_power(*computed((self, exponent), d)))
    else:
        base, power = operands((self, exponent), d)
        result = out._array()
        # NumPy takes a scalar 0.5 power as sqrt; C's pow, PyTorch's here, gives +0 at -0
        # and +inf at -inf (read before the power is written: `out` may be `self`, pow_)
        as_c_sqrt = d.category == dt.FLOAT and np.ndim(power) == 0 and power == 0.5
        minus_inf = np.isneginf(base) if as_c_sqrt else None
        as_cpow = d in COMPLEX and (isinstance(exponent, Tensor)
                                    or exponent not in _COMPLEX_POW_SHORTCUTS)
        if as_cpow and np.may_share_memory(base, result):
            base = base.copy()
        np.power(base, power, out=result, dtype=opmath(d), casting="unsafe")
        if as_cpow:
            _cpow_at_zero(out, base, power)
        elif as_c_sqrt:
            np.copyto(result, 0, where=result == 0)
            np.copyto(result, np.inf, where=minus_inf)


# Scalar exponents PyTorch's complex kernel computes as x * x, x * x * x and sqrt(x): at a
# zero base NumPy's power agrees with those (0j); other exponents give cpow's answer there.
_COMPLEX_POW_SHORTCUTS = (2, 3, 0.5)


def _cpow_at_zero(out: Tensor, base, exponent) -> None:
    """PyTorch's complex pow is C's cpow, exp(exponent * log(base)). At a zero base that is
    nan for a zero exponent, inf+nanj for a negative real part and -0j for a positive one,
    where NumPy special-cases 1, nan and 0j; elsewhere the two agree to rounding."""
    zero = np.equal(base, 0)
    if not zero.any():
        return
    with np.errstate(all="ignore"):
        cpow = np.exp(np.multiply(exponent, np.log(base)))
    np.copyto(out._array(), cpow, casting="unsafe",
              where=np.broadcast_to(zero, out._array().shape))


def float_power(out, self, exponent):
    cd = np.complex128 if any(isinstance(x, complex) or getattr(x, "dtype", None) in COMPLEX
                              for x in (self, exponent)) else np.float64
    args = [x._array() if isinstance(x, Tensor) else x for x in (self, exponent)]
    np.power(*args, out=out._array(), dtype=cd, casting="unsafe")


def xlogy(out, self, other):
    d = float_dtype(self, other)
    check_dtype("xlogy_cpu", d, REAL)
    cd = opmath(d)
    x, y = operands((self, other), d)
    r = np.multiply(x, np.log(y, dtype=cd), dtype=cd)
    zero = np.equal(x, 0) & ~np.isnan(as_type(y, cd))     # 0 * log(y) is 0 unless y is nan
    assign(out, r)
    np.copyto(out._array(), 0, where=zero)


def lerp(out, self, end, weight):
    d = self.dtype
    name = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
    check_dtype(name, d, FLOATING | COMPLEX)
    cd = opmath(d)
    s, e = (x._array().astype(cd, copy=False) for x in (self, end))
    w = weight._array().astype(cd) if isinstance(weight, Tensor) else cd.type(weight)
    diff = e - s
    small = np.abs(w) < 0.5
    assign(out, np.where(small, s + w * diff, e - diff * (1 - w)))


def addcmul(out, self, tensor1, tensor2, value=1):
    d = common_dtype(self, tensor1, tensor2)
    check_dtype("addcmul_cpu_out", d, ALL - {dt.bool})
    s, t1, t2 = computed((self, tensor1, tensor2), d)
    np.add(s, opmath_scalar(value, d) * t1 * t2, out=out._array(), casting="unsafe")


def addcdiv(out, self, tensor1, tensor2, value=1):
    d = common_dtype(self, tensor1, tensor2)
    s, t1, t2 = computed((self, tensor1, tensor2), d)
    np.add(s, opmath_scalar(value, d) * t1 / t2, out=out._array(), casting="unsafe")


# ---- min / max / clamp -----------------------------------------------------------------

def _check_clamp_dtype(d, min, max):
    """PyTorch has no complex clamp loops, and bool ones only for a single tensor bound."""
    scalar_bound = any(b is not None and not isinstance(b, Tensor) for b in (min, max))
    both = min is not None and max is not None
    if scalar_bound or both:
        which = "" if both else ("_min" if max is None else "_max")
        raise not_implemented(f"clamp{which}{'_scalar' if scalar_bound else ''}_cpu", d)
    if d in COMPLEX:
        raise not_implemented("maximum_cpu" if max is None else "minimum_cpu", d)


def clamp(out, self, min=None, max=None):
    if _clamp_native(out, self, min, max):
        return
    if min is not None and max is not None and isinstance(min, Tensor) != isinstance(max, Tensor):
        # a 0-d tensor bound beside a number is taken as a number (PyTorch's clamp.Scalar)
        min, max = (b.item() if isinstance(b, Tensor) else b for b in (min, max))
    xs = [x for x in (self, min, max) if x is not None]
    d = common_dtype(*xs)
    if d is dt.bool or d in COMPLEX:
        _check_clamp_dtype(d, min, max)
    r, *bounds = computed(xs, d)
    if min is not None:
        r = _bounded(np.maximum, r, bounds.pop(0))
    if max is not None:
        r = _bounded(np.minimum, r, bounds.pop(0))
    assign(out, r)


def _plain_bound(b) -> bool:
    """A clamp bound the C kernel takes as a double exactly: none, a float that is not NaN,
    an int within 2**53."""
    return b is None or (b.__class__ is float and b == b) or (
        b.__class__ is int and -2 ** 53 <= b <= 2 ** 53)


def _clamp_native(out, self, lo, hi) -> bool:
    """clamp of a dense float32/float64 tensor between numbers (not NaN) by the C kernel,
    with the semantics below: one pass where the NumPy form makes four to six, each with
    an array of its own (16K float32 elements between 0 and 1: 34 -> 8 us)."""
    if (self.__class__ is not Tensor or out.dtype is not self.dtype
            or not _plain_bound(lo) or not _plain_bound(hi)):
        return False
    return clamp_arrays_native(self._array(), out._array(), -math.inf if lo is None else lo,
                               math.inf if hi is None else hi)


def clamp_arrays_native(x, o, lo: float, hi: float) -> bool:
    """o = x clamped to [lo, hi] (numbers, not NaN) by native/activation.c's clamp, where x
    and o are dense float32/float64 arrays of one shape; False where it does not apply."""
    if not native.dense(x, o) or o.shape != x.shape:
        return False
    fn = native.function("activation", "clamp_" + native.suffix(x), "nppddi")
    if fn is None:
        return False
    fn(x.size, native.pointer(x), native.pointer(o), lo, hi, native.threads(x.size))
    return True


def _bounded(ufunc, x, bound):
    """maximum/minimum keeping x where it equals the bound, as PyTorch's `x < min ? min : x`:
    -0.0 clamped at a bound 0 stays -0.0 (NumPy's maximum may give the bound's zero; other
    ties are the same value)."""
    r = ufunc(x, bound)
    if np.any(np.equal(bound, 0)):
        r = np.where(np.equal(x, bound), x, r)
    return r


def clamp_min(out, self, min):
    clamp(out, self, min, None)


def clamp_max(out, self, max):
    clamp(out, self, None, max)


# ---- unary -----------------------------------------------------------------------------

def abs(out, self):
    d = self.dtype
    check_dtype("abs_cpu", d, (ALL | FLOAT8) - {dt.bool})
    if d in COMPLEX:
        np.absolute(self._array(), out=out._array(), casting="unsafe")
    else:
        np.absolute(self._array(), out=out._array(), dtype=opmath(d), casting="unsafe")


def _integer_copy(name, fn):
    """floor/ceil/trunc: integers are returned unchanged, floats go through `fn`."""
    def kernel(out, self):
        d = self.dtype
        if d in COMPLEX:
            raise NotImplementedError(f"{name} is not supported for complex inputs")
        check_dtype(f"{name}_vml_cpu", d, (REAL | UNSIGNED) - {dt.bool})
        if d in INTS or d in UNSIGNED:
            assign(out, self._array())
        else:
            fn(self._array(), out=out._array(), dtype=opmath(d), casting="unsafe")
    kernel.__name__ = kernel.__qualname__ = f"cpu_{name}"
    return kernel


floor = _integer_copy("floor", np.floor)
ceil = _integer_copy("ceil", np.ceil)
trunc = _integer_copy("trunc", np.trunc)


def round(out, self, decimals=None):
    d = self.dtype
    if decimals:
        check_dtype("round_cpu", d, FLOATING)
        cd = opmath(d)
        ten = cd.type(10.0 ** builtins.abs(decimals))
        a = self._array().astype(cd, copy=False)
        if decimals < 0:
            assign(out, np.rint(a / ten) * ten)
        else:
            assign(out, np.rint(a * ten) / ten)
        return
    check_dtype("round_vml_cpu", d, FLOATING if decimals == 0 else (REAL | UNSIGNED) - {dt.bool})
    if d in INTS or d in UNSIGNED:
        assign(out, self._array())
    else:
        np.rint(self._array(), out=out._array(), dtype=opmath(d), casting="unsafe")


def frac(out, self):
    d = self.dtype
    check_dtype("frac_cpu", d, FLOATING)
    cd = opmath(d)
    a = self._array().astype(cd, copy=False)
    assign(out, a - np.trunc(a))


def sign(out, self):
    d = self.dtype
    if d in COMPLEX:
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead.")
    if d is dt.bool:
        assign(out, self._array())
        return
    a = self._array()
    # (0 < x) - (x < 0): 0 for nan and for -0.0, as PyTorch computes it
    np.subtract(np.greater(a, 0), np.less(a, 0), out=out._array(), dtype=opmath(d),
                casting="unsafe")


def sgn(out, self):
    if self.dtype not in COMPLEX:
        sign(out, self)
        return
    a = self._array()
    mag = np.abs(a)
    assign(out, np.where(mag == 0, 0, a / np.where(mag == 0, 1, mag)))


def signbit(out, self):
    d = self.dtype
    if d in COMPLEX:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    a = self._array()
    assign(out, np.signbit(a) if d in FLOATING else np.less(a, 0))


def rsqrt(out, self):
    d = float_dtype(self)
    cd = opmath(d)
    np.true_divide(1, np.sqrt(operand(self, d), dtype=cd), out=out._array(), dtype=cd,
                   casting="unsafe")


def sigmoid(out, self):
    d = float_dtype(self)
    cd = opmath(d)
    e = np.exp(np.negative(operand(self, d), dtype=cd))
    np.true_divide(1, np.add(1, e, dtype=cd), out=out._array(), dtype=cd, casting="unsafe")


def logit(out, self, eps=None):
    d = float_dtype(self)
    check_dtype("logit_cpu", d, REAL)
    cd = opmath(d)
    x = as_type(operand(self, d), cd)
    if eps is not None:
        x = np.clip(x, cd.type(eps), cd.type(1 - eps))
    assign(out, np.log(x / (1 - x)))


def square(out, self):
    d = common_dtype(self, 2)
    cd = opmath(d)
    a = operand(self, d)
    np.multiply(a, a, out=out._array(), dtype=cd, casting="unsafe")


def complex_(out, real, imag):
    o = out._array()
    if out.dtype is dt.complex32:                # two float16 fields, not a NumPy complex
        np.copyto(o["real"], real._array())
        np.copyto(o["imag"], imag._array())
        return
    np.copyto(o.real, real._array())
    np.copyto(o.imag, imag._array())


def polar(out, abs, angle):
    o = out._array()
    r, t = abs._array(), angle._array()
    np.copyto(o.real, r * np.cos(t))
    np.copyto(o.imag, r * np.sin(t))


def angle(out, self):
    if self.dtype in COMPLEX:
        assign(out, np.angle(self._array()))
        return
    d = float_dtype(self)
    a = as_type(operand(self, d), opmath(d))
    assign(out, np.where(np.isnan(a), a, np.where(a < 0, np.pi, 0)))


def conj_physical(out, self):
    np.conjugate(self._array(), out=out._array(), casting="unsafe")


def nan_to_num(out, self, nan=None, posinf=None, neginf=None):
    d = self.dtype
    a = self._array()
    if d in COMPLEX:
        assign(out, np.nan_to_num(a, nan=0.0 if nan is None else nan, posinf=posinf,
                                  neginf=neginf))
        return
    if d not in FLOATING:
        assign(out, a)
        return
    info = dt.finfo(d)
    to = d.np.type
    r = np.where(np.isnan(a), to(0.0 if nan is None else nan), a)
    r = np.where(np.isposinf(a), to(info.max if posinf is None else posinf), r)
    r = np.where(np.isneginf(a), to(info.min if neginf is None else neginf), r)
    assign(out, r)


def bitwise_not(out, self):
    check_dtype("bitwise_not_cpu", self.dtype, INTEGRAL)
    np.invert(self._array(), out=out._array(), casting="unsafe")


def logical_not(out, self):
    np.logical_not(_truth(self), out=out._array(), casting="unsafe")


def _float_test(fn, ints):
    """isnan/isinf/isfinite: a float test; integers and bool give the constant `ints`."""
    def kernel(out, self):
        if self.dtype in FLOATING or self.dtype in COMPLEX:
            assign(out, fn(self._array()))
        else:
            assign(out, ints)
    kernel.__name__ = kernel.__qualname__ = f"cpu_{fn.__name__}"
    return kernel


isnan = _float_test(np.isnan, False)
isinf = _float_test(np.isinf, False)
isfinite = _float_test(np.isfinite, True)
isposinf = _float_test(np.isposinf, False)
isneginf = _float_test(np.isneginf, False)


def isreal(out, self):
    assign(out, np.equal(self._array().imag, 0) if self.dtype in COMPLEX else True)


# ---- the table the op declarations read -----------------------------------------------

exp = float_kernel(np.exp)
exp2 = float_kernel(np.exp2)
expm1 = float_kernel(np.expm1)
log = float_kernel(np.log)
log2 = float_kernel(np.log2)
log10 = float_kernel(np.log10)
log1p = float_kernel(np.log1p)
sqrt = float_kernel(np.sqrt)
sin = float_kernel(np.sin)
cos = float_kernel(np.cos)
tan = float_kernel(np.tan)
asin = float_kernel(np.arcsin)
acos = float_kernel(np.arccos)
atan = float_kernel(np.arctan)
sinh = float_kernel(np.sinh)
cosh = float_kernel(np.cosh)
tanh = float_kernel(np.tanh)
asinh = float_kernel(np.arcsinh)
acosh = float_kernel(np.arccosh)
atanh = float_kernel(np.arctanh)
reciprocal = float_kernel(np.reciprocal)
erf = special_kernel(special.erf, "erf_vml_cpu")
erfc = special_kernel(special.erfc, "erfc_vml_cpu")
erfinv = special_kernel(special.erfinv, "erfinv_vml_cpu")
lgamma = special_kernel(special.lgamma, "lgamma_vml_cpu")
digamma = special_kernel(special.digamma, "digamma")


def _negative(a, out=None, **kwargs):
    """np.negative, except that a strided input is first made contiguous: NumPy 2.x's
    negative loop writes the wrong elements when both operands are strided with some byte
    strides (float32 every 4th element, float64 every 8th)."""
    if a.__class__ is np.ndarray and a.ndim and not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return np.negative(a, out=out, **kwargs)


_negative.__name__ = "negative"
neg = ufunc_kernel(_negative)

atan2 = float_kernel(np.arctan2, REAL, "atan2_cpu")
copysign = float_kernel(np.copysign, REAL, "copysign_cpu")
hypot = ufunc_kernel(np.hypot, allowed=FLOATING, name="hypot_cpu")
maximum = ufunc_kernel(np.maximum, allowed=REAL)
minimum = ufunc_kernel(np.minimum, allowed=REAL)
fmax = ufunc_kernel(np.fmax, allowed=REAL)
fmin = ufunc_kernel(np.fmin, allowed=REAL)
bitwise_and = ufunc_kernel(np.bitwise_and, allowed=INTEGRAL | UNSIGNED,
                           name="bitwise_and_cpu")
bitwise_or = ufunc_kernel(np.bitwise_or, allowed=INTEGRAL | UNSIGNED, name="bitwise_or_cpu")
bitwise_xor = ufunc_kernel(np.bitwise_xor, allowed=INTEGRAL | UNSIGNED,
                           name="bitwise_xor_cpu")
bitwise_left_shift = ufunc_kernel(np.left_shift, allowed=INTS, name="lshift_cpu")
bitwise_right_shift = ufunc_kernel(np.right_shift, allowed=INTS, name="rshift_cpu")
logical_and = logical_kernel(np.logical_and)
logical_or = logical_kernel(np.logical_or)
logical_xor = logical_kernel(np.logical_xor)
eq = compare_kernel(np.equal, EQUALITY, "eq_cpu")
ne = compare_kernel(np.not_equal, EQUALITY, "ne_cpu")
lt = compare_kernel(np.less, REAL, "lt_cpu")
le = compare_kernel(np.less_equal, REAL, "le_cpu")
gt = compare_kernel(np.greater, REAL, "gt_cpu")
ge = compare_kernel(np.greater_equal, REAL, "ge_cpu")
