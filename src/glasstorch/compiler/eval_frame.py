"""`torch.compile`: the compiled function, its cache entries, and `OptimizedModule`.

A compiled function keeps, per compiled callable, a list of cache entries. Each call builds
its guard snapshot (guards.py) and picks the entry whose guards it passes; when none does, a
new entry is made (a recompile, logged with the failed guard), up to
`config.recompile_limit`, past which the call warns once and runs eagerly. The call then runs
the user's Python under a `LazyCapture` (capture.py); each segment it flushes is compiled by
the backend once per entry and structure, and reused afterwards. A later call of an entry
is watched once for a replay plan (replay.py): when its Python proves pure, calls whose
replay guards hold run the compiled graph without it.
"""
from __future__ import annotations

import functools
import inspect
import logging
import sys
import threading
import warnings
import weakref

from .. import random as _random
from ..nn.modules.module import Module
from ..utils._python_dispatch import _disable_current_modes, _get_current_dispatch_mode_stack
from . import config, guards, logs
from .backends import lookup_backend
from ..profiler import _recorder
from . import replay
from .capture import _PACKAGE_DIR, LazyCapture, TraceNode, describe_divergence
from .exc import BackendCompilerFailed, Unsupported

log = logging.getLogger("glasstorch._dynamo")


class _State(threading.local):
    def __init__(self):
        self.capture = None        # the LazyCapture running in this thread
        self.disabled = 0          # depth of torch.compiler.disable regions
        self.explain = None        # an _ExplainRecorder collecting graphs and breaks


_state = _State()
_REPLAY_WATCHES = 3       # watched calls of one cache entry that may find it impure
_all_compiled = weakref.WeakSet()  # every live _CompiledFunction, for reset()


def _before_rng_state_access() -> None:
    """glasstorch.random calls this before a generator's state is read or set."""
    capture = _state.capture
    if capture is not None:
        capture.before_rng_state_access()


_random._before_state_access = _before_rng_state_access


def is_compiling() -> bool:
    """Whether the calling code runs inside a compiled region (being captured)."""
    return _state.capture is not None and not _state.disabled


class _CacheEntry:
    """What one set of guards compiled: the snapshot, and the tree of traces recorded under
    it, whose nodes hold the compiled graphs."""

    __slots__ = ("snapshot", "fingerprint", "sizes_free", "trace", "calls", "retraces",
                 "eager", "layouts", "replay", "replay_watches")

    def __init__(self, snapshot: tuple, fingerprint: tuple, sizes_free: tuple | None):
        self.snapshot = snapshot
        self.fingerprint = fingerprint  # what later calls compare (guards.fingerprint)
        # the fingerprint with every size left out, for a static entry that automatic
        # dynamic shapes may replace (None otherwise)
        self.sizes_free = sizes_free
        # With dynamic dims, the tensors' concrete sizes and strides seen so far: each new
        # one compiles its own static graphs, which is not a retrace (None: no dynamic dim)
        self.layouts = set() if guards.has_dynamic_dims(snapshot) else None
        self.trace = TraceNode()    # the traces seen, with their compiled graphs
        self.calls = 0              # calls that ran under this entry
        self.retraces = 0           # later calls whose trace needed a new graph
        self.eager = False          # past the limit: calls under this entry run eagerly
        self.replay = None          # a ReplayPlan: calls whose guards hold skip the Python
        self.replay_watches = 0     # watched calls that made none (a few at most: _watch)


