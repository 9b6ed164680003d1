"""Replaying a compiled call without running its Python.

Lazy capture (capture.py) runs the user's Python on every call, recording each operator
again and checking the trace against the cached one: correct whatever the Python does, but
it costs more than eager mode per op (the bench MLP's forward on 4 samples: 553 us compiled
against 188 eager). Most models' forward is *pure*: given the guarded inputs it records the
same graph every time, and it changes nothing but tensors, through operators. For such a
call the compiled graph alone gives the same result, so later calls run it directly:
PyTorch's Dynamo does the same after reading the bytecode once.

Purity is shown by watching one call that replayed a cached trace (`Watch`, with
`sys.setprofile`): every Python function of the user's that runs is read (its bytecode must
store no attribute, global, subscript or closure cell, and import nothing), every builtin it
calls must be on a list of side-effect-free ones, and every glasstorch function it calls
must be an operator, a functional, a module's call or a tensor's metadata. What the Python
reads beyond the cache entry's guards (guards.py: arguments, parameters, buffers, training
flags, grad mode, autocast) becomes guards of the replay:

- the globals and closure cells each of its functions reads, by identity, with the module
  attributes read through them (`F.gelu`): only modules, functions, classes and immutable
  values may be read there, or configuration objects (a dataclass instance of such
  values), guarded attribute by attribute (a list, a dict, a callable object is refused);
  a function whose code several function objects share (a class made twice by a
  factory) is told apart by the cells its frame sees;
- its modules' own attributes: they may hold only such values too, and every write of one
  (Module.__setattr__, a hook registered) moves the module's counter (`_attr_version`),
  which the replay checks for each module; no module hook may be registered, globally or
  on one of them;
- the attributes of the user's module classes, by identity.

The call must also have flushed one graph, at its return, with no random draws; its graph
inputs must be its arguments, parameters and buffers; it must return a tensor, or a tuple
or list of tensors (or None), over the graph's outputs. A replay then runs the compiled
forward, makes the outputs, and, where autograd recorded a region, its compiled backward
node, as the flush would (capture.py `_run`). Anything else keeps the lazy path, which is
always right: a replay plan is only an optimisation of it.
"""
from __future__ import annotations

import dis
import gc
import math
import os
import sys
import types

from ..autograd.graph import SavedTensor, gradient_edge
from ..core import dtype as dt
from ..core.device import device
from ..core.tensor import Tensor, make_alias
from ..dispatch.dispatcher import _tracers
from ..nn.modules import module as _module
from ..nn.modules.module import Module
from ..utils._python_dispatch import _disable_current_modes
from .. import overrides
from ..dispatch.keys import exclude_keys
from .aot_autograd import CompiledFunctionBackward
from .capture import _PYTHON_AND_ABOVE, _fill, _saved_values, fresh_storage

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MISSING = object()

# What the user's code may call in C: builtins that neither write nor read mutable state
# (not map, filter or sorted: the functions they call from C would go unwatched).
_PURE_BUILTINS = frozenset(id(f) for f in (
    len, isinstance, issubclass, range, enumerate, zip, min, max, abs, round, divmod, int,
    float, bool, tuple, list, dict, iter, next, getattr, hasattr, super, type, sum, any, all,
    reversed, slice, str, repr, hash, pow, callable))
_READ_METHODS = {dict: {"get", "items", "keys", "values", "__getitem__", "__contains__"},
                 list: {"index", "count", "__getitem__", "__contains__"}}
_IMMUTABLE = (int, float, bool, complex, str, bytes, type(None), dt.dtype, device, range,
              slice)
# Opcodes that write state outside the frame, or read it in ways not guarded here.
_WRITES = frozenset(("STORE_ATTR", "DELETE_ATTR", "STORE_GLOBAL", "DELETE_GLOBAL",
                     "STORE_DEREF", "DELETE_DEREF", "STORE_SUBSCR", "DELETE_SUBSCR",
                     "STORE_NAME", "DELETE_NAME", "LOAD_NAME", "LOAD_CLASSDEREF",
                     "IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR", "SETUP_ANNOTATIONS",
                     "GET_AWAITABLE", "GET_AITER", "BEFORE_ASYNC_WITH", "STORE_SLICE"))
