"""The dispatcher: operators, their per-key kernel tables, and the call path.

An `Operator` has one table slot per runtime dispatch key, filled from the kernels
registered for that key, then alias keys (CompositeExplicitAutograd for backends,
CompositeImplicitAutograd for backends and for autograd keys whose backend has no kernel of
its own, Autograd for the autograd keys), then per-key fallbacks that serve every operator.
A call computes the key set from its tensors plus the thread-local include set minus the
exclude set, masks it with the keys that have a kernel (others fall through), and runs the
highest.

Backend kernels are plain `kernel(*args)`. Kernels above the backends are
`kernel(op, keyset, *args)`, where keyset holds only the keys below their own, so that
`op.redispatch(keyset, *args)` continues the call downwards. Kernels get the schema's
arguments positionally, defaults filled in (`Operator.__call__` binds keywords).
"""
from __future__ import annotations

from functools import partial

from .keys import (ALIAS_KEYS, AUTOCAST_MASK, BACKEND_KEYS, BACKEND_MASK, BACKENDS_BELOW,
                   NUM_KEYS, TENSOR_KEYSETS, DispatchKey, local_keys)
from .schema import Schema, parse_schema

_INT_LISTS = ("int[]", "SymInt[]", "int[]?", "SymInt[]?")   # an int given stands for (int,)

_BELOW = tuple((1 << k) - 1 for k in range(NUM_KEYS))
_LAST_BACKEND = int(max(BACKEND_KEYS))   # keys up to this one run unboxed kernels
FALLTHROUGH = object()   # registered for a key to mean "skip this key"

_fallbacks: dict = {}     # DispatchKey -> boxed kernel(op, ks, *args) or FALLTHROUGH
_operators: dict = {}     # qualified name -> Operator
_packets: dict = {}       # "ns::name" -> {overload name ('' for the default): Operator}
_tracers: list = []       # the dispatch-trace hook while a trace is on (dispatch/trace.py)
several_gpus = False      # set by the CUDA runtime when it sees more than one GPU: then a
#                           call on CUDA tensors checks that they share one
_CUDA_ONLY = 1 << DispatchKey.CUDA
_BACKEND_SELECT = 1 << DispatchKey.BackendSelect
PLAIN_CPU_KEYSET = TENSOR_KEYSETS["cpu"]   # a CPU tensor that needs no grad, of class Tensor
PLAIN_CPU_GRAD_KEYSET = PLAIN_CPU_KEYSET | (1 << DispatchKey.AutogradCPU)   # ... that does
generation = 0            # counts dispatch-table changes: a cache of what a table holds is
#                           still valid while this is unchanged


