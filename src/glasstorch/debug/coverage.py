"""What each operator has: its facets, read from the dispatcher's tables and declarations.

An operator needs a CPU kernel, a CUDA kernel (a native one, the CPU's array kernel run on
CuPy, or the host path), a Meta kernel unless its output's size depends on the data (PyTorch's
`dynamic_output_shape` tag), and, when it is a functional op, an autograd story: a derivative
formula, a decomposition that autograd records through, or an explicit declaration that it is
not differentiable or has no formula (as in PyTorch). In-place and out= variants take theirs
from the functional op. Two facets are informational for ATen ops: whether
torch._decomp has a decomposition of it, and, for primitives, the scalar expression (which
every elementwise primitive needs: code generation writes kernels from it).
`glasstorch ops` prints the table; `--missing` only the gaps.

This module reads every layer's declarations, so it ranks above them (tests/test_layering.py).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from .._decomp import decomposition_table
from .._ops import overload_of
from ..autograd import recording
from ..dispatch import dispatcher
from ..dispatch.keys import DispatchKey
from ..ops import gpu_kernels

FACETS = ("meta", "autograd", "cpu", "cuda", "decomposition", "expression")
MISSING = "MISSING"


@dataclass(frozen=True)
class OperatorCoverage:
    """One operator's facets, each a word saying where it comes from (or MISSING)."""

    name: str
    meta: str
    autograd: str
    cpu: str
    cuda: str
    decomposition: str
    expression: str

    def missing(self) -> tuple:
        return tuple(f for f in FACETS if getattr(self, f) == MISSING)


def _kernel_source(op, key) -> str:
    source = op.sources[key]
    if op.table[key] is None:
        return MISSING
    return "kernel" if source == "kernel" else {
        "CompositeExplicitAutograd": "composite-explicit",
        "CompositeImplicitAutograd": "decomposes"}.get(source, source)


def _meta(op) -> str:
    if op.table[DispatchKey.Meta] is op.info.get("meta_placeholder", MISSING):
        return MISSING                    # a library op's "no fake impl" error
    found = _kernel_source(op, DispatchKey.Meta)
    if found == MISSING and "dynamic_output_shape" in op.tags:
        return "data-dependent"
    return found


def _cuda(op) -> str:
    found = _kernel_source(op, DispatchKey.CUDA)
    return gpu_kernels.cuda_kernel_kind(op) if found == "kernel" else found


def _autograd(op) -> str:
    info = op.info
    if "prim" in info:
        return "none (prims are below autograd)"
    if not op.tensor_positions:
        return "no tensor inputs"
    if "derivative" in info:
        return "formula"
    if "autograd" in info:                    # declared: "not differentiable"/"not implemented"
        return info["autograd"]
    if op.sources[DispatchKey.AutogradCPU] == "CompositeImplicitAutograd":
        return "decomposes"
    if info.get("out"):
        return "out= (refuses grad)"
    if info.get("mutated"):
        decl = info.get("decl")
        if (decl is not None and decl.inplace is op) or recording.records_inplace(op):
            return "in-place (functional's)"
    return MISSING


def _decomposition(op) -> str:
    return "yes" if overload_of(op) in decomposition_table else "-"


def _expression(op) -> str:
    """A primitive's scalar expression; required of the elementwise ones."""
    prim = op.info.get("prim")
    if prim is None or prim.kind != "elementwise":
        return "-"
    return "yes" if prim.expr is not None else MISSING


def operator_coverage(namespace: str = "aten") -> list:
    """An OperatorCoverage per operator of `namespace`, sorted by name."""
    return [OperatorCoverage(op.name, _meta(op), _autograd(op),
                             _kernel_source(op, DispatchKey.CPU), _cuda(op),
                             _decomposition(op), _expression(op))
            for op in sorted(dispatcher.all_operators(), key=lambda o: o.name)
            if op.schema.namespace == namespace]


def format_coverage(rows, *, missing_only: bool = False) -> str:
    """A table, one operator a line, and a closing count of operators and gaps."""
    shown = [r for r in rows if r.missing()] if missing_only else rows
    header = ("operator",) + FACETS
    table = [header] + [(r.name,) + tuple(getattr(r, f) for f in FACETS) for r in shown]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
             for row in table]
    gaps = sum(len(r.missing()) for r in rows)
    lines.append(f"{len(rows)} operators, {gaps} missing facet(s)")
    return "\n".join(lines)


def coverage_json(rows) -> str:
    return json.dumps([asdict(r) | {"missing": list(r.missing())} for r in rows], indent=1)
