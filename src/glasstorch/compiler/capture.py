"""Lazy capture: the user's Python runs as is; tensor operators are recorded, not run.

While a compiled function runs, a `LazyCapture` (a TorchDispatchMode, so it sits at the
Python key, below Autograd and Autocast) receives every operator call. It does not run the
kernel: it computes the outputs' metadata with the op's Meta kernel (through a
FakeTensorMode), appends the call to the current *segment*, and returns plain
`glasstorch.Tensor`s over `DeferredStorage`s: storages whose bytes do not exist yet. Views
of a tensor are views of its storage, as in eager mode, so aliasing is eager's by
construction. A real tensor the segment reads or writes has its storage marked deferred
too, until the flush, so that its bytes are not read or written around the recorded ops.
On later calls the recorded trace is replayed: each op is checked against the trace tree
of the call's cache entry (one lookup; see TraceNode) instead of running a Meta kernel.

Anything that needs data ends the segment (a *flush*): reading a deferred storage's bytes
(`.item()`, `bool(t)`, `print(t)`, `.numpy()`, `.tolist()`: all reach `storage.buf`), an op
the capture cannot describe without running it (no Meta kernel, data-dependent output shape,
a tensor subclass, a non-tensor result), and the end of the compiled function. A flush turns
the segment into an ATen-level FX graph (placeholders are the real tensors it read; outputs
are the deferred storages still alive), looks the graph up at the trace's last node,
hands it to the backend on a miss, runs the compiled callable below the dispatch
keys that already ran (autograd recorded its graph during capture), and moves the results'
bytes into the deferred storages, which become ordinary storages. The same Tensor objects
that user code, autograd's saved tensors and module attributes hold now have values.

A flush other than the last one is a *graph break*: it is recorded with its reason and the
user's file:line, and the code after it keeps being captured into the next segment.
"""
from __future__ import annotations

import operator
import os
import sys
import traceback
import weakref

from ..core.storage import UntypedStorage
from ..core.tensor import Tensor
from ..dispatch.dispatcher import bind_arguments
from ..dispatch.keys import ALL_MASK, MATH_BITS, DispatchKey, exclude_keys
from ..fx.graph import Graph, _target_name
from ..fx.graph_module import GraphModule
from ..fx._lazy_graph_module import _LazyGraphModule
from ..fx.passes.shape_prop import _extract_tensor_metadata
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from ..utils._pytree import tree_leaves
from .._subclasses.fake_tensor import FakeTensorMode
from .._ops import ops_namespace
from ..autograd.graph import SavedTensor, _sequence
from . import aot_autograd
from .exc import BackendCompilerFailed

# Running a compiled graph: everything from the Python key up has already happened (autograd
# recorded the call and bumped versions, autocast cast the inputs) while it was captured.
_PYTHON_AND_ABOVE = ALL_MASK & ~((1 << DispatchKey.Python) - 1)

# Ops whose effect on their input's metadata (not only its values) the capture would have to
# mirror on a real tensor: they run eagerly, after a flush.
_METADATA_MUTATIONS = frozenset({
    "aten::resize_", "aten::resize_as_", "aten::set_", "aten::as_strided_", "aten::squeeze_",
    "aten::unsqueeze_", "aten::transpose_", "aten::t_", "aten::swapdims_", "aten::swapaxes_",
    "aten::detach_"})
_LIFT_FRESH = "aten::lift_fresh"

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_owner_of_storage: dict = {}      # id(DeferredStorage) -> the LazyCapture that will fill it


class DeferredStorage(UntypedStorage):
    """A storage whose bytes the capture has not computed yet. Reading its bytes (`buf`)
    flushes the capture that owns it; once filled it is turned back into a plain
    UntypedStorage (same object, same layout), so it costs nothing afterwards."""

    __slots__ = ()

    @property
    def buf(self):
        capture = _owner_of_storage.get(id(self))
        if capture is not None:
            capture.flush(break_reason=_data_access_reason())
        return UntypedStorage.buf.__get__(self)

    @buf.setter
    def buf(self, value):
        UntypedStorage.buf.__set__(self, value)


_new_storage = object.__new__
_set_buf = UntypedStorage.buf.__set__      # a plain storage's slot, past DeferredStorage.buf


def user_frame():
    """The innermost stack frame outside glasstorch: the user's line that caused an event."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


def _data_access_reason() -> str:
    """Which Tensor method (or which glasstorch function, bypassing the operators) read the
    data, for the break's reason."""
    frame = sys._getframe(2)
    method = reader = None
    tensor_py = os.path.join("core", "tensor.py")
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        name, filename = frame.f_code.co_name, frame.f_code.co_filename
        if filename.endswith(tensor_py):
            if not name.startswith("_array"):
                method = name
        elif name == "tensor_repr":
            method = "__repr__"
        elif reader is None:
            module = os.path.relpath(filename, os.path.dirname(_PACKAGE_DIR))
            reader = module.removesuffix(".py").replace(os.sep, ".") + "." + name
        frame = frame.f_back
    described = {"item": "Tensor.item()", "tolist": "Tensor.tolist()",
                 "numpy": "Tensor.numpy()", "__array__": "Tensor.__array__()",
                 "__bool__": "bool(Tensor) (data-dependent control flow)",
                 "__repr__": "printing a Tensor", "__str__": "printing a Tensor",
                 "__format__": "formatting a Tensor",
                 "__float__": "float(Tensor)", "__int__": "int(Tensor)",
                 "__index__": "Tensor.__index__()", "data_ptr": "Tensor.data_ptr()"}
    if method in described:
        return f"{described[method]} reads the tensor's data"
    if reader is not None:
        return f"{reader} reads a tensor's data directly, not through an operator"
    return "a tensor's data was read"


