"""What ops do with the partial dtypes (uint16/32/64, float8, complex32, the shell dtypes),
as PyTorch's CPU kernels do.

PyTorch's kernels list the dtypes they have loops for; the partial dtypes are in few of
those lists, so most ops raise `NotImplementedError: "<kernel>" not implemented for
'<dtype>'`. glasstorch's kernels are NumPy calls that would happily compute on uint32 or
float8 arrays, so REFUSALS says, per op, which partial dtypes it refuses and with which
kernel name (PyTorch 2.13's, checked op by op in tests/core/test_dtypes_extra.py).
complex32 has no NumPy type: the ops PyTorch supports on it compute in complex64 here
(COMPLEX32_VIA_COMPLEX64). `install()` puts each such op's CPU kernel behind its policy once
every op is declared: on the general kernel only, never on the float32 fast path, and
arguments of the full dtypes pass after one attribute read. Ops whose kernels already check
a dtype list (comparisons, math functions) need no entry: their lists leave these out.
"""
from __future__ import annotations

from ..core import dtype as dt
from ..core.promotion import common_dtype
from ..core.tensor import Tensor
from ..dispatch.dispatcher import all_operators

UNSIGNED = frozenset((dt.uint16, dt.uint32, dt.uint64))
FLOAT8 = frozenset(d for d in dt.PARTIAL_DTYPES if d.family == "float8")
# the formats PyTorch gives no abs, mm or index_put loop, unlike the other float8 ones
E8M0 = frozenset((dt.float8_e8m0fnu, dt.float4_e2m1fn_x2))
COMPLEX32 = frozenset((dt.complex32,))
_HALF = dt.float16
_OPERAND_TYPES = (Tensor, bool, int, float, complex)
_NUMBERS = frozenset((bool, int, float))
# the dtypes that only hold bytes: bits*, int1..7, uint1..7, the quantized ones
SHELL = frozenset(d for d in dt.PARTIAL_DTYPES if d.family in ("bits", "subbyte", "quantized")
                  or d.family == "unsigned" and d.itemsize == 1)
ALL = UNSIGNED | FLOAT8 | COMPLEX32 | SHELL


def _not_implemented(kernel):
    return lambda d: NotImplementedError(f'"{kernel}" not implemented for \'{d.cname}\'')


def _runtime(message):
    return lambda d: RuntimeError(message.format(d.cname))


def _runtime_not_implemented(message):
    return lambda d: NotImplementedError(message)


