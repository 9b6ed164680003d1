"""glasstorch's own CUDA C: kernels CuPy has nothing suitable for, each one pass over memory.

`source(family, dtype)` generates the CUDA C text for one dtype: `store_t` is how elements
are stored (float16 as its bit pattern, `unsigned short`, converted with PTX's cvt, so no
header is needed), `math_t` is what they are computed in (float32 for float16 and float32,
float64 for float64), as PyTorch's CUDA kernels do. Sources compile with `--fmad=false`:
`a*b + c` stays two rounded operations, so results follow the written operation order
(the CPU path's) instead of depending on where the compiler contracts into FMA.

Each launcher takes C-contiguous CuPy arrays on the current device, checks them (dtype,
contiguity, shape: a clear TypeError/ValueError before anything is written) and launches on
the current CuPy stream. Row kernels run one block per row and reduce through shared memory.
"""
from __future__ import annotations

import functools
import math
from string import Template

import numpy as np

from . import nvrtc, runtime

OPTIONS = ("--fmad=false",)
FLOATS = ("float16", "float32", "float64")
FAMILIES = {"adam": FLOATS, "softmax": FLOATS, "layer_norm": FLOATS, "bf16": ("bfloat16",)}

_THREADS = 256                  # elementwise kernels: threads per block
_MAX_BLOCKS = 1 << 16           # grids loop past this many blocks (grid-stride loops)
_MATH = {"float16": np.float32, "float32": np.float32, "float64": np.float64}

_TYPES = {
    "float16": """
typedef unsigned short store_t;
typedef float math_t;
__device__ __forceinline__ math_t gt_load(store_t h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ store_t gt_store(math_t f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
""",
    "float32": """
typedef float store_t;
typedef float math_t;
__device__ __forceinline__ math_t gt_load(store_t v) { return v; }
__device__ __forceinline__ store_t gt_store(math_t v) { return v; }
""",
    "float64": """
typedef double store_t;
typedef double math_t;
__device__ __forceinline__ math_t gt_load(store_t v) { return v; }
__device__ __forceinline__ store_t gt_store(math_t v) { return v; }
"""}

_MATH_FUNCTIONS = {
    "float": """
__device__ __forceinline__ float gt_exp(float v) { return expf(v); }
__device__ __forceinline__ float gt_log(float v) { return logf(v); }
__device__ __forceinline__ float gt_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ float gt_neg_inf() { return -__int_as_float(0x7f800000); }
""",
    "double": """
__device__ __forceinline__ double gt_exp(double v) { return exp(v); }
__device__ __forceinline__ double gt_log(double v) { return log(v); }
__device__ __forceinline__ double gt_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ double gt_neg_inf() {
    return -__longlong_as_double(0x7ff0000000000000LL); }
"""}

_MAX = """
// NaN-propagating maximum (as torch.maximum and np.maximum; fmax would drop NaN)
__device__ __forceinline__ math_t gt_max(math_t a, math_t b) { return (a != a || a > b) ? a : b; }
"""

# Block-wide reductions through shared memory (blockDim.x threads, a power of two, each with
# one value; blockDim.x * sizeof(math_t) bytes of dynamic shared memory). Every thread gets
# the result; the trailing barrier lets the next reduction reuse the buffer.
_BLOCK_REDUCE = """
extern __shared__ __align__(16) unsigned char gt_shared[];

__device__ math_t gt_block_sum(math_t v) {
    math_t* s = reinterpret_cast<math_t*>(gt_shared);
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    math_t r = s[0];
    __syncthreads();
    return r;
}

__device__ math_t gt_block_max(math_t v) {
    math_t* s = reinterpret_cast<math_t*>(gt_shared);
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) s[threadIdx.x] = gt_max(s[threadIdx.x], s[threadIdx.x + k]);
        __syncthreads();
    }
    math_t r = s[0];
    __syncthreads();
    return r;
}
"""

_GRID_STRIDE = "for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; " \
               "i += (long long)gridDim.x * blockDim.x)"
_ROW_LOOP = "for (long long r = blockIdx.x; r < rows; r += gridDim.x)"
_COL_LOOP = "for (long long j = threadIdx.x; j < n; j += blockDim.x)"