_GENERATORS = frozenset(("YIELD_VALUE", "RETURN_GENERATOR", "SEND", "GEN_START"))
_COMPREHENSIONS = frozenset(("<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>"))
# Glasstorch's own Python a user's frame may call: operators and functionals (their effect
# is the graph), a module's call and attribute lookup, containers' reads, tensors' metadata.
_OPS_DIR = os.path.join(_PACKAGE_DIR, "ops") + os.sep
_FUNCTIONAL_DIR = os.path.join(_PACKAGE_DIR, "nn", "functional")
_MODULES_DIR = os.path.join(_PACKAGE_DIR, "nn", "modules") + os.sep
_MODULE_FILE = os.path.join(_PACKAGE_DIR, "nn", "modules", "module.py")
_TENSOR_FILE = os.path.join(_PACKAGE_DIR, "core", "tensor.py")
_SHAPE_FILE = os.path.join(_PACKAGE_DIR, "core", "shape.py")
_MODULE_CALLS = frozenset(("_call_impl", "__getattr__", "forward", "__getitem__", "__iter__",
                           "__len__", "__contains__", "keys", "values", "items", "children"))
_TENSOR_READS = frozenset(("shape", "size", "dim", "ndim", "numel", "nelement", "stride",
                           "device", "is_contiguous", "is_floating_point", "is_complex",
                           "element_size", "__len__", "requires_grad", "is_cuda", "T", "mT",
                           "__iter__"))