class _Ref(tuple):
    """A recorded tensor: ('p', i) placeholder i, ('n', j, k) output k of op j, ('a', ref,
    geometry) an alias of a deferred value made without an operator."""

    __slots__ = ()


class GraphBreak:
    """One graph break: why the captured graph had to end, and the user's line."""

    __slots__ = ("reason", "filename", "lineno", "function")

    def __init__(self, reason: str, frame):
        self.reason = reason
        self.filename = frame.f_code.co_filename if frame else "<unknown>"
        self.lineno = frame.f_lineno if frame else 0
        self.function = frame.f_code.co_name if frame else "<unknown>"

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.lineno}"

    @property
    def user_stack(self) -> list:
        """The user's frame as PyTorch's break reasons give it (a list of FrameSummary)."""
        return [traceback.FrameSummary(self.filename, self.lineno, self.function)]

    def __repr__(self):
        return f"GraphBreak(reason={self.reason!r}, at {self.location} in {self.function})"


class TraceNode:
    """One op of a recorded trace, in a tree of the traces a cache entry has seen.

    A segment is a path from the entry's root: each child is keyed by the op and its
    arguments, tensors named by reference (('p', i) placeholder i with its metadata, ('n', j,
    k) output k of op j, ('a', ref, geometry) an alias made without an operator), so the
    path fixes every tensor's metadata. A child stores how the op's outputs relate to its
    tensor arguments (`outputs`, computed once by the Meta kernel) and the fakes made then
    (`fakes`, node.meta["val"]). Replaying a known path costs one dict lookup per op: that
    lookup is the guard that the trace repeats. `compiled` maps the segment's live outputs
    to its (GraphModule, compiled callable)."""

    __slots__ = ("children", "outputs", "fakes", "compiled", "random")

    def __init__(self, outputs=None, fakes=None, random: bool = False):
        self.children: dict = {}
        self.outputs = outputs
        self.fakes = fakes
        self.compiled: dict = {}
        self.random = random         # the op draws from a random number generator


class _Segment:
    """The ops recorded since the last flush: a path in the trace tree, and what the
    graph needs (references, placeholders, deferred storages)."""

    def __init__(self, root: TraceNode):
        self.node = root
        self.ops: list = []          # (func, args, kwargs) with references, to build the graph
        self.fakes: list = []        # each op's fake outputs (node.meta["val"])
        self.inputs: list = []       # the real tensors read (placeholders), in order
        self.input_meta: list = []   # their metadata (in the trace's keys)
        self.input_storages: dict = {}  # id(storage) -> the first input over it
        self.refs: dict = {}         # id(tensor) -> (weakref, reference, id(storage), geometry)
        # (id(storage), geometry) -> (reference, the storage's `deferred` entry or None
        # for a real storage): the entry tells a dead deferred storage's id, reused
        self.views: dict = {}
        self.deferred: dict = {}     # id(storage) -> [weakref(storage), ref of base, geometry]
        self.pending: dict = {}      # id(storage) -> real storage the segment reads or writes
        self.random = False          # whether some recorded op draws random numbers
        # autograd nodes numbered from here on were recorded during this segment
        self.sequence_start = next(_sequence.counter)


