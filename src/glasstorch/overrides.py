"""`torch.overrides`: the `__torch_function__` protocol.

Every public function and Tensor method checks its arguments before it dispatches. When a
TorchFunctionMode is on this thread's stack, or an argument's type defines a
`__torch_function__` other than the plain Tensor's (a Tensor subclass, or any object such as
torch.fx's Proxy), the call goes to `handle_torch_function` instead: the top mode first (off
the stack while its handler runs, so the handler's own calls reach the mode below), then
each overriding type, subclasses before their superclasses, otherwise left to right. The
first handler that returns something other than `NotImplemented` gives the result.

Tensor subclasses mark themselves in their key set (`TORCH_FUNCTION_BIT`, above every
dispatch key, so the dispatcher never selects it), so the check on plain tensors is one bit
test and one attribute read. nn.Parameter opts out with `_disabled_torch_function_impl`.
"""
from __future__ import annotations

import dis
import functools
import inspect
import sys
import threading

from .dispatch.keys import NUM_KEYS, DispatchKey

__all__ = ["TorchFunctionMode", "enable_reentrant_dispatch", "get_ignored_functions",
           "get_overridable_functions", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like",
           "is_tensor_method_or_property", "get_default_nowrap_functions"]

TORCH_FUNCTION_BIT = 1 << (NUM_KEYS + 8)   # in a tensor's _keyset: its class overrides
PYTHON_KEY_BIT = 1 << DispatchKey.Python     # in a tensor's _keyset: __torch_dispatch__
SUBCLASS_BITS = TORCH_FUNCTION_BIT | PYTHON_KEY_BIT


class _DisabledImpl:
    """`_disabled_torch_function_impl` / `_disabled_torch_dispatch_impl`: a class attribute
    saying "this class does not override". Not a function, so it never binds to instances."""

    __slots__ = ("__name__",)

    def __init__(self, name):
        self.__name__ = name

    def __call__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

    def __repr__(self):
        return f"<built-in function {self.__name__}>"


_disabled_torch_function_impl = _DisabledImpl("_disabled_torch_function_impl")
_disabled_torch_dispatch_impl = _DisabledImpl("_disabled_torch_dispatch_impl")


# ---- per-thread state ------------------------------------------------------------------

class _State(threading.local):
    def __init__(self):
        self.modes: list = []              # TorchFunctionMode stack, top last
        self.subclasses_off = False        # DisableTorchFunctionSubclass
        self.all_off = False               # DisableTorchFunction
        self.user = None                   # within builtin_code: the settings user code gets


class _Anywhere:
    """How many TorchFunctionModes are on any thread's stack: wrappers read this one global
    and look at their thread's state only when it is not zero."""

    __slots__ = ("modes",)

    def __init__(self):
        self.modes = 0


_state = _State()
anywhere = _Anywhere()
_lock = threading.Lock()

_plain_tensor_type = None       # glasstorch.Tensor, set by core.tensor once it exists
_type_overrides: dict = {}      # type -> does it override __torch_function__
_class_keys: dict = {}          # Tensor subclass -> class_keys(cls)


def _register_tensor_type(cls) -> None:
    global _plain_tensor_type
    _plain_tensor_type = cls
    _PLAIN.add(cls)


def _overrides(cls) -> bool:
    """Whether `cls` has a __torch_function__ that is not the plain Tensor's nor disabled."""
    answer = _type_overrides.get(cls)
    if answer is None:
        impl = _static_impl(cls, "__torch_function__")
        answer = _type_overrides[cls] = (impl is not None and cls is not _plain_tensor_type
                                         and impl is not _disabled_torch_function_impl)
    return answer


def _static_impl(cls, name):
    impl = inspect.getattr_static(cls, name, None)
    return getattr(impl, "__func__", impl)


def overrides_dispatch(cls) -> bool:
    """Whether `cls` defines a __torch_dispatch__ (not the disabled one)."""
    impl = _static_impl(cls, "__torch_dispatch__")
    return impl is not None and impl is not _disabled_torch_dispatch_impl


