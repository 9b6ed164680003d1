"""`torch._ops`: the Python objects that name operators.

`glasstorch.ops.aten` is an `OpNamespace`; `glasstorch.ops.aten.add` the `OpOverloadPacket`
of add's overloads; `glasstorch.ops.aten.add.Tensor` an `OpOverload`, the object a
`TorchDispatchMode` receives as `func`. There is one OpOverload per dispatcher `Operator`,
so `func is glasstorch.ops.aten.add.Tensor` holds, as tools expect. Lookups are dictionary
reads in the dispatcher's index by name, cached on the namespace and packet objects.
"""
from __future__ import annotations

from .core.dtype import dtype
from .core.tensor import Tensor
from .dispatch import dispatcher


class OpOverload:
    """One overload of an operator: `aten.add.Tensor`. Calling it dispatches through every
    key, like the op's function."""

    __slots__ = ("_op", "_schema", "_overloadname", "overloadpacket", "__weakref__")

    def __init__(self, op: dispatcher.Operator, packet: "OpOverloadPacket"):
        self._op = op
        self._schema = op.schema
        self._overloadname = op.schema.overload or "default"
        self.overloadpacket = packet

    def __call__(self, /, *args, **kwargs):
        return self._op(*args, **kwargs)

    def redispatch(self, keyset, /, *args):
        """Continue the call below the keys a kernel took off `keyset`."""
        return self._op.redispatch(keyset, *args)

    def __getattr__(self, name: str):
        # The dispatcher's view of the op (dump, has_kernel_for, table, info) shows through.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._op, name)

    @property
    def __name__(self) -> str:
        """`add.Tensor`, `relu.default`, as PyTorch's."""
        return f"{self._schema.name}.{self._overloadname}"

    def name(self) -> str:
        """The qualified name, `aten::add.Tensor` (no `.default` for the default)."""
        return self._op.name

    @property
    def namespace(self) -> str:
        return self._schema.namespace

    @property
    def tags(self) -> list:
        return list(self._op.tags)

    def __str__(self):
        return f"{self.overloadpacket}.{self._overloadname}"

    def __repr__(self):
        return (f"<OpOverload(op='{self.overloadpacket}', "
                f"overload='{self._overloadname}')>")


def overload_of(op: dispatcher.Operator) -> OpOverload:
    """The OpOverload naming a dispatcher Operator (made once, then cached on it)."""
    overload = op.overload
    if overload is None:
        schema = op.schema
        packet = getattr(ops_namespace(schema.namespace), schema.name)
        overload = op.overload = OpOverload(op, packet)
    return overload


class OpOverloadPacket:
    """All overloads of one op name; calling it runs the default (or only) overload."""

    def __init__(self, namespace: str, name: str):
        self._namespace, self._name = namespace, name
        self.__name__ = name                   # as PyTorch's: "mul"
        self._qualified_op_name = f"{namespace}::{name}"

    def _overloads(self) -> dict:
        """{overload name ('default' for the default): Operator}, live from the dispatcher."""
        return dispatcher.overloads_of(self._qualified_op_name)

    def overloads(self) -> list:
        return [name or "default" for name in self._overloads()]

    def __getattr__(self, overload: str) -> OpOverload:
        if overload.startswith("__"):
            raise AttributeError(overload)
        op = self._overloads().get("" if overload == "default" else overload)
        if op is None:
            raise AttributeError(f"The underlying op of '{self}' has no overload name "
                                 f"'{overload}'")
        result = overload_of(op)
        setattr(self, overload, result)     # later lookups are plain attribute reads
        return result

    def __call__(self, /, *args, **kwargs):
        overloads = self._overloads()
        if not overloads:
            raise RuntimeError(f"No such operator {self._qualified_op_name}")
        if len(overloads) == 1:
            return next(iter(overloads.values()))(*args, **kwargs)
        return self._resolve(overloads, args, kwargs)(*args, **kwargs)

    def _resolve(self, overloads: dict, args: tuple, kwargs: dict) -> dispatcher.Operator:
        """The first overload, the default first, whose schema takes these arguments (as
        PyTorch's packet picks `sum.dim_IntList` for `aten.sum(t, [0], True)`); numbers may
        stand for Tensors there, as in PyTorch."""
        default = overloads.get("")
        ordered = ([default] if default is not None else []) + [
            op for name, op in overloads.items() if name]
        reasons = []
        for op in ordered:
            reason = _mismatch(op.schema, args, kwargs)
            if reason is None:
                return op
            reasons.append(f"{op.schema.name}() {reason}\nDeclaration: {op.schema}")
        raise RuntimeError("Overloaded glasstorch operator invoked from Python failed to "
                           "match any schema:\n" + "\n\n".join(reasons))

    def __str__(self):
        return f"{self._namespace}.{self._name}"

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self}')>"


