"""Operator declarations, and `glasstorch.ops.<namespace>.<name>` access to operators.

`glasstorch.ops.aten.add` is the packet of add's overloads; `.Tensor` (or `.default`) is
the Operator, callable like the op itself and dispatching through every key.
"""
from __future__ import annotations

import importlib
import importlib.util

from ..dispatch import dispatcher


class OpOverloadPacket:
    """All overloads of one op name; calling it runs the default (or only) overload."""

    def __init__(self, namespace: str, name: str):
        self._namespace, self._name = namespace, name

    def _overloads(self) -> dict:
        prefix = f"{self._namespace}::{self._name}"
        out = {}
        for op in dispatcher.all_operators():
            if op.name == prefix:
                out["default"] = op
            elif op.name.startswith(prefix + "."):
                out[op.name[len(prefix) + 1:]] = op
        return out

    def overloads(self) -> list:
        return list(self._overloads())

    def __getattr__(self, overload: str):
        if overload.startswith("_"):
            raise AttributeError(overload)
        try:
            return self._overloads()[overload]
        except KeyError:
            raise AttributeError(f"'{self._namespace}.{self._name}' has no overload "
                                 f"'{overload}'") from None

    def __call__(self, *args, **kwargs):
        overloads = self._overloads()
        op = overloads.get("default") or next(iter(overloads.values()), None)
        if op is None:
            raise RuntimeError(f"No such operator {self._namespace}::{self._name}")
        return op(*args, **kwargs)

    def __repr__(self):
        return f"glasstorch.ops.{self._namespace}.{self._name}"


class OpNamespace:
    """`glasstorch.ops.aten`, `glasstorch.ops.mylib`: attribute access finds op packets."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, name: str) -> OpOverloadPacket:
        if name.startswith("__"):
            raise AttributeError(name)
        packet = OpOverloadPacket(self._name, name)
        if not packet._overloads():
            raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute "
                                 f"'{name}'")
        return packet

    def __repr__(self):
        return f"glasstorch.ops.{self._name}"


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")   # a declaration module
    return OpNamespace(name)