class Operator:
    """One overload of an operator (`aten::add.Tensor`) and its dispatch table."""

    __slots__ = ("schema", "name", "table", "mask", "kernels", "tensor_positions", "tags",
                 "__weakref__", "info", "sources", "nargs", "overload", "plain_cpu",
                 "plain_cpu_grad", "python_form",
                 "defaults", "min_args", "int_lists")

    def __init__(self, schema: Schema, tags=()):
        self.schema = schema
        self.name = schema.qualified_name
        self.kernels: dict = {}          # key or alias name -> kernel
        self.tensor_positions = schema.tensor_positions
        self.nargs = len(schema.arguments)
        # each parameter's default (schema's _MISSING if none; an int for an int list as a
        # tuple) and what `bind_arguments`' common case needs: positional arguments, the
        # rest at their defaults
        self.int_lists = tuple(i for i, a in enumerate(schema.arguments) if a.type in _INT_LISTS)
        self.defaults = tuple((a.default,) if i in self.int_lists and a.default.__class__ is int
                              else a.default for i, a in enumerate(schema.arguments))
        self.min_args = 1 + max((i for i, a in enumerate(schema.arguments) if not a.has_default),
                                default=-1)
        self.tags = tuple(tags)
        self.info: dict = {}             # declaration data (meta function, derivative, ...)
        self.table = [None] * NUM_KEYS
        self.sources = [None] * NUM_KEYS   # where each slot came from, for dump()
        self.mask = 0
        self.overload = None             # its glasstorch._ops.OpOverload, made on demand
        self.python_form = None          # how the Python key splits its arguments (modes.py)
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
        """(kernel, source) for one runtime key, in PyTorch's order of precedence."""
        kernels = self.kernels
        if key in kernels:
            return kernels[key], "kernel"
        for alias, keys in ALIAS_KEYS.items():
            if key in keys and alias in kernels:
                if alias == "CompositeImplicitAutograd" and key not in BACKEND_KEYS:
                    # Above a backend with its own kernel, the op must not decompose.
                    if (any(b in kernels for b in BACKENDS_BELOW[key])
                            or "CompositeExplicitAutograd" in kernels):
                        continue
                    return _composite_above_backends(kernels[alias]), alias
                return kernels[alias], alias
        return _fallbacks.get(key), "fallback"

    def _recompute(self) -> None:
        global generation
        generation += 1
        self.mask = 0
        for key in DispatchKey:
            kernel, source = self._resolve(key)
            self.sources[key] = source if kernel is not None else None
            if kernel is FALLTHROUGH:
                kernel = None
            self.table[key] = kernel
            if kernel is not None:
                self.mask |= 1 << key
        # What `dispatch` runs for exactly PLAIN_CPU_KEYSET (PLAIN_CPU_GRAD_KEYSET) on a
        # thread in its default state (no mode, autocast off, no trace), as one callable
        # taking the op's arguments: the CPU kernel, or the kernel above it with its operator
        # and key set bound. The generated wrappers call it directly (ops/wrappers.py);
        # every registration renews it.
        self.plain_cpu = self._direct_kernel(PLAIN_CPU_KEYSET)
        self.plain_cpu_grad = self._direct_kernel(PLAIN_CPU_GRAD_KEYSET)

    def _direct_kernel(self, keyset: int):
        """What a call with tensor key set `keyset` runs on a thread in its default state, as
        one callable taking the op's arguments. A kernel above the backends may carry
        `direct(op, ks)`, which makes a callable doing what `kernel(op, ks, *args)` does
        there, with the layers below it fused in (the Autograd and ADInplaceOrView kernels
        do: every op call with grad, and every view, takes that path). Either way the
        callable's `func` and `args` name the kernel and its (op, keys), as a partial's."""
        ks = keyset & ~AUTOCAST_MASK & self.mask
        top = ks.bit_length() - 1
        if top < 0:
            return None
        kernel = self.table[top]
        if top <= _LAST_BACKEND:
            return kernel
        fuse = getattr(kernel, "direct", None)
        if fuse is None:
            return partial(kernel, self, ks & _BELOW[top])
        fused = fuse(self, ks & _BELOW[top])
        if fused.__class__ is not partial:   # read as a partial: what runs, and with what
            fused.func, fused.args = kernel, (self, ks & _BELOW[top])
        return fused

    # ---- calling ---------------------------------------------------------------------
    def __call__(self, /, *args, **kwargs):
        if kwargs or len(args) != self.nargs:
            args = bind_arguments(self, args, kwargs)
        if not self.tensor_positions:     # a factory: BackendSelect picks the backend
            return self.dispatch(_BACKEND_SELECT, *args)
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
        elif several_gpus and backends == _CUDA_ONLY:
            check_same_device(self, args, ks)
        if _tracers:
            return _traced(self, ks, args)
        # `untraced`, inlined: this is every op call's path
        ks &= self.mask
        key = ks.bit_length() - 1
        if key < 0:
            raise self._missing_kernel_error(args)
        if key <= _LAST_BACKEND:
            return self.table[key](*args)
        return self.table[key](self, ks & _BELOW[key], *args)

    def redispatch(self, ks: int, *args):
        """Continue a call with key set `ks` (a kernel passes the keys below its own)."""
        if _tracers:
            return _traced(self, ks, args)
        return untraced(self, ks, args)

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
        """The computed dispatch table, one line per key with a kernel, highest first, each
        saying where its kernel came from (torch._C._dispatch_dump_table)."""
        lines = [f"name: {self.name}", f"schema: {self.schema}"]
        for key in reversed(DispatchKey):
            kernel, source = self.table[key], self.sources[key]
            if kernel is not None:
                where = getattr(kernel, "__qualname__", type(kernel).__name__)
                lines.append(f"{key.name}: {where} [{getattr(kernel, '__module__', '')}]"
                             + ("" if source == "kernel" else f" ({source})"))
            elif source is not None:
                lines.append(f"{key.name}: fallthrough ({source})")
        return "\n".join(lines)

    def __repr__(self):
        return f"<Operator {self.name}>"


def _traced(op: Operator, ks: int, args: tuple):
    """`redispatch` while a dispatch trace is on: the trace's hook runs the layer. (If the
    last trace ended since `redispatch` looked, run the layer plainly.)"""
    for hook in _tracers[:1]:
        return hook(op, ks, args)
    return untraced(op, ks, args)


def untraced(op: Operator, ks: int, args: tuple):
    """One `redispatch` step, as the hot path does it (for the trace hook's use)."""
    ks &= op.mask
    key = ks.bit_length() - 1
    if key < 0:
        raise op._missing_kernel_error(args)
    if key <= _LAST_BACKEND:
        return op.table[key](*args)
    return op.table[key](op, ks & _BELOW[key], *args)


