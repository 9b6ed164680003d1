"""Guards: what a compiled function's cache entry assumed about a call, and why a call fails
them.

A guard snapshot is a tuple of checks, each `(source, kind, expected)`: every tensor argument
(its dtype, device, sizes, strides, requires_grad), every Python scalar passed in (its value),
the global state (grad mode, the default dtype, autocast), and, for a module's forward, each
module's training flag and the identity and metadata of each parameter and buffer (a
replaced or added one fails). A call that fails every entry's guards makes a new entry: a recompile. Each call compares
only its `fingerprint` (the same checks without their names) with each entry's; the named
snapshot is built when no entry fits.

Capture re-records every call and checks the trace against the cached one, so a guard never
decides whether a result is right; guards decide when a function counts as recompiled, and
they name the reason (in PyTorch's words where it has them).
"""
from __future__ import annotations

from ..core import dtype as dt
from ..core.grad_state import state as _grad_state
from ..core.tensor import Tensor
from ..amp.autocast_mode import get_autocast_dtype, is_autocast_enabled
from ..nn.modules.module import Module

_SCALARS = (bool, int, float, complex, str, type(None))


def snapshot(args: tuple, kwargs: dict, names: list, module: Module | None,
             dynamic_all: bool) -> tuple:
    """The guard checks for one call (see the module docstring)."""
    checks = [("", "grad_mode", _grad_state.enabled),
              ("", "default_dtype", dt.get_default_dtype())]
    for device_type in ("cpu", "cuda"):
        state = is_autocast_enabled(device_type)
        checks.append(("", f"autocast_{device_type}",
                       (state, get_autocast_dtype(device_type)) if state else False))
    for name, value in zip(names, args):
        _value_checks(name, value, checks, dynamic_all)
    for name, value in kwargs.items():
        _value_checks(name, value, checks, dynamic_all)
    if module is not None:
        for path, sub in module.named_modules():
            source = "self" + "".join(f".{p}" for p in path.split(".") if p)
            checks.append((source, "training", sub.training))
            for kind, table in (("parameter", sub._parameters), ("buffer", sub._buffers)):
                checks.append((source, f"{kind}_names", tuple(table)))
                for key, t in table.items():
                    if t is not None:
                        checks.append((f"{source}.{key}", "id", id(t)))
                        _tensor_check(f"{source}.{key}", t, checks, dynamic_all)
    return tuple(checks)


def fingerprint(args: tuple, kwargs: dict, module: Module | None, dynamic_all: bool) -> tuple:
    """What `snapshot` checks, without the names that say which check failed: two calls'
    fingerprints are equal exactly when their snapshots are. It is what every call compares
    (one tuple comparison per cache entry); the snapshot, with its names, is built only when
    no entry fits (to name the failed guard and make the new entry)."""
    key = [_grad_state.enabled, dt.get_default_dtype(), len(args), tuple(kwargs)]
    for device_type in ("cpu", "cuda"):
        state = is_autocast_enabled(device_type)
        key.append((state, get_autocast_dtype(device_type)) if state else False)
    checks: list = []
    for value in args:
        _value_checks("", value, checks, dynamic_all)
    for value in kwargs.values():
        _value_checks("", value, checks, dynamic_all)
    key += checks
    if module is not None:
        for path, sub in module.named_modules():
            params, buffers = sub._parameters, sub._buffers
            key += (path, sub.training, tuple(params), tuple(buffers))
            for table in (params, buffers):
                for t in table.values():
                    if t is None:
                        continue
                    if dynamic_all or getattr(t, "_dynamo_dynamic_indices", None):
                        key += (id(t), _tensor_key(t, dynamic_all))
                    else:                        # `_tensor_key` of a static tensor, inlined
                        key += (id(t), (type(t), t.dtype, t.device, len(t._shape), t._shape,
                                        t._stride, t.requires_grad))
    return tuple(key)


def has_dynamic_dims(snapshot: tuple) -> bool:
    """Whether a snapshot leaves some tensor's sizes unguarded (dynamic=True, mark_dynamic)."""
    return any(kind == "tensor" and None in expected[4] for _, kind, expected in snapshot)


def layouts(args: tuple, kwargs: dict) -> tuple:
    """The sizes and strides of every tensor among the arguments (in lists, tuples and dicts
    too): what a dynamic dim leaves out of the fingerprint."""
    found: list = []

    def visit(value):
        if isinstance(value, Tensor):
            found.append((value._shape, value._stride))
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)
    visit(args)
    visit(kwargs)
    return tuple(found)


