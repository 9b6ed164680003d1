"""Compiled backward (AOTAutograd's idea, on top of lazy capture).

While a segment is captured, autograd records its usual graph on the deferred tensors (it
sits above the capture's dispatch mode). At the flush, when that graph has nodes, this
module replaces them by one node, `CompiledFunctionBackward`, whose backward is a compiled
graph:

1. `find_region`: the nodes recorded during the segment (sequence numbers since its start)
   reachable from the segment's live tensors; the edges that leave them (to the inputs'
   nodes or AccumulateGrads); the region's *outputs*: the live tensors with a grad_fn in it
   that something other than the region's own saved tensors holds (user code, a module).
2. `trace_joint` (once per trace): the autograd engine runs over the region with a tangent
   placeholder per output and captures the gradient at each leaving edge. Its formulas'
   ops are recorded into the same segment, after the forward's: a joint graph of forward
   and backward at the ATen level, traced through the real engine (so no_grad regions,
   custom Functions and views behave as in eager mode).
3. `partition`: what the backward reads of the forward is saved, except cheap values,
   recomputed in the backward instead (the rule, a simple form of PyTorch's min-cut
   partitioner): views are always recomputed from their base; a pointwise value is
   recomputed when every value its pointwise chain starts from (its nearest non-pointwise
   ancestors, or inputs) is an input or is saved anyway; anything else (matrix products,
   reductions, random draws, values written in place) is saved.
4. At run time the forward graph (the live outputs plus the saved values) and the backward
   graph are each compiled by the backend; the region's outputs get the new node as
   grad_fn, so `loss.backward()` runs the compiled backward. The recorded nodes are dropped.

A region stays on eager autograd (logged under `aot`) when the trace cannot be made or
would not mean the same: hooks on its tensors (`register_hook`, `retain_grad`), a backward
already run inside the region, anomaly detection, an input written in place while it
requires grad, an edge to a tensor that is not one of the region's inputs, a saved value
written in place later in the forward, or a formula that reads data.
"""
from __future__ import annotations

import sys

from ..autograd import grad_mode
from ..autograd.anomaly_mode import state as _anomaly
from ..autograd.engine import run_backward
from ..autograd.graph import (_SAVED_FREED, ACCUMULATE_GRAD_SEQUENCE_NR, Node, SavedTensor)
from ..core.shape import contiguous_strides
from ..core.tensor import Tensor
from . import logs

_DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"
# References to a candidate output held by `_external_outputs` itself: getrefcount's argument,
# its loop variable, and the candidates list.
_OWN_REFS = 3


class CompiledFunctionBackward(Node):
    """One captured region's backward: runs the compiled backward graph on the values the
    compiled forward saved and the incoming gradients (one per region output)."""

    def __init__(self, plan: "JointPlan", edges: tuple):
        super().__init__()
        self.next_functions = edges
        self._plan = plan
        self._saved = None          # [SavedTensor | Tensor], filled after the forward ran
        self._released = False

    def apply(self, grads: tuple) -> tuple:
        if self._released:
            raise RuntimeError(_SAVED_FREED)
        if not grad_mode.is_grad_enabled():
            return self._run(grads)
        # create_graph: the gradients are right, but differentiating them again is not
        # supported (as in PyTorch): they get a node that says so when reached
        with grad_mode.no_grad():
            out = self._run(grads)
        node = _NoDoubleBackward()
        node._num_outputs = len(out)
        for nr, g in enumerate(out):
            if g is not None:
                g.grad_fn, g._output_nr = node, nr
                g._set_requires_grad(True)
        return out

    def _run(self, grads: tuple) -> tuple:
        plan = self._plan
        saved = [s.unpack() if s.__class__ is SavedTensor else s for s in self._saved]
        tangents = []
        for i, (shape, stride, dtype, device) in enumerate(plan.tangent_meta):
            g = grads[i] if i < len(grads) else None
            if g is None:
                from ..ops.creation.factories import zeros
                g = zeros(shape, dtype=dtype, device=device)
            elif g._stride != stride:
                g = g.contiguous()
            tangents.append(g)
        return plan.backward(*saved, *plan.constants, *tangents)

    def release(self) -> None:
        self._released = True
        self._saved = None