# flags: 1 maximize, 2 decoupled weight decay (AdamW), 4 L2 weight decay (Adam),
# 8 lerp weight below 0.5 (torch.lerp's two formulas), 16 amsgrad
_ADAM = Template("""
extern "C" __global__ void gt_adam_step_$dt(
        store_t* param, const store_t* grad, store_t* exp_avg, store_t* exp_avg_sq,
        store_t* max_exp_avg_sq, long long n, int flags, math_t decay, math_t weight_decay,
        math_t lerp_weight, math_t lerp_rest, math_t beta2, math_t sq_weight,
        math_t neg_step_size, math_t bias_correction2_sqrt, math_t eps) {
    $grid_stride {
        math_t p = gt_load(param[i]);
        math_t g = gt_load(grad[i]);
        if (flags & 1) g = -g;
        if (flags & 2) p = p * decay;                           // param.mul_(1 - lr * wd)
        if (flags & 4) g = g + weight_decay * p;                // grad.add(param, alpha=wd)
        math_t m = gt_load(exp_avg[i]);                         // exp_avg.lerp_(g, 1 - beta1)
        math_t d = g - m;
        m = (flags & 8) ? m + d * lerp_weight : g - d * lerp_rest;
        math_t v = gt_load(exp_avg_sq[i]) * beta2;              // .mul_(beta2)
        v = v + (g * sq_weight) * g;                            // .addcmul_(g, g, 1 - beta2)
        math_t second = v;
        if (flags & 16) {                                       // amsgrad: running maximum
            second = gt_max(gt_load(max_exp_avg_sq[i]), v);
            max_exp_avg_sq[i] = gt_store(second);
        }
        math_t denom = gt_sqrt(second) / bias_correction2_sqrt + eps;
        p = p + (m * neg_step_size) / denom;                    // addcdiv_(m, denom, -step)
        param[i] = gt_store(p);
        exp_avg[i] = gt_store(m);
        exp_avg_sq[i] = gt_store(v);
    }
}
""")

_SOFTMAX = Template("""
extern "C" __global__ void gt_softmax_rows_$dt(
        const store_t* x, store_t* y, long long rows, long long n) {
    $row_loop {
        const store_t* xr = x + r * n;
        store_t* yr = y + r * n;
        math_t m = gt_neg_inf();
        $col_loop m = gt_max(m, gt_load(xr[j]));
        m = gt_block_max(m);
        math_t s = 0;
        $col_loop s += gt_exp(gt_load(xr[j]) - m);
        s = gt_block_sum(s);
        $col_loop yr[j] = gt_store(gt_exp(gt_load(xr[j]) - m) / s);
    }
}

extern "C" __global__ void gt_log_softmax_rows_$dt(
        const store_t* x, store_t* y, long long rows, long long n) {
    $row_loop {
        const store_t* xr = x + r * n;
        store_t* yr = y + r * n;
        math_t m = gt_neg_inf();
        $col_loop m = gt_max(m, gt_load(xr[j]));
        m = gt_block_max(m);
        math_t s = 0;
        $col_loop s += gt_exp(gt_load(xr[j]) - m);
        math_t log_sum = gt_log(gt_block_sum(s));
        $col_loop yr[j] = gt_store(gt_load(xr[j]) - m - log_sum);
    }
}

// grad_in = y * (g - sum(g * y)), y = softmax output
extern "C" __global__ void gt_softmax_rows_backward_$dt(
        const store_t* g, const store_t* y, store_t* grad_in, long long rows, long long n) {
    $row_loop {
        const store_t* gr = g + r * n;
        const store_t* yr = y + r * n;
        store_t* out = grad_in + r * n;
        math_t s = 0;
        $col_loop s += gt_load(gr[j]) * gt_load(yr[j]);
        s = gt_block_sum(s);
        $col_loop out[j] = gt_store(gt_load(yr[j]) * (gt_load(gr[j]) - s));
    }
}

// grad_in = g - exp(y) * sum(g), y = log_softmax output
extern "C" __global__ void gt_log_softmax_rows_backward_$dt(
        const store_t* g, const store_t* y, store_t* grad_in, long long rows, long long n) {
    $row_loop {
        const store_t* gr = g + r * n;
        const store_t* yr = y + r * n;
        store_t* out = grad_in + r * n;
        math_t s = 0;
        $col_loop s += gt_load(gr[j]);
        s = gt_block_sum(s);
        $col_loop out[j] = gt_store(gt_load(gr[j]) - gt_exp(gt_load(yr[j])) * s);
    }
}
""")