class LazyCapture(TorchDispatchMode):
    """The mode a compiled function's call runs under (see the module docstring).

    `root` is the trace tree of the call's cache entry; `compile_segment(build_graph,
    example_inputs)` (from the caller) returns the callable for a new segment;
    `on_break(GraphBreak, had_ops)` is told about each break and may raise (fullgraph);
    with `compile_backward`, regions that autograd recorded get a compiled backward
    (aot_autograd.py), compiled with `compile_segment(..., backward=True)`."""

    def __init__(self, root: TraceNode, compile_segment, on_break,
                 compile_backward: bool = False):
        super().__init__()
        self.compile_backward = compile_backward
        self.root = root
        self.compile_segment = compile_segment
        self.on_break = on_break
        self.segment = _Segment(root)
        self.flushing = False
        self.tracing_backward = False  # the engine runs over a region (aot_autograd)
        self.divergence = None       # (this call's op key, a cached one) where traces part
        self.compiled_new_graph = False
        self._fake_mode = None
        self.runs = None               # a list to keep a LastRun per flush in (replay.py)

    @property
    def fake_mode(self) -> FakeTensorMode:
        """The segment's fake mode, made when an op is first described (a replayed trace
        needs none). Fakes are memoized per tensor, so a flush drops the mode: an op run
        eagerly meanwhile may have changed a tensor's metadata."""
        if self._fake_mode is None:
            self._fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        return self._fake_mode

    # ---- recording ---------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        """Record the call. A replayed op, the common case, costs the loop below: each
        tensor argument's reference (from `seg.refs` when known), one lookup of the op's key
        among the trace node's children, and the outputs made from the child's recorded
        description; anything unusual (a refused op, a tensor subclass, keyword arguments)
        goes through `_uncapturable`, and a new op through `_describe`."""
        refusal = _refusals.get(func._op, _UNSEEN)
        if refusal is not None:
            if refusal is _UNSEEN:
                refusal = _refusals[func._op] = _refusal(func._op)
            if refusal is _LIFT:             # a constant made from data: it is real already
                return args[0]
            if refusal is not None:
                self.flush(break_reason=refusal.format(func=func))
                return func(*args, **(kwargs or {}))
        seg = self.segment
        refs = seg.refs
        mark = len(seg.inputs), len(refs)
        tensors: list = []
        ref_args: list = []
        key: list = []
        unusual = bool(kwargs)               # checked in full by `_uncapturable`
        for v in args:
            cls = v.__class__
            if cls is Tensor or cls is Parameter:
                tensors.append(v)
                known = refs.get(id(v))      # `_tensor_ref`'s known case, inlined
                if v._keyset & MATH_BITS:
                    unusual = True
                if known is not None and known[0]() is v and known[2] == id(v._storage) \
                        and known[3] == (v._offset, v._shape, v._stride, v.dtype):
                    v = known[1]
                else:
                    v = self._tensor_ref(v)
                ref_args.append(v)
                key.append(v)
            elif cls is int or cls is str or v is None:
                ref_args.append(v)
                key.append(v)
            else:
                v, v_key, tensor_like = self._arg_ref(v, tensors)
                unusual = unusual or tensor_like
                ref_args.append(v)
                key.append(v_key)
        ref_kwargs = {}
        if kwargs:
            values, kwargs_key = self._refs(kwargs.values(), tensors)
            ref_kwargs = dict(zip(kwargs, values))
            key.append(tuple(kwargs))
            key += kwargs_key
        why_not = _uncapturable(func, tensors, kwargs) if unusual else None
        if why_not is None:
            key = (func, tuple(key), tuple(seg.input_meta[mark[0]:])
                   if len(seg.inputs) > mark[0] else ())
            child = seg.node.children.get(key)
            if child is None:
                if seg.node.children and self.divergence is None:
                    self.divergence = (key, next(iter(seg.node.children)))
                try:
                    child = self._describe(func, args, kwargs or {}, tensors)
                except _Uncapturable as e:
                    why_not = str(e)
                else:
                    seg.node.children[key] = child
            if child is not None:
                seg.ops.append((func, tuple(ref_args), ref_kwargs))
                seg.fakes.append(child.fakes)
                seg.node = child
                if child.random:
                    seg.random = True
                kind, outputs, mutated = child.outputs
                for i in mutated:
                    tensors[i]._np = None    # a cached NumPy view would read the old bytes
                if kind == "one":
                    return self._output(outputs[0][0], tensors, (), outputs[0][1])
                made = []
                for description, ref in outputs:
                    made.append(self._output(description, tensors, made, ref))
                return kind(*made) if kind != "many" else type(child.fakes)(made)
        self._forget_refs(mark)
        self.flush(break_reason=why_not)
        return func(*args, **(kwargs or {}))

    def _arg_ref(self, value, tensors: list) -> tuple:
        """One argument other than a plain tensor, an int, a str or None: (its recorded
        form, its key, whether it is or holds a tensor). The tensors go to `tensors`."""
        if isinstance(value, Tensor):        # a subclass (refused by `_uncapturable`)
            tensors.append(value)
            ref = self._tensor_ref(value)
            return ref, ref, True
        cls = value.__class__
        if (cls is list or cls is tuple) and any(isinstance(x, Tensor) for x in value):
            items = []
            for x in value:
                if isinstance(x, Tensor):
                    tensors.append(x)
                    x = self._tensor_ref(x)
                items.append(x)
            value = cls(items)
            return value, _key_of(value), True
        return value, _key_of(value), False

    def _refs(self, values, tensors: list) -> tuple:
        """(`values` with each tensor replaced by its reference, lists of tensors too; their
        key, in which 1, 1.0 and True differ). The tensors are appended to `tensors`."""
        out, key = [], []
        for v in values:
            cls = v.__class__
            if cls is int or cls is str or v is None:
                out.append(v)
                key.append(v)
            else:
                v, v_key, _ = self._arg_ref(v, tensors)
                out.append(v)
                key.append(v_key)
        return tuple(out), tuple(key)

    def _describe(self, func, args, kwargs, tensors) -> TraceNode:
        """Run the op's Meta kernel on fakes; describe each output relative to the op's
        tensor arguments: ('same', i) the argument itself (in-place, out=), ('view', i, j,
        geometry) a view over argument i's storage made from argument j, ('fresh', nbytes,
        device, geometry) a new storage, ('alias_out', k, geometry) over output k's."""
        originals: dict = {}
        try:
            fake_args = tuple(self._fake(a, originals) for a in args)
            fake_kwargs = {k: self._fake(v, originals) for k, v in kwargs.items()}
            fakes = self.fake_mode.__torch_dispatch__(func, (), fake_args, fake_kwargs)
        except Exception as e:     # no meta kernel, data-dependent shape, ...
            raise _Uncapturable(f"{func} cannot be captured ({type(e).__name__}: {e})") from e
        why_not = _non_tensor_output(func, fakes)
        if why_not is not None:
            raise _Uncapturable(why_not)
        arg_fakes = [self.fake_mode.from_tensor(t) for t in tensors]
        position = {id(f): i for i, f in reversed(list(enumerate(arg_fakes)))}
        storage_position = {id(f._storage): i for i, f in reversed(list(enumerate(arg_fakes)))}
        fresh: dict = {}
        outputs = []
        for k, fake in enumerate(fakes if isinstance(fakes, (list, tuple)) else (fakes,)):
            if fake is None:
                outputs.append(None)
                continue
            geometry = (fake._offset, fake._shape, fake._stride, fake.dtype)
            if id(fake) in position:
                outputs.append(("same", position[id(fake)]))
            elif id(fake._storage) in storage_position:
                source = fake._view_meta[0] if fake._view_meta is not None else None
                outputs.append(("view", storage_position[id(fake._storage)],
                                position.get(id(source)), geometry))
            elif id(fake._storage) in fresh:
                outputs.append(("alias_out", fresh[id(fake._storage)], geometry))
            else:
                fresh[id(fake._storage)] = k
                outputs.append(("fresh", fake._storage.nbytes(), fake.fake_device, geometry))
        kind = "many" if isinstance(fakes, (list, tuple)) else "one"
        kind = fakes.__class__ if hasattr(fakes, "_fields") else kind
        depth = len(self.segment.ops)        # the op's index in every segment on this path
        outputs = tuple((d, _Ref(('n', depth, k))) for k, d in enumerate(outputs))
        return TraceNode((kind, outputs, _mutated_positions(func, args, kwargs, tensors)),
                         fakes, _draws_random(func))

    def _fake(self, value, originals):
        if isinstance(value, Tensor):
            f = self.fake_mode.from_tensor(value)
            originals[id(f)] = value
            return f
        if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            return type(value)(self._fake(v, originals) for v in value)
        return value

    def _forget_refs(self, mark):
        """Undo the references an op that turned out uncapturable added."""
        seg = self.segment
        _truncate_inputs(seg, mark[0])
        for key in list(seg.refs)[mark[1]:]:
            del seg.refs[key]

    def _output(self, description, tensors, made, ref):
        """The tensor user code gets for one output (see `_describe`)."""
        if description is None:
            return None
        what = description[0]
        if what == "same":                           # in-place: the same tensor, new value
            out = tensors[description[1]]
            self._remember(out, ref)
            return out
        seg = self.segment
        offset, shape, stride, dtype = geometry = description[-1]
        if what == "fresh":            # a new DeferredStorage, with `_remember` inlined
            storage = fresh_storage(description[1], description[2], DeferredStorage)
            key = id(storage)
            _owner_of_storage[key] = self
            seg.deferred.pop(key, None)              # a dead storage's id, reused
            seg.deferred[key] = entry = [weakref.ref(storage), ref, geometry]
            out = Tensor._make(storage, offset, shape, stride, dtype)
            seg.refs[id(out)] = (weakref.ref(out), ref, key, geometry)
            seg.views[(key, geometry)] = (ref, entry)
            return out
        if what == "view":
            base = tensors[description[2]] if description[2] is not None else None
            out = Tensor._make(tensors[description[1]]._storage, offset, shape, stride, dtype,
                               base._vc if base is not None else None)
            if base is not None:
                out._view_meta = (base, shape, stride, offset)
        else:                                        # over an earlier output's new storage
            out = Tensor._make(made[description[1]]._storage, offset, shape, stride, dtype)
        self._remember(out, ref)
        return out

    def _remember(self, tensor, ref):
        """`tensor`'s value is now `ref`'s: for it, for any tensor later seen over the same
        memory the same way (an alias made without an operator), and, when it covers its
        deferred storage's base, for the graph's output that fills the storage."""
        seg = self.segment
        storage = tensor._storage
        geometry = (tensor._offset, tensor._shape, tensor._stride, tensor.dtype)
        seg.refs[id(tensor)] = (weakref.ref(tensor), ref, id(storage), geometry)
        entry = seg.deferred.get(id(storage))
        if entry is not None and entry[0]() is not storage:
            entry = None
        seg.views[(id(storage), geometry)] = (ref, entry)
        if entry is not None and entry[2] == geometry:
            entry[1] = ref

    def _mark_pending(self, t):
        """A real tensor becomes a graph input: until the flush, the segment reads (and may
        write) its storage, so reading or writing those bytes directly (`.numpy()`, code
        that bypasses the operators) must flush first. The storage is marked deferred
        meanwhile; the tensor's cached NumPy view, which would bypass the mark, is dropped."""
        storage = t._storage
        t._np = None
        if storage.__class__ is UntypedStorage and storage.device.type != "meta":
            storage.__class__ = DeferredStorage
            _owner_of_storage[id(storage)] = self
            self.segment.pending[id(storage)] = storage

    def _tensor_ref(self, t):
        seg = self.segment
        known = seg.refs.get(id(t))
        storage = t._storage
        geometry = (t._offset, t._shape, t._stride, t.dtype)
        if known is not None:
            if known[0]() is t and known[2] == id(storage) and known[3] == geometry:
                return known[1]
            # a dead tensor's id reused, or metadata set without an operator (`t.data = u`):
            # looked up afresh, and re-added at the end
            del seg.refs[id(t)]
        seen = seg.views.get((id(storage), geometry))
        entry = seg.deferred.get(id(storage))
        if entry is not None and entry[0]() is not storage:
            entry = None
        # A real storage seen before is alive (a placeholder holds it), so its id is its
        # own; a deferred one's is its entry's, which a new storage at that id replaces.
        if seen is not None and seen[1] is entry:      # the same memory, seen alike
            ref = seen[0]
        elif entry is not None:
            ref = _Ref(('a', entry[1], geometry))     # another view of a deferred value
        else:
            n = len(seg.inputs)
            ref = _Ref(('p', n))
            self._mark_pending(t)
            seg.inputs.append(t)
            first = seg.input_storages.setdefault(id(storage), n)   # an alias of input `first`
            seg.input_meta.append((t._shape, t._stride, t._offset, t.dtype, t.device,
                                   first if first != n else None))
        seg.refs[id(t)] = (weakref.ref(t), ref, id(storage), geometry)
        return ref

    def before_rng_state_access(self) -> None:
        """A generator's state is about to be read or replaced: the random ops recorded so
        far draw first, as they would have in eager mode."""
        if self.segment.random:
            self.flush(break_reason="the random number generator's state is read or set")

    # ---- flushing ----------------------------------------------------------------------
    def flush(self, break_reason: str | None = None) -> None:
        """Compile (or reuse) and run the pending segment; fill its deferred storages. With
        a `break_reason`, the flush is a graph break in the middle of the function."""
        if self.tracing_backward:
            raise _Uncapturable("the backward reads a tensor's data or calls an op the "
                                f"capture cannot describe ({break_reason})")
        if self.flushing:
            return
        self.flushing = True
        try:
            if break_reason is not None:   # may raise (fullgraph): the segment stays pending
                self.runs = None           # a call with a break is not replayed (replay.py)
                self.on_break(GraphBreak(break_reason, user_frame()), bool(self.segment.ops))
            seg, self.segment = self.segment, _Segment(self.root)
            self._fake_mode = None
            if seg.ops:
                self._run(seg)
                # the compiled backward's node belongs to this segment, not the next
                self.segment.sequence_start = next(_sequence.counter)
        finally:
            self.flushing = False

    def _run(self, seg: _Segment) -> None:
        try:
            node, plan, region = self._compiled_backward(seg) if self.compile_backward else \
                (None, None, None)
        finally:                       # the inputs are plain again even if a backend failed
            live = _release(seg)
        outputs = tuple((ref, geometry) for _, ref, geometry in live)
        cache = seg.node.compiled if plan is None else plan.forwards
        self.compiled_new_graph |= outputs not in cache
        compiled = self.compile_segment(cache, outputs, lambda: _build_forward(seg, live, plan),
                                        seg.inputs)
        in_inputs = {id(t._storage) for t in seg.inputs}   # their memory is never taken
        with _disable_current_modes(), exclude_keys(_PYTHON_AND_ABOVE):
            results = compiled(*seg.inputs)
            if isinstance(results, Tensor):
                results = (results,)
            for (storage, _, geometry), value in zip(live, results):
                storage.__class__ = UntypedStorage
                _fill(storage, geometry, value, in_inputs)
        if node is not None:
            node._saved = [SavedTensor(seg.inputs[ref[1]]) for ref in plan.saved_inputs]
            node._saved += _saved_values(plan.saved_refs, live, results)
        if self.runs is not None:
            self.runs.append(LastRun(seg, live, compiled, plan, region))

    def _compiled_backward(self, seg: _Segment):
        """(node, plan, region): when the segment recorded autograd nodes, the region's
        compiled backward, installed as its outputs' grad_fn (the recorded nodes are
        dropped); the node's saved values are filled after the forward ran. (None, None,
        None) when there is no region; (None, None, the reason) when its backward stays
        eager."""
        if self.segment.sequence_start == seg.sequence_start + 1:
            return None, None, None       # no autograd node was numbered since it began
        region = aot_autograd.find_region(seg)
        if region is None:
            return None, None, None
        if isinstance(region, str):
            aot_autograd.log_eager(region)
            return None, None, region
        plan = seg.node.compiled.get(region.key)
        if plan is None:
            self.compiled_new_graph = True
            plan = seg.node.compiled[region.key] = self._plan_joint(seg, region)
        if isinstance(plan, str):        # the reason its backward stays eager
            aot_autograd.log_eager(plan)
            return None, None, plan
        node = aot_autograd.CompiledFunctionBackward(plan, region.edges)
        node._num_outputs = len(region.outputs)
        for k, t in enumerate(region.outputs):
            t.grad_fn, t._output_nr = node, k
        return node, plan, region

    def _plan_joint(self, seg: _Segment, region):
        """Trace the region's backward after its forward, partition the joint graph and
        compile the backward (aot_autograd); a string says why that failed."""
        n_ops, n_inputs = len(seg.ops), len(seg.inputs)
        deferred_before = set(seg.deferred)
        node, following = seg.node, self.segment
        seg.node, seg.n_forward_inputs = TraceNode(), n_inputs
        self.segment = seg                 # the backward is recorded after the forward
        self.tracing_backward = True
        try:
            tangents, tangent_refs, grad_refs = aot_autograd.trace_joint(self, seg, region)
            out_refs = [r for r in grad_refs if r is not None]
            saved_inputs, saved_refs, recompute = aot_autograd.partition(
                seg, n_ops, out_refs, _draws_random)
            tangent_ids = {id(t) for t in tangents}
            constants = [_Ref(('p', i)) for i in range(n_inputs, len(seg.inputs))
                         if id(seg.inputs[i]) not in tangent_ids]
            backward_inputs = saved_inputs + saved_refs + constants + tangent_refs
            backward_ops = sorted(recompute) + list(range(n_ops, len(seg.ops)))
            plan = aot_autograd.JointPlan(
                saved_inputs, saved_refs, [seg.inputs[r[1]] for r in constants],
                [(t._shape, t._stride, t.dtype, t.device) for t in tangents],
                [r is not None for r in grad_refs])
            plan.compile_backward(
                self.compile_segment,
                lambda: build_graph(seg, backward_inputs, backward_ops, out_refs),
                [_example(value_of(seg, r)) for r in backward_inputs])
            return plan
        except BackendCompilerFailed:      # the user's backend failed: as for the forward
            raise
        except Exception as e:             # the trace could not be made: eager backward
            return f"{type(e).__name__}: {e}"
        finally:
            self.tracing_backward = False
            seg.node, self.segment = node, following
            del seg.ops[n_ops:], seg.fakes[n_ops:]
            _truncate_inputs(seg, n_inputs)
            for key in set(seg.deferred) - deferred_before:
                del seg.deferred[key]
                _owner_of_storage.pop(key, None)


