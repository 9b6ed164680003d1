"""Watching the dispatcher: which kernels a call went through, and how long each took.

`dispatch_trace()` is a context manager that records every operator call the current thread
makes while it is active, nested calls included. While no trace is on anywhere, the
dispatcher pays one empty-list test per layer; while one is on, `Operator.redispatch` hands
each layer to `_hook`, which times the kernel and files it under the call it belongs to.

A layer is a continuation of the innermost open call when it is the same operator at a lower
key (the kernel above it called `op.redispatch`); anything else is a new, nested call. So
`t.add_(u)` shows as one call, `ADInplaceOrView -> CPU`, and a composite op shows its
decomposition as calls indented below it. A call that fails before any kernel runs (mixed
devices, no kernel for the backend) is recorded too, with its error and no layers.

The hook is not a dispatch key of its own (the Python key), because a key sees a call only
once, on the way in; the hook sees every layer, which is what per-layer times need.
"""
from __future__ import annotations

import os
import sys
import threading
from time import perf_counter

from . import dispatcher
from .dispatcher import _BELOW, _LAST_BACKEND
from .keys import DispatchKey, DispatchKeySet


class Layer:
    """One kernel a call ran: its key, the kernel, and seconds spent in it: `total` includes
    the layers below it and the calls it made; `self_time` leaves out the layer below."""

    __slots__ = ("key", "kernel", "start", "total", "self_time")

    def __init__(self, key: DispatchKey, kernel):
        self.key, self.kernel = key, kernel
        self.start = self.total = self.self_time = 0.0

    @property
    def kernel_name(self) -> str:
        return getattr(self.kernel, "__qualname__", type(self.kernel).__name__)

    def __repr__(self):
        return f"Layer({self.key.name}, {self.kernel_name}, {_fmt_time(self.self_time)})"


class TraceEvent:
    """One operator call: the op, the key set it was dispatched with (tensor keys plus the
    thread's included keys minus its excluded keys), the layers it passed through, its
    nesting depth, the calls made inside it, and the error it raised, if any. `shapes` are
    the arguments' sizes ([] for a non-tensor) and `stack` the caller's frames outside
    glasstorch ("file(line): function", innermost first) when a trace asked, else None."""

    __slots__ = ("op", "keyset", "layers", "depth", "parent", "children", "error", "shapes",
                 "stack")

    def __init__(self, op: str, keyset: DispatchKeySet, depth: int, parent):
        self.op, self.keyset, self.depth, self.parent = op, keyset, depth, parent
        self.layers: list = []
        self.children: list = []
        self.error = None
        self.shapes = self.stack = None

    @property
    def keys(self) -> list:
        """The keys whose kernels ran, highest first, e.g. [ADInplaceOrView, CPU]."""
        return [layer.key for layer in self.layers]

    @property
    def path(self) -> str:
        return " -> ".join(layer.key.name for layer in self.layers)

    @property
    def start(self) -> float:
        """When the first kernel started, on time.perf_counter's clock (0.0 without one)."""
        return self.layers[0].start if self.layers else 0.0

    @property
    def total(self) -> float:
        """Seconds from the first kernel's start to its end."""
        return self.layers[0].total if self.layers else 0.0

    def __repr__(self):
        return f"TraceEvent({self.op}, {self.keyset!r}, {self.path or 'no kernel'})"


class DispatchTrace:
    """The record of a `dispatch_trace()` block: `events` in call order (nested calls follow
    their parent, with a larger `depth`), `roots` the top-level calls, `str()` a table.
    With `record_shapes`, each event keeps its arguments' sizes (the profiler's Input Shapes);
    with `record_stack`, the user's frames that made the call (the profiler's with_stack).
    A subclass that only watches (GLASSTORCH_DEBUG's printer) sets `keep_events` False and
    overrides `on_layer`, called as each kernel is about to run.

    `bookkeeping` holds (time, seconds) pairs: the trace's own work around each kernel,
    before it starts and after it ends, which falls inside the enclosing call (or a
    profiler's span) and is no part of it; the profiler leaves it out of self times."""

    keep_events = True
    on_layer = None           # on_layer(event, layer, args, is_new_call) or None

    def __init__(self, record_shapes: bool = False, record_stack: bool = False):
        self.events: list = []
        self.bookkeeping: list = []
        self.record_shapes = record_shapes
        self.record_stack = record_stack

    @property
    def roots(self) -> list:
        return [e for e in self.events if e.depth == 0]

    def __enter__(self):
        _start(self)
        return self

    def __exit__(self, *exc):
        _stop(self)

    def table(self) -> str:
        """One row per call, indented by nesting: op, key set, path with per-layer self
        times, total time."""
        header = ("op", "dispatch key set", "kernels (self time)", "total")
        rows = []
        for e in self.events:
            if e.layers:
                path = " -> ".join(f"{layer.key.name} {_fmt_time(layer.self_time)}"
                                   for layer in e.layers)
            else:
                path = "(no kernel)"
            if e.error is not None:
                path += f"  !! {type(e.error).__name__}"
            rows.append(("  " * e.depth + e.op, repr(e.keyset), path, _fmt_time(e.total)))
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(3)]

        def line(r):
            return "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[3].rjust(9)
        out = [line(header), "  ".join("-" * w for w in widths) + "  " + "-" * 9]
        out += [line(r) for r in rows]
        if not rows:
            out.append("(no operator calls)")
        return "\n".join(out)

    __str__ = table

    def print(self) -> None:
        print(self.table())

    def __repr__(self):
        return f"<DispatchTrace: {len(self.events)} calls>"