_MODULE_INTERNALS = frozenset(("_parameters", "_buffers", "_modules",
                               "_non_persistent_buffers_set", "_state_dict_hooks",
                               "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                               "_load_state_dict_post_hooks", "_is_full_backward_hook"))
_MODULE_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                 "_backward_pre_hooks", "_forward_hooks_with_kwargs",
                 "_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs")
_GLOBAL_HOOKS = ("_global_forward_pre_hooks", "_global_forward_hooks",
                 "_global_backward_pre_hooks", "_global_backward_hooks")


class NotReplayable(Exception):
    """Why a call cannot be replayed without its Python (logged under `recompiles`)."""


def _is_user(code) -> bool:
    name = code.co_filename
    return not (name.startswith(_PACKAGE_DIR) or name.startswith("<glasstorch"))


def _framework_callee_allowed(code) -> bool:
    if code.co_name == "__del__":       # a dropped reference frees a storage
        return True
    name = code.co_filename
    if name.startswith("<glasstorch.ops ") or name.startswith("<glasstorch.overrides "):
        return True
    if name.startswith(_OPS_DIR) or name.startswith(_FUNCTIONAL_DIR) or name == _SHAPE_FILE:
        return True
    if name == _MODULE_FILE or name.startswith(_MODULES_DIR):
        return code.co_name in _MODULE_CALLS
    return name == _TENSOR_FILE and code.co_name in _TENSOR_READS


def _read_chains(code) -> tuple:
    """(names read as globals with the attributes read after them, free variables read
    likewise), from the bytecode; NotReplayable for a code object that writes state."""
    free = bool(code.co_freevars) and code.co_name not in _COMPREHENSIONS
    globals_read, cells_read = [], []
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        op = ins.opname
        if op in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_cellvars:
            continue                          # the frame's own variable, kept in a cell
        if op in _WRITES:
            raise NotReplayable(f"{code.co_name} ({code.co_filename}:{code.co_firstlineno}) "
                                f"runs {op}")
        if op in _GENERATORS and code.co_name not in _COMPREHENSIONS:
            raise NotReplayable(f"{code.co_name} is a generator")
        if op == "LOAD_GLOBAL" or (op == "LOAD_DEREF" and free
                                   and ins.argval in code.co_freevars):
            attrs = []
            for nxt in instructions[i + 1:]:
                if nxt.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
                    break
                attrs.append(nxt.argval)
            (globals_read if op == "LOAD_GLOBAL" else cells_read).append(
                (ins.argval, tuple(attrs)))
    return tuple(globals_read), tuple(cells_read)


def _readable(value) -> bool:
    """Whether guarding `value` by identity guards what reading it gives."""
    if isinstance(value, _IMMUTABLE) or isinstance(value, (types.ModuleType, type,
                                                           types.FunctionType,
                                                           types.BuiltinFunctionType)):
        return True
    return isinstance(value, tuple) and all(_readable(v) for v in value)


class _Guards:
    """Identity checks: `(mapping, key, value)` read with .get and `(object, name, value)`
    read with getattr, each expected to give `value` again; and `(mapping, keys)`, whose
    keys must stay those."""

    def __init__(self):
        self.items: list = []
        self.attrs: list = []
        self.keys: list = []
        self._seen: set = set()

    def item(self, mapping: dict, key, value) -> None:
        if (id(mapping), key) not in self._seen:
            self._seen.add((id(mapping), key))
            self.items.append((mapping, key, value))

    def attr(self, obj, name: str, value) -> None:
        if (id(obj), name) not in self._seen:
            self._seen.add((id(obj), name))
            self.attrs.append((obj, name, value))

    def key_set(self, mapping: dict) -> None:
        if id(mapping) not in self._seen:
            self._seen.add(id(mapping))
            self.keys.append((mapping, tuple(mapping)))

    def hold(self) -> bool:
        for mapping, keys in self.keys:
            if len(mapping) != len(keys) or tuple(mapping) != keys:
                return False
        for mapping, key, value in self.items:
            if mapping.get(key, _MISSING) is not value:
                return False
        for obj, name, value in self.attrs:
            if getattr(obj, name, _MISSING) is not value:
                return False
        return True


def _guard_chain(guards: _Guards, value, attrs: tuple, what: str) -> None:
    """Guard the attributes read after `value` while it is a module or a class; what the
    chain reaches must be guardable by identity (`os.environ`, a dict, is not)."""
    for name in attrs:
        if not isinstance(value, (types.ModuleType, type)):
            break
        nxt = getattr(value, name, _MISSING)
        if nxt is _MISSING:
            break
        guards.attr(value, name, nxt)
        value, what = nxt, f"{what}.{name}"
    if not _readable(value):
        guard_plain_object(guards, value, what)


def guard_plain_object(guards: _Guards, value, what: str) -> None:
    """Guard a configuration object (a dataclass instance, a namespace) by its class, its
    attributes' names and their values, which must be guardable themselves; NotReplayable
    for anything else (a list, a dict, an object with its own attribute lookup)."""
    cls = type(value)
    attributes = getattr(value, "__dict__", None)
    if (attributes.__class__ is not dict or isinstance(value, (Module, Tensor))
            or callable(value)          # a partial's or other C call runs unwatched
            or cls.__getattribute__ is not object.__getattribute__
            or hasattr(cls, "__getattr__") or not all(map(_readable, attributes.values()))):
        raise NotReplayable(f"{what} is a {cls.__name__}, which may change")
    guards.attr(value, "__class__", cls)
    guards.key_set(attributes)
    for key, item in attributes.items():
        guards.item(attributes, key, item)
    _guard_class(guards, cls)


def _guard_class(guards: _Guards, cls) -> None:
    """Guard the attributes a user's class defines (its methods too), up to glasstorch's and
    Python's own classes."""
    for klass in cls.__mro__:
        if klass is object or klass is Module or klass.__module__.startswith("glasstorch"):
            break
        for key, item in klass.__dict__.items():
            guards.item(klass.__dict__, key, item)


class Watch:
    """Watches one call's Python (`sys.setprofile`): a reason it is not pure, or the guards
    of what it read; and the versions of the tensors it may write in place (its arguments,
    parameters and buffers) before it ran."""

    def __init__(self, args: tuple, kwargs: dict, module):
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        if module is not None:
            tensors += [*module.parameters(), *module.buffers()]
        self.versions = {id(t): _version(t) for t in tensors}
        self.reason: str | None = None
        self.guards = _Guards()
        self._codes: dict = {}         # code -> True (user), False (glasstorch)
        self._read: set = set()
        self._previous = None
        self._collecting = False

    def __enter__(self):
        # What the garbage collector runs (gc.callbacks such as hypothesis's, finalizers of
        # cyclic garbage) is not the call's doing: a replay leaves it to the collector. Our
        # first and last callbacks bracket a collection.
        gc.callbacks.insert(0, self._collection_starts)
        gc.callbacks.append(self._collection_stops)
        self._previous = sys.getprofile()
        sys.setprofile(self._event)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._previous)
        gc.callbacks.remove(self._collection_starts)
        gc.callbacks.remove(self._collection_stops)

    def _collection_starts(self, phase, info) -> None:
        if phase == "start":
            self._collecting = True

    def _collection_stops(self, phase, info) -> None:
        if phase == "stop":
            self._collecting = False

    def _user(self, code) -> bool:
        known = self._codes.get(code)
        if known is None:
            known = self._codes[code] = _is_user(code)
        return known

    def _event(self, frame, event, arg):
        if self.reason is not None or self._collecting or frame.f_code in _BRACKETS:
            return
        try:
            if event == "call":
                code = frame.f_code
                if self._user(code):
                    self._enter_user(frame, code)
                else:
                    caller = frame.f_back
                    if caller is not None and self._user(caller.f_code) and \
                            not _framework_callee_allowed(code):
                        raise NotReplayable(f"it calls {code.co_qualname} "
                                            f"({code.co_filename})")
            elif event == "c_call" and self._user(frame.f_code):
                self._c_call(arg)
        except NotReplayable as e:
            self.reason = str(e)

    def _enter_user(self, frame, code) -> None:
        if code in self._read:
            return
        self._read.add(code)
        globals_read, cells_read = _read_chains(code)
        f_globals, f_builtins = frame.f_globals, frame.f_builtins
        for name, attrs in globals_read:
            value = f_globals.get(name, _MISSING)
            if value is _MISSING:
                value = f_builtins.get(name, _MISSING)
                self.guards.item(f_globals, name, _MISSING)   # not shadowed later
                self.guards.item(f_builtins, name, value)
            else:
                self.guards.item(f_globals, name, value)
            _guard_chain(self.guards, value, attrs, f"{code.co_name} reads {name}")
        functions = _functions_of(code)
        for function in functions:
            for value in (function.__defaults__ or ()) + tuple(
                    (function.__kwdefaults__ or {}).values()):
                if not _readable(value):
                    raise NotReplayable(f"{code.co_name} has a {type(value).__name__} "
                                        "default, which may change")
        if cells_read:
            # the function running is one whose cells hold what the frame sees (a class
            # made by a factory called twice has two); all such are guarded
            seen = frame.f_locals
            running = [f for f in functions if f.__closure__ is not None and all(
                _contents(cell) is seen.get(name, _MISSING)
                for name, cell in zip(code.co_freevars, f.__closure__))]
            if not running:
                raise NotReplayable(f"the closure of {code.co_name} cannot be told apart")
            for name, attrs in cells_read:
                for function in running:
                    cell = function.__closure__[code.co_freevars.index(name)]
                    self.guards.attr(cell, "cell_contents", cell.cell_contents)
                _guard_chain(self.guards, seen[name], attrs, f"{code.co_name} reads {name}")

    def _c_call(self, fn) -> None:
        if id(fn) in _PURE_BUILTINS:
            return
        owner = getattr(fn, "__self__", None)
        if owner is math:
            return
        if isinstance(owner, _IMMUTABLE + (tuple,)):
            return
        if fn.__name__ in _READ_METHODS.get(type(owner), ()):
            return
        raise NotReplayable(f"it calls {getattr(fn, '__qualname__', fn)!r}")