def _value_checks(source: str, value, checks: list, dynamic_all: bool) -> None:
    if isinstance(value, Tensor):
        _tensor_check(source, value, checks, dynamic_all)
    elif isinstance(value, _SCALARS):
        checks.append((source, "value", (type(value), value)))
    elif isinstance(value, (list, tuple)):
        checks.append((source, "length", (type(value), len(value))))
        for i, item in enumerate(value):
            _value_checks(f"{source}[{i}]", item, checks, dynamic_all)
    elif isinstance(value, dict):
        checks.append((source, "keys", tuple(value)))
        for key, item in value.items():
            _value_checks(f"{source}[{key!r}]", item, checks, dynamic_all)
    else:
        checks.append((source, "type", type(value)))


def _tensor_check(source: str, t: Tensor, checks: list, dynamic_all: bool) -> None:
    checks.append((source, "tensor", _tensor_key(t, dynamic_all)))


def _tensor_key(t: Tensor, dynamic_all: bool) -> tuple:
    dynamic = _dynamic_dims(t, dynamic_all)
    if not dynamic:
        return (type(t), t.dtype, t.device, len(t._shape), t._shape, t._stride,
                t.requires_grad)
    sizes = tuple(None if i in dynamic else s for i, s in enumerate(t._shape))
    return (type(t), t.dtype, t.device, len(t._shape), sizes, (None,) * len(t._stride),
            t.requires_grad)


def _dynamic_dims(t: Tensor, dynamic_all: bool):
    if dynamic_all:
        return set(range(len(t._shape)))
    return getattr(t, "_dynamo_dynamic_indices", ())


def failure(expected: tuple, actual: tuple) -> str:
    """Why a call's snapshot `actual` fails an entry's `expected`: the first check that
    differs, in words."""
    if len(expected) != len(actual):
        return "the number of arguments, modules, parameters or buffers changed"
    for (source, kind, want), (source2, kind2, got) in zip(expected, actual):
        if (source, kind) != (source2, kind2):
            return f"{source or kind} changed kind ({kind} -> {kind2})"
        if want != got:
            return _describe(source, kind, want, got)
    return "no guard failed"


def _describe(source: str, kind: str, want, got) -> str:
    if kind == "tensor":
        name = source
        (cls, dtype, device, ndim, sizes, strides, grad) = want
        (cls2, dtype2, device2, ndim2, sizes2, strides2, grad2) = got
        if cls is not cls2:
            return f"tensor {name!r} type mismatch. expected {cls.__name__}, actual {cls2.__name__}"
        if dtype is not dtype2:
            return (f"tensor {name!r} dtype mismatch. expected {_dtype_name(dtype)}, actual "
                    f"{_dtype_name(dtype2)}")
        if device != device2:
            return f"tensor {name!r} device mismatch. expected {device}, actual {device2}"
        if ndim != ndim2:
            return f"tensor {name!r} rank mismatch. expected {ndim}, actual {ndim2}"
        for i, (a, b) in enumerate(zip(sizes, sizes2)):
            if a != b:
                return f"tensor {name!r} size mismatch at index {i}. expected {a}, actual {b}"
        for i, (a, b) in enumerate(zip(strides, strides2)):
            if a != b:
                return f"tensor {name!r} stride mismatch at index {i}. expected {a}, actual {b}"
        return f"tensor {name!r} requires_grad mismatch. expected requires_grad={int(grad)}"
    if kind == "value":
        return f"{source} == {want[1]!r}"
    if kind == "grad_mode":
        return f"GLOBAL_STATE changed: grad_mode (expected {want}, actual {got})"
    if kind.startswith("autocast_") or kind == "default_dtype":
        return f"GLOBAL_STATE changed: {kind} (expected {want}, actual {got})"
    if kind == "training":
        return f"{source}.training == {want}"
    if kind == "id":
        return f"___check_obj_id({source}): the tensor was replaced"
    if kind.endswith("_names"):
        return f"{source} {kind.replace('_names', 's')} changed: {list(want)} -> {list(got)}"
    if kind == "length":
        return f"len({source}) == {want[1]}"
    return f"{source} {kind} changed: expected {want!r}, actual {got!r}"


def _dtype_name(dtype) -> str:
    """PyTorch's guard text names dtypes by their C++ scalar type: Float, Double, Long."""
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
             "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
             "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
             "complex128": "ComplexDouble"}
    name = str(dtype).removeprefix("torch.")
    return names.get(name, name)