class _CompiledFunction:
    """The state behind one `torch.compile(fn)`: backend, options and cache entries."""

    def __init__(self, fn, backend, fullgraph: bool, dynamic, name=None, recompile_limit=None):
        self.fn = fn
        self.recompile_limit = recompile_limit
        self.backend_arg = backend
        self.backend = lookup_backend(backend)
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.entries: list = []
        self.limit_warned = False
        self.automatic_dynamic = False  # a size changed: every size is dynamic from now on
        self.module = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
        if not isinstance(self.module, Module):
            self.module = None
        # A module's call is described by its forward: names in guards, logs and warnings.
        described = self.module.forward if self.module is not None and (
            fn is self.module or getattr(fn, "__name__", "") in ("__call__", "_call_impl")) \
            else fn
        target = inspect.unwrap(getattr(described, "__func__", described))
        code = getattr(target, "__code__", None)
        self.name = name or getattr(target, "__qualname__", None) or type(target).__name__
        self.location = f"{code.co_filename}:{code.co_firstlineno}" if code else "<unknown>"
        try:
            parameters = list(inspect.signature(described).parameters.values())
        except (TypeError, ValueError):
            parameters = []
        self.arg_names = [p.name for p in parameters
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        _all_compiled.add(self)

    # ---- one call ----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _state.disabled or _state.capture is not None:
            return self.fn(*args, **kwargs)     # disabled, or inlined into an outer capture
        if _get_current_dispatch_mode_stack():
            log.warning("torch.compile: %s runs eagerly: a dispatch mode is active",
                        self.name)
            return self.fn(*args, **kwargs)
        entry = self._entry_for(args, kwargs)
        if entry is None or entry.eager:
            return self.fn(*args, **kwargs)
        if entry.replay is not None:
            if (config.replay_pure_calls and entry.replay.holds() and _state.explain is None
                    and not _recorder.collectors):
                entry.calls += 1
                return entry.replay.run(args, kwargs)
            entry.replay = None       # something it read changed (or replays are off)
        new_layout = entry.layouts is not None and _new_layout(entry, args, kwargs)
        capture = LazyCapture(entry.trace, self._compile_segment, self._on_break,
                              getattr(self.backend, "compiles_backward", False))
        watch = self._watch(entry, args, kwargs)
        if watch is not None:
            capture.runs = []
        before = [v for _, v in replay.versions(self.module)] if watch is not None else None
        _state.capture = capture
        try:
            with capture:
                if watch is None:
                    result = self.fn(*args, **kwargs)
                else:
                    with watch:
                        result = self.fn(*args, **kwargs)
        finally:
            _state.capture = None
            capture.flush()
            self._count_retrace(entry, capture, new_layout)
        if watch is not None:
            entry.replay = self._replay_plan(capture, watch, before, result, args, kwargs)
            entry.replay_watches += entry.replay is None
        return result

    def _watch(self, entry, args, kwargs):
        """A Watch for this call when it may show the function pure (replay.py): a later
        call of a cache entry whose trace was compiled, without dynamic sizes, while nothing
        else profiles the thread, until _REPLAY_WATCHES watched calls of the entry found it
        impure."""
        if (not config.replay_pure_calls or entry.calls == 0 or entry.layouts is not None
                or entry.replay_watches >= _REPLAY_WATCHES or sys.getprofile() is not None
                or _state.explain is not None or _recorder.collectors):
            return None
        return replay.Watch(args, kwargs, self.module)

    def _replay_plan(self, capture, watch, before, result, args, kwargs):
        """The replay plan of a watched call, or None (the reason logged under `recompiles`
        is for the curious: such calls stay on lazy capture, which is always right)."""
        if capture.runs is None or len(capture.runs) != 1 or capture.compiled_new_graph:
            reason = "it did not replay one cached graph"
        elif [v for _, v in replay.versions(self.module)] != before:
            reason = "it changed a module's attributes or hooks"
        else:
            try:
                plan = replay.make_plan(capture.runs[0], result, args, kwargs, self.module,
                                        watch)
            except replay.NotReplayable as e:
                reason = str(e)
            else:
                logs.artifact_logger("recompiles").debug(
                    "%s replays its compiled graph without running its Python", self.name)
                return plan
        logs.artifact_logger("recompiles").debug(
            "%s keeps running its Python under capture: %s", self.name, reason)
        return None

    def _count_retrace(self, entry, capture, new_layout: bool):
        """A later call under the same guards whose trace differs (a Python number that
        changes every call, a data-dependent branch) compiles new graphs; past the recompile
        limit the entry runs eagerly, with one warning naming where the traces part. New
        sizes in dynamic dims compile new graphs without counting."""
        entry.calls += 1
        if entry.calls == 1 or new_layout or not capture.compiled_new_graph:
            return
        entry.retraces += 1
        where = describe_divergence(capture.divergence) if capture.divergence else "?"
        logs.artifact_logger("recompiles").debug(
            "Recompiling function %s in %s: the trace changed at %s", self.name,
            self.location, where)
        if entry.retraces >= self.limit:
            entry.eager = True
            warnings.warn(
                f"glasstorch._dynamo: {self.name!r} ({self.location}) compiled new graphs on "
                f"{entry.retraces} calls with the same guards, and now runs eagerly under "
                f"them. The trace changed at {where}. A Python number that changes every "
                "call (a learning rate, a step count) is a constant of the graph: pass it as "
                "a tensor to keep one graph.", UserWarning, stacklevel=_user_stacklevel())

    @property
    def limit(self) -> int:
        """This function's recompile limit: its own, else `config.recompile_limit`."""
        return config.recompile_limit if self.recompile_limit is None else self.recompile_limit

    def _entry_for(self, args, kwargs):
        names = self.arg_names + [f"arg{i}" for i in range(len(self.arg_names), len(args))]
        module = self.module
        if module is None and args and names[0] == "self" and isinstance(args[0], Module):
            module, args, names = args[0], args[1:], names[1:]   # a compiled unbound forward
        dynamic = self.dynamic is True or self.automatic_dynamic
        key = guards.fingerprint(args, kwargs, module, dynamic)
        for entry in self.entries:
            if entry.fingerprint == key:
                return entry
        snapshot = guards.snapshot(args, kwargs, names, module, dynamic)
        automatic = self.dynamic is None and config.automatic_dynamic_shapes
        sizes_free = None
        if self.entries:
            reason = guards.failure(self.entries[-1].snapshot, snapshot)
            if len(self.entries) >= self.limit:
                if not self.limit_warned:
                    self.limit_warned = True
                    warnings.warn(
                        f"glasstorch._dynamo hit config.recompile_limit "
                        f"({self.limit})\n   function: {self.name!r} "
                        f"({self.location})\n   last reason: {reason}\nTo log all "
                        "recompilation reasons, use GLASSTORCH_LOGS=\"recompiles\".",
                        UserWarning, stacklevel=_user_stacklevel())
                return None
            if automatic and not dynamic:
                sizes_free = guards.fingerprint(args, kwargs, module, True)
                if sizes_free == self.entries[-1].sizes_free:
                    # PyTorch's automatic dynamic shapes: only sizes changed, so this and
                    # later sizes share one entry with every size dynamic
                    self.automatic_dynamic = dynamic = True
                    key, sizes_free = sizes_free, None
                    snapshot = guards.snapshot(args, kwargs, names, module, True)
                    reason += " (sizes are dynamic from now on: automatic dynamic shapes)"
            logs.artifact_logger("recompiles").debug(
                "Recompiling function %s in %s\n    triggered by the following guard "
                "failure(s):\n    - %d/%d: %s", self.name, self.location,
                len(self.entries) - 1, len(self.entries) - 1, reason)
        elif automatic and not dynamic:
            sizes_free = guards.fingerprint(args, kwargs, module, True)
        entry = _CacheEntry(snapshot, key, sizes_free)
        self.entries.append(entry)
        if logs.enabled("guards"):
            logs.artifact_logger("guards").debug(
                "GUARDS for %s (entry %d):\n%s", self.name, len(self.entries) - 1,
                "\n".join(f"  {source or kind}: {kind} == {value!r}"
                          for source, kind, value in snapshot))
        return entry

    def _compile_segment(self, cache: dict, outputs: tuple, build_graph, inputs,
                         backward: bool = False):
        """The compiled callable for a segment whose trace ends at the node owning `cache`
        and whose live results are `outputs`: compiled by the backend the first time (a
        region's backward graph by its `bw_compiler`)."""
        cached = cache.get(outputs)
        if cached is None:
            gm = build_graph()
            if logs.enabled("graph"):
                logs.artifact_logger("graph").debug(
                    "TRACED %sGRAPH %s\n%s", "BACKWARD " if backward else "", self.name,
                    gm.print_readable(print_output=False))
            try:
                compile_fn = self.backend.bw_compiler if backward else self.backend
                # A flush at a data read runs with the capture's mode still on the stack:
                # what the backend computes while compiling must not join the next segment.
                with _disable_current_modes():
                    compiled = compile_fn(gm, list(inputs))
            except Exception as e:
                if not config.suppress_errors:
                    raise BackendCompilerFailed(self.backend, e) from e
                log.warning("torch.compile: the backend failed on a graph of %s; it runs "
                            "eagerly (%s: %s)", self.name, type(e).__name__, e)
                compiled = gm.forward
            cached = cache[outputs] = (gm, compiled)
        if _state.explain is not None:
            _state.explain.add_graph(cached[0], inputs)
        return cached[1]

    def _on_break(self, brk, had_ops: bool):
        if self.fullgraph:
            raise Unsupported(
                f"{brk.reason}\n  at {brk.location} in {brk.function}\n(fullgraph=True "
                "makes a graph break an error; without it the graph ends here and capture "
                "resumes after this line)")
        logs.artifact_logger("graph_breaks").debug(
            "Graph break in %s at %s: %s", self.name, brk.location, brk.reason)
        if _state.explain is not None:
            _state.explain.breaks.append(brk)

    def reset(self):
        self.entries.clear()
        self.limit_warned = False
        self.automatic_dynamic = False

    def __reduce__(self):
        """Copies and pickles carry the function and the options, not the compiled graphs."""
        return (_CompiledFunction, (self.fn, self.backend_arg, self.fullgraph, self.dynamic,
                                    self.name, self.recompile_limit))


def _new_layout(entry: _CacheEntry, args: tuple, kwargs: dict) -> bool:
    """Whether this call's tensors have sizes and strides that `entry` has not seen (and
    now remembers)."""
    layout = guards.layouts(args, kwargs)
    if layout in entry.layouts:
        return False
    entry.layouts.add(layout)
    return True


def _user_stacklevel() -> int:
    """The `stacklevel` that makes a warning point at the user's line calling into
    glasstorch (through a compiled function, or an OptimizedModule and its hooks)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def _make_wrapper(fn, compiled: _CompiledFunction):
    @functools.wraps(fn)
    def compiled_fn(*args, **kwargs):
        return compiled(*args, **kwargs)
    compiled_fn._torchdynamo_orig_callable = fn
    compiled_fn._glasstorch_compiled = compiled
    return compiled_fn


class OptimizedModule(Module):
    """What `torch.compile(module)` returns: a module holding the original as `_orig_mod`
    (so its state_dict keys start with `_orig_mod.`) whose calls run compiled. Attribute
    reads and writes go through to the original module."""

    _opt_mod_attributes = {"_orig_mod", "dynamo_ctx", "forward", "_compiled",
                           "_super_module_initialized"}

    def __init__(self, mod: Module, compiled: _CompiledFunction):
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_super_module_initialized", False)
        super().__init__()
        object.__setattr__(self, "_super_module_initialized", True)
        self._orig_mod = mod
        self._compiled = compiled
        self.forward = _make_wrapper(mod.__call__, compiled)

    def __len__(self) -> int:
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    @property
    def training(self) -> bool:
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        if self.__dict__.get("_super_module_initialized"):
            self._orig_mod.training = value

    def __getattr__(self, name: str):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __reduce__(self):
        return (type(self), (self._orig_mod, self._compiled))


OptimizedModule.__module__ = "glasstorch._dynamo.eval_frame"   # PyTorch's path for the class


_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend=None, mode=None,
            options=None, name=None, disable: bool = False, recompile_limit=None,
            isolate_recompiles: bool = False, shapes_spec=None):
    """Compile `model` (a function or an nn.Module): the same results as eager, computed
    through graphs captured from each call and compiled by `backend` ("inductor" when None).
    Usable as a decorator, with or without arguments. `recompile_limit` overrides
    `torch._dynamo.config.recompile_limit` for this function; `name` names it in logs and
    warnings. See docs/15-compiler.md."""
    options_ = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                    options=options, name=name, disable=disable,
                    recompile_limit=recompile_limit, isolate_recompiles=isolate_recompiles,
                    shapes_spec=shapes_spec)
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(_MODES)}")
    if shapes_spec is not None:
        raise NotImplementedError("torch.compile(shapes_spec=...): glasstorch has no "
                                  "symbolic shapes")
    if model is None:
        return lambda fn: compile(fn, **options_)
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is "
                             "provided.")
    backend = "inductor" if backend is None else backend
    lookup_backend(backend)                  # an unknown name fails here, as in PyTorch
    if disable:
        return model
    if isinstance(model, Module):
        compiled = _CompiledFunction(model.__call__, backend, fullgraph, dynamic, name,
                                     recompile_limit)
        return OptimizedModule(model, compiled)
    return _make_wrapper(model, _CompiledFunction(model, backend, fullgraph, dynamic, name,
                                                  recompile_limit))


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Run `fn` (or, as a decorator, the decorated function) eagerly, never captured, even
    when a compiled function calls it: the capture ends before it and resumes after."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)

    @functools.wraps(fn)
    def eager_fn(*args, **kwargs):
        capture = _state.capture
        if capture is not None:              # what came before is computed first
            capture.flush(break_reason=f"{fn.__qualname__} is torch.compiler.disable()d")
        _state.disabled += 1
        try:
            if capture is not None:
                with _disable_current_modes():
                    return fn(*args, **kwargs)
            return fn(*args, **kwargs)
        finally:
            _state.disabled -= 1
    eager_fn._torchdynamo_disable = True
    return eager_fn


def reset() -> None:
    """Forget every compiled graph and cache entry: the next calls capture and compile anew."""
    for compiled in list(_all_compiled):
        compiled.reset()