_BRACKETS = (Watch._collection_starts.__code__, Watch._collection_stops.__code__)


def _version(t: Tensor) -> int:
    """t's version counter (an inference tensor has none: 0)."""
    return t._vc.version if t._vc is not None else 0


def _functions_of(code) -> list:
    """The function objects running `code` (for their closure cells and defaults); none
    for a comprehension's (made anew each time, from its caller's variables)."""
    if code.co_name in _COMPREHENSIONS:
        return []
    return [f for f in gc.get_referrers(code)
            if isinstance(f, types.FunctionType) and f.__code__ is code]


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:                       # an empty cell
        return _MISSING


def module_guards(module: Module | None, guards: _Guards) -> None:
    """Check that the modules' own attributes hold only guardable values and no hooks, and
    guard the attributes of the user's module classes."""
    for name in _GLOBAL_HOOKS:
        if getattr(_module, name):
            raise NotReplayable("a global module hook is registered")
    if module is None:
        return
    classes = set()
    for sub in module.modules():
        for key, value in sub.__dict__.items():
            if key in _MODULE_INTERNALS or key in ("training", "_attr_version"):
                continue
            if key in _MODULE_HOOKS:
                if value:
                    raise NotReplayable(f"{type(sub).__name__} has a hook")
                continue
            if not _readable(value):
                guard_plain_object(guards, value, f"{type(sub).__name__}.{key}")
        classes.add(type(sub))
    for cls in classes:
        _guard_class(guards, cls)