class LastRun:
    """What one flush ran, for a replay plan (replay.py): the graph's inputs, the storages
    its outputs filled, the compiled forward, and the compiled backward's plan with its
    region (or why the backward stays eager, or None without one)."""

    __slots__ = ("inputs", "live", "compiled", "plan", "region_outputs", "edge_inputs",
                 "random", "eager_backward")

    def __init__(self, seg: _Segment, live, compiled, plan, region):
        self.inputs = list(seg.inputs)
        self.live = live
        self.compiled = compiled
        self.plan = plan
        self.random = seg.random
        self.eager_backward = isinstance(region, str)
        has_region = plan is not None and region is not None and not self.eager_backward
        self.region_outputs = list(region.outputs) if has_region else []
        self.edge_inputs = tuple(region.edge_inputs) if has_region else ()


def fresh_storage(nbytes: int, device, cls=UntypedStorage):
    """A storage of `nbytes` on `device` with no memory yet (`_fill` gives it a result's)."""
    storage = _new_storage(cls)
    storage.device = device
    storage._nbytes = nbytes
    storage.resizable = True
    storage._allocator = None
    _set_buf(storage, None)
    return storage


def _build_forward(seg: _Segment, live: list, plan) -> GraphModule:
    """The segment's forward graph: its live outputs, then (with a compiled backward's
    `plan`) the values the backward reads that no live output holds."""
    graph_outputs = [ref for _, ref, _ in live]
    if plan is not None:
        filled = set(graph_outputs)
        graph_outputs += [ref for ref in plan.saved_refs if ref not in filled]
    return build_graph(seg, [_Ref(('p', i)) for i in range(len(seg.inputs))],
                       range(len(seg.ops)), graph_outputs)


