"""Defining operators from Python, as torch.library does.

Two levels, as in PyTorch:

* `Library(ns, "DEF" | "FRAGMENT" | "IMPL")` with `.define(schema)`, `.impl(name, fn, key)`
  and `.fallback(fn, key)`, plus the functions `define`, `impl`, `register_fake`,
  `register_kernel` and `register_autograd`;
* `@custom_op("mylib::mysin", mutates_args=())`, which infers the schema from type hints and
  returns a `CustomOpDef` with `.register_fake`, `.register_kernel`, `.register_autograd`,
  `.register_torch_dispatch` and `.register_autocast`.

`register_torch_dispatch(op, cls, rule)` says how one TorchDispatchMode class or tensor
subclass handles an op without changing either: the Python key calls the rule instead of
`cls.__torch_dispatch__`. `register_autocast(op, "cpu", dtype)` makes the op cast its
floating inputs to `dtype` inside an autocast region. A fake impl may call `get_ctx()`.

A defined op is a dispatcher `Operator`, reachable as `glasstorch.ops.<ns>.<name>`
(`.default` for the overload without a name), and dispatches like a built-in op.

    lib = Library("mylib", "DEF")
    lib.define("twice(Tensor x, int n=2) -> Tensor")
    lib.impl("twice", lambda x, n: x * n, "CPU")
    glasstorch.ops.mylib.twice(glasstorch.ones(3), n=3)

How kernels are called: with the schema's arguments in schema order, defaults filled in.
Keyword-only schema arguments are passed by keyword when the kernel declares them
keyword-only or takes **kwargs (as torch.library does), otherwise positionally. A kernel
for a key above the backends registered with `with_keyset=True` first receives a
DispatchKeySet of the keys below its own, so `op.redispatch(keyset, *args)` continues the
call; a fallback receives `(op, *args)`, or `(keyset, op, *args)` with `with_keyset=True`.

Dispatch keys: "CPU", "CUDA", "Meta"; "CompositeExplicitAutograd" (one kernel for every
backend); "CompositeImplicitAutograd" (the default when no key is given): the kernel fills
every backend key and each Autograd<Backend> key whose backend has no kernel of its own, so
the function runs for any tensor and the ops it calls dispatch (and will record autograd)
themselves, as in PyTorch.

Where glasstorch differs from PyTorch, on purpose:
* Kernels registered for "Autograd" keys with `impl` are kept in
  `op.info["autograd_kernels"]` and not run; gradients come from `register_autograd`, whose
  formula (`op.info["autograd_formula"]`, an `AutogradFormula`) becomes the operator's
  Autograd kernel (autograd/custom_op_autograd.py).
* `impl` for an operator that does not exist raises at once, rather than waiting silently for
  a definition that may never come (a typo in the name).
* Registrations last until `Library._destroy()` (or the end of `_scoped_library`), not
  until the Library object is garbage-collected.
* `fallback` serves keys above the backends only: backend kernels are called without the
  operator, so a per-key function for all operators cannot sit there.
* `register_kernel(..., "meta")` raises and points to `register_fake`, where PyTorch
  silently ignores the kernel.
* `get_ctx().new_dynamic_size()` raises DynamicOutputShapeException, as PyTorch's does in a
  FakeTensorMode without a shape environment: glasstorch has no symbolic shapes.
"""
from __future__ import annotations

import collections.abc
import contextlib
import functools
import inspect
import threading
import types
import typing
import warnings
import weakref
from collections import namedtuple

from .._ops import OpOverload, overload_of
from ..core.device import device as _device
from ..core.dtype import dtype as _dtype, float64 as _float64
from ..core.tensor import Tensor
from . import dispatcher
from .dispatcher import FALLTHROUGH, Operator
from .keys import ALIAS_KEYS, BACKEND_KEYS, DispatchKey, DispatchKeySet, local_keys
from .modes import _handling_modes
from .schema import parse_schema

__all__ = ["AutogradFormula", "CustomOpDef", "FakeImplCtx", "Library", "custom_op", "define",
           "fallthrough_kernel", "get_ctx", "impl", "impl_abstract", "infer_schema",
           "register_autocast", "register_autograd", "register_fake", "register_kernel",
           "register_torch_dispatch"]

AutogradFormula = namedtuple("AutogradFormula", "backward setup_context")
AutogradFormula.__doc__ = "A custom op's backward formula, stored for the autograd layer."

_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta",
                "default": "CompositeExplicitAutograd"}
_AUTOGRAD_KEYS = frozenset(("Autograd", "AutogradCPU", "AutogradCUDA", "AutogradMeta"))
_KEY_NAMES = frozenset(k.name for k in DispatchKey) | frozenset(ALIAS_KEYS)
_BACKEND_LIKE = frozenset(k.name for k in BACKEND_KEYS) | {"CompositeExplicitAutograd",
                                                           "CompositeImplicitAutograd"}
_SCHEMA_TYPES = ("Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType",
                 "Device", "Layout", "MemoryFormat", "Generator")
_BUILTIN_NAMESPACES = ("aten",)

_def_libraries: dict = {}    # namespace -> its Library(ns, "DEF")
_python_impls: set = set()   # (qualified name, key) registered through a Library
_keep_alive: list = []       # FRAGMENT libraries made by the function API
_custom_ops: dict = {}       # qualified name -> CustomOpDef


def fallthrough_kernel():
    """Pass as the function of `impl` or `fallback` to make that key fall through."""
    raise NotImplementedError("fallthrough_kernel is a registration marker, never called")


# ---- schemas ---------------------------------------------------------------------------

