"""`torch._dynamo.explain(fn)(*args)`: compile once, and report the graphs and the breaks;
on request, what glasstorch's own compiler makes of each graph (kernels, fusion, times)."""
from __future__ import annotations

from collections import namedtuple

from .._ops import ops_namespace
from . import eval_frame


class Guard(namedtuple("Guard", "source kind expected")):
    """One check of the call's guard snapshot (guards.py): `source` ('x', 'self.lin.weight',
    '' for global state), its `kind` and the `expected` value."""


class ExplainOutput:
    """What one call of a function under capture produced: its graphs (GraphModules, in the
    order they ran), the graph breaks (each with its reason and the user's file:line), the
    guards of its cache entry (`out_guards`), and counts. `print(explain_output)` shows it.
    `compiled_graphs()` and `kernel_times()` show what inductor makes of the graphs."""

    def __init__(self, graphs: list, breaks: list, guards: tuple = (), compile_times: str = "",
                 input_layouts: list | None = None):
        self.graphs = graphs
        self._input_layouts = input_layouts or [[] for _ in graphs]
        self._compiled = None
        self.graph_count = len(graphs)
        self.break_reasons = breaks
        self.graph_break_count = len(breaks)
        self.ops_per_graph = [[str(n.target) for n in g.graph.nodes if n.op == "call_function"]
                              for g in graphs]
        self.op_count = sum(len(ops) for ops in self.ops_per_graph)
        self.out_guards = [Guard(*check) for check in guards]
        self.compile_times = compile_times

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            for i, brk in enumerate(self.break_reasons, 1):
                lines += [f"  Break Reason {i}:", f"    Reason: {brk.reason}",
                          f"    User Stack: {brk.location} in {brk.function}"]
        if self.ops_per_graph:
            lines.append("Ops per Graph:")
            for i, ops in enumerate(self.ops_per_graph, 1):
                lines.append(f"  Ops {i}:")
                lines += [f"    {op}" for op in ops]
        return "\n".join(lines) + "\n"

    __repr__ = __str__

    def compiled_graphs(self) -> list:
        """Each graph compiled by inductor (compiled once, on the first request), for inputs
        laid out as the call's were: `.artefacts` holds the fusion groups (`kernels`, each
        with its `nodes`), why nodes were not fused (`schedule.fusion_log`, and
        `lowering.fallbacks`: ops left to the dispatcher), the generated `kernel_source`
        and `host_source` (docs/16); `artefacts` is None for a graph that runs eagerly."""
        if self._compiled is None:
            from .inductor import compile_fx
            self._compiled = [compile_fx(gm, _examples(layouts))
                              for gm, layouts in zip(self.graphs, self._input_layouts)]
        return self._compiled

    def kernel_times(self) -> list:
        """Per graph, {kernel name: seconds} of one run of its compiled kernels, on fresh
        inputs laid out as the call's were (their values are not the call's)."""
        return [compiled.kernel_times(*_examples(layouts)) for compiled, layouts
                in zip(self.compiled_graphs(), self._input_layouts)]


def _examples(layouts: list) -> list:
    empty_strided = ops_namespace("aten").empty_strided.default
    return [empty_strided(list(shape), list(stride), dtype=dtype, device=device).zero_()
            for shape, stride, dtype, device in layouts]


class _ExplainRecorder:
    def __init__(self):
        self.graphs: list = []
        self.input_layouts: list = []   # per graph, each input's (shape, stride, dtype, device)
        self.breaks: list = []

    def add_graph(self, gm, inputs) -> None:
        self.graphs.append(gm)
        self.input_layouts.append([(tuple(t.shape), t.stride(), t.dtype, t.device)
                                   for t in inputs])


def explain(f, *extra_args, **extra_kwargs):
    """`explain(f)(*args, **kwargs)` runs `f` once under a fresh capture with the eager
    backend and returns an ExplainOutput."""
    if extra_args or extra_kwargs:
        raise TypeError("explain(f, *args) was removed in PyTorch 2.1: call explain(f)(*args)")

    def inner(*args, **kwargs):
        recorder = _ExplainRecorder()
        compiled = eval_frame._CompiledFunction(f, "eager", False, None)
        previous, eval_frame._state.explain = eval_frame._state.explain, recorder
        try:
            compiled(*args, **kwargs)
        finally:
            eval_frame._state.explain = previous
        guards = compiled.entries[0].snapshot if compiled.entries else ()
        return ExplainOutput(recorder.graphs, recorder.breaks, guards,
                             input_layouts=recorder.input_layouts)
    return inner