def value_of(seg: _Segment, ref):
    """The real tensor (a placeholder) or fake (an op's output) a reference stands for."""
    if ref[0] == "p":
        return seg.inputs[ref[1]]
    fakes = seg.fakes[ref[1]]
    return fakes[ref[2]] if isinstance(fakes, (list, tuple)) else fakes


def build_graph(seg: _Segment, input_refs, op_indices, output_refs) -> GraphModule:
    """An FX graph of OpOverload calls (make_fx's form) over part of the segment: the
    values `input_refs` as placeholders, the ops `op_indices` (in order), returning
    `output_refs`. An alias reference becomes an `as_strided` of its base."""
    graph = Graph()
    nodes: dict = {}
    for i, ref in enumerate(input_refs):
        node = graph.placeholder(f"arg{i}_1")
        value = value_of(seg, ref)
        node.meta["val"] = value
        node.meta["tensor_meta"] = _extract_tensor_metadata(value)
        nodes[ref] = node

    def node_of(ref):
        node = nodes.get(ref)
        if node is None:                     # ('a', base ref, geometry): an alias
            offset, shape, stride, _ = ref[2]
            node = graph.call_function(ops_namespace("aten").as_strided.default, (node_of(ref[1]), list(shape),
                                                       list(stride), offset))
            nodes[ref] = node
        return node

    def arg(value):
        if isinstance(value, _Ref):
            return node_of(value)
        if isinstance(value, (list, tuple)):
            return [arg(v) for v in value] if isinstance(value, list) else \
                type(value)(arg(v) for v in value)
        return value

    for index in op_indices:
        (func, args, kwargs), fakes = seg.ops[index], seg.fakes[index]
        args, kwargs = _lists_as_lists(func._schema, tuple(arg(a) for a in args),
                                       {k: arg(v) for k, v in kwargs.items()})
        node = graph.call_function(func, args, kwargs,
                                   name=_target_name(func.overloadpacket._name))
        node.meta["val"] = fakes
        if isinstance(fakes, (list, tuple)):
            for k, fake in enumerate(fakes):
                item = graph.call_function(operator.getitem, (node, k))
                item.meta["val"] = fake
                nodes[_Ref(('n', index, k))] = item
        else:
            if isinstance(fakes, Tensor):
                node.meta["tensor_meta"] = _extract_tensor_metadata(fakes)
            nodes[_Ref(('n', index, 0))] = node
    graph.output(tuple(node_of(ref) for ref in output_refs))
    return _LazyGraphModule(Module(), graph, "GraphModule")


