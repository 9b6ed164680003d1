"""The loop-level IR a graph is lowered to, before fusion and code generation.

A tensor in a graph being lowered is a *value*: something that can say what its element at
an index is. Four kinds:

* `Pointwise`: an element is a scalar expression of elements of other values. Nothing is
  stored: a consumer that loads it computes it in its own loop (this inlining is pointwise
  fusion: a chain of pointwise ops becomes one expression, with no buffer in between).
* `Reduction`: reduces an expression over some dims (sum, amax, var, ...). It always becomes a
  `ComputedBuffer`; the scheduler may keep it in a register of the kernel that reads it.
* `View`: the element of another value at a remapped index (permute, expand, slice, ...):
  index arithmetic, no copy.
* buffers: memory with a layout. `InputBuffer` (a graph input), `ComputedBuffer` (written by
  a kernel), `ExternBuffer` (the result of an op called through the dispatcher).

Indices are affine (`Index`: a constant plus loop variables times coefficients), so a load's
address is affine in the loop variables, and loops can be merged where every access allows.
Code generators pass a *kernel builder* (`kb`) to the values; `kb.load`, `kb.op`, `kb.const`
and `kb.cast` emit statements in the kernel's language and return `Val`s (a name and dtype);
`kb.inline(pointwise, idx)` computes a pointwise value (or reuses it, where the builder
kept it).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod


# ---- indices -----------------------------------------------------------------------------------

class Index:
    """An affine integer expression: `const + sum(coeff * var)`, over loop variable names."""

    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const: int = 0):
        self.terms = {v: c for v, c in (terms or {}).items() if c}
        self.const = const

    @staticmethod
    def var(name: str) -> "Index":
        return Index({name: 1})

    def __add__(self, other) -> "Index":
        if isinstance(other, int):
            return Index(self.terms, self.const + other)
        terms = dict(self.terms)
        for v, c in other.terms.items():
            terms[v] = terms.get(v, 0) + c
        return Index(terms, self.const + other.const)

    def __mul__(self, k: int) -> "Index":
        return Index({v: c * k for v, c in self.terms.items()}, self.const * k)

    def __eq__(self, other):
        return isinstance(other, Index) and self.terms == other.terms and \
            self.const == other.const

    def __hash__(self):
        return hash((tuple(sorted(self.terms.items())), self.const))

    def __repr__(self):
        parts = [f"{v}*{c}" if c != 1 else v for v, c in self.terms.items()]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


ZERO = Index()


def contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


def squeezed(shape) -> tuple:
    """The sizes of a shape's dims other than size 1: the loops a value needs."""
    return tuple(s for s in shape if s != 1)


def index_for(shape, loop_vars) -> list:
    """The index of a value of `shape` inside loops `loop_vars` (one per non-1 dim)."""
    it = iter(loop_vars)
    return [ZERO if s == 1 else Index.var(next(it)) for s in shape]


def merged_index(shape, sizes, loop_vars) -> list:
    """The index of a value of `shape` inside loops `loop_vars` of `sizes`, where each non-1
    dim of `shape` spans consecutive loops, row-major (a (1024, 512) value inside loops
    (16, 64, 512): [64*y0 + y1, y2]). With one loop per non-1 dim it is `index_for`'s."""
    loops, idx = iter(zip(sizes, loop_vars)), []
    for s in shape:
        index, covered = ZERO, 1
        while covered < s:
            size, var = next(loops)
            index, covered = index * size + Index.var(var), covered * size
        idx.append(index)
    return idx