class _NoDoubleBackward(Node):
    """The grad_fn of a compiled backward's gradients under create_graph=True."""

    def apply(self, grads: tuple) -> tuple:
        raise RuntimeError(_DOUBLE_BACKWARD)


class JointPlan:
    """What one trace's joint graph became: the forward values the backward reads
    (`saved_inputs`, placeholders; `saved_refs`, computed by the forward graph), constants
    the backward's formulas made, the tangents' layouts, which edges get a gradient, and
    the compiled backward; `forwards` caches the compiled forward per set of live outputs."""

    def __init__(self, saved_inputs, saved_refs, constants, tangent_meta, grad_mask):
        self.saved_inputs = saved_inputs
        self.saved_refs = saved_refs
        self.constants = constants
        self.tangent_meta = tangent_meta
        self.grad_mask = grad_mask
        self.forwards: dict = {}
        self._backward = None

    def compile_backward(self, compile_segment, build_graph, example_inputs) -> None:
        self._backward = compile_segment({}, "backward", build_graph, example_inputs,
                                         backward=True)

    def backward(self, *inputs) -> tuple:
        """The gradient per leaving edge (None where none reaches it)."""
        out = self._backward(*inputs)
        out = iter((out,) if isinstance(out, Tensor) else out)
        return tuple(next(out) if has else None for has in self.grad_mask)


class Region:
    """What one segment's recorded autograd nodes amount to: their outputs and the edges
    leaving them (the nodes themselves are not kept: they are dropped once replaced)."""

    __slots__ = ("outputs", "output_refs", "edges", "edge_inputs")

    def __init__(self, outputs, output_refs, edges, edge_inputs):
        self.outputs = outputs          # the live tensors whose grad_fn is in the region
        self.output_refs = output_refs
        self.edges = edges              # (node, input_nr) leaving the region
        self.edge_inputs = edge_inputs  # the placeholder index behind each edge

    @property
    def key(self) -> tuple:
        return ("aot", self.output_refs, self.edge_inputs)


def find_region(seg):
    """The segment's recorded autograd region, or None when it recorded no node, or a
    string saying why its backward stays eager. (This runs at every flush that recorded
    autograd nodes: one walk over the region's nodes, with the internal-node test, a
    sequence number in [start, ACCUMULATE_GRAD_SEQUENCE_NR), written out inline.)"""
    start, leaf = seg.sequence_start, ACCUMULATE_GRAD_SEQUENCE_NR
    candidates = []
    stack = []
    for alive, ref, _, _ in seg.refs.values():
        t = alive()
        if t is not None:
            fn = t.grad_fn
            if fn is not None and start <= fn._sequence_nr != leaf:
                candidates.append((t, ref))
                stack.append(fn)
    if not candidates:
        return None
    if _anomaly.enabled:
        return "anomaly detection is on"
    nodes: dict = {}
    leaving: list = []              # (node, input_nr) edges out of the region, in walk order
    while stack:
        node = stack.pop()
        if node in nodes:
            continue
        nodes[node] = None
        if getattr(node, "_released", False):
            return "a backward already ran through the region's graph"
        if node._hooked and (node._tensor_pre_hooks or node._retain_grad_hooks
                             or node._pre_hooks or node._hooks):
            return "a hook is registered on a tensor of the region"
        for nxt, nr in node.next_functions:
            if nxt is not None:
                if start <= nxt._sequence_nr != leaf:
                    if nxt not in nodes:
                        stack.append(nxt)
                else:
                    leaving.append((nxt, nr))
    input_of: dict = {}
    for i, t in enumerate(seg.inputs):
        if t._requires_grad:
            fn = t.grad_fn
            if fn is not None and start <= fn._sequence_nr != leaf:
                return "an input that requires grad is written in place"
            if fn is None:
                acc = t._accumulator
                fn = acc() if acc is not None else None
                if fn is None:
                    continue
            input_of.setdefault((id(fn), t._output_nr if t.grad_fn is not None else 0), i)
    edges: dict = {}
    for edge in leaving:
        key = (id(edge[0]), edge[1])
        if key not in edges:
            i = input_of.get(key)
            if i is None:
                return "the region's backward reaches a tensor that is not its input"
            edges[key] = (edge, i)
    t = None                        # a local reference would count as a holder
    outputs = _external_outputs(candidates, nodes)
    # the edges in the order of the inputs they reach: the walk's order follows the segment's
    # map of tensor ids, where a dead tensor's id taken again keeps its old place (after a
    # garbage collection a step would find its region in another order and compile again)
    ordered = sorted(edges.values(), key=_input_index)
    return Region([t for t, _ in outputs], tuple(ref for _, ref in outputs),
                  tuple(e for e, _ in ordered), tuple(i for _, i in ordered))


