"""glasstorch's own CUDA C for the commonest eager elementwise ops on large tensors.

CuPy's elementwise kernels load and store one element per thread per step: on an H200 its
`multiply(a, b, out=o)` over 64M float32 moved 2.5 TB/s, where PyTorch's vectorised kernel
moved 4.2. These kernels load and store 16 bytes at a time (float4, double2) in a
grid-stride loop, and relu(a*b+c) now runs as fast as PyTorch's (BENCHMARKS.md, GPU). They
cover add, subtract, multiply, divide, maximum and minimum (relu is maximum with 0) between
two same-shape C-contiguous arrays of the output's dtype, or one such array and a scalar;
each operation is rounded once, as in CuPy's kernels. maximum and minimum propagate NaN and
keep the first operand on ties (-0.0 stays -0.0 under relu). `launch` says whether it
applied; everything else (small, strided, broadcast, mixed dtypes, overlapping) goes to
CuPy as before.

One difference from PyTorch remains, shared with CuPy's own kernels: CuPy appends -ftz=true
to every NVRTC compile (cupy/cuda/compiler.py), so float32 subnormals flush to zero here,
in CuPy's kernels and in the compiler's CUDA code; PyTorch's CUDA kernels keep them. On the
H200, a first test comparing float32 bit patterns with NumPy's over inputs with subnormals
and NaNs failed (a GPU's float32 NaN has its own bits too) and the float64 one passed; the
tests now compare values, NaN as NaN, without subnormals.
"""
from __future__ import annotations

import functools

import numpy as np

from . import nvrtc, runtime

MIN_ELEMENTS = 1 << 18          # below this a launch costs more than the bandwidth gained
THREADS = 256
_MAX_BLOCKS = 1 << 16
_ALIGNMENT = 16                 # bytes per vector load and store

# ufunc -> the C expression of one element's result from `a` and `b`
EXPRESSIONS = {
    np.add: "a + b",
    np.subtract: "a - b",
    np.multiply: "a * b",
    np.true_divide: "a / b",
    np.maximum: "(a >= b || a != a) ? a : b",
    np.minimum: "(a <= b || a != a) ? a : b",
}
# dtype -> (element type, vector type, elements per vector)
VECTORS = {"float32": ("float", "float4", 4), "float64": ("double", "double2", 2)}
_LANES = "xyzw"


@functools.lru_cache(maxsize=None)
def kernel_name(op: str, dtype: str, kinds: str) -> str:
    """The kernel of ufunc `op` (its __name__) for `dtype`; kinds: 't' a tensor operand,
    's' a scalar one, first operand first ("tt", "ts" or "st")."""
    return f"gt_elementwise_{op}_{dtype}_{kinds}"


@functools.lru_cache(maxsize=None)
def source(op: str, dtype: str, kinds: str) -> str:
    """The CUDA C text of kernel_name(op, dtype, kinds)."""
    expression = next(e for f, e in EXPRESSIONS.items() if f.__name__ == op)
    scalar, vector, lanes = VECTORS[dtype]
    params, loads = [], []
    for name, kind in zip("ab", kinds):
        if kind == "t":
            params.append(f"const {vector}* {name}_in")
            loads.append(f"const {vector} {name}v = {name}_in[i];")
        else:
            params.append(f"{scalar} {name}_in")
    fills = {name: f"make_{vector}({', '.join([name + '_in'] * lanes)})"
             for name, kind in zip("ab", kinds) if kind == "s"}
    hoisted = "".join(f"    const {vector} {name}v = {fill};\n" for name, fill in fills.items())
    lanes_code = "".join(f"        r.{c} = gt_op(av.{c}, bv.{c});\n" for c in _LANES[:lanes])
    return (
        f"__device__ __forceinline__ {scalar} gt_op({scalar} a, {scalar} b) "
        f"{{ return {expression}; }}\n"
        f'extern "C" __global__ void {kernel_name(op, dtype, kinds)}('
        f"{', '.join(params)}, {vector}* out, long long groups) {{\n"
        f"{hoisted}"
        "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < groups;\n"
        "         i += (long long)blockDim.x * gridDim.x) {\n"
        + "".join(f"        {load}\n" for load in loads) +
        f"        {vector} r;\n{lanes_code}"
        "        out[i] = r;\n"
        "    }\n"
        "}\n")


def all_kernels():
    """Every (op, dtype, kinds) this module can launch (the tests compile each one)."""
    return [(f.__name__, d, k) for f in EXPRESSIONS for d in VECTORS for k in ("tt", "ts", "st")]


def _kernel(op: str, dtype: str, kinds: str):
    name = kernel_name(op, dtype, kinds)
    return nvrtc.load(source(op, dtype, kinds), [name])[name]


def _operand(x, out, loop_is_out_dtype: bool):
    """x as this module's kernels take it: 's' and the scalar in out's dtype, 't' and the
    array, or None when the kernels do not apply. A Python number is weak (NumPy 2 and CuPy
    compute in the array's dtype); so is any scalar when the call names out's dtype as the
    loop's (`dtype=`)."""
    if isinstance(x, (int, float, np.generic)) and not isinstance(x, (bool, np.bool_)):
        if isinstance(x, np.generic) and not (
                x.dtype == out.dtype or (loop_is_out_dtype and x.dtype.kind in "fiu")):
            return None
        try:
            return "s", out.dtype.type(x)
        except OverflowError:       # an integer beyond float: CuPy's error, not ours
            return None
    if (getattr(x, "dtype", None) != out.dtype or x.shape != out.shape
            or not x.flags.c_contiguous or x.data.ptr % _ALIGNMENT
            or x.data.device_id != out.data.device_id):
        return None
    start, end = x.data.ptr, x.data.ptr + x.nbytes
    if start != out.data.ptr and start < out.data.ptr + out.nbytes and out.data.ptr < end:
        return None         # overlaps the output other than element for element
    return "t", x


def launch(fn, args, out, dtype=None, casting=None) -> bool:
    """fn(*args, out=out, dtype=dtype, casting=casting) by this module's kernels on the
    current stream, if they apply (see the module's docstring; a `dtype` must be out's);
    False, with nothing written, if not."""
    vector = VECTORS.get(out.dtype.name)
    if (fn not in EXPRESSIONS or len(args) != 2 or vector is None
            or (dtype is not None and np.dtype(dtype) != out.dtype)
            or out.size < MIN_ELEMENTS or out.size % vector[2]
            or not out.flags.c_contiguous or out.data.ptr % _ALIGNMENT
            or not runtime.runs_cuda_c()
            or out.data.device_id != runtime.cupy().cuda.runtime.getDevice()):
        return False
    operands = [_operand(x, out, dtype is not None) for x in args]
    if None in operands or all(kind == "s" for kind, _ in operands):
        return False
    kinds = "".join(kind for kind, _ in operands)
    groups = out.size // vector[2]
    blocks = min(-(-groups // THREADS), _MAX_BLOCKS)
    _kernel(fn.__name__, out.dtype.name, kinds)(
        (blocks,), (THREADS,), (*(value for _, value in operands), out, np.int64(groups)))
    return True
