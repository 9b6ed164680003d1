"""Kernel source: one scheduled `Kernel` as C with OpenMP (or, through the same driver, as
NumPy: `numpy_codegen.py`).

`generate(kernel, kb)` walks the kernel's nodes; the builder `kb` emits loops, loads,
scalar ops (the primitives' expressions rendered in the builder's language, `_prims.render`),
reductions and stores, and gives each computed scalar a name (common subexpressions get one
name per loop scope).

Loops: dims that every access walks contiguously are merged into one loop (`collapse_plan`),
so a contiguous pointwise kernel is one flat `omp parallel for simd` loop. The outer loop is
parallel when the kernel does enough work (`PARALLEL_THRESHOLD` elements), the innermost is
`omp simd`; a reduction's loop carries an OpenMP `reduction` clause, which lets the compiler
reorder the sum for vector lanes (so a float sum differs from eager's pairwise one in the
last bits). The math functions are declared `omp declare simd`, so vector loops call
glibc's libmvec variants (accurate to a few ulp, as eager's vectorised NumPy is).
"""
from __future__ import annotations

import re
from math import prod

import numpy as np

from ..._prims.scalar import BinOp, Call, Select, Unary, Var, render, substitute
from ...core import dtype as dt
from .ir import Index, Reduction, Val
from .scheduler import accesses

# Elements below which a kernel runs on one thread: a parallel region needs a core that,
# on few cores, OpenBLAS's threads still hold, spinning after the matrix product before it
# (OpenMP's own idle threads sleep: process.py), so it waits for the scheduler. The compiled
# tiny GPT step, 2 threads on 2 cores: 80-94 ms at 1 << 19 (its MLP and attention kernels
# parallel), 44.6 ms at 1 << 21, 33.4 ms here, 48.9 ms with no parallel kernel; the 8M-16M
# element fused kernels of bench/compiled.py stay parallel.
PARALLEL_THRESHOLD = 1 << 22
THREADS = " num_threads(nthreads)"    # the host passes glasstorch's thread count
COLUMN_LIMIT = 1 << 22  # most kept elements a column sum accumulates in a heap array
PAIRWISE_ROW = 1 << 14  # longest row summed pairwise (its values wait in a stack array)
NUMPY_BUFFER = 8192     # NumPy sums a row it must cast (half -> float) in pieces this long

C_TYPES = {dt.bool: "bool", dt.uint8: "uint8_t", dt.int8: "int8_t", dt.int16: "int16_t",
           dt.int32: "int32_t", dt.int64: "int64_t", dt.float16: "_Float16",
           dt.bfloat16: "uint16_t", dt.float32: "float", dt.float64: "double"}
HALF = (dt.float16, dt.bfloat16)

VECTOR_MATH = ("exp", "log", "sin", "cos", "tan", "tanh", "erf", "erfc", "expm1", "log1p",
               "exp2", "log2", "log10", "sinh", "cosh", "asin", "acos", "atan", "asinh",
               "acosh", "atanh", "pow", "atan2", "hypot")

PRELUDE = r"""#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static inline float gt_bf16_load(uint16_t b) {
    uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline uint16_t gt_bf16_bits(float f) {          /* round to nearest even */
    uint32_t u; memcpy(&u, &f, 4);
    if (f != f) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float gt_bf16_round(float f) { return gt_bf16_load(gt_bf16_bits(f)); }
static inline float gt_f16_round(float f) { return (float)(_Float16)f; }

/* NumPy's pairwise summation (blocks of 8 partial sums up to 128 elements, halves above),
   so a row sums to the bits eager's sum gives. */
#define GT_PAIRWISE(T)                                                                  \
static T gt_pairwise_sum_##T(const T* a, int64_t n) {                                   \
    if (n < 8) {                                                                        \
        T r = -0.0;                                                                     \
        for (int64_t i = 0; i < n; i++) r += a[i];                                      \
        return r;                                                                       \
    }                                                                                   \
    if (n <= 128) {                                                                     \
        T r[8];                                                                         \
        int64_t i;                                                                      \
        for (int j = 0; j < 8; j++) r[j] = a[j];                                        \
        for (i = 8; i < n - (n % 8); i += 8)                                            \
            for (int j = 0; j < 8; j++) r[j] += a[i + j];                               \
        T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));      \
        for (; i < n; i++) res += a[i];                                                 \
        return res;                                                                     \
    }                                                                                   \
    int64_t half = n / 2;                                                               \
    half -= half % 8;                                                                   \
    return gt_pairwise_sum_##T(a, half) + gt_pairwise_sum_##T(a + half, n - half);      \
}
GT_PAIRWISE(float)
GT_PAIRWISE(double)
"""