class ReplayPlan:
    """How to make a call's result from its arguments with the compiled forward alone."""

    def __init__(self, sources, bumps, compiled, live, returned, region, plan, guards,
                 versions):
        self.sources = sources      # per graph input: ('arg', i), ('kwarg', k) or a tensor
        self.bumps = bumps          # (input, count): the in-place writes the graph makes
        self.compiled = compiled
        self.live = live            # per output filling a storage: nbytes, device, ref, geometry
        self.returned = returned    # the result: None, ('one', out) or (type, [out | None])
        self.region = region        # (edge input indices, region outputs as output paths)
        self.plan = plan            # the JointPlan of the compiled backward, or None
        self.guards = guards
        self.versions = versions    # (module.__dict__, its _attr_version) per module

    def holds(self) -> bool:
        for attributes, version in self.versions:
            if attributes.get("_attr_version", 0) != version:
                return False
        return (self.guards.hold() and not _tracers and not overrides.anywhere.modes
                and not any(getattr(_module, name) for name in _GLOBAL_HOOKS))

    def run(self, args: tuple, kwargs: dict):
        inputs = [args[s[1]] if s[0] == "arg" else kwargs[s[1]] if s[0] == "kwarg" else s[1]
                  for s in self.sources]
        in_inputs = {id(t._storage) for t in inputs}
        live = []
        with _disable_current_modes(), exclude_keys(_PYTHON_AND_ABOVE):
            results = self.compiled(*inputs)
            if isinstance(results, Tensor):
                results = (results,)
            for (nbytes, device, ref, geometry), value in zip(self.live, results):
                storage = fresh_storage(nbytes, device)
                _fill(storage, geometry, value, in_inputs)
                live.append((storage, ref, geometry))
        for i, count in self.bumps:      # as the in-place ops' dispatch counts them
            inputs[i]._vc.version += count
        outputs = {}

        def make(out):
            return _output(out, outputs, live)
        kind = self.returned
        result = make(kind[1]) if kind[0] == "one" else kind[0](
            None if out is None else make(out) for out in kind[1])
        if self.plan is not None:
            edge_inputs, region_outputs = self.region
            node = CompiledFunctionBackward(
                self.plan, tuple(gradient_edge(inputs[i]) for i in edge_inputs))
            node._saved = [SavedTensor(inputs[ref[1]]) for ref in self.plan.saved_inputs]
            node._saved += _saved_values(self.plan.saved_refs, live, results)
            node._num_outputs = len(region_outputs)
            for nr, out in enumerate(region_outputs):
                t = make(out)
                t.grad_fn, t._output_nr = node, nr
                t._set_requires_grad(True)
                if t._base is not None:
                    t._grad_fn_version = t._vc.version
        return result