# op -> [(dtypes, error)]: the first group holding an input's dtype gives the error. A bare
# kernel name stands for NotImplementedError '"<name>" not implemented for ...'.
REFUSALS = {
    "add": [(ALL - COMPLEX32, "add_stub")],
    "sub": [(ALL - COMPLEX32, "add_stub")],
    "div": [(ALL - UNSIGNED, "div_cpu")],
    "floor_divide": [(ALL, "div_floor_cpu")],
    "remainder": [(ALL, "remainder_cpu")],
    "fmod": [(ALL, "fmod_cpu")],
    "pow": [(ALL, "pow")],
    "square": [(ALL, "pow")],
    "neg": [(ALL - COMPLEX32, "neg_cpu")],
    "sign": [(ALL - COMPLEX32, "sign_cpu"),
             (COMPLEX32, _runtime_not_implemented(
                 "Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
                 "use torch.sgn instead."))],
    "abs": [(UNSIGNED | E8M0 | SHELL, "abs_cpu")],
    "sum": [(ALL - UNSIGNED, "sum_cpu")],
    "nansum": [(FLOAT8 | SHELL, "nansum_cpu")],
    "mean": [(FLOAT8 | COMPLEX32 | SHELL, "sum_cpu")],
    "prod": [(ALL - UNSIGNED, "prod_out_cpu")],
    "cumsum": [(ALL - UNSIGNED, "cumsum_out_cpu")],
    "cumprod": [(ALL - UNSIGNED, "cumprod_out_cpu")],
    "max": [(ALL, "max_all")],
    "min": [(ALL, "min_all")],
    "amax": [(ALL, "max_values_cpu")],
    "amin": [(ALL, "min_values_cpu")],
    "aminmax": [(ALL, "aminmax_cpu")],
    "histc": [(ALL, "aminmax_cpu")],
    "logsumexp": [(FLOAT8 | SHELL, "max_values_cpu"), (COMPLEX32, "exp_vml_cpu")],
    "argmax": [(ALL - COMPLEX32, "argmax_cpu")],
    "argmin": [(ALL - COMPLEX32, "argmin_cpu")],
    "sort": [(FLOAT8 | SHELL, "sorting_kernel_method_name"),
             (COMPLEX32, _runtime(" Sort does not support complex dtypes on CPU"))],
    "searchsorted": [(UNSIGNED, "searchsorted_out_cpu"),
                     (FLOAT8 | SHELL, "sorting_kernel_method_name"),
                     (COMPLEX32, _runtime(" Sort does not support complex dtypes on CPU"))],
    "topk": [(ALL - COMPLEX32, "topk_cpu")],
    "_unique2": [(ALL - UNSIGNED, "unique")],
    "kthvalue": [(ALL, "kthvalue_cpu")],
    "median": [(ALL, "median_cpu")],
    "mode": [(ALL, "mode_cpu")],
    "cummax": [(ALL, "cummax_cpu")],
    "cummin": [(ALL, "cummin_cpu")],
    "maximum": [(ALL - COMPLEX32, "maximum_cpu")],
    "minimum": [(ALL - COMPLEX32, "minimum_cpu")],
    "clamp": [(ALL - COMPLEX32, "clamp_scalar_cpu")],
    "clamp_min": [(ALL - COMPLEX32, "clamp_min_scalar_cpu")],
    "clamp_max": [(ALL - COMPLEX32, "clamp_max_scalar_cpu")],
    "relu": [(ALL - COMPLEX32, "clamp_min_scalar_cpu")],
    "flip": [(ALL, "flip_cpu")],
    "tril": [(ALL - COMPLEX32, "tril")],
    "triu": [(ALL - COMPLEX32, "triu")],
    "mm": [(ALL - (FLOAT8 - E8M0), "addmm_impl_cpu_")],
    "addmm": [(ALL - (FLOAT8 - E8M0), "addmm_impl_cpu_")],
    "bmm": [(ALL - (FLOAT8 - E8M0), "bmm")],
    "matmul": [(ALL - (FLOAT8 - E8M0), "addmm_impl_cpu_")],
    "dot": [(ALL, "dot")],
    "trace": [(ALL, "trace")],
    "nonzero": [(ALL - COMPLEX32, "nonzero_count_cpu")],
    "count_nonzero": [(ALL - COMPLEX32, "nonzero_count_cpu")],
    "gather": [(FLOAT8, "gather_expanded_index"), (ALL, "scatter_gather_tensor_cpu")],
    "scatter": [(ALL, "scatter_gather_tensor_cpu")],
    "scatter_add": [(ALL, "scatter_gather_tensor_cpu")],
    "index_put": [(UNSIGNED | E8M0 | SHELL, "index_put")],
    "index_put_": [(UNSIGNED | E8M0 | SHELL, "index_put")],
    "index_select": [(UNSIGNED | SHELL, "index_select")],
    "index_add": [(ALL - COMPLEX32, "index_add_")],
    "index_copy": [(ALL - COMPLEX32, "index_copy_cpu")],
    "index_fill": [(ALL - COMPLEX32, "index_fill_cpu")],
    "masked_fill": [(ALL - COMPLEX32, "masked_fill")],
    "masked_scatter": [(ALL, "masked_scatter")],
    "take": [(ALL, "take_cpu")],
    "put": [(ALL, "take_put_cpu")],
    "bincount": [(ALL, "bincount_cpu")],
    "logical_and": [(ALL, "logical_and_cpu")],
    "logical_or": [(ALL, "logical_or_cpu")],
    "logical_xor": [(ALL, "logical_xor_cpu")],
    "logical_not": [(ALL, "logical_not_cpu")],
    "lerp": [(ALL, "lerp_kernel_scalar")],
    "addcmul": [(ALL - COMPLEX32, "addcmul_cpu_out")],
    "addcdiv": [(ALL, "addcdiv_cpu_out")],
    "_softmax": [(ALL, "softmax_lastdim_kernel_impl")],
    "_log_softmax": [(ALL, "log_softmax_lastdim_kernel_impl")],
    "isinf": [(FLOAT8 - {dt.float8_e5m2}, "isinf")],
    "isfinite": [(FLOAT8 - {dt.float8_e5m2, dt.float8_e8m0fnu}, "isfinite")],
    "nan_to_num": [(FLOAT8 | COMPLEX32 | SHELL, "nan_to_num")],
    "signbit": [(FLOAT8 | SHELL, "signbit_cpu"),
                (COMPLEX32, _runtime_not_implemented(
                    "signbit is not implemented for complex tensors."))],
    "angle": [(FLOAT8 | COMPLEX32 | SHELL, "angle_cpu")],
    "sigmoid": [(FLOAT8, "sigmoid_cpu_reduced_float"), (COMPLEX32 | SHELL, "sigmoid_cpu")],
    "norm": [(FLOAT8 | SHELL, "norm_cpu")],
    "linalg_vector_norm": [(FLOAT8 | SHELL, "norm_cpu")],
    "var": [(FLOAT8, _runtime("std_var_all: Unsupported dtype {}"))],
    "std": [(FLOAT8, _runtime("std_var_all: Unsupported dtype {}"))],
}
# the math functions' vectorized kernels
for _name in ("sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil", "trunc", "round",
              "rsqrt", "log2", "log10", "exp2", "expm1", "log1p", "erf"):
    REFUSALS[_name] = [(FLOAT8 | COMPLEX32 | SHELL, f"{_name}_vml_cpu")]
