"""Kernels as CUDA C, compiled with NVRTC (`backends/cuda/nvrtc.py`).

The same driver (`codegen.generate`) and the C builder's loads, ops and stores; what differs
is how the loops map onto the GPU:

* a pointwise kernel (no outer loops) is one grid-stride loop over its elements, each
  thread decoding its loop indices from the flat position;
* a kernel with outer loops (rows) gives each block one row at a time (a grid-stride loop
  over rows); the block's threads stride over the row, and each reduction ends in a block
  reduction (warp shuffles, then one value per warp through shared memory), so every
  thread holds the row's result for the inner loop after it. Outer-level stores are made by
  thread 0.

Half precision is stored as 16-bit patterns and converted by functions of our own (no
CUDA headers needed), rounding to nearest even as the CPU's conversions do.
"""
from __future__ import annotations

from math import prod

from ...backends.cuda import nvrtc, runtime
from ...core import dtype as dt
from .codegen import C_TYPES, CKernelBuilder

BLOCK = 256
MAX_BLOCKS = 65535      # kernels loop (grid-stride) over what more blocks would cover

PRELUDE = r"""typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)

__device__ __forceinline__ float gt_bf16_load(uint16_t b) {
    return __uint_as_float((uint32_t)b << 16);
}
__device__ __forceinline__ uint16_t gt_bf16_bits(float f) {     /* round to nearest even */
    uint32_t u = __float_as_uint(f);
    if (f != f) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
__device__ __forceinline__ float gt_bf16_round(float f) { return gt_bf16_load(gt_bf16_bits(f)); }

__device__ __forceinline__ float gt_f16_load(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {                                   /* zero or subnormal: man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((exp + 112u) << 23) | (man << 13));
}
__device__ __forceinline__ uint16_t gt_f16_bits(float f) {      /* round to nearest even */
    uint32_t u = __float_as_uint(f), sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);          /* nan */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);         /* overflows: inf */
    if (a < 0x38800000u) {                            /* subnormal or zero in half */
        float v = __uint_as_float(a) * 16777216.0f;   /* in units of 2^-24 */
        uint32_t q = (uint32_t)v;
        float rest = v - (float)q;
        if (rest > 0.5f || (rest == 0.5f && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
    return (uint16_t)(sign | (r >> 13));
}
__device__ __forceinline__ float gt_f16_round(float f) { return gt_f16_load(gt_f16_bits(f)); }

#define GT_BLOCK_REDUCE(NAME, T, COMBINE)                                              \
__device__ T NAME(T v, T identity) {                                                 \
    __shared__ T partial[32];                                                        \
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;                            \
    for (int o = 16; o > 0; o >>= 1) { T w = __shfl_down_sync(0xffffffffu, v, o); v = COMBINE; } \
    __syncthreads();                                                                 \
    if (lane == 0) partial[warp] = v;                                                \
    __syncthreads();                                                                 \
    if (warp == 0) {                                                                 \
        v = lane < (int)((blockDim.x + 31) >> 5) ? partial[lane] : identity;         \
        for (int o = 16; o > 0; o >>= 1) { T w = __shfl_down_sync(0xffffffffu, v, o); v = COMBINE; } \
        if (lane == 0) partial[0] = v;                                               \
    }                                                                                \
    __syncthreads();                                                                 \
    v = partial[0];                                                                  \
    __syncthreads();                                                                 \
    return v;                                                                        \
}
"""

_COMBINE = {"+": "v + w", "*": "v * w", "max": "(w > v ? w : v)", "min": "(w < v ? w : v)",
            "|": "(v | w)"}
_TYPES = ("float", "double", "int64_t", "int32_t", "bool")


def block_reductions() -> str:
    lines = []
    for clause, combine in _COMBINE.items():
        for t in _TYPES:
            if clause == "|" and t in ("float", "double"):
                continue
            lines.append(f"GT_BLOCK_REDUCE({_reducer(clause, t)}, {t}, {combine})")
    return "\n".join(lines) + "\n"


def _reducer(clause, ctype) -> str:
    op = {"+": "sum", "*": "prod", "max": "max", "min": "min", "|": "or"}[clause]
    return f"gt_block_{op}_{ctype.replace('_t', '')}"