# Two passes over the row (mean, then the mean squared deviation): no cancellation.
# n == 0 gives mean 0 and rstd NaN, as torch's native_layer_norm.
_LAYER_NORM = Template("""
extern "C" __global__ void gt_layer_norm_rows_$dt(
        const store_t* x, const store_t* weight, const store_t* bias, store_t* out,
        math_t* mean, math_t* rstd, long long rows, long long n, math_t eps,
        int has_weight, int has_bias) {
    $row_loop {
        const store_t* xr = x + r * n;
        store_t* yr = out + r * n;
        math_t s = 0;
        $col_loop s += gt_load(xr[j]);
        s = gt_block_sum(s);
        math_t mu = n > 0 ? s / (math_t)n : (math_t)0;
        math_t q = 0;
        $col_loop { math_t d = gt_load(xr[j]) - mu; q += d * d; }
        q = gt_block_sum(q);
        math_t rs = (math_t)1 / gt_sqrt(q / (math_t)n + eps);
        if (threadIdx.x == 0) { mean[r] = mu; rstd[r] = rs; }
        $col_loop {
            math_t v = (gt_load(xr[j]) - mu) * rs;
            if (has_weight) v = v * gt_load(weight[j]);
            if (has_bias) v = v + gt_load(bias[j]);
            yr[j] = gt_store(v);
        }
    }
}
""")

# bfloat16 is float32's top half: widening is a shift; narrowing rounds to nearest even
# and turns every NaN into the quiet NaN of its sign (ml_dtypes' and PyTorch's rule).
_BF16 = Template("""
extern "C" __global__ void gt_bf16_to_float32(const unsigned short* bits, float* out, long long n) {
    $grid_stride out[i] = __uint_as_float(((unsigned int)bits[i]) << 16);
}

extern "C" __global__ void gt_float32_to_bf16(const float* x, unsigned short* out, long long n) {
    $grid_stride {
        unsigned int b = __float_as_uint(x[i]);
        out[i] = (b & 0x7fffffffu) > 0x7f800000u
            ? (unsigned short)(((b >> 16) & 0x8000u) | 0x7fc0u)
            : (unsigned short)((b + ((b >> 16) & 1u) + 0x7fffu) >> 16);
    }
}
""")

_NAMES = {
    "adam": ("gt_adam_step_{}",),
    "softmax": ("gt_softmax_rows_{}", "gt_log_softmax_rows_{}",
                "gt_softmax_rows_backward_{}", "gt_log_softmax_rows_backward_{}"),
    "layer_norm": ("gt_layer_norm_rows_{}",),
    "bf16": ("gt_bf16_to_float32", "gt_float32_to_bf16"),
}


@functools.lru_cache(maxsize=None)
def kernel_names(family: str, dtype: str) -> tuple:
    """The extern "C" kernels source(family, dtype) defines."""
    return tuple(name.format(dtype) for name in _NAMES[family])


@functools.lru_cache(maxsize=None)
def source(family: str, dtype: str) -> str:
    """The CUDA C text of a kernel family for one dtype (see FAMILIES)."""
    if dtype not in FAMILIES.get(family, ()):
        raise ValueError(f"no {family!r} kernel for dtype {dtype!r}; generated: {FAMILIES}")
    loops = dict(dt=dtype, grid_stride=_GRID_STRIDE, row_loop=_ROW_LOOP, col_loop=_COL_LOOP)
    if family == "bf16":
        return _BF16.substitute(loops)
    prelude = _TYPES[dtype] + _MATH_FUNCTIONS["double" if dtype == "float64" else "float"] + _MAX
    body = {"adam": _ADAM, "softmax": _SOFTMAX, "layer_norm": _LAYER_NORM}[family]
    if family != "adam":
        prelude += _BLOCK_REDUCE
    return prelude + body.substitute(loops)


def _kernel(family: str, dtype: str, index: int = 0):
    names = kernel_names(family, dtype)
    return nvrtc.load(source(family, dtype), names, OPTIONS)[names[index]]


# ---------------------------------------------------------------- input checks