def _parse(text: str, ns: str):
    """Parse a schema for namespace `ns`; bad schemas raise RuntimeError saying why."""
    if not isinstance(text, str):
        raise TypeError(f"define(): schema must be a str, got {type(text).__name__}")
    head = text.split("(", 1)[0].strip()
    if "::" in head and head.split("::", 1)[0] != ns:
        raise RuntimeError(f"Explicitly provided namespace ({head.split('::', 1)[0]}) in "
                           f"schema string does not match namespace of the library ({ns}): "
                           f"{text!r}")
    qualified = text.strip() if "::" in head else f"{ns}::{text.strip()}"
    try:
        schema = parse_schema(qualified, ns)
    except ValueError as e:
        raise RuntimeError(f"invalid operator schema {text!r}: {e}. A schema looks like "
                           "'name(Tensor x, int n=2, *, float scale=1.0) -> Tensor'") from None
    names = set()
    for kind, args in (("argument", schema.arguments), ("return", schema.returns)):
        for a in args:
            base = a.type.replace("?", "").replace("[]", "")
            if base not in _SCHEMA_TYPES:
                raise RuntimeError(
                    f"unknown type '{base}' for {kind} '{a.name}' in schema {text!r}; schema "
                    f"types are {', '.join(_SCHEMA_TYPES)}, with [] for a list and ? for an "
                    "optional value")
            if kind == "argument":
                if a.name in names:
                    raise RuntimeError(f"argument '{a.name}' appears twice in schema {text!r}")
                names.add(a.name)
    return schema, qualified


def _exists(qualified_name: str) -> bool:
    try:
        dispatcher.find(qualified_name)
    except RuntimeError:
        return False
    return True


def _key(name: str):
    """The dispatcher's name for a key: a DispatchKey, or the alias key's string."""
    return name if name in ALIAS_KEYS else DispatchKey[name]


def _check_key(name: str) -> None:
    if name not in _KEY_NAMES and name not in _AUTOGRAD_KEYS:
        raise RuntimeError(f"could not parse dispatch key: {name}; expected one of "
                           f"{sorted(_KEY_NAMES | _AUTOGRAD_KEYS)}")


# ---- calling kernels -------------------------------------------------------------------

def _kernel_caller(schema, fn, lead: int = 0):
    """`fn` called with the schema's arguments: keyword-only ones by keyword when `fn`
    declares them keyword-only or takes **kwargs, else all positionally. `lead` extra
    leading arguments (a key set) pass through untouched."""
    kw = [a.name for a in schema.arguments if a.kwarg_only]
    if not kw:
        return fn
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    by_keyword = any(p.kind is p.VAR_KEYWORD for p in params.values()) or any(
        n in params and params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in kw)
    if not by_keyword:
        return fn
    first = len(schema.arguments) - len(kw) + lead

    def call(*args):
        return fn(*args[:first], **dict(zip(kw, args[first:])))
    _name_like(call, fn)
    return call


def _name_like(kernel, fn):
    kernel.__qualname__ = getattr(fn, "__qualname__", type(fn).__name__)
    kernel.__module__ = getattr(fn, "__module__", None)
    return kernel


def _adapt(op: Operator, fn, key: str, with_keyset: bool):
    """The dispatcher kernel for a user function registered for `key`."""
    if key in _BACKEND_LIKE:
        if with_keyset:
            raise ValueError(f"impl(): with_keyset=True needs a key above the backends "
                             f"(ADInplaceOrView, Autocast, Python...), not {key}: a backend "
                             "kernel is the bottom of the call and has nothing to redispatch to")
        return _kernel_caller(op.schema, fn)
    call = _kernel_caller(op.schema, fn, lead=1 if with_keyset else 0)
    if with_keyset:
        def kernel(op, ks, *args):
            return call(DispatchKeySet(ks), *args)
    else:
        def kernel(op, ks, *args):
            return call(*args)
    return _name_like(kernel, fn)


def _bump_versions(op, ks, *args):
    """ADInplaceOrView for ops that mutate arguments: run below, then bump their versions."""
    result = op.redispatch(ks, *args)
    for i in op.info["mutated"]:
        arg = args[i]
        for t in (arg if isinstance(arg, (list, tuple)) else (arg,)):
            if isinstance(t, Tensor) and t._vc is not None:
                t._vc.version += 1
    return result


def _meta_placeholder(op: Operator):
    def no_fake_impl(*args):
        raise NotImplementedError(
            f"{op.name}: attempted to run this operator with Meta tensors, but there was no "
            f"fake impl or Meta kernel registered. A fake impl computes the outputs' shapes, "
            f"dtypes and strides without data; add one with "
            f"glasstorch.library.register_fake(\"{op.name}\").")
    return no_fake_impl


def _sync_meta_placeholder(op: Operator) -> None:
    """Library-defined ops raise the "no fake impl" error on meta tensors until some kernel
    (Meta, CompositeExplicitAutograd, CompositeImplicitAutograd) can run there."""
    placeholder = op.info.get("meta_placeholder")
    if placeholder is None:
        return
    meta = op.kernels.get(DispatchKey.Meta)
    covered = (meta is not None and meta is not placeholder) or any(
        k in op.kernels for k in ("CompositeExplicitAutograd", "CompositeImplicitAutograd"))
    if covered and meta is placeholder:
        del op.kernels[DispatchKey.Meta]
        op._recompute()
    elif not covered and meta is None:
        op.register(DispatchKey.Meta, placeholder)


# ---- Library ---------------------------------------------------------------------------