def _mismatch(schema, args: tuple, kwargs: dict) -> str | None:
    """Why a schema cannot take these arguments, or None when it can."""
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        return (f"expected at most {len(positional)} positional argument(s) but received "
                f"{len(args)}.")
    for i, a in enumerate(schema.arguments):
        if i < len(args) and not a.kwarg_only:
            value = args[i]
        elif a.name in kwargs:
            value = kwargs[a.name]
        elif a.has_default:
            continue
        else:
            return f"is missing value for argument '{a.name}'."
        if not _accepts(a.type, value):
            return (f"Expected a value of type '{a.type}' for argument '{a.name}' but "
                    f"instead found type '{type(value).__name__}'.")
    names = {a.name for a in schema.arguments}
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        return f"got an unexpected keyword argument '{unknown[0]}'."
    return None


def _accepts(type_name: str, value) -> bool:
    """Whether a Python value fits a schema type, as overload resolution reads it."""
    if type_name.endswith("?"):
        if value is None:
            return True
        type_name = type_name[:-1]
    if type_name.endswith("]"):                  # int[], int[2], Tensor[], Tensor?[]
        element = type_name[:type_name.index("[")]
        if element in ("int", "SymInt") and _accepts(element, value):
            return True                          # int[1] also takes one int
        return (isinstance(value, (list, tuple))
                and all(_accepts(element, v) for v in value))
    if type_name == "Tensor":
        return isinstance(value, (Tensor, bool, int, float, complex))
    if type_name in ("int", "SymInt"):
        return isinstance(value, int) or (isinstance(value, Tensor) and value.dim() == 0)
    if type_name in ("float", "SymFloat"):
        return isinstance(value, (int, float))
    if type_name == "bool":
        return isinstance(value, bool)
    if type_name == "Scalar":
        return isinstance(value, (bool, int, float, complex, Tensor))
    if type_name == "ScalarType":
        return isinstance(value, dtype)
    if type_name in ("str", "Dimname"):
        return isinstance(value, str)
    return True                                  # Device, Layout, Generator, ...


class OpNamespace:
    """`glasstorch.ops.aten`, `glasstorch.ops.mylib`: attribute access finds op packets."""

    def __init__(self, name: str):
        self.name = name
        self._packets: dict = {}

    def __getattr__(self, op_name: str) -> OpOverloadPacket:
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        if not dispatcher.overloads_of(f"{self.name}::{op_name}"):
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        packet = self._packets.get(op_name)
        if packet is None:
            packet = self._packets[op_name] = OpOverloadPacket(self.name, op_name)
        setattr(self, op_name, packet)      # later lookups are plain attribute reads
        return packet

    def __repr__(self):
        return f"glasstorch.ops.{self.name}"


_namespaces: dict = {}


def _forget(op: dispatcher.Operator) -> None:
    """Drop the cached attributes that lead to an undefined operator."""
    schema = op.schema
    namespace = _namespaces.get(schema.namespace)
    if namespace is None:
        return
    packet = namespace._packets.get(schema.name)
    if packet is not None:
        packet.__dict__.pop(schema.overload or "default", None)
        if not packet._overloads():
            namespace.__dict__.pop(schema.name, None)


dispatcher.undefine_listeners.append(_forget)


def ops_namespace(name: str) -> OpNamespace:
    """The one OpNamespace object for `name`."""
    namespace = _namespaces.get(name)
    if namespace is None:
        namespace = _namespaces[name] = OpNamespace(name)
    return namespace
