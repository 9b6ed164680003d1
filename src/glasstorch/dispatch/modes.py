"""Dispatch modes (`torch.utils._python_dispatch.TorchDispatchMode`) and the Python key.

A mode is an object whose `__torch_dispatch__(func, types, args, kwargs)` receives every
operator call the thread makes while the mode is on the stack. The stack lives per thread.
While it is not empty the thread's include set holds the Python key, which sits just above
the backends: below Autograd, ADInplaceOrView and Autocast, so a mode sees the calls those
layers make (the backward pass's ops, a composite op's decomposition), as in PyTorch.

The Python key's kernel pops the top mode for the duration of its handler, so a call the
handler makes goes to the mode below it, or, when none is left, to the `__torch_dispatch__`
of the arguments' tensor subclasses (a subclass that defines it carries the Python key in its
key set), or to the backend. Keys above
Python are excluded meanwhile: autograd has already recorded the call on its way down.
`func` is the op's OpOverload; `args` and `kwargs` are split as PyTorch splits them
(keyword-only arguments by name; arguments left at their defaults omitted).

A rule registered with `glasstorch.library.register_torch_dispatch(op, cls, rule)` (kept in
`op.info["torch_dispatch_rules"]`, by class) is called instead of `cls.__torch_dispatch__`
when the mode's class, or the subclass's, is exactly `cls`: `rule(mode, func, types, args,
kwargs)`, or `rule(subclass, ...)`.
"""
from __future__ import annotations

import contextlib
import numbers
import threading

from .. import _ops
from ..core.tensor import Tensor
from . import dispatcher
from .keys import ALL_MASK, DispatchKey, local_keys
from .schema import _MISSING

_PYTHON = 1 << DispatchKey.Python
_ABOVE_PYTHON = ALL_MASK & ~((_PYTHON << 1) - 1)


class _ModeStack(threading.local):
    def __init__(self):
        self.modes: list = []
        # each running handler's (mode (None: a subclass's handler), the exclude set outside)
        self.handling: list = []


_stack = _ModeStack()


def _sync_python_key() -> None:
    """The Python key is on in this thread exactly while some mode is on the stack."""
    if _stack.modes:
        local_keys.included |= _PYTHON
    else:
        local_keys.included &= ~_PYTHON


class TorchDispatchMode:
    """Subclass and define `__torch_dispatch__(self, func, types, args=(), kwargs=None)`;
    `with MyMode():` puts it on the thread's mode stack."""

    def __init__(self, _dispatch_key=None):
        if _dispatch_key is not None:
            raise NotImplementedError("TorchDispatchMode(_dispatch_key=...): glasstorch "
                                      "modes always run at the Python key")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls) -> bool:
        return False


def _push_mode(mode) -> None:
    _stack.modes.append(mode)
    _sync_python_key()


def _pop_mode(k=None):
    """Remove and return the top mode (`k` must be None: one stack, no per-key modes)."""
    if k is not None:
        raise NotImplementedError("_pop_mode(k): glasstorch has one mode stack")
    if not _stack.modes:
        raise RuntimeError("trying to pop from empty mode stack")
    mode = _stack.modes.pop()
    _sync_python_key()
    return mode


def _get_current_dispatch_mode():
    """The mode a call would reach now (the top of the stack), or None."""
    return _stack.modes[-1] if _stack.modes else None


def _get_current_dispatch_mode_stack() -> list:
    return list(_stack.modes)


def _handling_modes() -> list:
    """The modes whose handlers are running in this thread, innermost last (None for a
    subclass's handler): a running handler's mode is off the stack."""
    return [mode for mode, _ in _stack.handling]


def _len_torch_dispatch_stack() -> int:
    return len(_stack.modes)


@contextlib.contextmanager
def _pop_mode_temporarily(k=None):
    mode = _pop_mode(k)
    try:
        yield mode
    finally:
        _push_mode(mode)


@contextlib.contextmanager
def _disable_current_modes():
    """Take every mode off the stack for a block; yields them as popped, top first (they
    return afterwards, in order)."""
    saved = _stack.modes
    _stack.modes = []
    _sync_python_key()
    try:
        yield saved[::-1]
    finally:
        _stack.modes = saved
        _sync_python_key()


def _number_kind(value) -> type | None:
    """bool, int, float or complex: the Python type a Scalar keeps on PyTorch's stack."""
    for kind in (bool, numbers.Integral, numbers.Real, numbers.Complex):
        if isinstance(value, kind):
            return kind
    return None


def _is_default(argument, value) -> bool:
    """Whether `value` equals its parameter's default, as PyTorch's comparison of stack
    values decides: a Scalar keeps its Python type, so `alpha=1.0` is not the default
    `alpha=1` (nor `True`), while an `int` or `float` parameter has converted it already."""
    if not argument.has_default or hasattr(value, "_keyset"):
        return False
    default = argument.default
    if default is None or value is None:
        return default is value
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple)) and tuple(value) == tuple(default)
    if argument.type.startswith("Scalar") and _number_kind(value) is not _number_kind(default):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


def _python_form(op) -> tuple:
    """(the number of positional parameters, the keyword-only ones' positions) of `op`,
    made on its first call under the Python key and kept as `op.python_form`."""
    arguments = op.schema.arguments
    positional = len(arguments)
    while positional and arguments[positional - 1].kwarg_only:
        positional -= 1
    form = op.python_form = (positional, tuple(range(positional, len(arguments))))
    return form