def _output(out, outputs: dict, live: list) -> Tensor:
    """The replayed output `out` = (k, geometry, base): over live[k]'s storage, or a view of
    its base's; made once per call (`outputs`). A function of its own, not a closure that
    calls itself: that cycle would hold every output's memory until the garbage collector
    ran (a compiled 8192x1024 layer_norm kept 32 MiB a call)."""
    t = outputs.get(out)
    if t is None:
        k, geometry, base = out
        if base is None:
            t = Tensor._make(live[k][0], *geometry)
        else:
            source = _output(base, outputs, live)
            t = make_alias(source, geometry[1], geometry[2], geometry[0])
            t._base = source if source._base is None else source._base
        outputs[out] = t
    return t


def make_plan(run, result, args: tuple, kwargs: dict, module, watch: Watch) -> ReplayPlan:
    """The replay plan of a watched call (`run`: what its one flush ran, capture.py
    `LastRun`), or NotReplayable."""
    if watch.reason is not None:
        raise NotReplayable(watch.reason)
    if run.random:
        raise NotReplayable("the graph draws random numbers")
    sources, bumps = [], []
    by_id = {id(t): t for t in (module.parameters() if module is not None else ())}
    if module is not None:
        by_id.update((id(t), t) for t in module.buffers())
    for t in run.inputs:
        source = next((("arg", i) for i, a in enumerate(args) if a is t), None) or next(
            (("kwarg", k) for k, a in kwargs.items() if a is t), None)
        if source is None:
            if id(t) not in by_id:
                raise NotReplayable("a graph input is neither an argument nor a parameter "
                                    "or buffer")
            source = ("tensor", t)
        sources.append(source)
        written = _version(t) - watch.versions[id(t)]
        if written and t._vc is None:
            raise NotReplayable("it writes an inference tensor in place")
        if written:
            bumps.append((len(sources) - 1, written))
    storages = {id(storage): k for k, (storage, _, _) in enumerate(run.live)}

    def path(t):
        """How a result tensor is made from the graph's outputs: (output index, its
        geometry, the path of the tensor it was viewed from, or None)."""
        if t.__class__ is not Tensor or id(t._storage) not in storages:
            raise NotReplayable("the result is not the graph's output")
        k = storages[id(t._storage)]
        geometry = (t._offset, t._shape, t._stride, t.dtype)
        if t._base is None:              # the output, or an alias of it autograd does not
            return (k, geometry, None)   # track as a view (aten._unsafe_view's)
        if t._view_meta is None:
            raise NotReplayable("the result is a view the replay cannot make")
        return (k, geometry, path(t._view_meta[0]))
    if isinstance(result, Tensor):
        returned = ("one", path(result))
        paths = [(result, returned[1])]
    elif type(result) in (tuple, list) and all(r is None or isinstance(r, Tensor)
                                                 for r in result):
        items = [None if r is None else path(r) for r in result]
        returned = (type(result), items)
        paths = [(r, p) for r, p in zip(result, items) if r is not None]
    else:
        raise NotReplayable(f"the result is a {type(result).__name__}")
    if run.eager_backward or (run.plan is None and any(
            r.requires_grad for r, _ in paths)):
        raise NotReplayable("autograd's recorded graph is the backward (no compiled one)")
    region = None
    if run.plan is not None:
        by_tensor = {}
        for r, p in paths:
            t = r
            while p is not None:
                by_tensor.setdefault(id(t), p)
                t, p = (t._view_meta[0] if p[2] is not None else None), p[2]
        outputs = []
        for t in run.region_outputs:
            if id(t) not in by_tensor:
                raise NotReplayable("the compiled backward has an output the result does "
                                    "not hold")
            outputs.append(by_tensor[id(t)])
        if any(r.requires_grad and p not in outputs for r, p in paths):
            raise NotReplayable("a result that requires grad is not the compiled backward's")
        region = (run.edge_inputs, outputs)
    module_guards(module, watch.guards)
    live = [(storage.nbytes(), storage.device, ref, geometry)
            for storage, ref, geometry in run.live]
    return ReplayPlan(sources, bumps, run.compiled, live, returned, region, run.plan,
                      watch.guards, versions(module))


def versions(module) -> list:
    """(attributes, attribute counter) of each of the module's modules (none for a
    function)."""
    return [] if module is None else [(sub.__dict__, sub._attr_version)
                                      for sub in module.modules()]