def _composite_above_backends(fn):
    """A CompositeImplicitAutograd kernel seen from an autograd key: ignore the key set and
    run the decomposition, whose ops dispatch (and record autograd) themselves."""
    def kernel(op, ks, *args):
        return fn(*args)
    kernel.__qualname__ = getattr(fn, "__qualname__", type(fn).__name__)
    kernel.__module__ = getattr(fn, "__module__", None)
    return kernel


def bind_arguments(op: Operator, args: tuple, kwargs: dict) -> tuple:
    """The schema's arguments in order, from positional and keyword arguments, defaults
    filled in: the form every kernel receives. As in PyTorch, positional arguments may also
    fill keyword-only parameters. Errors name the op and its schema."""
    if not kwargs and op.min_args <= len(args) < op.nargs and args.__class__ is tuple:
        bound = args + op.defaults[len(args):]     # a mode's handler calling its `func`
        for i in op.int_lists:
            if bound[i].__class__ is int:
                break
        else:
            return bound
    params = op.schema.arguments
    if len(args) > len(params):
        raise RuntimeError(f"{op.name}() expected at most {len(params)} argument(s) but "
                           f"received {len(args)} argument(s). Declaration: {op.schema}")
    for a in params[:len(args)]:
        if a.name in kwargs:
            raise RuntimeError(f"{op.name}() got multiple values for argument '{a.name}'. "
                               f"Declaration: {op.schema}")
    bound = list(args)
    for a in params[len(args):]:
        if a.name in kwargs:
            value = kwargs[a.name]
        elif a.has_default:
            value = a.default
        else:
            raise RuntimeError(f"{op.name}() is missing value for argument '{a.name}'. "
                               f"Declaration: {op.schema}")
        bound.append(value)
    for i, a in enumerate(params):
        if a.type in _INT_LISTS and bound[i].__class__ is int:
            bound[i] = (bound[i],)
    unknown = [k for k in kwargs if not any(a.name == k for a in params)]
    if unknown:
        raise RuntimeError(f"Unknown keyword argument '{unknown[0]}' for operator "
                           f"'{op.name}'. Schema: {op.schema}")
    return tuple(bound)


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
    # called when the key set holds two backends (or CUDA tensors of several GPUs)
    if len({d for d, _ in devices if d.type != "cpu"}) == 1 and cpu_scalars_only:
        return ks & ~(1 << DispatchKey.CPU)   # run on the accelerator, reading CPU scalars
    first = devices[0][0]
    other = next(((d, n) for d, n in devices if d != first), None)
    if other is None:     # one device behind two backends (a fake tensor beside a real one):
        return ks         # the keys above the backends (FakeTensorMode's) have their say
    error = RuntimeError(
        f"Expected all tensors to be on the same device, but got {other[1]} is on "
        f"{other[0]}, different from other tensors on {first} (when checking argument in "
        f"method {op.name})")
    for hook in _tracers[:1]:
        hook.failed(op, ks, error)
    raise error


# ---- the registry --------------------------------------------------------------------

def define(schema_text: str, *, namespace: str = "aten", tags=()) -> Operator:
    """Create (or return the existing) operator for a schema string."""
    schema = parse_schema(schema_text, namespace)
    op = _operators.get(schema.qualified_name)
    if op is None:
        op = _operators[schema.qualified_name] = Operator(schema, tags)
        _packets.setdefault(f"{schema.namespace}::{schema.name}", {})[schema.overload] = op
    return op


def undefine(qualified_name: str) -> None:
    """Forget an operator (glasstorch.library's Library._destroy)."""
    op = _operators.pop(qualified_name, None)
    if op is not None:
        packet = f"{op.schema.namespace}::{op.schema.name}"
        _packets[packet].pop(op.schema.overload, None)
        if not _packets[packet]:
            del _packets[packet]
        for forget in undefine_listeners:
            forget(op)


# Called with each operator `undefine` removes: caches of it elsewhere (torch.ops attributes).
undefine_listeners: list = []


def overloads_of(packet_name: str) -> dict:
    """{overload name ('' for the default): Operator} of "ns::name"; empty if none."""
    return _packets.get(packet_name, {})


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


def fallback_for(key: DispatchKey):
    """The boxed kernel `key` runs for operators without their own (None if none)."""
    return _fallbacks.get(key)


def add_tracer(hook) -> None:
    """Route every `redispatch` through `hook(op, ks, args)` (dispatch/trace.py)."""
    _tracers.append(hook)


def remove_tracer(hook) -> None:
    _tracers.remove(hook)