def class_keys(cls) -> int:
    """The extra key-set bits of every instance of the Tensor subclass `cls`."""
    bits = _class_keys.get(cls)
    if bits is None:
        bits = _class_keys[cls] = (TORCH_FUNCTION_BIT if _overrides(cls) else 0) | (
            PYTHON_KEY_BIT if overrides_dispatch(cls) else 0)
    return bits


def arg_bits(x) -> int:
    """The key set an argument contributes, with TORCH_FUNCTION_BIT for a non-Tensor that
    overrides. Reads no attribute of an unknown object (an fx Proxy records every read)."""
    if isinstance(x, _plain_tensor_type):
        return x._keyset
    cls = x.__class__
    if cls is list or cls is tuple:
        ks = 0
        for t in x:
            ks |= t._keyset if isinstance(t, _plain_tensor_type) else (
                TORCH_FUNCTION_BIT if _overrides(t.__class__) else 0)
        return ks
    return TORCH_FUNCTION_BIT if _overrides(cls) else 0


# ---- the protocol ----------------------------------------------------------------------

def _is_overriding(arg) -> bool:
    return not _state.subclasses_off and _overrides(type(arg))


def _overloaded_args(relevant_args, plain_tensors=False) -> list:
    """One argument per overriding type, each subclass before its superclasses, otherwise in
    the order first seen (lists of tensors count element by element). `plain_tensors`:
    plain Tensors count too, as in PyTorch's Python-level handle_torch_function."""
    found: list = []
    seen: set = set()
    for arg in relevant_args:
        for a in arg if type(arg) in (list, tuple) else (arg,):
            kind = type(a)
            if kind in seen or not (_is_overriding(a) or (
                    plain_tensors and kind is _plain_tensor_type
                    and not _state.subclasses_off)):
                continue
            seen.add(kind)
            at = next((i for i, old in enumerate(found) if issubclass(kind, type(old))),
                      len(found))
            found.insert(at, a)
    return found


def _is_torch_function_mode_enabled() -> bool:
    return bool(_state.modes) and not _state.all_off


def has_torch_function(relevant_args) -> bool:
    """Whether a call with these arguments must go through `handle_torch_function`."""
    return wants_protocol(relevant_args)


def has_torch_function_unary(arg) -> bool:
    return has_torch_function((arg,))


def has_torch_function_variadic(*args) -> bool:
    return has_torch_function(args)


def _function_name(func) -> str:
    name = getattr(func, "__name__", repr(func))
    qual = getattr(func, "__qualname__", name)
    module = getattr(func, "__module__", None)
    if module == "glasstorch" and not qual.startswith("Tensor."):
        return f"torch.{name}"
    return qual


# ---- the real PyTorch's tensors and functions ----------------------------------------------
# Both libraries speak __torch_function__, so a PyTorch tensor handed to a glasstorch function
# (or a glasstorch tensor to a PyTorch function) would bounce between the two handlers until
# RecursionError. Each side refuses the other's objects with a TypeError that says how to
# convert instead.

class ForeignTensorError(TypeError):
    """A tensor of one library handed to the other."""


_pytorch_tensor_types: dict = {}     # class -> whether it is the real PyTorch's tensor


def is_pytorch_tensor_type(cls) -> bool:
    answer = _pytorch_tensor_types.get(cls)
    if answer is None:
        answer = _pytorch_tensor_types[cls] = any(
            c.__name__ == "TensorBase" and c.__module__ == "torch._C" for c in cls.__mro__)
    return answer


def _from_pytorch(func) -> bool:
    """Whether `func` is one of the real PyTorch's functions or Tensor methods."""
    real = sys.modules.get("torch")
    if real is None or real is sys.modules.get("glasstorch") or isinstance(func, type):
        return False
    module = getattr(func, "__module__", None)
    if module is None:
        owner = getattr(func, "__objclass__", None) or getattr(
            getattr(func, "__self__", None), "__objclass__", None)
        module = getattr(owner, "__module__", None)
    return isinstance(module, str) and (module == "torch" or module.startswith("torch."))