def vector_math_declarations() -> str:
    lines = []
    for name in VECTOR_MATH:
        arity = 2 if name in ("pow", "atan2", "hypot") else 1
        for ctype, suffix in (("float", "f"), ("double", "")):
            params = ", ".join([ctype] * arity)
            lines.append(f"#pragma omp declare simd notinbranch\n{ctype} {name}{suffix}({params});")
    return "\n".join(lines) + "\n"


def compute_dtype(d):
    return dt.float32 if d in HALF else d


def result_dtype(expr, vals):
    """The dtype of an expression's value: bool for comparisons and logic, else the
    operands' (where: its branches')."""
    if isinstance(expr, BinOp) and expr.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
        return dt.bool
    if isinstance(expr, Unary) and expr.op == "!":
        return dt.bool
    if isinstance(expr, Call) and expr.fn in ("isnan", "isinf", "isfinite", "signbit"):
        return dt.bool
    if isinstance(expr, Select) and len(vals) == 3:
        return vals[1].dtype
    return vals[0].dtype


def collapse_plan(kernel):
    """old loop var -> (new var, multiplier), merging adjacent dims of a domain that every
    address walks as one (coefficient of the outer = inner's times the inner's size)."""
    xs, ys = kernel.outer_vars, kernel.inner_vars
    addresses = []
    for node in kernel.nodes:
        addresses += [buf.address(idx) for buf, idx in kernel.loads(node)]
        if node in kernel.stored:
            addresses.append(node.address(kernel.index_of(node)))
    plan, sizes = {}, {}
    ys, inner = _loop_order(kernel, ys, addresses)
    for prefix, names, dims in (("x", xs, kernel.outer), ("y", ys, inner)):
        groups = []
        for k in range(len(names) - 1, -1, -1):
            if groups and all(a.terms.get(names[k], 0) ==
                              a.terms.get(names[k + 1], 0) * dims[k + 1] for a in addresses):
                groups[-1].insert(0, k)
            else:
                groups.append([k])
        groups.reverse()
        for j, group in enumerate(groups):
            new = f"{prefix}{j}"
            sizes[new] = prod(dims[k] for k in group)
            mult = 1
            for k in reversed(group):
                plan[names[k]] = (new, mult)
                mult *= dims[k]
    return plan, sizes


def _loop_order(kernel, ys, addresses):
    """The inner loops of a pointwise kernel, reordered so the last one walks its first
    output with the smallest stride (a transposed output is written row by row)."""
    stores = [node.address(kernel.index_of(node)) for node in kernel.nodes
              if node in kernel.stored]
    if kernel.outer or not stores or len(ys) < 2:
        return ys, kernel.inner
    order = sorted(range(len(ys)), key=lambda k: -abs(stores[0].terms.get(ys[k], 0)))
    return [ys[k] for k in order], tuple(kernel.inner[k] for k in order)