def _input_index(edge_and_index) -> int:
    return edge_and_index[1]


def _external_outputs(candidates: list, nodes: dict) -> list:
    """The candidates something outside the region holds: not only the region's saved
    tensors, nor only views that are themselves held only by the region. Counted with
    reference counts, latest first (a view is decided before its base)."""
    held = _saved_counts(nodes)
    outputs = []
    candidates.sort(key=_creation_order, reverse=True)
    for t, ref in candidates:
        if sys.getrefcount(t) - _OWN_REFS - held.get(id(t), 0) > 0:
            outputs.append((t, ref))
            continue
        _count_bases(t, held)
    t = None
    outputs.reverse()
    return outputs


def _count_bases(view, held: dict) -> None:
    """A view that dies with the region holds its base (`_base`) and its source
    (`_view_meta`): count them as held by the region (in a function of its own, see
    `_saved_counts`)."""
    if view._base is not None:
        held[id(view._base)] = held.get(id(view._base), 0) + 1
    if view._view_meta is not None:
        source = view._view_meta[0]
        held[id(source)] = held.get(id(source), 0) + 1


def _creation_order(candidate) -> int:
    """An op's outputs by the op's place in the segment (an alias after its base's op)."""
    ref = candidate[1]
    while ref[0] == "a":
        ref = ref[1]
    return ref[1] if ref[0] == "n" else -1


def _saved_counts(nodes) -> dict:
    """id(tensor) -> how many saved tensors of the region hold it (in a function of its own:
    a loop variable left behind would be one more reference)."""
    held: dict = {}
    get = held.get
    for node in nodes:
        saved = getattr(node, "_saved", None)
        if saved.__class__ is dict:      # a formula node's (most nodes), without a generator
            for v in saved.values():
                if v.__class__ is SavedTensor and v.tensor is not None:
                    key = id(v.tensor)
                    held[key] = get(key, 0) + 1
            continue
        for t in _saved_tensors(node):
            held[id(t)] = get(id(t), 0) + 1
    return held


def _saved_tensors(node):
    """The tensors a node holds for its backward (an output saved by its own node is an
    alias, not the tensor)."""
    saved = getattr(node, "_saved", None)
    values = saved.values() if isinstance(saved, dict) else (saved or ())
    for v in values:
        if v.__class__ is SavedTensor and v.tensor is not None:     # None: packed by a hook
            yield v.tensor
    inner = getattr(node, "_fn", None)          # CopySlices: the op's node
    if isinstance(inner, Node):
        yield from _saved_tensors(inner)


def trace_joint(capture, seg, region: Region):
    """Run the engine over the region with tangent placeholders, recording the backward's
    ops after the forward's; returns (tangent refs, gradient refs per edge or None)."""
    from ..ops.creation.factories import empty_strided
    from ..utils._python_dispatch import _disable_current_modes
    with _disable_current_modes():
        tangents = [empty_strided(t._shape, contiguous_strides(t._shape), dtype=t.dtype,
                                  device=t.device) for t in region.outputs]
    tangent_refs = [capture._tensor_ref(g) for g in tangents]
    roots = [(t.grad_fn, t._output_nr) for t in region.outputs]
    with _disable_current_modes(), capture:
        captured = run_backward(roots, tangents, retain_graph=True, create_graph=False,
                                capture=list(region.edges), accumulate=False)
        grads = [captured.get(edge) for edge in region.edges]
        grad_refs = [capture._tensor_ref(g) if isinstance(g, Tensor) else None
                     for g in grads]
    return tangents, tangent_refs, grad_refs