def _truncate_inputs(seg: _Segment, n: int) -> None:
    """Forget the segment's inputs from the n-th on (an op that turned out uncapturable, or
    the joint trace's backward, added them)."""
    del seg.inputs[n:], seg.input_meta[n:]
    for key in [k for k, i in seg.input_storages.items() if i >= n]:
        del seg.input_storages[key]


def _release(seg: _Segment) -> list:
    """Give the segment's inputs back their plain storages and forget which capture owns
    its deferred ones; returns the deferred storages still alive, with their references."""
    for storage in seg.pending.values():          # the graph reads and writes them
        storage.__class__ = UntypedStorage
        _owner_of_storage.pop(id(storage), None)
    live = []
    for key, (storage_ref, ref, geometry) in seg.deferred.items():
        _owner_of_storage.pop(key, None)
        storage = storage_ref()
        if storage is not None:
            live.append((storage, ref, geometry))
    return live


def _saved_values(saved_refs, live, results) -> list:
    """The values the backward reads, by reference: a value that also filled a live storage
    is a tensor over that storage (which took the result's buffer); the others follow the
    live results, in order."""
    filled = {ref: (storage, geometry) for storage, ref, geometry in live}
    rest = iter(results[len(live):])
    values = []
    for ref in saved_refs:
        if ref in filled:
            storage, (offset, shape, stride, dtype) = filled[ref]
            values.append(Tensor._make(storage, offset, shape, stride, dtype))
        else:
            values.append(next(rest))
    return values


