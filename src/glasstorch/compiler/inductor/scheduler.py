"""Fusion: the program's computed buffers grouped into kernels.

A kernel runs over one loop nest: an outer domain O (parallel) and an inner domain I. In
each outer iteration it first computes its *outer-level* nodes in order (reductions over I,
and pointwise values of shape O), then runs one loop over I computing its *inner-level*
nodes (pointwise values of shape O + I). So softmax (amax, sum, then the division) or
layer_norm (mean, var, then the normalised output) is one kernel, whose reductions stay in
registers. A pure pointwise kernel has O = () and I = its shape.

Nodes join kernels greedily, in program order. A node may join a kernel with its loops
(same domain; or, for a pointwise node and a pure pointwise kernel of the same size, loops
that a reshape between them splits differently: the kernel then runs over both's finer
split) that comes after everything it reads, if it reads what that kernel writes at the
element the kernel writes; it tries the kernels writing what it reads first (their results
are then registers), then the others, the latest first; else it starts a new kernel. Why a
node did not join a kernel is recorded for the `fusion` log. Dims of size 1 take no loop
(`squeezed`).

Afterwards: a buffer is stored only if something outside its kernel reads it (or the graph
returns it); a buffer nothing reads is dropped (dead code). The writes of new values into
inputs (`InputUpdate`) form kernels of their own, after every other step.
"""
from __future__ import annotations

from .ir import InputUpdate, Reduction, Val, index_for, merged_index, refinement, squeezed
from .lowering import Extern, layout_of


class Kernel:
    """A fusion group: its loops (outer and inner sizes) and its nodes."""

    def __init__(self, name: str, outer: tuple, inner: tuple):
        self.name, self.outer, self.inner = name, outer, inner
        self.nodes: list = []           # ComputedBuffers, in program order
        self.level: dict = {}           # node -> "outer" | "inner"
        self.stored: set = set()        # nodes written to memory

    @property
    def outer_vars(self):
        return [f"x{i}" for i in range(len(self.outer))]

    @property
    def inner_vars(self):
        return [f"y{i}" for i in range(len(self.inner))]

    def index_of(self, node, level=None):
        """The index a node is computed at inside this kernel's loops (a pointwise node of a
        pure pointwise kernel may span several of its loops per dim: `merged_index`)."""
        level = level or self.level[node]
        if level == "inner":
            return merged_index(node.shape, self.outer + self.inner,
                                self.outer_vars + self.inner_vars)
        return index_for(node.shape, self.outer_vars)

    def loads(self, node, level=None) -> list:
        """[(buffer, index)] that `node` loads, computed inside this kernel's loops."""
        level = level or self.level[node]
        if isinstance(node.value, Reduction):
            return accesses(node, self.outer_vars, self.inner_vars, level)
        return _loads(node, self.index_of(node, level))

    def reshaped(self, inner: tuple) -> "Kernel":
        """The same kernel over the inner loops `inner` (a refinement of its own)."""
        kernel = Kernel(self.name, self.outer, inner)
        kernel.nodes, kernel.level, kernel.stored = self.nodes, self.level, self.stored
        return kernel

    def __repr__(self):
        return f"Kernel({self.name}, outer={list(self.outer)}, inner={list(self.inner)}, " \
               f"nodes={[n.name for n in self.nodes]})"


class Recorder:
    """A kernel builder that only records loads: what a node reads, and at which index."""

    def __init__(self):
        self.loads = []

    def load(self, buf, idx):
        self.loads.append((buf, list(idx)))
        return Val("v", buf.dtype)

    def inline(self, value, idx):
        return value.fn(self, idx)

    def op(self, expr, vals, dtype=None):
        return Val("v", dtype or vals[0].dtype)

    def const(self, value, dtype):
        return Val("c", dtype)

    def cast(self, val, dtype):
        return Val(val.text, dtype)


def accesses(node, outer_vars, inner_vars, level):
    """[(buffer, index)] that `node` loads, computed inside the given loop variables (one
    per dim of its own domain)."""
    value = node.value
    if isinstance(value, Reduction):
        rec = Recorder()
        value.fn(rec, value.input_index(outer_vars, inner_vars))
        return rec.loads
    names = outer_vars + (inner_vars if level == "inner" else [])
    return _loads(node, index_for(node.shape, names))


def _loads(node, index) -> list:
    """[(buffer, index)] that a pointwise node loads, computed at `index`."""
    rec = Recorder()
    node.value.load(rec, index)
    return rec.loads


def _natural_domain(node):
    if isinstance(node.value, Reduction):
        return node.value.kept, node.value.reduced
    return (), squeezed(node.shape)


def _level_in(node, outer, inner):
    if isinstance(node.value, Reduction):
        return "outer" if (node.value.kept, node.value.reduced) == (outer, inner) else None
    s = squeezed(node.shape)
    if s == outer + inner:
        return "inner"
    if s == outer and inner:
        return "outer"
    return None