def _check(op: str, cp, arrays: dict, dtypes, shape=None) -> None:
    """Every array a C-contiguous CuPy array on the current device, of one dtype among
    `dtypes` and of one shape (`shape` if given, else the first one's)."""
    device = cp.cuda.runtime.getDevice()
    first = None
    for name, a in arrays.items():
        if not isinstance(a, cp.ndarray):
            raise TypeError(f"{op}: {name} must be a CuPy array, got {type(a).__name__}")
        if a.dtype.name not in dtypes:
            raise TypeError(f"{op}: {name} has dtype {a.dtype.name}; expected "
                            f"{' or '.join(dtypes)}")
        if first is None:
            first = (name, a)
            shape = a.shape if shape is None else shape
        elif a.dtype != first[1].dtype:
            raise TypeError(f"{op}: {name} has dtype {a.dtype.name} but {first[0]} has "
                            f"{first[1].dtype.name}; they must match")
        if a.shape != shape:
            raise ValueError(f"{op}: {name} has shape {a.shape}; expected {shape}")
        if not a.flags.c_contiguous:
            raise ValueError(f"{op}: {name} must be C-contiguous (shape {a.shape}, strides "
                             f"{a.strides}); pass a contiguous copy")
        if a.data.device_id != device:
            raise ValueError(f"{op}: {name} is on cuda:{a.data.device_id} but the current "
                             f"device is cuda:{device}")


