"""The dispatcher: operators, their per-key kernel tables, and the call path.

An `Operator` has one table slot per runtime dispatch key, filled from the kernels
registered for that key, then alias keys (CompositeExplicitAutograd for backends, Autograd
for the autograd keys), then per-key fallbacks that serve every operator. A call computes
the key set from its tensors plus the thread-local include set minus the exclude set, masks
it with the keys that have a kernel (others fall through), and runs the highest.

Backend kernels are plain `kernel(*args)`. Kernels above the backends are
`kernel(op, keyset, *args)`, where keyset holds only the keys below their own, so that
`op.redispatch(keyset, *args)` continues the call downwards.
"""
from __future__ import annotations

from .keys import (ALIAS_KEYS, BACKEND_KEYS, BACKEND_MASK, NUM_KEYS, DispatchKey,
                   DispatchKeySet, local_keys)
from .schema import Schema, parse_schema

_BELOW = tuple((1 << k) - 1 for k in range(NUM_KEYS))
FALLTHROUGH = object()   # registered for a key to mean "skip this key"

_fallbacks: dict = {}     # DispatchKey -> boxed kernel(op, ks, *args) or FALLTHROUGH
_operators: dict = {}     # qualified name -> Operator
_tracers: list = []       # active dispatch traces (see dispatch/trace.py)


class Operator:
    """One overload of an operator (`aten::add.Tensor`) and its dispatch table."""

    __slots__ = ("schema", "name", "table", "mask", "kernels", "tensor_positions", "tags",
                 "__weakref__", "info")

    def __init__(self, schema: Schema, tags=()):
        self.schema = schema
        self.name = schema.qualified_name
        self.kernels: dict = {}          # key or alias name -> kernel
        self.tensor_positions = schema.tensor_positions
        self.tags = tuple(tags)
        self.info: dict = {}             # declaration data (meta function, derivative, ...)
        self.table = [None] * NUM_KEYS
        self.mask = 0
        self._recompute()

    # ---- registration ----------------------------------------------------------------
    def register(self, key, kernel) -> None:
        """Register `kernel` for a runtime key, an alias key name, or FALLTHROUGH."""
        if isinstance(key, str) and key not in ALIAS_KEYS:
            try:
                key = DispatchKey[key]
            except KeyError:
                raise ValueError(f"unknown dispatch key {key!r}; expected one of "
                                 f"{[k.name for k in DispatchKey] + list(ALIAS_KEYS)}") from None
        self.kernels[key] = kernel
        self._recompute()

    def has_kernel_for(self, key: DispatchKey) -> bool:
        return self.table[key] is not None

    def _resolve(self, key: DispatchKey):
        if key in self.kernels:
            return self.kernels[key]
        for alias, keys in ALIAS_KEYS.items():
            if key in keys and alias in self.kernels:
                return self.kernels[alias]
        return _fallbacks.get(key)

    def _recompute(self) -> None:
        self.mask = 0
        for key in DispatchKey:
            kernel = self._resolve(key)
            if kernel is FALLTHROUGH:
                kernel = None
            self.table[key] = kernel
            if kernel is not None:
                self.mask |= 1 << key

    # ---- calling ---------------------------------------------------------------------
    def __call__(self, *args):
        ks = 0
        for i in self.tensor_positions:
            ks |= keyset_of(args[i])
        return self.dispatch(ks, *args)

    def dispatch(self, ks: int, *args):
        """Run the highest kernel for tensor key set `ks` plus this thread's local keys."""
        ks = (ks | local_keys.included) & ~local_keys.excluded
        backends = ks & BACKEND_MASK
        if backends & (backends - 1):
            ks = check_same_device(self, args, ks)
        return self.redispatch(ks, *args)

    def redispatch(self, ks: int, *args):
        ks &= self.mask
        key = ks.bit_length() - 1
        if key < 0:
            raise self._missing_kernel_error(args)
        kernel = self.table[key]
        if _tracers:
            for tracer in _tracers:
                tracer.record(self, DispatchKey(key), ks)
        if key <= DispatchKey.CUDA:
            return kernel(*args)
        return kernel(self, ks & _BELOW[key], *args)

    def _missing_kernel_error(self, args):
        backend = next((DispatchKey(k).name for k in BACKEND_KEYS
                        if any(keyset_of(args[i]) >> k & 1 for i in self.tensor_positions)),
                       "Undefined")
        available = [DispatchKey(k).name for k in range(NUM_KEYS) if self.mask >> k & 1]
        return NotImplementedError(
            f"Could not run '{self.name}' with arguments from the '{backend}' backend. This "
            f"could be because the operator doesn't exist for this backend. '{self.name}' is "
            f"only available for these backends: [{', '.join(available)}].")

    def dump(self) -> str:
        """The dispatch table, one line per key, as torch._C._dispatch_dump shows it."""
        lines = [f"name: {self.name}", f"schema: {self.schema}"]
        for key in DispatchKey:
            kernel = self.table[key]
            if kernel is not None:
                where = getattr(kernel, "__qualname__", type(kernel).__name__)
                lines.append(f"{key.name}: {where} [{getattr(kernel, '__module__', '')}]")
        return "\n".join(lines)

    def __repr__(self):
        return f"<Operator {self.name}>"