def dispatch_trace() -> DispatchTrace:
    """Record every operator call this thread makes inside the block.

        with glasstorch.debug.dispatch_trace() as trace:
            x.add_(y)
        print(trace)          # aten::add_.Tensor  DispatchKeySet(...)  ADInplaceOrView -> CPU
    """
    return DispatchTrace()


def dispatch_table(op) -> str:
    """The computed dispatch table of an operator: each key with a kernel, the kernel, and
    where it came from (a kernel for that key, an alias key, a fallback, a fallthrough).

    `op` may be an Operator, `glasstorch.ops.ns.name[.overload]`, a custom op, a generated
    function (`glasstorch.add`) or a name: "aten::add.Tensor", "add.Tensor", "mylib::foo"
    (every overload of a packet or bare name is shown).
    """
    if isinstance(op, dispatcher.Operator):
        return op.dump()
    inner = getattr(op, "_opoverload", None)             # CustomOpDef
    if isinstance(inner, dispatcher.Operator):
        return inner.dump()
    if getattr(op, "_schema", None) is not None and callable(op):   # generated function
        return dispatcher.find(op._schema.qualified_name).dump()
    if hasattr(op, "_namespace") and hasattr(op, "_name"):          # OpOverloadPacket
        name = f"{op._namespace}::{op._name}"
    elif isinstance(op, str):
        name = op if "::" in op else f"aten::{op}"
    else:
        raise TypeError(f"dispatch_table(): expected an operator or its name, got "
                        f"{type(op).__name__}")
    ops = [o for o in dispatcher.all_operators()
           if o.name == name or (o.name.startswith(name + ".") and "." not in name.split("::")[1])]
    if not ops:
        raise RuntimeError(f"dispatch_table(): no operator named {name!r}")
    return "\n\n".join(o.dump() for o in sorted(ops, key=lambda o: o.name))


# ---- the hook ----------------------------------------------------------------------------

class _ThreadState(threading.local):
    def __init__(self):
        self.traces: list = []     # active DispatchTraces of this thread, outermost first
        self.frames: list = []     # (event, layer) of every kernel running now


_state = _ThreadState()
_active = [0]                      # traces on in all threads; the hook is installed while > 0
_lock = threading.Lock()


def _start(trace: DispatchTrace) -> None:
    _state.traces.append(trace)
    with _lock:
        _active[0] += 1
        if _active[0] == 1:
            dispatcher.add_tracer(_hook)


def _stop(trace: DispatchTrace) -> None:
    _state.traces.remove(trace)
    with _lock:
        _active[0] -= 1
        if _active[0] == 0:
            dispatcher.remove_tracer(_hook)


def _hook(op, ks: int, args: tuple):
    """`Operator.redispatch` while tracing: the same steps, timed and recorded."""
    enter = perf_counter()
    state = _state
    if not state.traces:                       # another thread is tracing, not this one
        return dispatcher.untraced(op, ks, args)
    masked = ks & op.mask
    key = masked.bit_length() - 1

    frames = state.frames
    top = frames[-1] if frames else None
    if top is not None and top[0].op == op.name and top[1] is top[0].layers[-1] \
            and key < top[1].key:
        event = top[0]                          # the kernel above redispatched: same call
    else:
        event = _new_event(state, op, ks, args)
    if key < 0:
        event.error = op._missing_kernel_error(args)
        raise event.error
    kernel = op.table[key]
    layer = Layer(DispatchKey(key), kernel)
    event.layers.append(layer)
    for trace in state.traces:
        if trace.on_layer is not None:
            trace.on_layer(event, layer, args, len(event.layers) == 1)
    frames.append((event, layer))
    start = layer.start = perf_counter()
    try:
        if key <= _LAST_BACKEND:
            return kernel(*args)
        return kernel(op, masked & _BELOW[key], *args)
    except BaseException as e:
        if event.error is None:
            event.error = e
        raise
    finally:
        end = perf_counter()
        layer.total = end - start
        frames.pop()
        layers = event.layers
        i = layers.index(layer)
        layer.self_time = layer.total - (layers[i + 1].total if i + 1 < len(layers) else 0.0)
        for trace in state.traces:
            if trace.keep_events:
                leave = perf_counter()
                trace.bookkeeping.append(((enter + start) / 2, start - enter))
                trace.bookkeeping.append(((end + leave) / 2, leave - end))


def _new_event(state, op, ks: int, args: tuple) -> TraceEvent:
    frames = state.frames
    parent = frames[-1][0] if frames else None
    event = TraceEvent(op.name, DispatchKeySet(ks), 0 if parent is None else parent.depth + 1,
                       parent)
    if parent is not None:
        parent.children.append(event)
    for trace in state.traces:
        if trace.keep_events:
            trace.events.append(event)
        if trace.record_shapes and event.shapes is None:
            event.shapes = [_shape_of(a) for a in args]
        if trace.record_stack and event.stack is None:
            event.stack = user_stack()
    return event


# glasstorch's own frames: its files, and the functions it generates ("<glasstorch.ops ...>")
_OWN_FRAMES = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
               "<glasstorch")


def user_stack() -> list:
    """The calling frames outside glasstorch, innermost first, as "file(line): function"."""
    frames = []
    f = sys._getframe(1)
    while f is not None:
        filename = f.f_code.co_filename
        if not filename.startswith(_OWN_FRAMES):
            frames.append(f"{filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return frames


def _shape_of(arg) -> list:
    """An argument's sizes as the profiler's Input Shapes show them: [] for a non-tensor."""
    shape = getattr(arg, "_shape", None)
    return list(shape) if isinstance(shape, tuple) else []


def _failed(op, ks: int, error: BaseException) -> None:
    """A call that failed before reaching any kernel (mixed devices): record it too."""
    if _state.traces:
        _new_event(_state, op, ks, ()).error = error


_hook.failed = _failed


def _fmt_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"