for _name in ("floor", "ceil", "trunc"):
    REFUSALS[_name].insert(0, (COMPLEX32, _runtime_not_implemented(
        f"{_name} is not supported for complex inputs")))
REFUSALS["reciprocal"] = [(FLOAT8 | COMPLEX32 | SHELL, "reciprocal_cpu")]


# ops PyTorch computes on complex32 (in complex64, its opmath type, rounding the result back)
COMPLEX32_VIA_COMPLEX64 = (
    "add", "sub", "mul", "neg", "abs", "addcmul", "any", "all", "count_nonzero", "var",
    "std", "linalg_vector_norm", "norm", "index_add", "conj_physical", "isnan", "isinf",
    "isfinite", "masked_fill", "index_fill", "where")

_HALVED = {dt.complex64: dt.complex32, dt.float32: dt.float16}


def _error_table(groups) -> dict:
    """dtype -> a function of the dtype making the exception, from an op's groups."""
    table = {}
    for dtypes, error in groups:
        make = _not_implemented(error) if isinstance(error, str) else error
        for d in dtypes:
            table.setdefault(d, make)
    return table


class _Policy:
    """What one op does with the partial dtypes: the errors it raises per dtype, whether it
    computes complex32 in complex64, whether it refuses float8 beside a CPU scalar (mul)."""

    def __init__(self, errors: dict, via_complex64: bool, float8_scalar: bool):
        self.errors = errors
        self.via_complex64 = via_complex64
        self.float8_scalar = float8_scalar

    def call(self, impl, structured: bool, args, operands=()):
        inputs = args[1:] if structured else args
        for a in inputs:
            if isinstance(a, Tensor):
                make = self.errors.get(a.dtype)
                if make is not None:
                    raise make(a.dtype)
        if self.float8_scalar:
            partial = [a for a in inputs if isinstance(a, Tensor) and a.dtype in FLOAT8]
            if partial and any(not isinstance(a, Tensor) or not a._shape for a in inputs):
                raise _not_implemented("mul_cpu_reduced_float")(partial[0].dtype)
        promoted = [inputs[i] for i in operands if i < len(inputs) and
                    isinstance(inputs[i], _OPERAND_TYPES)]
        if _in_complex32(promoted):
            make = self.errors.get(dt.complex32)
            if make is not None:
                raise make(dt.complex32)
            if self.via_complex64:
                return _in_complex64(impl, structured, args, promoted)
            return impl(*args)
        if self.via_complex64 and any(isinstance(a, Tensor) and a.dtype is dt.complex32
                                      for a in inputs):
            return _in_complex64(impl, structured, args)
        return impl(*args)


def _complex_operand(inputs, operands) -> bool:
    """Whether an operand is complex (a number or a tensor): float16 then may promote to
    complex32."""
    n = len(inputs)
    for i in operands:
        if i < n:
            x = inputs[i]
            cls = x.__class__
            if cls is complex or (cls is Tensor or cls not in _NUMBERS and isinstance(
                    x, Tensor)) and x.dtype.category == dt.COMPLEX:
                return True
    return False