def _fit(node, kernel):
    """(level, inner loops) a node would have in a kernel, or None where its loops differ.
    A pointwise node joins a pure pointwise kernel of the same size whose loops it walks in
    the same order (a reshape between them: a matrix product's bias add, then its GELU over
    a (batch, seq, features) view); the kernel's loops become both's `refinement`."""
    level = _level_in(node, kernel.outer, kernel.inner)
    if level is not None:
        return level, kernel.inner
    if isinstance(node.value, Reduction) or kernel.outer or any(
            kernel.level[n] != "inner" for n in kernel.nodes):
        return None
    inner = refinement(kernel.inner, squeezed(node.shape))
    return None if inner is None else ("inner", inner)


def _reads_from(loads):
    return {buf.root for buf, _ in loads}


class Schedule:
    """`program`: Kernels and Externs in the order the host code runs them."""

    def __init__(self, lowering):
        self.lowering = lowering
        self.program: list = []
        self.position: dict = {}         # buffer -> index in program of the step writing it
        self.kernel_of: dict = {}
        self.reads: dict = {}            # node -> root buffers it reads
        self.fusion_log: list = []       # lines for GLASSTORCH_LOGS=fusion
        self._count = 0

    def run(self):
        steps = _dead_code_eliminated(self.lowering)
        for step in steps:
            if isinstance(step, Extern):
                self.program.append(step)
                for out in step.outputs:
                    self.position[out] = len(self.program) - 1
            else:
                self._place(step)
        self._decide_stores()
        return self

    def _place(self, node):
        deps = _reads_from(accesses(node, *_vars_for(node), "inner"))
        self.reads[node] = deps
        after = max((self.position[d] for d in deps if d in self.position), default=-1)
        # first the kernels writing what it reads (their results stay in registers), the
        # latest first; then any other kernel it may join, the latest first
        candidates = range(len(self.program) - 1, max(after, 0) - 1, -1)
        producers = {self.position[d] for d in deps if d in self.kernel_of}
        for pos in sorted(candidates, key=lambda p: (p not in producers, -p)):
            step = self.program[pos]
            if not isinstance(step, Kernel):
                continue
            why = self._why_not(node, step)
            if why is None:
                self._join(node, step, pos)
                return
            self.fusion_log.append(f"{node.name} not fused into {step.name}: {why}")
        outer, inner = _natural_domain(node)
        kernel = Kernel(f"kernel{self._count}", outer, inner)
        self._count += 1
        self.program.append(kernel)
        self._join(node, kernel, len(self.program) - 1)

    def _join(self, node, kernel, pos):
        kernel.level[node], kernel.inner = _fit(node, kernel)
        kernel.nodes.append(node)
        self.position[node] = pos
        self.kernel_of[node] = kernel

    def _why_not(self, node, kernel):
        if isinstance(node, InputUpdate) != all(isinstance(n, InputUpdate) for n in kernel.nodes):
            return "inputs are overwritten only by the graph's last kernels, after every read"
        fit = _fit(node, kernel)
        if fit is None:
            outer, inner = _natural_domain(node)
            return (f"its loops {list(outer)} x {list(inner)} "
                    f"differ from the kernel's {list(kernel.outer)} x {list(kernel.inner)}")
        level, inner = fit
        trial = kernel if inner == kernel.inner else kernel.reshaped(inner)
        for buf, idx in trial.loads(node, level):
            root = buf.root
            if self.kernel_of.get(root) is not kernel:
                continue
            if kernel.level[root] == "inner" and level == "outer":
                return f"it needs all of {root.name} before the kernel's inner loop"
            if buf.address(idx) != root.address(trial.index_of(root)):
                return f"it reads {root.name} at another element than the kernel writes"
        return None

    def _decide_stores(self):
        outputs = {layout_of(v)[0] for v in self.lowering.outputs if layout_of(v) is not None}
        needed = set(outputs)
        for step in self.program:
            if isinstance(step, Extern):
                needed.update(layout_of(v)[0] for v in step.buffers_read())
            else:
                for node in step.nodes:
                    needed.update(r for r in self.reads[node]
                                  if self.kernel_of.get(r) is not step)
        for step in self.program:
            if isinstance(step, Kernel):
                step.stored = {n for n in step.nodes if n in needed or
                               isinstance(n, InputUpdate)}


def _vars_for(node):
    outer, inner = _natural_domain(node)
    return [f"x{i}" for i in range(len(outer))], [f"y{i}" for i in range(len(inner))]


def _dead_code_eliminated(lowering):
    """The steps without the computed buffers nothing reads (Externs always run)."""
    live = {layout_of(v)[0] for v in lowering.outputs if layout_of(v) is not None}
    kept = []
    for step in reversed(lowering.steps):
        if isinstance(step, Extern):
            kept.append(step)
            live.update(layout_of(v)[0] for v in step.buffers_read())
        elif step in live or isinstance(step, InputUpdate):
            kept.append(step)
            live.update(_reads_from(accesses(step, *_vars_for(step), "inner")))
    return list(reversed(kept))