def refuse_pytorch_function(func):
    name = getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))
    return ForeignTensorError(f"PyTorch's {name} got a glasstorch tensor: the two libraries do not share "
                     "tensors. Convert it with torch.from_dlpack(t) (no copy) or "
                     "torch.from_numpy(t.numpy()).")


def _refuse_pytorch_tensor(public_api, cls):
    return ForeignTensorError(f"{_function_name(public_api)}() got a tensor of the real PyTorch "
                     f"({cls.__module__}.{cls.__qualname__}): glasstorch runs on its own "
                     "tensors. Convert it with glasstorch.from_dlpack(t) (no copy) or "
                     "glasstorch.tensor(t.numpy()).")


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the handlers for `public_api(*args, **kwargs)`: the top mode, then each
    overriding type in turn. TypeError when every one returns NotImplemented."""
    return call_handlers(public_api, relevant_args, args, kwargs, python=True)


def call_handlers(public_api, relevant_args, args: tuple, kwargs, python=False):
    """Modes, then overriding types. `python`: plain Tensors count among the `types` too,
    as PyTorch counts them for its functions written in Python (handle_torch_function),
    its Tensor properties and its Tensor methods that take nothing but self."""
    overloaded = _overloaded_args(relevant_args, plain_tensors=python)
    types = tuple(type(a) for a in overloaded)
    if _state.modes and not _state.all_off:
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        if is_pytorch_tensor_type(type(arg)):
            raise _refuse_pytorch_tensor(public_api, type(arg))
        result = type(arg).__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    handlers = "".join(f"\n  - {'tensor subclass ' if issubclass(t, _plain_tensor_type) else ''}"
                       f"{t}" for t in types)
    if _state.modes and not _state.all_off:
        handlers = f"\n  - mode object {_state.modes[-1]!r}" + handlers
    raise TypeError(f"Multiple dispatch failed for '{_function_name(public_api)}'; all "
                    f"__torch_function__ handlers returned NotImplemented:\n{handlers}")


NOT_HANDLED = object()


def wants_protocol(relevant_args) -> bool:
    """has_torch_function, for callers whose fast check has fired."""
    if _state.all_off:
        return False
    return bool(_state.modes) or any(_is_overriding(a) for arg in relevant_args for a in (
        arg if type(arg) in (list, tuple) else (arg,)))


def dispatch_if_needed(public_api, relevant_args, args: tuple, kwargs, python=False):
    """What a wrapper calls when its fast check fires: the handlers' result, or NOT_HANDLED
    when the protocol turns out to be off (disabled, or only Parameters). `python`: plain
    Tensors count among the types (see call_handlers)."""
    if not wants_protocol(relevant_args):
        return NOT_HANDLED
    return call_handlers(public_api, relevant_args, args, kwargs, python)


def _at_default(value, default) -> bool:
    """Whether an argument equals its default, judged without touching attributes of
    unknown objects (an fx Proxy records them)."""
    if value is default:
        return True
    kind = value.__class__
    if kind in (int, float, bool, str, complex):
        return kind is default.__class__ and value == default
    if kind in (list, tuple) and default.__class__ in (list, tuple):
        return all(v.__class__ is int for v in value) and tuple(value) == tuple(default)
    return False


_call_keywords_cache: dict = {}    # (code, instruction offset) -> keyword names or None


def _call_keywords(frame):
    """The keyword names of the call `frame` is making, read from its bytecode (KW_NAMES
    before CALL in CPython 3.11/3.12, the constant before CALL_KW or CALL_FUNCTION_KW
    elsewhere); None when the bytecode does not say (a call through **kwargs)."""
    key = (frame.f_code, frame.f_lasti)
    if key in _call_keywords_cache:
        return _call_keywords_cache[key]
    names = None
    instructions = [i for i in dis.get_instructions(frame.f_code) if i.offset <= frame.f_lasti]
    if instructions and instructions[-1].opname in ("CALL", "CALL_KW", "CALL_FUNCTION",
                                                    "CALL_FUNCTION_KW", "CALL_METHOD"):
        names = ()
        for before in reversed(instructions[:-1]):
            if before.opname == "PRECALL":
                continue
            if before.opname == "KW_NAMES":
                names = tuple(frame.f_code.co_consts[before.arg])
            elif (instructions[-1].opname in ("CALL_KW", "CALL_FUNCTION_KW")
                  and before.opname == "LOAD_CONST"):
                names = tuple(before.argval)
            break
    if len(_call_keywords_cache) < 4096:
        _call_keywords_cache[key] = names
    return names


def _caller_keywords(spec):
    """The keyword names the caller of a public function used, if its bytecode says and
    they are all parameters in `spec`; else None."""
    frame = sys._getframe(2)
    while frame is not None and (frame.f_code.co_filename.startswith("<glasstorch")
                                 or frame.f_code.co_filename in _PROTOCOL_FILES):
        frame = frame.f_back
    names = _call_keywords(frame) if frame is not None else None
    if names is None or not set(names) <= {p[0] for p in spec}:
        return None
    return names


def protocol(public, spec, values, relevant=None, builtin=True, plain_types=None,
             kwargs_dict=None):
    """Call the handlers for a wrapper's call, or return NOT_HANDLED when none applies.

    `spec` holds (name, kind, default) per parameter, kind one of 'p' (positional), 'd'
    (positional with a default), 'k' (keyword-only), 'v' (*args), 'w' (**kwargs). The
    handler's args/kwargs are split as a caller of a built-in wrote them (`builtin`: the
    keywords the call site's bytecode names, the other arguments positionally up to the last
    not at its default; where the bytecode does not say, keyword-only arguments unless at
    their default) or as PyTorch's Python functions pass them on (required
    parameters positionally, every other one by keyword). `plain_types`: whether plain
    Tensors count among the types; `kwargs_dict`: whether no keywords give {} rather than
    None (both by default for the Python functions only)."""
    if relevant is None:
        relevant = []
        for (_, kind, _), value in zip(spec, values):
            relevant.extend(value if kind == "v" else value.values() if kind == "w" else
                            (value,))
    if not wants_protocol(relevant):
        return NOT_HANDLED
    given = _caller_keywords(spec) if builtin else None
    positional = [i for i, p in enumerate(spec) if p[1] in "pdv"
                  and (given is None or p[0] not in given)]
    if builtin:
        while positional and spec[positional[-1]][1] == "d" and _at_default(
                values[positional[-1]], spec[positional[-1]][2]):
            positional.pop()
    else:
        positional = [i for i in positional if spec[i][1] != "d"]
    args, kwargs = [], {}
    for i in positional:
        if spec[i][1] == "v":
            args.extend(values[i])
        else:
            args.append(values[i])
    for i, (name, kind, default) in enumerate(spec):
        if kind == "w":
            kwargs.update(values[i])
        elif given is not None:
            if name in given:
                kwargs[name] = values[i]
        elif (kind == "k" or (kind == "d" and i not in positional)) and not (
                builtin and _at_default(values[i], default)):
            kwargs[name] = values[i]
    if kwargs_dict is None:
        kwargs_dict = not builtin
    return call_handlers(public, relevant, tuple(args), kwargs if kwargs_dict else kwargs or None,
                         python=not builtin if plain_types is None else plain_types)


_PLAIN = {int, float, bool, complex, str, type(None)}   # never override; Tensor joins
_PROTOCOL_FILES = {__file__}    # frames between a public function and its caller: these,
#                                 generated wrappers, and the registry's (added there)
_KIND = {inspect.Parameter.POSITIONAL_ONLY: "p", inspect.Parameter.POSITIONAL_OR_KEYWORD: "p",
         inspect.Parameter.KEYWORD_ONLY: "k", inspect.Parameter.VAR_POSITIONAL: "v",
         inspect.Parameter.VAR_KEYWORD: "w"}


def _arg_overrides(arg) -> bool:
    """The fast check's verdict on an argument not of a _PLAIN class: it, or an element of
    it (a list or tuple), has a type that overrides (subclass handling may still be off)."""
    cls = arg.__class__
    if cls is tuple or cls is list:
        return _any_overrides(arg)
    return _overrides(cls)


def _any_overrides(args) -> bool:
    for a in args:
        if a.__class__ not in _PLAIN and _arg_overrides(a):
            return True
    return False


def overridable(fn=None, *, name=None, qualname=None, builtin=False, plain_types=None,
                kwargs_dict=None, operator=False):
    """Decorator: a function written in Python honours __torch_function__ as PyTorch's do.
    The handler receives the decorated function; `builtin` says how to split its arguments
    (see `protocol`): False for functions PyTorch writes in Python (nn.functional), True for
    those that are built-ins in PyTorch; `plain_types` and `kwargs_dict` as in `protocol`.
    `operator`: a Python operator, whose TypeError (its own or a handler's) becomes
    NotImplemented, so that Python tries the reflected operation and then raises its usual
    TypeError, as PyTorch's operators written in Python do.
    On plain tensors the cost is one frame and a set lookup per argument (and per element
    of a list or tuple argument)."""
    if fn is None:
        return functools.partial(overridable, name=name, qualname=qualname, builtin=builtin,
                                 plain_types=plain_types, kwargs_dict=kwargs_dict,
                                 operator=operator)
    P = inspect.Parameter
    env = {"_fn": fn, "_anywhere": anywhere, "_PLAIN": _PLAIN, "_NOT_HANDLED": NOT_HANDLED,
           "_protocol": protocol, "_BUILTIN": builtin, "_PLAIN_TYPES": plain_types,
           "_KWARGS_DICT": kwargs_dict, "_arg_overrides": _arg_overrides,
           "_any_overrides": _any_overrides}
    signature, call, values, spec, checks = [], [], [], [], []
    for p in inspect.signature(fn).parameters.values():
        n, kind = p.name, _KIND[p.kind]
        default = ""
        if p.default is not P.empty:
            env[f"_default_{n}"] = p.default
            default = f"=_default_{n}"
            kind = "d" if kind == "p" else kind
        if kind == "k" and not any(t.startswith("*") for t in signature):
            signature.append("*")
        star = {"v": "*", "w": "**"}.get(kind, "")
        signature.append(star + n + default)
        call.append(f"{n}={n}" if kind == "k" else star + n)
        values.append(n)
        spec.append((n, kind, p.default))
        if kind == "v":
            checks.append(f"(bool({n}) and _any_overrides({n}))")
        elif kind == "w":
            checks.append(f"(bool({n}) and _any_overrides({n}.values()))")
        else:
            checks.append(f"({n}.__class__ not in _PLAIN and _arg_overrides({n}))")
    env["_SPEC"] = tuple(spec)
    lines = [
        f"def _wrapper({', '.join(signature)}):",
        f"    if _anywhere.modes or {' or '.join(checks) or 'False'}:",
        f"        _handled = _protocol(_wrapper, _SPEC, {_tuple(values)}, None, _BUILTIN, "
        "_PLAIN_TYPES, _KWARGS_DICT)",
        "        if _handled is not _NOT_HANDLED:",
        "            return _handled"]
    # keyword-only arguments at their defaults are left out: `fn` has the same defaults,
    # and a call after *args without keywords skips building a keyword dict
    keyword_only = [(n, d) for n, kind, d in spec if kind == "k"]
    at_defaults = [f"{n} is _default_{n}" for n, _ in keyword_only]
    kinds = {kind for _, kind, _ in spec}
    if keyword_only and "v" in kinds and "w" not in kinds and \
            all(d is not P.empty for _, d in keyword_only):
        plain_call = [c for c, (_, kind, _) in zip(call, spec) if kind != "k"]
        lines.append(f"    if {' and '.join(at_defaults)}: return _fn({', '.join(plain_call)})")
    lines.append(f"    return _fn({', '.join(call)})")
    if operator:
        env["_ForeignTensorError"] = ForeignTensorError
        lines = [lines[0], "  try:", *(" " + line for line in lines[1:]),
                 "  except _ForeignTensorError:", "    raise",
                 "  except TypeError:", "    return NotImplemented"]
    source = "\n".join(lines)
    exec(compile(source, f"<glasstorch.overrides {fn.__qualname__}>", "exec"), env)
    wrapper = functools.update_wrapper(env["_wrapper"], fn)
    if name is not None:
        wrapper.__name__ = name
    if qualname is not None:
        wrapper.__qualname__ = qualname
    return wrapper


def _tuple(items) -> str:
    return "(" + "".join(f"{x}, " for x in items) + ")"


# ---- modes -----------------------------------------------------------------------------

class TorchFunctionMode:
    """Subclass and define `__torch_function__(self, func, types, args=(), kwargs=None)`;
    `with MyMode():` puts it on this thread's stack, where it sees every public call first."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)


def _push_mode(mode) -> None:
    with _lock:
        _state.modes.append(mode)
        anywhere.modes += 1


def _pop_mode():
    if not _state.modes:
        raise RuntimeError("Trying to pop from empty mode stack")
    with _lock:
        anywhere.modes -= 1
        return _state.modes.pop()


class _pop_mode_temporarily:
    """Take the top mode off the stack for a block (a handler's calls reach the mode below);
    a class rather than a generator, as it runs on every call a mode handles."""

    __slots__ = ("mode",)

    def __enter__(self):
        self.mode = _pop_mode()
        return self.mode

    def __exit__(self, *exc):
        _push_mode(self.mode)


def _get_current_function_mode():
    return _state.modes[-1] if _state.modes else None


def _get_current_function_mode_stack() -> list:
    return list(_state.modes)


def _len_torch_function_stack() -> int:
    return len(_state.modes)


class DisableTorchFunctionSubclass:
    """`torch._C.DisableTorchFunctionSubclass`: within the block, subclasses' and other
    types' __torch_function__ are skipped (modes still run)."""

    __slots__ = ("_saved",)

    def __enter__(self):
        self._saved = _state.subclasses_off
        _state.subclasses_off = True
        return self

    def __exit__(self, *exc):
        _state.subclasses_off = self._saved


class DisableTorchFunction:
    """`torch._C.DisableTorchFunction`: within the block, no __torch_function__ runs, modes
    included."""

    __slots__ = ("_saved",)

    def __enter__(self):
        self._saved = (_state.subclasses_off, _state.all_off)
        _state.subclasses_off = _state.all_off = True
        return self

    def __exit__(self, *exc):
        _state.subclasses_off, _state.all_off = self._saved


class builtin_code:
    """The protocol off in the block, for code that PyTorch writes in C++ and glasstorch in
    Python: autograd's engine, its derivative formulas and its accumulation into .grad,
    whose calls never reach a handler in PyTorch (a mode around backward sees none of them,
    a subclass's handler is not asked, and the gradients come out as plain Tensors).
    `user_code` gives the callbacks run inside (hooks, a custom Function's backward) the
    settings from before the block. One switch per backward, none per op (the engine's
    `run_backward` makes the same switch inline: change both)."""

    __slots__ = ("_saved",)

    def __enter__(self):
        state = _state
        self._saved = (state.subclasses_off, state.all_off, state.user)
        state.user = (state.subclasses_off, state.all_off)
        state.subclasses_off = state.all_off = True
        return self

    def __exit__(self, *exc):
        _state.subclasses_off, _state.all_off, _state.user = self._saved


class user_code:
    """Within `builtin_code`, the settings from before it, for a user's callback (PyTorch
    calls those from C++ as ordinary Python); elsewhere a no-op."""

    __slots__ = ("_saved",)

    def __enter__(self):
        state = _state
        self._saved = (state.subclasses_off, state.all_off)
        if state.user is not None:
            state.subclasses_off, state.all_off = state.user
        return self

    def __exit__(self, *exc):
        _state.subclasses_off, _state.all_off = self._saved


def _is_torch_function_enabled() -> bool:
    return not _state.subclasses_off


def _is_torch_function_all_disabled() -> bool:
    return _state.all_off


# ---- introspection ---------------------------------------------------------------------

def is_tensor_like(inp) -> bool:
    """A Tensor, or an object whose type defines __torch_function__."""
    return type(inp) is _plain_tensor_type or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func) -> bool:
    """Whether `func` is a Tensor method or a property getter (`Tensor.T.__get__`)."""
    if getattr(func, "__name__", None) == "__get__":
        owner = getattr(func, "__self__", None)
        return any(owner is v for v in vars(_plain_tensor_type).values())
    name = getattr(func, "__name__", None)
    return (getattr(func, "__qualname__", "") == f"Tensor.{name}"
            and _tensor_attribute(name) is not None)