def keyset_of(x) -> int:
    """The dispatch key set an argument contributes (tensors and lists of tensors)."""
    ks = getattr(x, "_keyset", None)
    if ks is not None:
        return ks
    if isinstance(x, (list, tuple)):
        out = 0
        for t in x:
            out |= getattr(t, "_keyset", 0)
        return out
    return 0


def check_same_device(op: Operator, args, ks: int) -> int:
    """Raise PyTorch's device-mismatch error; CPU 0-dim tensors may join any device.

    Ops tagged 'cross_device' (copy_) run on the backend of their first argument.
    """
    if "cross_device" in op.tags:
        return (ks & ~BACKEND_MASK) | (keyset_of(args[0]) & BACKEND_MASK)
    devices = []
    cpu_scalars_only = True
    for i in op.tensor_positions:
        arg = args[i]
        for t in (arg if isinstance(arg, (list, tuple)) else (arg,)):
            if t is None or not hasattr(t, "_keyset"):
                continue
            devices.append((t.device, op.schema.arguments[i].name))
            if t.device.type == "cpu" and t.dim() != 0:
                cpu_scalars_only = False
    non_cpu = [d for d, _ in devices if d.type != "cpu"]
    kinds = {d for d, _ in devices}
    if len({d for d in non_cpu}) == 1 and cpu_scalars_only:
        return ks & ~(1 << DispatchKey.CPU)   # run on the accelerator, reading CPU scalars
    first = devices[0][0]
    other = next((d, n) for d, n in devices if d != first)
    if len(kinds) > 1:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but got {other[1]} is on "
            f"{other[0]}, different from other tensors on {first} (when checking argument in "
            f"method {op.name})")
    return ks


# ---- the registry --------------------------------------------------------------------

def define(schema_text: str, *, namespace: str = "aten", tags=()) -> Operator:
    """Create (or return the existing) operator for a schema string."""
    schema = parse_schema(schema_text, namespace)
    op = _operators.get(schema.qualified_name)
    if op is None:
        op = _operators[schema.qualified_name] = Operator(schema, tags)
    return op


def find(qualified_name: str) -> Operator:
    try:
        return _operators[qualified_name]
    except KeyError:
        raise RuntimeError(f"No such operator {qualified_name}") from None


def all_operators() -> list:
    return list(_operators.values())


def register_fallback(key: DispatchKey, kernel) -> None:
    """A boxed kernel (or FALLTHROUGH) used for `key` by every operator without its own."""
    _fallbacks[key] = kernel
    for op in _operators.values():
        op._recompute()


def add_tracer(tracer) -> None:
    _tracers.append(tracer)


def remove_tracer(tracer) -> None:
    _tracers.remove(tracer)


def keyset_repr(mask: int) -> DispatchKeySet:
    return DispatchKeySet(mask)