class CudaKernelBuilder(CKernelBuilder):
    """Builds one `extern "C" __global__` function; `launch` says how to launch it:
    ("elements", n) for a grid-stride pointwise kernel, ("rows", n) for one block per row."""

    lang = "cuda"
    exact_sums = False          # threads add in their own order

    def __init__(self, kernel):
        super().__init__(kernel)
        self.launch = ("rows", prod(kernel.outer)) if self.outer_loops or any(
            kernel.level[n] == "outer" for n in kernel.nodes) else (
            "elements", prod(kernel.inner))
        self.per_row = self.launch[0] == "rows"

    def loaded(self, text, dtype):
        if dtype is dt.float16:
            return f"gt_f16_load({text})"
        return super().loaded(text, dtype)

    def stored(self, text, dtype):
        if dtype is dt.float16:
            return f"gt_f16_bits({text})"
        return super().stored(text, dtype)

    def leading_params(self):
        return []

    def storage_type(self, dtype):
        return "uint16_t" if dtype is dt.float16 else C_TYPES[dtype]

    def _decode(self, flat, loops):
        rest = flat
        for i, (var, size) in enumerate(reversed(loops)):
            if i == len(loops) - 1:
                self.line(f"int64_t {var} = {rest};")
            else:
                self.line(f"int64_t {var} = {rest} % {size};")
                self.line(f"int64_t {flat}_{i} = {rest} / {size};")
                rest = f"{flat}_{i}"

    def begin_outer(self):
        if self.per_row:
            rows = prod(s for _, s in self.outer_loops)
            self.line(f"for (int64_t row = blockIdx.x; row < {rows}; row += gridDim.x) {{")
            self.depth += 1
            self._decode("row", self.outer_loops)
            self.scopes.append({})

    def end_outer(self):
        if self.per_row:
            self.scopes.pop()
            self.depth -= 1
            self.line("}")

    def _thread_loop(self, name):
        n = prod(s for _, s in self.inner_loops)
        if self.per_row:
            self.line(f"for (int64_t {name} = threadIdx.x; {name} < {n}; "
                      f"{name} += blockDim.x) {{")
        else:
            self.line(f"for (int64_t {name} = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
                      f"{name} < {n}; {name} += (int64_t)gridDim.x * blockDim.x) {{")
        self.depth += 1
        self._decode(name, self.inner_loops)
        self.scopes.append({})

    def begin_inner(self):
        self._thread_loop("i")

    def end_inner(self):
        self.scopes.pop()
        self.depth -= 1
        self.line("}")

    def _reduction_loops(self, clauses):
        self._thread_loop("j")

    def _close(self, loops):
        if loops is self.inner_loops:
            self.end_inner()
        else:
            super()._close(loops)

    def combine_partials(self, acc, clause, init, dtype, nan_flag):
        ctype = C_TYPES[dtype]
        self.line(f"{acc} = {_reducer(clause, ctype)}({acc}, {init});")
        if nan_flag:
            self.line(f"{acc}_nan = {_reducer('|', 'bool')}({acc}_nan, false);")

    def store(self, node, idx, val):
        if self.per_row and self.kernel.level[node] == "outer":
            self.line("if (threadIdx.x == 0)")
            self.depth += 1
            super().store(node, idx, val)
            self.depth -= 1
        else:
            super().store(node, idx, val)

    def source(self) -> str:
        text = super().source()
        text = text.replace("restrict", "__restrict__")
        return f'extern "C" __global__ void __launch_bounds__({BLOCK}) ' + \
            text[len("void "):]


def cuda_source(kernel_sources: list) -> str:
    return PRELUDE + block_reductions() + "\n" + "\n".join(kernel_sources)


def load_kernels(source: str, names: tuple, device_index: int):
    """The graph's kernels compiled for GPU `device_index` (NVRTC through CuPy, cached per
    source and device); nvrtc.CompileError with NVRTC's log if it rejects the source."""
    with runtime.DeviceGuard(device_index):
        return nvrtc.load(source, names)


class CudaLaunch:
    """How the host code calls one generated kernel: `kernel(*pointers)` launches it on the
    current stream of the graph's GPU, `BLOCK` threads a block, one block per row or enough
    blocks for every element (at most MAX_BLOCKS: the kernels loop over the rest)."""

    __slots__ = ("function", "grid", "device_index")

    def __init__(self, function, launch: tuple, device_index: int):
        kind, count = launch
        blocks = count if kind == "rows" else -(-count // BLOCK)
        self.function, self.device_index = function, device_index
        self.grid = (max(1, min(blocks, MAX_BLOCKS)),)

    def __call__(self, *pointers):
        with runtime.DeviceGuard(self.device_index):
            self.function(self.grid, (BLOCK,), pointers)