def _tensor_attribute(name):
    return inspect.getattr_static(_plain_tensor_type, name, None) if name else None


def get_ignored_functions() -> set:
    """Public functions that take tensors but never consult __torch_function__ (factories
    and other functions without tensor inputs, and type/state queries)."""
    import glasstorch
    names = ("tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "arange",
             "range", "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm",
             "manual_seed", "seed", "initial_seed", "get_default_dtype", "set_default_dtype",
             "is_tensor", "is_storage", "is_grad_enabled", "set_grad_enabled", "no_grad",
             "enable_grad", "inference_mode", "is_inference_mode_enabled", "promote_types",
             "result_type", "can_cast", "get_rng_state", "set_rng_state", "empty_strided",
             "tril_indices", "triu_indices", "scalar_tensor", "zeros_like", "empty_like")
    ignored = {getattr(glasstorch, n) for n in names if hasattr(glasstorch, n)}
    ignored |= {getattr(_plain_tensor_type, n) for n in (
        "__new__", "__init_subclass__", "__torch_function__", "__torch_dispatch__",
        "as_subclass", "_make_subclass", "_make_wrapper_subclass", "data_ptr", "__repr__",
        "__reduce_ex__", "__deepcopy__", "__array__", "numpy", "__hash__")
        if hasattr(_plain_tensor_type, n)}
    return ignored