def _blocks(count: int, per_block: int = 1) -> int:
    return min(-(-count // per_block), _MAX_BLOCKS)


# ---------------------------------------------------------------- Adam / AdamW

def adam_step_(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq=None, *, lr: float,
               beta1: float, beta2: float, eps: float, weight_decay: float = 0.0,
               decoupled: bool = False, maximize: bool = False, bias_correction1: float,
               bias_correction2_sqrt: float) -> None:
    """One Adam (AdamW with decoupled=True) step over every element, in place, in torch's
    single-tensor operation order (glasstorch.optim.adam's CPU path): maximize, weight
    decay, exp_avg.lerp_, exp_avg_sq.mul_.addcmul_, amsgrad maximum (when max_exp_avg_sq
    is given), sqrt / bias_correction2_sqrt + eps, addcdiv_ with -lr / bias_correction1.
    The bias corrections (1 - beta1**step, (1 - beta2**step) ** 0.5) come from the host.
    float16 tensors compute in float32."""
    cp = runtime.cupy()
    arrays = dict(param=param, grad=grad, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq)
    if max_exp_avg_sq is not None:
        arrays["max_exp_avg_sq"] = max_exp_avg_sq
    _check("adam_step_", cp, arrays, FLOATS)
    n = param.size
    if n == 0:
        return
    written = [a.data.ptr for k, a in arrays.items() if k != "grad"]
    if len(set(written)) != len(written):
        raise ValueError("adam_step_: param, exp_avg, exp_avg_sq and max_exp_avg_sq must be "
                         "distinct arrays")
    lerp_weight = 1 - beta1
    flags = ((1 if maximize else 0) | (8 if abs(lerp_weight) < 0.5 else 0)
             | (16 if max_exp_avg_sq is not None else 0))
    if weight_decay != 0:
        flags |= 2 if decoupled else 4
    m = _MATH[param.dtype.name]
    ams = param if max_exp_avg_sq is None else max_exp_avg_sq   # never read without amsgrad
    _kernel("adam", param.dtype.name)(
        (_blocks(n, _THREADS),), (_THREADS,),
        (param, grad, exp_avg, exp_avg_sq, ams, np.int64(n), np.int32(flags),
         m(1 - lr * weight_decay), m(weight_decay), m(lerp_weight), m(1 - lerp_weight),
         m(beta2), m(1 - beta2), m(-(lr / bias_correction1)), m(bias_correction2_sqrt),
         m(eps)))


# ---------------------------------------------------------------- row kernels

def _row_threads(n: int) -> int:
    """A power of two from 32 to 1024: one warp for short rows, up to a full block."""
    return min(1024, max(32, 1 << max(n - 1, 0).bit_length()))


def _launch_rows(kernel, rows: int, n: int, dtype: str, args) -> None:
    threads = _row_threads(n)
    kernel((_blocks(rows),), (threads,), args,
           shared_mem=threads * np.dtype(_MATH[dtype]).itemsize)


def _rows_of(op: str, x) -> tuple:
    if x.ndim == 0:
        raise ValueError(f"{op}: expected an array with at least 1 dimension (rows over the "
                         "last one), got a 0-d array")
    return math.prod(x.shape[:-1]), x.shape[-1]


def _forward(op: str, index: int, x, out):
    cp = runtime.cupy()
    arrays = dict(input=x) if out is None else dict(input=x, out=out)
    _check(op, cp, arrays, FLOATS)
    if out is None:
        out = cp.empty(x.shape, x.dtype)
    rows, n = _rows_of(op, x)
    if rows and n:
        _launch_rows(_kernel("softmax", x.dtype.name, index), rows, n, x.dtype.name,
                     (x, out, np.int64(rows), np.int64(n)))
    return out


def _backward(op: str, index: int, grad, y, out):
    cp = runtime.cupy()
    arrays = dict(grad_output=grad, output=y)
    if out is not None:
        arrays["out"] = out
    _check(op, cp, arrays, FLOATS)
    if out is None:
        out = cp.empty(y.shape, y.dtype)
    rows, n = _rows_of(op, y)
    if rows and n:
        _launch_rows(_kernel("softmax", y.dtype.name, index), rows, n, y.dtype.name,
                     (grad, y, out, np.int64(rows), np.int64(n)))
    return out


def softmax_rows(x, out=None):
    """softmax over the last dimension: exp(x - max) / sum(exp(x - max)) per row.
    `out` may be x itself (each element is read before it is overwritten)."""
    return _forward("softmax_rows", 0, x, out)


def log_softmax_rows(x, out=None):
    """log_softmax over the last dimension: (x - max) - log(sum(exp(x - max))) per row."""
    return _forward("log_softmax_rows", 1, x, out)


def softmax_rows_backward(grad_output, output, out=None):
    """softmax's input gradient from its output y: y * (g - sum(g * y)) per row."""
    return _backward("softmax_rows_backward", 2, grad_output, output, out)


def log_softmax_rows_backward(grad_output, output, out=None):
    """log_softmax's input gradient from its output y: g - exp(y) * sum(g) per row."""
    return _backward("log_softmax_rows_backward", 3, grad_output, output, out)


def layer_norm_rows(x, weight=None, bias=None, eps: float = 1e-5, out=None):
    """layer_norm over the last dimension, as torch.native_layer_norm(x, [n], weight, bias,
    eps): returns (out, mean, rstd), the statistics shaped x.shape[:-1] + (1,) in the
    compute dtype (float32 for float16/float32 inputs, float64 for float64). `out` (x's
    shape and dtype; may be x itself) receives the normalized rows when given."""
    cp = runtime.cupy()
    _check("layer_norm_rows", cp, dict(input=x) if out is None else dict(input=x, out=out),
           FLOATS)
    rows, n = _rows_of("layer_norm_rows", x)
    params = {k: v for k, v in (("weight", weight), ("bias", bias)) if v is not None}
    if params:
        _check("layer_norm_rows", cp, params, (x.dtype.name,), (n,))
    stats_dtype = _MATH[x.dtype.name]
    if out is None:
        out = cp.empty(x.shape, x.dtype)
    mean = cp.empty(x.shape[:-1] + (1,), stats_dtype)
    rstd = cp.empty(x.shape[:-1] + (1,), stats_dtype)
    if rows:
        _launch_rows(_kernel("layer_norm", x.dtype.name), rows, n, x.dtype.name,
                     (x, x if weight is None else weight, x if bias is None else bias, out,
                      mean, rstd, np.int64(rows), np.int64(n), stats_dtype(eps),
                      np.int32(weight is not None), np.int32(bias is not None)))
    return out, mean, rstd


# ---------------------------------------------------------------- bfloat16 bit patterns

def _convert(op: str, index: int, x, from_dtype: str, to_dtype: str, out):
    cp = runtime.cupy()
    _check(op, cp, dict(input=x), (from_dtype,))
    if out is None:
        out = cp.empty(x.shape, to_dtype)
    else:
        _check(op, cp, dict(out=out), (to_dtype,), x.shape)
    if x.size:
        _kernel("bf16", "bfloat16", index)((_blocks(x.size, _THREADS),), (_THREADS,),
                                           (x, out, np.int64(x.size)))
    return out


def bf16_to_float32(bits, out=None):
    """float32 values of bfloat16 bit patterns (a uint16 array): exact."""
    return _convert("bf16_to_float32", 0, bits, "uint16", "float32", out)


def float32_to_bf16(x, out=None):
    """bfloat16 bit patterns (uint16) of float32 values, rounded to nearest even; NaN
    becomes the quiet NaN of its sign, as ml_dtypes converts."""
    return _convert("float32_to_bf16", 1, x, "float32", "uint16", out)