class Library:
    """A set of registrations for one namespace (torch.library.Library).

    kind "DEF" creates the namespace (one per namespace), "FRAGMENT" adds definitions to
    it, "IMPL" only registers kernels. `dispatch_key` is the default key for `impl`.
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if not isinstance(ns, str) or not (ns.isidentifier() or ns == "_"):
            raise ValueError(f"a library namespace must be an identifier, got {ns!r}")
        if kind == "DEF" and (ns in _def_libraries or ns in _BUILTIN_NAMESPACES):
            raise RuntimeError(
                f"Only a single Library('{ns}', 'DEF') can define the namespace {ns}; put "
                f"all its definitions there, or use Library('{ns}', 'FRAGMENT') to add "
                f"definitions and Library('{ns}', 'IMPL') to register kernels.")
        if dispatch_key:
            _check_key(dispatch_key)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._op_defs: list = []
        self._undo: list = []
        # As PyTorch's: a library nothing holds any more takes its registrations with it
        # (keep it in a variable for as long as they should last); not at exit
        self._undo_all = weakref.finalize(self, _undo_library, self._undo, self._op_defs)
        self._undo_all.atexit = False
        if kind == "DEF":
            _def_libraries[ns] = self

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Define an operator from a schema, 'name.overload(Tensor x, ...) -> Tensor'.
        Returns its name (without the overload, as PyTorch does)."""
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        if self.kind == "IMPL":
            raise RuntimeError(
                f"def(\"{str(schema).split('(')[0]}\"): Cannot define an operator inside of "
                f"a Library('{self.ns}', 'IMPL'); define it in the namespace's 'DEF' or a "
                "'FRAGMENT' library.")
        parsed, qualified = _parse(schema, self.ns)
        if _exists(parsed.qualified_name):
            raise RuntimeError(
                f"Tried to register an operator ({qualified}) with the same name and "
                "overload name multiple times. Each overload's schema should only be "
                "registered with a single call to define().")
        op = dispatcher.define(qualified, namespace=self.ns, tags=tags)
        op.info.update(library=self, mutated=tuple(
            i for i, a in enumerate(op.schema.arguments) if a.is_mutated))
        if op.info["mutated"]:
            op.register(DispatchKey.ADInplaceOrView, _bump_versions)
        op.info["meta_placeholder"] = _meta_placeholder(op)
        _sync_meta_placeholder(op)
        self._op_defs.append(op.name)
        return parsed.name

    def _op(self, op_name) -> Operator:
        if isinstance(op_name, Operator):
            return op_name
        if isinstance(op_name, CustomOpDef):
            return op_name._opoverload
        if not isinstance(op_name, str):
            raise TypeError(f"expected an operator name or Operator, got "
                            f"{type(op_name).__name__}")
        qualified = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        try:
            return dispatcher.find(qualified)
        except RuntimeError:
            raise RuntimeError(
                f"{qualified}: no operator with this name is defined; define it first "
                "(Library.define or glasstorch.library.define)") from None

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset: bool = False,
             allow_override: bool = True) -> None:
        """Register `fn` as `op_name`'s kernel for `dispatch_key` (default: the library's
        key, else CompositeImplicitAutograd). Pass `fallthrough_kernel` to skip the key."""
        if not callable(fn):
            raise TypeError(
                f"Input function is required to be a callable but found type {type(fn)}")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        _check_key(key)
        op = self._op(op_name)
        if (op.name, key) in _python_impls and not allow_override:
            raise RuntimeError(
                f"This is not allowed since there's already a kernel registered from python "
                f"overriding {op.name}'s behavior for {key} dispatch key and {self.ns} "
                "namespace.")
        if key in _AUTOGRAD_KEYS:
            self._store(op.info.setdefault("autograd_kernels", {}), key, (fn, with_keyset))
        else:
            if key == "Meta" and "CompositeImplicitAutograd" in op.kernels:
                raise RuntimeError(
                    f"{op.name} has a CompositeImplicitAutograd kernel, so it needs no Meta "
                    "kernel: it decomposes into ops that have their own.")
            kernel = FALLTHROUGH if fn is fallthrough_kernel else _adapt(op, fn, key,
                                                                          with_keyset)
            self._set_kernel(op, key, kernel)
        _python_impls.add((op.name, key))

    def _store(self, table: dict, key, value) -> None:
        previous = table.get(key)
        table[key] = value

        def undo():
            if table.get(key) is value:
                if previous is None:
                    del table[key]
                else:
                    table[key] = previous
        self._undo.append(undo)

    def _register_torch_dispatch_rule(self, op_name, torch_dispatch_class, fn) -> None:
        """Let `fn` handle `op_name` for exactly `torch_dispatch_class` (a TorchDispatchMode
        or tensor subclass), in place of its __torch_dispatch__; see modes.py."""
        if not isinstance(torch_dispatch_class, type):
            raise TypeError(f"register_torch_dispatch(): expected a TorchDispatchMode or "
                            f"Tensor subclass, got {torch_dispatch_class!r}")
        if not callable(fn):
            raise TypeError(f"register_torch_dispatch(): expected a function, got "
                            f"{type(fn).__name__}")
        op = self._op(op_name)
        rules = op.info.setdefault("torch_dispatch_rules", {})
        if torch_dispatch_class in rules:
            raise RuntimeError(f"{torch_dispatch_class} already has a `__torch_dispatch__` "
                               f"rule registered for {op.name}")
        self._store(rules, torch_dispatch_class, fn)

    def _set_kernel(self, op: Operator, key: str, kernel) -> None:
        k = _key(key)
        previous = op.kernels.get(k)
        if previous is op.info.get("meta_placeholder"):
            previous = None
        if previous is not None:
            warnings.warn(
                f"Overriding a previously registered kernel for the same operator and the "
                f"same dispatch key\n  operator: {op.schema}\n  dispatch key: {key}",
                UserWarning, stacklevel=3)
        op.register(k, kernel)
        _sync_meta_placeholder(op)

        def undo():
            if op.kernels.get(k) is kernel:
                if previous is None:
                    del op.kernels[k]
                    op._recompute()
                else:
                    op.register(k, previous)
                _sync_meta_placeholder(op)
        self._undo.append(undo)

    def fallback(self, fn, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """Register `fn(op, *args)` for `dispatch_key` for every operator without a kernel
        of its own there (library namespace "_" only)."""
        key = dispatch_key or self.dispatch_key
        if self.ns != "_":
            raise RuntimeError(f"Fallback can only be registered using library fragment on "
                               f'the global namespace "_" but it is {self.ns}')
        if not key:
            raise ValueError("fallback(): a dispatch key is required")
        _check_key(key)
        keys = ALIAS_KEYS[key] if key in ALIAS_KEYS else (DispatchKey[key],)
        if any(k in BACKEND_KEYS for k in keys):
            raise RuntimeError(
                f"fallback(): glasstorch calls backend kernels (CPU, CUDA, Meta) without the "
                f"operator, so a fallback can only serve keys above them, not {key}")
        if fn is fallthrough_kernel:
            kernel = FALLTHROUGH
        elif with_keyset:
            def kernel(op, ks, *args):
                return fn(DispatchKeySet(ks), op, *args)
        else:
            def kernel(op, ks, *args):
                return fn(op, *args)
        if kernel is not FALLTHROUGH:
            _name_like(kernel, fn)
        for k in keys:
            previous = dispatcher._fallbacks.get(k)
            dispatcher.register_fallback(k, kernel)

            def undo(k=k, previous=previous):
                if dispatcher._fallbacks.get(k) is kernel:
                    dispatcher.register_fallback(k, previous)
            self._undo.append(undo)

    def _destroy(self) -> None:
        """Undo every registration this library made and forget the ops it defined."""
        _undo_library(self._undo, self._op_defs)
        if _def_libraries.get(self.ns) is self:
            del _def_libraries[self.ns]


def _undo_library(undo: list, op_defs: list) -> None:
    """Undo a library's registrations (`undo`, in reverse) and forget the ops it defined."""
    for step in reversed(undo):
        step()
    undo.clear()
    for name in op_defs:
        dispatcher.undefine(name)
        _custom_ops.pop(name, None)
        for entry in [e for e in _python_impls if e[0] == name]:
            _python_impls.discard(entry)
    op_defs.clear()


@contextlib.contextmanager
def _scoped_library(ns: str, kind: str, dispatch_key: str = ""):
    """A Library whose registrations are undone at the end of the block (for tests)."""
    lib = Library(ns, kind, dispatch_key)
    try:
        yield lib
    finally:
        lib._destroy()


# ---- the function API ------------------------------------------------------------------

def _split_qualname(qualname: str, api: str):
    if not isinstance(qualname, str) or "::" not in qualname:
        raise ValueError(f"{api}(): expected a qualified operator name like 'mylib::foo', "
                         f"got {qualname!r}")
    ns, name = qualname.split("::", 1)
    if not ns.isidentifier() or not name:
        raise ValueError(f"{api}(): expected a qualified operator name like 'mylib::foo', "
                         f"got {qualname!r}")
    return ns, name


def _library_for(qualname: str, lib, api: str) -> Library:
    if lib is not None:
        return lib
    ns, _ = _split_qualname(qualname, api)
    use = Library(ns, "FRAGMENT")
    _keep_alive.append(use)
    return use


def _resolve(op, api: str):
    """A CustomOpDef, or the qualified name of the operator `op` names."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, OpOverload):
        op = op._op
    if isinstance(op, Operator):
        op = op.name
    elif hasattr(op, "_namespace") and hasattr(op, "_name") and not isinstance(op, str):
        op = f"{op._namespace}::{op._name}"          # glasstorch.ops.ns.name
    if not isinstance(op, str):
        raise ValueError(f"{api}({op!r}): got unexpected type for op: {type(op)}")
    _split_qualname(op, api)
    return _custom_ops.get(op, op)


def _device_keys(types_, api: str) -> list:
    if types_ is None:
        return ["CompositeExplicitAutograd"]
    out = []
    for t in ([types_] if isinstance(types_, str) else list(types_)):
        if t in _KEY_NAMES or t in _AUTOGRAD_KEYS:
            out.append(t)
        elif isinstance(t, str) and t.lower() in _DEVICE_KEYS:
            out.append(_DEVICE_KEYS[t.lower()])
        else:
            raise ValueError(f"{api}(): unknown device type or dispatch key {t!r}; expected "
                             f"one of {sorted(_DEVICE_KEYS)} or a dispatch key name")
    return out


def define(qualname, schema, *, lib=None, tags=()):
    """Define an operator: `define("mylib::sin", "(Tensor x) -> Tensor")`.

    The old form `define(lib, "sin(Tensor x) -> Tensor")` returns a decorator that defines
    the op and registers the decorated function as its CompositeImplicitAutograd kernel.
    """
    if isinstance(qualname, Library):
        library = qualname

        def wrap(f):
            library.impl(library.define(schema), f)
            return f
        return wrap
    _split_qualname(qualname, "define")
    if not isinstance(schema, str) or not schema.lstrip().startswith("("):
        raise ValueError(f'define(qualname, schema, ...): expected schema to look like e.g. '
                         f'"(Tensor x) -> Tensor" but got "{schema}"')
    ns, name = qualname.split("::", 1)
    _library_for(qualname, lib, "define").define(name + schema.strip(), tags=tags)


def impl(qualname, types=None, func=None, *, lib=None):
    """Register `func` for device types ("cpu", "cuda", "meta", "default") or dispatch
    keys; usable as a decorator. The old form `impl(lib, name, key)` returns a decorator."""
    if isinstance(qualname, Library):
        library, name, key = qualname, types, func or ""

        def wrap(f):
            library.impl(name, f, key)
            return f
        return wrap
    if types is None:
        raise TypeError("impl() missing required argument: 'types'")
    keys = _device_keys(types, "impl")

    def register(f):
        use = _library_for(qualname, lib, "impl")
        for key in keys:
            use.impl(qualname, f, key)
        return f
    return register if func is None else register(func)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """Register `func` as `op`'s kernel for device types (None: every device)."""
    target = _resolve(op, "register_kernel")
    if isinstance(target, CustomOpDef):
        return target.register_kernel(device_types, func)
    if device_types is None:
        device_types = "CompositeExplicitAutograd"
    return impl(target, device_types, func, lib=lib)


def register_fake(op, func=None, /, *, lib=None, allow_override: bool = True):
    """Register `op`'s fake impl: given meta tensors (shapes, dtypes, strides, no data), it
    returns meta tensors describing the outputs. It runs whenever the op meets meta tensors."""
    target = _resolve(op, "register_fake")
    if isinstance(target, CustomOpDef):
        return target.register_fake if func is None else target.register_fake(func)

    def register(f):
        if not callable(f):
            raise TypeError(f"register_fake(): expected a function, got {type(f).__name__}")
        use = _library_for(target, lib, "register_fake")
        operator = use._op(target)

        @functools.wraps(f)
        def fake_impl(*args, **kwargs):
            return _run_fake_impl(operator, f, args, kwargs)
        use.impl(target, fake_impl, "Meta", allow_override=allow_override)
        return f
    return register if func is None else register(func)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """The old name of `register_fake` (deprecated since PyTorch 2.4)."""
    warnings.warn("`glasstorch.library.impl_abstract` is the old name of "
                  "`glasstorch.library.register_fake` and will be removed; call "
                  "register_fake instead.", FutureWarning, stacklevel=1 + _stacklevel)
    return register_fake(qualname, func, lib=lib)


# ---- the fake-impl context -------------------------------------------------------------

class _FakeImplState(threading.local):
    def __init__(self):
        self.ops: list = []     # the operator of each fake impl running in this thread


_fake_impl_state = _FakeImplState()


def _run_fake_impl(op: Operator, fn, args, kwargs):
    """Run a fake impl so that `get_ctx()` inside it knows its operator."""
    _fake_impl_state.ops.append(op)
    try:
        return fn(*args, **kwargs)
    finally:
        _fake_impl_state.ops.pop()


class FakeImplCtx:
    """What a fake impl running under a FakeTensorMode gets from `get_ctx()`."""

    def __init__(self, _fake_mode, _op):
        self._fake_mode = _fake_mode
        self._shape_env = _fake_mode.shape_env
        self._op = _op

    def new_dynamic_size(self, *, min=0, max=None):
        """A size read from the data (nonzero's row count). It needs a symbolic size, which
        glasstorch does not have, so this raises DynamicOutputShapeException, as PyTorch
        does in a FakeTensorMode without a shape environment."""
        from .._subclasses.fake_tensor import DynamicOutputShapeException
        if min < 0:
            raise ValueError(f"ctx.new_dynamic_size(min={min}, ...): expected min to be "
                             "greater than or equal to 0: sizes are never negative.")
        raise DynamicOutputShapeException(self._op)


def get_ctx():
    """The context of the fake impl now running (None outside one). Under a FakeTensorMode
    it is a `FakeImplCtx`; with plain meta tensors it raises, as PyTorch's does: meta
    tensors cannot describe a data-dependent output."""
    if not _fake_impl_state.ops:
        return None
    from .._subclasses.fake_tensor import FakeTensorMode
    op = _fake_impl_state.ops[-1]
    mode = next((m for m in reversed(_handling_modes()) if isinstance(m, FakeTensorMode)),
                None)
    if mode is None:
        raise RuntimeError(
            f"{op.name}: its fake impl called glasstorch.library.get_ctx() while running on "
            "meta tensors. get_ctx() is for outputs whose shape depends on the data, which "
            "meta tensors cannot describe but FakeTensors (under a FakeTensorMode) can; run "
            "the op under FakeTensorMode, or do not call get_ctx() if the output shape "
            "follows from the input shapes.")
    return FakeImplCtx(mode, overload_of(op))


# ---- rules for modes, subclasses and autocast ------------------------------------------

def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """Register how `torch_dispatch_class` (a TorchDispatchMode or a tensor subclass with
    __torch_dispatch__) handles `op`, without changing either: the Python key calls
    `func(mode_or_class, func, types, args, kwargs)` in place of its __torch_dispatch__.
    The rule applies to exactly that class, not to its subclasses; usable as a decorator."""
    target = _resolve(op, "register_torch_dispatch")
    if isinstance(target, CustomOpDef):
        return target.register_torch_dispatch(torch_dispatch_class, func)

    def register(f):
        use = _library_for(target, lib, "register_torch_dispatch")
        use._register_torch_dispatch_rule(target, torch_dispatch_class, f)
        return f
    return register if func is None else register(func)


_AUTOCAST_KEYS = {"cpu": "AutocastCPU", "cuda": "AutocastCUDA"}


def _check_autocast_device(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _AUTOCAST_KEYS:
        raise ValueError(f"Device type '{device_type}' does not support autocast.")
    return _AUTOCAST_KEYS[device_type]


def _autocast_cast(value, device_type: str, dtype):
    """`value` with its floating tensors on `device_type` (float64 excepted) cast to
    `dtype`, inside lists and tuples too."""
    if isinstance(value, Tensor):
        if (value.is_floating_point() and value.device.type == device_type
                and value.dtype is not _float64):
            return value.to(dtype)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_autocast_cast(v, device_type, dtype) for v in value)
    return value


def _autocast_rule(op: Operator, device_type: str, cast_inputs):
    """The Autocast<Device> kernel of `register_autocast`: cast with that key off, then
    continue below it. `cast_inputs` is a dtype, or a function giving the current one."""
    bit = 1 << DispatchKey[_AUTOCAST_KEYS[device_type]]

    def kernel(keyset, *args):
        saved = local_keys.excluded
        local_keys.excluded = saved | bit
        try:
            dtype = cast_inputs() if callable(cast_inputs) else cast_inputs
            return op.redispatch(keyset, *(_autocast_cast(a, device_type, dtype)
                                           for a in args))
        finally:
            local_keys.excluded = saved
    kernel.__qualname__ = f"autocast_{device_type}_custom_op"
    return kernel


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Inside an autocast region for `device_type`, `op` casts its floating inputs on that
    device (not float64) to `cast_inputs` and runs with autocast off."""
    target = _resolve(op, "register_autocast")
    key = _check_autocast_device(device_type)
    if isinstance(target, CustomOpDef):
        return target.register_autocast(device_type, cast_inputs)
    _check_autocast_dtype(cast_inputs)
    use = _library_for(target, lib, "register_autocast")
    operator = use._op(target)
    use.impl(target, _autocast_rule(operator, device_type, cast_inputs), key,
             with_keyset=True)


def _check_autocast_dtype(cast_inputs) -> None:
    if not isinstance(cast_inputs, _dtype):
        raise TypeError(f"register_autocast(): cast_inputs must be a dtype, got "
                        f"{type(cast_inputs).__name__}")


def register_autograd(op, backward, /, *, setup_context=None, lib=None) -> None:
    """`op`'s gradient: `setup_context(ctx, inputs, output)` saves what `backward(ctx,
    *grads)` needs, which returns one gradient (or None) per input."""
    target = _resolve(op, "register_autograd")
    if isinstance(target, CustomOpDef):
        target.register_autograd(backward, setup_context=setup_context)
        return
    operator = dispatcher.find(target)
    _check_autograd_formula(operator, f"<{operator.name}>", backward, setup_context)
    formula = AutogradFormula(backward, setup_context)
    if lib is not None:
        lib._store(operator.info, "autograd_formula", formula)
    else:
        operator.info["autograd_formula"] = formula
    _install_autograd(operator)


def _install_autograd(operator: Operator) -> None:
    from ..autograd.custom_op_autograd import install
    install(operator)


def _check_autograd_formula(op: Operator, who: str, backward, setup_context) -> None:
    if not callable(backward):
        raise TypeError(f"register_autograd(): backward must be callable, got "
                        f"{type(backward).__name__}")
    if setup_context is not None and not callable(setup_context):
        raise TypeError(f"register_autograd(): setup_context must be callable or None, got "
                        f"{type(setup_context).__name__}")
    if any(a.alias is not None for a in op.schema.arguments):
        raise RuntimeError(
            f"Cannot register autograd formula for non-functional operator {who} with schema "
            f"{op.schema}. Please create a functional operator and register an autograd "
            "formula for that.")


# ---- schema inference ------------------------------------------------------------------

_SCALAR_UNION = frozenset((int, float, bool))
_BASE_TYPES = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
               _dtype: "ScalarType", _device: "Device"}
_LIST_ORIGINS = (list, collections.abc.Sequence)
_RETURN_TYPES = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool"}


def _union_members(hint):
    origin = typing.get_origin(hint)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return typing.get_args(hint)
    return None


def _base_schema_type(hint):
    if hint in _BASE_TYPES:
        return _BASE_TYPES[hint]
    members = _union_members(hint)
    if members is not None and frozenset(members) == _SCALAR_UNION:
        return "Scalar"
    return None


def _param_schema_type(hint):
    """Schema type text for a parameter annotation, or None if it has none."""
    base = _base_schema_type(hint)
    if base is not None:
        return base
    members = _union_members(hint)
    if members is not None and type(None) in members:
        rest = tuple(m for m in members if m is not type(None))
        inner = rest[0] if len(rest) == 1 else (
            typing.Union[rest] if frozenset(rest) == _SCALAR_UNION else None)
        if inner is None:
            return None
        text = _param_schema_type(inner)
        if text is None or text.endswith("?") or text == "Tensor[]":
            return None
        return text + "?"
    if typing.get_origin(hint) in _LIST_ORIGINS:
        args = typing.get_args(hint)
        elem = _base_schema_type(args[0]) if len(args) == 1 else None
        if elem in ("Tensor", "SymInt", "float", "bool", "Scalar"):
            return elem + "[]"
    return None


def _default_text(value):
    if value is None or isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, str):
        return f'"{value}"'
    return None


def infer_schema(prototype_function, /, *, mutates_args, op_name=None) -> str:
    """The schema of a function from its type hints: Tensor, int, float, bool, str,
    int | float | bool (Scalar), dtype, device, list[...] and Optional[...] of those;
    returns Tensor, list[Tensor], int, float, bool, None or a tuple of them.

        def f(x: Tensor, n: int = 2) -> Tensor: ...     # (Tensor x, SymInt n=2) -> Tensor
    """
    sig = inspect.signature(prototype_function)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    try:
        hints = typing.get_type_hints(prototype_function)
    except Exception as e:  # an annotation that names nothing importable
        error(f"Unsupported type annotation ({type(e).__name__}: {e}).")
    unknown = mutates_args == "unknown"
    if isinstance(mutates_args, str) and not unknown:
        raise ValueError("mutates_args must either be a sequence of the names of the arguments "
                         "that are mutated or the string 'unknown'.")
    mutated = () if unknown else tuple(mutates_args)
    params, seen, kw_only = [], set(), False
    for idx, (name, p) in enumerate(sig.parameters.items()):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if p.kind is p.KEYWORD_ONLY and not kw_only:
            params.append("*")
            kw_only = True
        if name not in hints:
            error(f"Parameter {name} must have a type annotation.")
        text = _param_schema_type(hints[name])
        if text is None:
            error(f"Parameter {name} has unsupported type {hints[name]}. The valid types are "
                  "Tensor, int, float, bool, str, int | float | bool, dtype, device, and "
                  "list[...] or Optional[...] of them.")
        if unknown and text.startswith("Tensor") or name in mutated:
            if not text.startswith("Tensor"):
                error(f"Parameter {name} is in mutable_args but only Tensors or collections "
                      "of Tensors can be mutated")
            text = f"Tensor(a{idx}!){text[len('Tensor'):]}"
        seen.add(name)
        if p.default is p.empty:
            params.append(f"{text} {name}")
        else:
            default = _default_text(p.default)
            if default is None:
                error(f"Parameter {name} has an unsupported default value type "
                      f"{type(p.default)}.")
            params.append(f"{text} {name}={default}")
    missing = set(mutated) - seen
    if missing:
        error(f"{missing} in mutates_args were not found in the custom op's signature. "
              "mutates_args should contain the names of all args that the custom op mutates, "
              "or just the string 'unknown' if you don't know.")
    ret = _return_schema(hints.get("return", sig.return_annotation), error)
    return f"{op_name or ''}({', '.join(params)}) -> {ret}"


def _return_schema(hint, error) -> str:
    if hint is None or hint is type(None):
        return "()"
    if hint is inspect.Signature.empty:
        error("No return type annotation was provided. Please add one.")
    one = _return_one(hint)
    if one is not None:
        return one
    if typing.get_origin(hint) is tuple:
        parts = [_return_one(h) for h in typing.get_args(hint)]
        if parts and None not in parts:
            return f"({', '.join(parts)})"
    error(f"Return has unsupported type {hint}. The valid types are Tensor, list[Tensor], "
          "int, float, bool, int | float | bool, None, and tuples of them.")


def _return_one(hint):
    if hint in _RETURN_TYPES:
        return _RETURN_TYPES[hint]
    if typing.get_origin(hint) in _LIST_ORIGINS and typing.get_args(hint) == (Tensor,):
        return "Tensor[]"
    members = _union_members(hint)
    if members is not None and frozenset(members) == _SCALAR_UNION:
        return "Scalar"
    return None


# ---- custom_op -------------------------------------------------------------------------

def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None,
              tags=None):
    """Turn a Python function into an operator (torch.library.custom_op).

        @glasstorch.library.custom_op("mylib::mysin", mutates_args=())
        def mysin(x: Tensor) -> Tensor:
            return glasstorch.from_numpy(np.sin(x.numpy()))

    The schema comes from the type hints (or `schema=`); the function is the kernel for
    `device_types` (None: every device but meta, which needs `register_fake`). Arguments
    named in `mutates_args` are marked `Tensor(a!)` and their version counters are bumped.
    Defining a custom op again under the same name replaces the old one.
    """
    ns, opname = _split_qualname(name, "custom_op")

    def inner(f) -> CustomOpDef:
        if schema is None:
            text = infer_schema(f, mutates_args=mutates_args)
        else:
            text = schema
        result = CustomOpDef(ns, opname, text, f, tags)
        if schema is not None and mutates_args != "unknown":
            declared = {a.name for a in result._opoverload.schema.arguments if a.is_mutated}
            if declared != set(mutates_args):
                result._lib._destroy()
                raise ValueError(
                    f"Attempted to create a custom op with `mutates_args={mutates_args}` and "
                    f"`schema={schema}`. The schema suggests that the op mutates {declared} "
                    "which is different from what was provided to us in `mutates_args`. "
                    "Please make these consistent.")
        result.register_kernel(device_types)(f)
        return result
    return inner if fn is None else inner(fn)


class CustomOpDef:
    """A Python function made an operator by `custom_op`: call it like the function; it
    dispatches as `glasstorch.ops.<ns>.<name>` does."""

    def __init__(self, namespace: str, name: str, schema: str, fn, tags=None):
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._backend_fns: dict = {}
        self._backend_kernels: dict = {}
        self._abstract_fn = None
        self._backward_fn = self._setup_context_fn = None
        self._torch_dispatch_fns: dict = {}
        self._autocast_dtypes: dict = {}
        old = _custom_ops.get(self._qualname)
        if old is not None:
            old._lib._destroy()
        self._lib = Library(namespace, "FRAGMENT")
        self._lib.define(f"{name}{schema}", tags=tuple(tags or ()))
        self._opoverload = dispatcher.find(self._qualname)
        op_schema = self._opoverload.schema
        if any(a.kwarg_only and a.is_tensor for a in op_schema.arguments):
            self._lib._destroy()
            raise NotImplementedError(f"custom_op with kwarg-only Tensor args. Please make "
                                      f"your tensors not kwarg-only. Got: {name}{schema}")
        self._opoverload.info["custom_op"] = self
        self._lib.impl(name, self._fake_kernel(), "Meta")
        functools.update_wrapper(self, fn, updated=())
        _custom_ops[self._qualname] = self

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    def _call(self, fn, args):
        """`fn` with the schema's keyword-only arguments passed by keyword."""
        schema = self._opoverload.schema
        kw = [a.name for a in schema.arguments if a.kwarg_only]
        if not kw:
            return fn(*args)
        first = len(args) - len(kw)
        return fn(*args[:first], **dict(zip(kw, args[first:])))

    def register_kernel(self, device_types, fn=None, /):
        """Register `fn` as the kernel for device types ("cpu", "cuda"; None: every device);
        usable as a decorator."""
        keys = []
        for dt in ([device_types] if device_types is None or isinstance(device_types, str)
                   else list(device_types)):
            if dt is not None and str(dt).lower() == "meta":
                raise ValueError(f"{self}: a meta kernel is a fake impl; register it with "
                                 f"{self._name}.register_fake")
            if dt is not None and str(dt).lower() not in ("cpu", "cuda"):
                raise ValueError(f"{self}.register_kernel(): unknown device type {dt!r}; "
                                 "expected 'cpu', 'cuda' or None (every device)")
            keys.append((None if dt is None else str(dt).lower()))

        def inner(f):
            for dt in keys:
                self._backend_fns[dt] = f
                if dt not in self._backend_kernels:
                    kernel = self._backend_kernel(dt)
                    self._backend_kernels[dt] = kernel
                    self._lib.impl(self._name, kernel,
                                   "CompositeExplicitAutograd" if dt is None else
                                   _DEVICE_KEYS[dt])
                _name_like(self._backend_kernels[dt], f)
            return f
        return inner if fn is None else inner(fn)

    def _backend_kernel(self, device_type):
        schema = self._opoverload.schema
        functional = not any(a.alias is not None for a in schema.arguments)

        def kernel(*args):
            result = self._call(self._backend_fns[device_type], args)
            if functional:
                _check_no_alias(self, args, result)
            return result
        return kernel

    def _fake_kernel(self):
        def fake(*args):
            if self._abstract_fn is None:
                if not self._opoverload.schema.returns:
                    return None            # nothing to describe: the trivial fake impl
                raise RuntimeError(
                    f"There was no fake impl registered for {self}. A fake impl says what "
                    "the outputs look like (shape, dtype, strides) without computing them; "
                    "it is what runs on meta tensors. Please use "
                    f"`{getattr(self._init_fn, '__name__', self._name)}.register_fake` to add "
                    "a fake impl.")
            return _run_fake_impl(self._opoverload, self._call, (self._abstract_fn, args), {})
        fake.__qualname__ = f"CustomOpDef({self._qualname}).fake_impl"
        return fake

    def register_fake(self, fn, /):
        """Register the fake impl: from meta tensors, return meta tensors shaped like the
        outputs (e.g. `glasstorch.empty_like(x)`); usable as a decorator."""
        if not callable(fn):
            raise TypeError(f"register_fake(): expected a function, got {type(fn).__name__}")
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None) -> None:
        """The op's gradient: `setup_context(ctx, inputs, output)` saves what
        `backward(ctx, *grads)` needs, which returns one gradient (or None) per input."""
        _check_autograd_formula(self._opoverload, str(self), backward, setup_context)
        self._backward_fn, self._setup_context_fn = backward, setup_context
        self._opoverload.info["autograd_formula"] = AutogradFormula(backward, setup_context)
        _install_autograd(self._opoverload)


    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        """Register how `torch_dispatch_class` handles this op (see
        glasstorch.library.register_torch_dispatch); registering again replaces the rule."""
        def register(f):
            if not callable(f):
                raise TypeError(f"register_torch_dispatch(): expected a function, got "
                                f"{type(f).__name__}")
            if torch_dispatch_class not in self._torch_dispatch_fns:
                def rule(*args, **kwargs):
                    return self._torch_dispatch_fns[torch_dispatch_class](*args, **kwargs)
                self._lib._register_torch_dispatch_rule(self._name, torch_dispatch_class,
                                                        rule)
            self._torch_dispatch_fns[torch_dispatch_class] = f
            return f
        return register if fn is None else register(fn)

    def register_autocast(self, device_type, cast_inputs):
        """Inside an autocast region for `device_type`, cast the floating inputs on that
        device to `cast_inputs` (see glasstorch.library.register_autocast)."""
        key = _check_autocast_device(device_type)
        _check_autocast_dtype(cast_inputs)
        first = device_type not in self._autocast_dtypes
        self._autocast_dtypes[device_type] = cast_inputs
        if first:
            self._lib.impl(self._name, _autocast_rule(
                self._opoverload, device_type, lambda: self._autocast_dtypes[device_type]),
                key, with_keyset=True)


def _tensors(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, Tensor))


def _check_no_alias(opdef: CustomOpDef, args, result) -> None:
    """A functional custom op's outputs must be new tensors, sharing no storage with its
    inputs or with each other (autograd and compilers rely on it)."""
    storages = {id(t._storage) for t in _tensors(args)}
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    for t in _tensors(outputs):
        if id(t._storage) in storages:
            module = getattr(inspect.getmodule(opdef._init_fn), "__name__", "???")
            raise RuntimeError(
                f"{opdef._name} (with implementation in {module}): The output of this custom "
                "operator (1) must not also be an input to this custom operator and (2) may "
                "not alias any inputs to this custom operator or other returns. The most "
                "common way to trigger this error is if we have y = custom_op(x) and y and x "
                "are the same Tensor. Please instead return a clone of the offending output "
                "tensor(s) (e.g. return x.clone()) or refactor the custom operator to not "
                "return y.")
        storages.add(id(t._storage))