def render_index(index: Index, plan) -> str:
    coeffs = {}
    for var, c in index.terms.items():
        new, mult = plan[var]
        coeffs.setdefault(new, c // mult)
    parts = [f"{v}*{c}" if c != 1 else v for v, c in sorted(coeffs.items()) if c]
    if index.const or not parts:
        parts.append(str(index.const))
    return " + ".join(parts)


def generate(kernel, kb):
    """Emit `kernel` through the builder `kb`."""
    xs, ys = kernel.outer_vars, kernel.inner_vars
    outer = [n for n in kernel.nodes if kernel.level[n] == "outer"]
    inner = [n for n in kernel.nodes if kernel.level[n] == "inner"]
    kb.begin_outer()
    for node in outer:
        if isinstance(node.value, Reduction):
            val = kb.reduce(node.value, node.value.input_index(xs, ys))
        else:
            val = kb.cast(node.value.load(kb, kernel.index_of(node)), node.dtype)
        kb.define_local(node, val, kernel.index_of(node))
        if node in kernel.stored:
            kb.store(node, kernel.index_of(node), val)
    if inner:
        kb.begin_inner()
        for node in inner:
            val = kb.cast(node.value.load(kb, kernel.index_of(node)), node.dtype)
            kb.define_local(node, val, kernel.index_of(node))
            if node in kernel.stored:
                kb.store(node, kernel.index_of(node), val)
        kb.end_inner()
    kb.end_outer()
    return kb.source()


# ---- C ----------------------------------------------------------------------------------------

def c_literal(value, dtype) -> str:
    if dtype is dt.bool:
        return "1" if value else "0"
    if dtype.category < 2:
        return f"(({C_TYPES[dtype]}){int(value)}{'LL' if dtype is dt.int64 else ''})"
    v = float(value)
    single = compute_dtype(dtype) is dt.float32
    if v != v:
        return "NAN"
    if v in (float("inf"), float("-inf")):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = repr(float(np.float32(v))) if single else repr(v)
    return f"{text}f" if single else text


def local_value(locals_, buf, idx):
    """The kernel variable already holding `buf` at `idx` (a value this kernel computed and
    reads back at the same point of its loop: the same element, read through the buffer
    or a view of it), or None: then the load reads memory."""
    local = locals_.get(buf.root)
    if local is None:
        return None
    val, address = local
    return val if buf.address(idx) == address else None


class CKernelBuilder:
    """Builds one C function; see `generate`."""

    lang = "c"
    exact_sums = True           # float sums in eager's order where it is known

    def __init__(self, kernel):
        self.kernel = kernel
        self.plan, self.sizes = collapse_plan(kernel)
        self.params: dict = {}          # root buffer -> parameter name
        self.written: set = set()
        self.lines: list = []
        self.depth = 1
        self.scopes = [{}]
        self.locals: dict = {}          # node -> (Val, names it is indexed by)
        self.sums: dict = {}            # a sum loop's text -> its accumulator
        self.rows: dict = {}            # (pointwise, index) -> row array holding its values
        self.row_sums: dict = {}        # row array -> the accumulator of its pairwise sum
        self.inlining: list = []
        self.last_inlined = None
        self.row_loops = 0              # how many loops over the row domain are open
        self.count = 0
        outer_sizes = self._section_sizes("x", kernel.outer_vars)
        inner_sizes = self._section_sizes("y", kernel.inner_vars)
        self.outer_loops, self.inner_loops = outer_sizes, inner_sizes
        work = prod(kernel.outer) * prod(kernel.inner)
        self.parallel = work >= PARALLEL_THRESHOLD
        self.columns: dict = {}         # id(reduction) -> its column accumulator element
        self.arrays: list = []          # the column accumulator arrays, freed at the end
        self.column_reductions = self._column_reductions()
        if self.column_reductions:
            self.parallel = False       # one pass over the rows; the sums keep eager's order

    def _column_reductions(self) -> list:
        """The kernel's reductions when they may run row by row: every one a float sum (or
        mean) whose reduced dims come before its kept ones (eager adds such a sum row after
        row: 'sequential'), reading only memory (no value of this kernel), the kernel has no
        inner nodes and at most COLUMN_LIMIT kept elements. Otherwise [] (the reduction loop
        stays innermost)."""
        kernel = self.kernel
        nodes = set(kernel.nodes)
        if not kernel.outer or prod(kernel.outer) > COLUMN_LIMIT or any(
                kernel.level[n] == "inner" for n in kernel.nodes):
            return []
        reductions = [n for n in kernel.nodes if isinstance(n.value, Reduction)]
        for node in reductions:
            red = node.value
            if red.kind not in ("sum", "mean") or self._sum_order(red) != "sequential":
                return []
            loads = accesses(node, kernel.outer_vars, kernel.inner_vars, "outer")
            if any(buf.root in nodes for buf, _ in loads):
                return []
        return reductions

    def _section_sizes(self, prefix, names):
        news = sorted({self.plan[n][0] for n in names}, key=lambda v: int(v[1:]))
        return [(v, self.sizes[v]) for v in news]

    # ---- text --------------------------------------------------------------------------------

    def line(self, text):
        self.lines.append("    " * self.depth + text)

    def tmp(self, text, dtype) -> Val:
        for scope in reversed(self.scopes):
            if text in scope:
                return Val(scope[text], dtype)
        name = f"t{self.count}"
        self.count += 1
        self.line(f"{C_TYPES[compute_dtype(dtype)]} {name} = {text};")
        self.scopes[-1][text] = name
        return Val(name, dtype)

    def _loops(self, loops, pragma_outer=None, pragma_inner="#pragma omp simd"):
        self.row_loops += loops is self.inner_loops
        for i, (var, size) in enumerate(loops):
            if i == 0 and pragma_outer:
                self.line(pragma_outer)
            if i == len(loops) - 1 and pragma_inner and not (i == 0 and pragma_outer):
                self.line(pragma_inner)
            self.line(f"for (int64_t {var} = 0; {var} < {size}; {var}++) {{")
            self.depth += 1
        self.scopes.append({})

    def _close(self, loops):
        self.row_loops -= loops is self.inner_loops
        self.scopes.pop()
        for _ in loops:
            self.depth -= 1
            self.line("}")

    # ---- the builder's interface --------------------------------------------------------------

    def begin_outer(self):
        if self.column_reductions:
            self._column_sums()
        if self.outer_loops:
            extra = f" collapse({len(self.outer_loops)})" if len(self.outer_loops) > 1 else ""
            self._loops(self.outer_loops, f"#pragma omp parallel for{extra}{THREADS}"
                        if self.parallel else None, pragma_inner=None)

    def end_outer(self):
        if self.outer_loops:
            self._close(self.outer_loops)
        for array in self.arrays:
            self.line(f"free({array});")

    def _column_sums(self):
        """Column sums row by row (see `_column_reductions`): an accumulator per kept
        element, the reduced dims' loops outside and the kept ones inside, so memory is
        read in order (a bias gradient summed over 1024 rows of 512 read 2 KB apart per
        element otherwise). Each element still adds its rows first to last, as eager."""
        flat, step = [], 1
        for var, size in reversed(self.outer_loops):
            flat.insert(0, f"{var}*{step}" if step != 1 else var)
            step *= size
        flat = " + ".join(flat)
        count = prod(self.kernel.outer)
        xs, ys = self.kernel.outer_vars, self.kernel.inner_vars
        made: dict = {}                 # loop text -> the array it filled (mean and sum of x)
        for node in self.column_reductions:
            red = node.value
            ctype = C_TYPES[compute_dtype(red.acc_dtype)]
            array = f"acc{self.count}_col"
            self.count += 1
            start = len(self.lines)
            zero = c_literal(0, red.acc_dtype)   # +0.0, as eager's sums start
            self.line(f"{ctype}* {array} = ({ctype}*)malloc({count} * sizeof({ctype}));")
            self.line(f"for (int64_t i = 0; i < {count}; i++) {array}[i] = {zero};")
            self._loops(self.inner_loops, None, None)
            self._loops(self.outer_loops, None)
            value = red.fn(self, red.input_index(xs, ys))
            self.line(f"{array}[{flat}] += {value.text};")
            self._close(self.outer_loops)
            self._close(self.inner_loops)
            signature = _normalized(self.lines[start:])
            if signature in made:
                del self.lines[start:]
                array = made[signature]
            else:
                made[signature] = array
                self.arrays.append(array)
            self.columns[id(red)] = f"{array}[{flat}]"

    def begin_inner(self):
        top = None
        if self.parallel and not self.outer_loops:
            top = f"#pragma omp parallel for simd{THREADS}" if len(self.inner_loops) == 1 \
                else f"#pragma omp parallel for{THREADS}"
        self._loops(self.inner_loops, top)

    def end_inner(self):
        self._close(self.inner_loops)

    def param(self, root) -> str:
        if root not in self.params:
            self.params[root] = f"p{len(self.params)}"
        return self.params[root]

    def load(self, buf, idx):
        root = buf.root
        val = local_value(self.locals, buf, idx)
        if val is not None:
            return val
        text = f"{self.param(root)}[{render_index(buf.address(idx), self.plan)}]"
        return self.tmp(self.loaded(text, buf.dtype), buf.dtype)

    def loaded(self, text, dtype) -> str:
        """An element as it is computed with (half precision: as float)."""
        if dtype is dt.float16:
            return f"(float){text}"
        if dtype is dt.bfloat16:
            return f"gt_bf16_load({text})"
        return text

    def stored(self, text, dtype) -> str:
        if dtype is dt.bfloat16:
            return f"gt_bf16_bits({text})"
        if dtype is dt.float16:
            return f"(_Float16){text}"
        return text

    def inline(self, value, idx):
        """A pointwise value at idx: computed here, or read back from the row a pairwise sum
        of this kernel stored it in (softmax's exp, layer norm's residual sum)."""
        key = (id(value), tuple(idx))
        row = self.rows.get(key)
        if row is not None and self.row_loops:
            return Val(f"{row}[{self.inner_loops[0][0]}]", value.dtype)
        self.inlining.append(key)
        try:
            val = value.fn(self, idx)
        finally:
            self.inlining.pop()
        if not self.inlining:
            self.last_inlined = (key, val)
        return val

    def store(self, node, idx, val):
        self.written.add(node.root)
        target = f"{self.param(node.root)}[{render_index(node.address(idx), self.plan)}]"
        self.line(f"{target} = {self.stored(val.text, node.dtype)};")

    def define_local(self, node, val, idx):
        self.locals[node] = (val, node.address(idx))

    def const(self, value, dtype):
        return Val(c_literal(value, dtype), dtype)

    def cast(self, val, dtype):
        if val.dtype is dtype:
            return val
        src, dst = compute_dtype(val.dtype), compute_dtype(dtype)
        if src is dst and dtype not in HALF:
            return Val(val.text, dtype)
        text = val.text if src is dst else (
            f"({val.text} != 0)" if dtype is dt.bool else f"(({C_TYPES[dst]}){val.text})")
        return self.tmp(_rounded(text, dtype), dtype)

    def op(self, expr, vals, dtype=None):
        dtype = dtype or result_dtype(expr, vals)
        names = {n: Var(v.text) for n, v in zip("abc", vals)}
        precision = "float" if compute_dtype(vals[-1].dtype) is dt.float32 else "double"
        text = render(substitute(expr, names), self.lang, dtype=precision)
        return self.tmp(_rounded(text, dtype), dtype)

    def reduce(self, red, in_idx):
        kind, floating = red.kind, red.acc_dtype.category == 2
        if kind in ("sum", "mean", "var"):
            acc = self._sum(red, in_idx)
        elif kind == "prod":
            acc = self._accumulate(red, in_idx, "*", c_literal(1, red.acc_dtype),
                                   lambda acc, v: [f"{acc} *= {v};"])
        else:
            cmp = ">" if kind == "amax" else "<"
            init = c_literal(float("-inf") if kind == "amax" else float("inf"),
                             red.acc_dtype) if floating else _int_limit(red.acc_dtype, kind)
            acc = self._accumulate(red, in_idx, "max" if kind == "amax" else "min", init,
                                   lambda acc, v: [f"{acc} = ({v} {cmp} {acc}) ? {v} : {acc};"]
                                   + ([f"{acc}_nan |= ({v} != {v});"] if floating else []),
                                   nan_flag=floating)
        result = Val(acc, red.acc_dtype)
        if kind in ("mean", "var"):
            result = self.tmp(f"{acc} / {c_literal(red.count, red.acc_dtype)}", red.acc_dtype)
        if kind == "var":
            mean = result

            def square(v):
                d = self.tmp(f"{v} - {mean.text}", red.acc_dtype)
                return f"{d.text} * {d.text}"
            m2 = self._sum(red, in_idx, square)
            divisor = c_literal(max(red.count - red.correction, 0), red.acc_dtype)
            result = self.tmp(f"{m2} / {divisor}", red.acc_dtype)
        return self.cast(result, red.dtype)

    def _sum(self, red, in_idx, summand=lambda v: v) -> str:
        """The sum of `summand(input)` over the reduced dims: a loop, or the same loop's
        result when the kernel already summed that input (var and mean of one tensor share
        their first pass)."""
        column = self.columns.get(id(red))
        if column is not None:
            return column
        start, rows = len(self.lines), dict(self.rows)
        acc, copied = self._accumulate_sum(red, in_idx, summand)
        signature = _normalized(self.lines[start:])
        earlier = self.sums.get(signature) or self.row_sums.get(copied)
        if earlier is not None:
            del self.lines[start:]
            self.rows = rows                # the row array just made is gone with its loop
            return earlier
        self.sums[signature] = acc
        return acc

    def _sum_order(self, red) -> str:
        """How a float sum adds, to add as eager (NumPy) does where the order is known:
        'pairwise' (NumPy's pairwise summation over a row, the reduced dims trailing and
        merged into one loop), 'sequential' (the reduced dims before the kept ones: NumPy
        adds row after row), else 'simd' (vector lanes: the last bits may differ)."""
        if red.acc_dtype.category != 2 or not self.exact_sums:
            return "simd"
        reduced = [d for d in red.dims if red.in_shape[d] != 1]
        kept = [d for d in range(len(red.in_shape)) if d not in red.dims and
                red.in_shape[d] != 1]
        if reduced and kept and max(reduced) < min(kept):
            return "sequential"
        longest = NUMPY_BUFFER if red.in_dtype is not red.acc_dtype else PAIRWISE_ROW
        if reduced and (not kept or min(reduced) > max(kept)) and \
                len(self.inner_loops) == 1 and red.count <= longest:
            return "pairwise"
        return "simd"

    def _accumulate_sum(self, red, in_idx, summand) -> str:
        ctype = C_TYPES[compute_dtype(red.acc_dtype)]
        acc = f"acc{self.count}"
        self.count += 1
        order = self._sum_order(red)
        if order == "pairwise":
            row, (var, _) = f"{acc}_row", self.inner_loops[0]
            self.line(f"{ctype} {row}[{red.count}];")
            self._loops(self.inner_loops, None)
            self.last_inlined = None
            value = red.fn(self, in_idx)
            text = summand(value.text)
            self.line(f"{row}[{var}] = {text};")
            self._close(self.inner_loops)
            if self.last_inlined is not None and self.last_inlined[1].text == text and \
                    self.last_inlined[1].dtype is red.acc_dtype:
                self.rows[self.last_inlined[0]] = row       # the row holds that value
            self.row_sums[row] = acc
            # eager's sums (NumPy's, PyTorch's) start from +0.0: a row of -0.0 sums to +0.0
            self.line(f"{ctype} {acc} = ({ctype})0 + gt_pairwise_sum_{ctype}({row}, "
                      f"{red.count});")
            copied = text.split("[")[0] if text == f"{text.split('[')[0]}[{var}]" else None
            return acc, copied
        zero = c_literal(0, red.acc_dtype)       # +0.0, as eager's sums start
        self.line(f"{ctype} {acc} = {zero};")
        if order == "sequential":
            self._loops(self.inner_loops, None, None)
        else:
            self._reduction_loops(f"reduction(+:{acc})")
        self.line(f"{acc} += {summand(red.fn(self, in_idx).text)};")
        self._close(self.inner_loops)
        self.combine_partials(acc, "+", zero, compute_dtype(red.acc_dtype), False)
        return acc, None

    def _accumulate(self, red, in_idx, clause, init, update, nan_flag=False) -> str:
        """`acc = init; for the reduced dims: update(acc, input)`, in the loops' pragmas."""
        acc = f"acc{self.count}"
        self.count += 1
        self.line(f"{C_TYPES[compute_dtype(red.acc_dtype)]} {acc} = {init};")
        clauses = f"reduction({clause}:{acc})"
        if nan_flag:
            self.line(f"bool {acc}_nan = 0;")
            clauses += f" reduction(|:{acc}_nan)"
        self._reduction_loops(clauses)
        v = red.fn(self, in_idx)
        for text in update(acc, v.text):
            self.line(text)
        self._close(self.inner_loops)
        self.combine_partials(acc, clause, init, compute_dtype(red.acc_dtype), nan_flag)
        if nan_flag:
            self.line(f"if ({acc}_nan) {acc} = NAN;")
        return acc

    def combine_partials(self, acc, clause, init, dtype, nan_flag):
        """Where threads hold partial results (CUDA), combine them: nothing to do in C,
        where OpenMP's reduction clause did it."""

    def _reduction_loops(self, clauses):
        if self.parallel and not self.outer_loops:
            if len(self.inner_loops) == 1:
                self._loops(self.inner_loops, f"#pragma omp parallel for simd {clauses}{THREADS}")
            else:
                self._loops(self.inner_loops, f"#pragma omp parallel for {clauses}{THREADS}",
                            f"#pragma omp simd {clauses}")
        else:
            self._loops(self.inner_loops, None, f"#pragma omp simd {clauses}")

    def source(self) -> str:
        params = []
        for root, name in self.params.items():
            ctype = self.storage_type(root.dtype)
            const = "" if root in self.written else "const "
            params.append(f"{const}{ctype}* restrict {name}")
        head = f"void {self.kernel.name}({', '.join(self.leading_params() + params)})\n{{"
        return "\n".join([head, *self.lines, "}"]) + "\n"

    def storage_type(self, dtype) -> str:
        return C_TYPES[dtype]

    def leading_params(self) -> list:
        """Parameters before the buffers: the number of threads of parallel loops."""
        return ["int nthreads"]

    def arguments(self) -> list:
        """The buffers to pass, in the parameters' order."""
        return list(self.params)


def _normalized(lines) -> str:
    """Loop text with its temporaries renamed in order of appearance: two loops computing
    the same thing read the same."""
    names = {}
    return re.sub(r"\b(?:t|acc)\d+(?!\d)", lambda m: names.setdefault(m.group(), f"v{len(names)}"),
                  "\n".join(lines))


def _int_limit(dtype, kind):
    info = np.iinfo(dtype.np) if dtype is not dt.bool else None
    if info is None:
        return "0" if kind == "amax" else "1"
    return c_literal(info.min if kind == "amax" else info.max, dtype)


def _rounded(text, dtype):
    if dtype is dt.float16:
        return f"gt_f16_round({text})"
    if dtype is dt.bfloat16:
        return f"gt_bf16_round({text})"
    return text


def c_source(kernels_sources: list, vector_math: bool) -> str:
    """One translation unit with every kernel of a graph."""
    head = PRELUDE + (vector_math_declarations() if vector_math else "")
    return head + "\n" + "\n".join(kernels_sources)