def _refs_in(values, ref_class):
    for v in values:
        if v.__class__ is ref_class:
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _refs_in(v, ref_class)


def op_inputs(op) -> list:
    """The references an op of the segment reads, in argument order."""
    from .capture import _Ref          # capture imports this module
    func, args, kwargs = op
    return list(_refs_in(args, _Ref)) + list(_refs_in(kwargs.values(), _Ref))


def _is_view(func) -> bool:
    schema = func._schema
    return (not schema.is_mutable and len(schema.returns) == 1
            and schema.returns[0].alias is not None)


def _recomputable(func, draws_random) -> str | None:
    """'view', 'pointwise' (cheap to compute again in the backward) or None."""
    if func._schema.is_mutable or draws_random(func):
        return None
    if _is_view(func):
        return "view"
    if "pointwise" in func.tags:
        return "pointwise"
    return None


def partition(seg, n_forward: int, backward_refs: list, draws_random):
    """Which forward values the backward reads: (saved placeholders, saved computed refs,
    forward op indices to recompute in the backward), by the rule in the module docstring.
    Raises NotPartitionable when a saved value is written in place later in the forward."""
    kinds = [_recomputable(op[0], draws_random) for op in seg.ops[:n_forward]]
    direct: dict = {}
    for ref in backward_refs:
        direct[ref] = None
    for op in seg.ops[n_forward:]:
        for ref in op_inputs(op):
            direct[ref] = None

    def forward_producer(ref):
        while ref[0] == "a":
            ref = ref[1]
        return ref[1] if ref[0] == "n" and ref[1] < n_forward else None

    must_save = {ref for ref in direct
                 if (j := forward_producer(ref)) is not None and kinds[j] is None
                 and ref[0] == "n"}

    def frontier(ref, depth=0):
        """The values a cheap chain ending at `ref` starts from, or None if too long."""
        j = forward_producer(ref)
        if ref[0] == "p" or j is None:
            return {ref} if ref[0] == "p" else set()
        if ref[0] == "a":
            return frontier(ref[1], depth)
        if kinds[j] is None:
            return {ref}
        if depth > 16:
            return None
        out = set()
        for r in op_inputs(seg.ops[j]):
            f = frontier(r, depth + 1)
            if f is None:
                return None
            out |= f
        return out

    saved_inputs, saved_refs, recompute = {}, {}, set()

    def need(ref):
        """Make `ref` available to the backward: saved, or recomputed from saved values."""
        if ref[0] == "p":
            if ref[1] < seg.n_forward_inputs:
                saved_inputs[ref] = None
            return
        if ref[0] == "a":
            return need(ref[1])
        j = ref[1]
        if j >= n_forward or j in recompute or ref in saved_refs:
            return
        kind = kinds[j]
        if kind == "pointwise":
            f = frontier(ref)
            if f is None or any(r[0] == "n" and r not in must_save for r in f):
                kind = None
        if kind is None:
            saved_refs[ref] = None
            return
        recompute.add(j)
        for r in op_inputs(seg.ops[j]):
            need(r)

    for ref in direct:
        need(ref)
    written = {r for op in seg.ops[:n_forward] if op[0]._schema.is_mutable
               for r in op_inputs(op)}
    if written & (set(saved_refs) | set(saved_inputs)):
        raise NotPartitionable("a value the backward reads is written in place later in "
                               "the forward")
    return list(saved_inputs), list(saved_refs), recompute


class NotPartitionable(Exception):
    """Why a region's joint graph cannot be split (its backward stays eager)."""


def log_eager(reason: str) -> None:
    logs.artifact_logger("aot").debug("the backward stays eager: %s", reason)