def _example(value):
    """A backend's example input: a fake becomes an (uninitialised) tensor laid out alike."""
    if isinstance(value, Tensor) and value.__class__ is not Tensor \
            and value.__class__ is not Parameter:
        with _disable_current_modes():
            return ops_namespace("aten").empty_strided.default(
                list(value.shape), list(value.stride()), dtype=value.dtype,
                device=getattr(value, "fake_device", value.device))
    return value


def _fill(storage, geometry, value, in_inputs) -> None:
    """Give a deferred storage the bytes of the compiled graph's result: take the result's
    buffer when its layout is the one capture predicted and it is not an input's memory,
    else copy into a new one."""
    offset, shape, stride, dtype = geometry
    source = value._storage
    if (source.nbytes() == storage.nbytes() and value._offset == offset
            and value._shape == shape and value._stride == stride and value.dtype == dtype
            and source.device == storage.device and source._allocator is not None
            and id(source) not in in_inputs):
        UntypedStorage.buf.__set__(storage, source.buf)
        storage._allocator, source._allocator = source._allocator, None
        return
    fresh = UntypedStorage._new(storage.nbytes(), storage.device)
    UntypedStorage.buf.__set__(storage, fresh.buf)
    storage._allocator, fresh._allocator = fresh._allocator, None
    Tensor._make(storage, offset, shape, stride, dtype).copy_(value)


class _Uncapturable(Exception):
    """Why an op cannot be recorded (its message is the graph break's reason)."""