def refinement(a: tuple, b: tuple):
    """The loops over which two row-major domains of the same size are both walked in
    order: each dim of `a` and of `b` the product of consecutive ones (`(1024, 512)` and
    `(16, 64, 512)` -> `(16, 64, 512)`); None where there are none (`(4, 6)`, `(6, 4)`)."""
    if prod(a) != prod(b):
        return None
    a, b, out = list(a), list(b), []
    while a and b:
        x, y = a[0], b[0]
        small, large = min(x, y), max(x, y)
        if large % small:
            return None
        out.append(small)
        a.pop(0)
        b.pop(0)
        if large != small:
            (a if x == large else b).insert(0, large // small)
    return tuple(out) if not a and not b else None


@dataclass(frozen=True)
class Val:
    """A scalar in a kernel being generated: the name (or literal) holding it, its dtype."""
    text: str
    dtype: object


# ---- values ------------------------------------------------------------------------------------

class Value:
    shape: tuple
    dtype: object

    def numel(self) -> int:
        return prod(self.shape)

    def load(self, kb, idx: list) -> Val:
        raise NotImplementedError


class Pointwise(Value):
    """`fn(kb, idx) -> Val`: the element at `idx`, computed from other values' elements.
    `cost` counts the ops inlined into it, which decides when it is better stored."""

    def __init__(self, shape, dtype, fn, cost: int = 1):
        self.shape, self.dtype, self.fn, self.cost = tuple(shape), dtype, fn, cost

    def load(self, kb, idx):
        return kb.inline(self, idx)


class View(Value):
    """The element of `source` at `remap(idx)`: a view that is index arithmetic."""

    def __init__(self, source: Value, shape, remap):
        self.source, self.shape, self.dtype, self.remap = source, tuple(shape), source.dtype, remap
        self.cost = getattr(source, "cost", 0)

    def load(self, kb, idx):
        return self.source.load(kb, self.remap(idx))


class Reduction:
    """`kind` ('sum', 'prod', 'amax', 'amin', 'mean', 'var') of `fn(kb, in_idx)` over the
    dims `dims` of an input of shape `in_shape` and dtype `in_dtype`; the result has
    `shape` (keepdim or not), `dtype`, and accumulates in `acc_dtype`. `correction` is
    var's."""

    def __init__(self, shape, dtype, acc_dtype, in_shape, dims, fn, kind, correction=0,
                 in_dtype=None):
        self.shape, self.dtype, self.acc_dtype = tuple(shape), dtype, acc_dtype
        self.in_dtype = in_dtype or acc_dtype
        self.in_shape, self.dims, self.fn, self.kind = tuple(in_shape), tuple(dims), fn, kind
        self.correction = correction
        self.kept = tuple(s for d, s in enumerate(in_shape) if d not in dims and s != 1)
        self.reduced = tuple(s for d, s in enumerate(in_shape) if d in dims and s != 1)

    @property
    def count(self) -> int:
        return prod(self.reduced)

    def input_index(self, outer_vars, reduce_vars) -> list:
        """The input's index inside loops over the kept dims and the reduced dims."""
        outer, red, idx = iter(outer_vars), iter(reduce_vars), []
        for d, s in enumerate(self.in_shape):
            idx.append(ZERO if s == 1 else Index.var(next(red if d in self.dims else outer)))
        return idx


class Buffer(Value):
    """Memory with a layout (strides and offset in elements); `name` is its host variable."""

    def __init__(self, name: str, shape, dtype, stride, offset: int = 0):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.stride, self.offset = tuple(stride), offset

    @property
    def root(self) -> "Buffer":
        """The buffer owning the memory (a view's base)."""
        return self

    def address(self, idx) -> Index:
        out = Index(const=self.offset)
        for i, st in zip(idx, self.stride):
            out = out + i * st
        return out

    def load(self, kb, idx):
        return kb.load(self, idx)

    def __repr__(self):
        return f"{type(self).__name__}({self.name}, {list(self.shape)}, {self.dtype})"


class InputBuffer(Buffer):
    """A graph input, laid out as its example."""


class ConstantBuffer(Buffer):
    """A tensor the compile made once (a factory op of constant arguments, `arange`), which
    the host code binds by name: no op runs for it at call time."""

    def __init__(self, name, tensor):
        super().__init__(name, tensor.shape, tensor.dtype, tensor.stride())
        self.tensor = tensor


class ExternBuffer(Buffer):
    """The result of an op run through the dispatcher (a BLAS call, a fallback)."""

    def __init__(self, name, shape, dtype, stride, node):
        super().__init__(name, shape, dtype, stride)
        self.node = node


class ComputedBuffer(Buffer):
    """Written by a generated kernel: `value` is a Pointwise or a Reduction."""

    def __init__(self, name, value, stride):
        super().__init__(name, value.shape, value.dtype, stride)
        self.value = value


class StridedView(Buffer):
    """A view of a buffer's memory (another layout over the same storage): the output of a
    view op applied to a buffer, which the host code builds with `as_strided` when the
    graph returns it."""

    def __init__(self, base: Buffer, shape, stride, offset):
        super().__init__(base.name, shape, base.dtype, stride, offset)
        self.base = base.root
        self.base.viewed = True          # its layout is now fixed

    @property
    def root(self) -> Buffer:
        return self.base


class InputUpdate(ComputedBuffer):
    """The new value of a graph input an in-place op changed, written into the input's own
    memory (with its strides) by the last kernels of the graph."""

    def __init__(self, target: InputBuffer, value):
        super().__init__(target.name, value, target.stride)
        self.target = target

    @property
    def root(self) -> Buffer:
        return self.target