def _in_complex32(operands) -> bool:
    """A float16 tensor beside a complex number or a complex tensor of lower priority (0-dim)
    promotes to complex32, with no complex32 tensor among the operands: PyTorch's kernels
    then run (or refuse) as on complex32 inputs."""
    if not any(isinstance(a, Tensor) and a.dtype is dt.float16 for a in operands):
        return False
    return common_dtype(*operands) is dt.complex32


def _in_complex64(impl, structured: bool, args, promoted=()):
    """`impl` on complex32 inputs: run on complex64 copies, results rounded back to
    complex32 (and float32 ones to float16, complex32's real type). `promoted`: operands
    that promote to complex32 from other dtypes: cast to it first, as PyTorch's
    TensorIterator casts its inputs to the common dtype."""
    from ..backends.cpu.copy import assign_array

    def widened(a):
        if not isinstance(a, Tensor) or a.dtype is dt.bool:
            return a
        if a.dtype is dt.complex32:
            return a.to(dt.complex64)
        if any(a is p for p in promoted):
            return a.to(dt.complex32).to(dt.complex64)
        return a
    inputs = [widened(a) for a in (args[1:] if structured else args)]
    if not structured:
        result = impl(*inputs)
        half = _HALVED.get(result.dtype) if isinstance(result, Tensor) else None
        return result if half is None else result.to(half)
    out = args[0]
    if isinstance(out, Tensor) and out.dtype is dt.complex32:
        wide = Tensor._empty(out._shape, dt.complex64, out.device, out._stride)
        impl(wide, *inputs)
        assign_array(out._array(), wide._array())
    else:
        impl(out, *inputs)
    return None


def _checked(impl, policy: _Policy, structured: bool, operands=()):
    """`impl` behind `policy`; arguments of the full dtypes pass after one attribute read
    each (a structured kernel's first argument is the output it fills: not looked at), and
    float16 ones after a look for a complex operand (beside one, they compute in complex32).
    `operands`: the positions (among the inputs) of the arguments that take part in type
    promotion."""
    first = 1 if structured else 0

    def kernel(*args):
        half = False
        for a in args[first:]:
            if isinstance(a, Tensor):
                d = a.dtype
                if d.family is not None:
                    return policy.call(impl, structured, args, operands)
                if d is _HALF:
                    half = True
        if half and _complex_operand(args[first:], operands):
            return policy.call(impl, structured, args, operands)
        return impl(*args)
    kernel.__qualname__ = impl.__qualname__
    kernel.__module__ = impl.__module__
    kernel.unchecked = impl          # what gpu_kernels' widened bfloat16 calls may reach
    kernel.partial_dtype_policy = policy
    return kernel


def install() -> None:
    """Put every op named in REFUSALS, COMPLEX32_VIA_COMPLEX64 or mul behind its policy
    (every overload of it: max and max.dim are two declarations)."""
    declared = {}
    for op in all_operators():
        decl = op.info.get("decl")
        if decl is not None and decl.kind != "view":
            declared.setdefault(decl.name, {})[id(decl)] = decl
    names = set(REFUSALS) | set(COMPLEX32_VIA_COMPLEX64) | {"mul"}
    for name in sorted(names):
        if name not in declared:
            raise KeyError(f"dtype_support: no op named {name}")
        policy = _Policy(_error_table(REFUSALS.get(name, ())),
                         name in COMPLEX32_VIA_COMPLEX64, name == "mul")
        for decl in declared[name].values():
            impl = decl.impls.get("CPU")
            if impl is None or hasattr(impl, "partial_dtype_policy"):
                continue
            decl.impl("CPU")(_checked(impl, policy, decl.kind == "structured",
                                      _promoted_positions(decl.schema)))


# the arguments that take part in an op's type promotion (PyTorch's TensorIterator
# operands); not a condition, mask, index, dim, or a scalar like alpha or value
_OPERAND_NAMES = frozenset(("self", "input", "other", "end", "weight", "exponent", "min",
                            "max", "tensor1", "tensor2"))


def _promoted_positions(schema) -> tuple:
    return tuple(i for i, a in enumerate(schema.arguments) if a.name in _OPERAND_NAMES)