_UNSEEN, _LIFT = object(), object()
_refusals: dict = {}      # Operator -> None, _LIFT, or why the op is never captured


def _refusal(op):
    """What the op's name alone decides: None (captured), _LIFT (lift_fresh: returned as
    is), or the graph break's reason, with `{func}` for the overload."""
    if op.name == _LIFT_FRESH:
        return _LIFT
    if op.name in _METADATA_MUTATIONS:
        return "{func} changes a tensor's metadata in place"
    if op.name in _MATH_BIT_VIEWS:
        return "{func} makes a lazily conjugated (negated) view, which is not captured"
    return None


def _uncapturable(func, tensors, kwargs):
    if func._op.name in _METADATA_MUTATIONS:
        return f"{func} changes a tensor's metadata in place"
    if kwargs and kwargs.get("generator") is not None:
        return f"{func} draws from an explicit torch.Generator, whose state Python can read"
    if func._op.name in _MATH_BIT_VIEWS:
        return f"{func} makes a lazily conjugated (negated) view, which is not captured"
    for t in tensors:
        kind = t.__class__
        if kind is not Tensor and kind is not Parameter:
            return f"{func} on a {kind.__name__}: tensor subclasses are not captured"
        if t._keyset & MATH_BITS:
            return f"{func} reads a conj() view (the conjugate or negative bit): not captured"
    return None


_MATH_BIT_VIEWS = frozenset({"aten::_conj", "aten::_neg_view"})


# Ops that draw from a generator although their overload takes none (`randn.default`).
_RANDOM_OPS = frozenset({
    "aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::rand_like",
    "aten::randn_like", "aten::randint_like", "aten::bernoulli", "aten::bernoulli_",
    "aten::multinomial", "aten::normal", "aten::normal_", "aten::uniform_",
    "aten::exponential_", "aten::geometric_", "aten::cauchy_", "aten::log_normal_",
    "aten::random_", "aten::poisson", "aten::native_dropout", "aten::binomial",
    "aten::_standard_gamma", "aten::_sample_dirichlet", "aten::rrelu_with_noise"})


def _draws_random(func) -> bool:
    return func._op.name.split(".")[0] in _RANDOM_OPS or any(
        "Generator" in a.type for a in func._schema.arguments)


def _mutated_positions(func, args, kwargs, tensors: list) -> tuple:
    """Which of the op's tensor arguments (`tensors`, in argument order) it writes."""
    if not func._schema.is_mutable:
        return ()
    bound = bind_arguments(func._op, args, kwargs)
    written = {id(t) for i, a in enumerate(func._schema.arguments) if a.is_mutated
               for t in _tensors(bound[i])}
    return tuple(i for i, t in enumerate(tensors)
                 if id(t) in written and all(u is not t for u in tensors[:i]))


def _non_tensor_output(func, result):
    """A result that is not tensors needs the data (the meta kernel cannot know it)."""
    values = result if isinstance(result, (list, tuple)) else (result,)
    for v in values:
        if v is not None and not isinstance(v, Tensor):
            return f"{func} returns a {type(v).__name__}, which depends on the data"
    return None


def _tensors(tree):
    return [leaf for leaf in tree_leaves(tree) if isinstance(leaf, Tensor)]


def describe_divergence(divergence) -> str:
    """Two op keys where a call's trace left the cached ones, in words."""
    def show(key):
        func, arguments, _ = key
        return f"{func}(" + ", ".join(_show_key(a) for a in arguments) + ")"
    ours, cached = divergence
    return f"{show(ours)} where an earlier call had {show(cached)}"


def _show_key(value) -> str:
    if isinstance(value, _Ref):
        return "<tensor>"
    if isinstance(value, tuple) and value and value[0] in (float, bool, complex):
        return repr(value[1])
    if isinstance(value, tuple) and value and value[0] in (tuple, list):
        return "[" + ", ".join(_show_key(v) for v in value[1:]) + "]"
    return repr(value)


def _key_of(value):
    """A hashable form of recorded arguments in which 1, 1.0 and True differ (they hash
    and compare equal as Python values)."""
    cls = value.__class__
    if cls is _Ref or cls is int or cls is str or value is None:
        return value
    if cls is float:      # by value; a zero by its repr, so -0.0 and 0.0 differ
        return (float, value) if value else (float, repr(value))
    if cls is tuple or cls is list:
        if all(v.__class__ is int for v in value):
            return (cls, *value)
        return (cls, *map(_key_of, value))
    if cls is bool or cls is complex:
        return (cls, value)
    return value


def _lists_as_lists(schema, args: tuple, kwargs: dict) -> tuple:
    """List arguments as lists, as PyTorch's graphs hold them."""
    def fix(argument, value):
        return list(value) if "[" in argument.type and isinstance(value, tuple) else value
    by_name = {a.name: a for a in schema.arguments}
    return (tuple(fix(a, v) for a, v in zip(schema.arguments, args)),
            {k: fix(by_name[k], v) for k, v in kwargs.items()})