def python_arguments(op, bound: tuple) -> tuple:
    """(args, kwargs) of a call as `__torch_dispatch__` receives them: positional arguments
    up to the last one not at its default, keyword-only ones by name unless at default.
    Arguments missing from the end of `bound` (a kernel may redispatch without them) are
    at their defaults. A value that *is* its parameter's default (`op.defaults`, which
    binding fills in), the common case, is recognised without a comparison."""
    positional, keyword_only = op.python_form or _python_form(op)
    arguments, defaults = op.schema.arguments, op.defaults
    given = len(bound)
    kwargs = {}
    for i in keyword_only:
        if i == given:
            break
        value = bound[i]
        if value is not defaults[i] and not _is_default(arguments[i], value):
            kwargs[arguments[i].name] = value
    if positional > given:
        positional = given
    while positional:
        value, default = bound[positional - 1], defaults[positional - 1]
        if default is _MISSING or (value is not default
                                   and not _is_default(arguments[positional - 1], value)):
            break
        positional -= 1
    return (bound if positional == given else bound[:positional]), kwargs


def _dispatch_subclass_args(op, bound: tuple) -> list:
    """One tensor argument per class that defines __torch_dispatch__, each subclass before
    its superclasses, otherwise in argument order (PyTorch's overloaded arguments)."""
    found: list = []
    for i in op.tensor_positions:
        for t in bound[i] if isinstance(bound[i], (list, tuple)) else (bound[i],):
            kind = type(t)
            if (kind is Tensor or not isinstance(t, Tensor) or not t._keyset & _PYTHON
                    or any(type(f) is kind for f in found)):
                continue
            at = next((n for n, f in enumerate(found) if issubclass(kind, type(f))),
                      len(found))
            found.insert(at, t)
    return found


def _python_key_kernel(op, ks, *bound):
    """The Python key: hand the call to the top mode, with that mode off the stack; with no
    mode left, to the __torch_dispatch__ of the arguments' subclasses. Keys above Python are
    excluded meanwhile (autograd has recorded the call already).

    This is every call's path while a mode is on (a compiled function's capture), so the
    stack's push and pop and the key sets are handled inline, not by `_pop_mode`."""
    stack = _stack
    modes = stack.modes
    if not modes:
        return _subclass_dispatch(op, ks, bound)
    args, kwargs = python_arguments(op, bound)
    func = op.overload or _ops.overload_of(op)
    types = ()              # the classes of the arguments that define __torch_dispatch__
    for i in op.tensor_positions:
        t = bound[i]        # plain tensors, the common case, are told apart without a call
        if t is None or t.__class__ is Tensor:
            continue
        if t.__class__ is list or t.__class__ is tuple or getattr(t, "_keyset", 0) & _PYTHON:
            types = tuple(type(t) for t in _dispatch_subclass_args(op, bound))
            break
    rules = op.info.get("torch_dispatch_rules")
    mode = modes.pop()                # off the stack while it handles the call
    # The key sets' fields are written directly, with one recount per change of both
    # (what the `included`/`excluded` setters do, each with its own recount).
    keys = local_keys
    excluded = keys._excluded
    if not modes:
        keys._included &= ~_PYTHON
    keys._excluded = excluded | _ABOVE_PYTHON
    keys._recount()
    stack.handling.append((mode, excluded))
    try:
        rule = rules and rules.get(type(mode))
        if rule:
            return rule(mode, func, types, args, kwargs)
        return mode.__torch_dispatch__(func, types, args, kwargs)
    finally:
        stack.modes.append(mode)      # (the stack the handler leaves: it may have swapped it)
        stack.handling.pop()
        keys._included |= _PYTHON
        keys._excluded = excluded
        keys._recount()


def _subclass_dispatch(op, ks, bound):
    """The Python key with no mode on the stack: the arguments' subclasses' handlers, in
    PyTorch's order, until one does not return NotImplemented."""
    overloaded = _dispatch_subclass_args(op, bound)
    if not overloaded:          # the key was included by hand: nothing to hand it to
        return op.redispatch(ks, *bound)
    args, kwargs = python_arguments(op, bound)
    func = _ops.overload_of(op)
    types = tuple(type(t) for t in overloaded)
    rules = op.info.get("torch_dispatch_rules")
    excluded = local_keys.excluded
    local_keys.excluded = excluded | _ABOVE_PYTHON
    _stack.handling.append((None, excluded))
    try:
        for t in overloaded:
            rule = rules and rules.get(type(t))
            if rule:
                result = rule(type(t), func, types, args, kwargs)
            else:
                result = type(t).__torch_dispatch__(func, types, args, kwargs)
            if result is not NotImplemented:
                return result
    finally:
        _stack.handling.pop()
        local_keys.excluded = excluded
    handlers = "".join(f"\n  - tensor subclass {t}" for t in types)
    raise TypeError(f"Multiple dispatch failed for 'torch._ops.{func}'; all __torch_dispatch__ "
                    f"handlers returned NotImplemented:\n{handlers}")


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """Inside a __torch_dispatch__ handler, let calls go through every key again (autograd
    included), as outside the handler (torch.overrides.enable_reentrant_dispatch)."""
    if not _stack.handling:
        yield
        return
    inside = local_keys.excluded
    local_keys.excluded = _stack.handling[-1][1]
    try:
        yield
    finally:
        local_keys.excluded = inside


dispatcher.register_fallback(DispatchKey.Python, _python_key_kernel)