def get_overridable_functions() -> dict:
    """{namespace: [functions that honour __torch_function__]}: glasstorch, Tensor,
    glasstorch.nn.functional."""
    import glasstorch
    from .nn import functional
    ignored = get_ignored_functions()

    def honours(f):
        return callable(f) and not isinstance(f, type) and f not in ignored and (
            hasattr(f, "_schema") or hasattr(f, "__wrapped__"))

    from .ops.registry import functions
    result = {glasstorch: sorted((f for f in functions.values() if honours(f)),
                                 key=lambda f: f.__name__)}
    result[_plain_tensor_type] = sorted(
        (f for f in (getattr(_plain_tensor_type, n) for n in vars(_plain_tensor_type))
         if honours(f)), key=lambda f: f.__name__)
    result[functional] = sorted((f for n, f in vars(functional).items()
                                 if not n.startswith("_") and honours(f)),
                                key=lambda f: f.__name__)
    return result


def enable_reentrant_dispatch():
    """Context manager: inside a __torch_dispatch__ handler, calls go through every
    dispatch key again, autograd included (see dispatch/modes.py)."""
    from .dispatch.modes import enable_reentrant_dispatch as enable
    return enable()


def get_default_nowrap_functions() -> set:
    """Functions whose result Tensor.__torch_function__ returns as is (not as the
    subclass): the getters of .grad and ._base."""
    return {_plain_tensor_type.grad.__get__, _plain_tensor_type._base.__get__}
