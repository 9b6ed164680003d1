"""`torch._decomp`: composite ATen ops written in core ATen ops and primitives.

`decomposition_table` maps an OpOverload (`aten._softmax.default`) to a function with the
op's signature that computes the same result by calling smaller ops; `get_decompositions`
picks entries for a list of ops or packets, and `core_aten_decompositions()` gives those
that lower an op outside PyTorch's core ATen set, as PyTorch's does (so `_softmax`,
`native_layer_norm`, `gelu`, ... are kept: they are core ATen themselves).

A decomposition calls ops through the dispatcher, so it records autograd like any
composite (its gradient is the chain rule over its pieces) and a dispatch mode watching it
sees only the core ATen ops and primitives it is made of.
"""
from __future__ import annotations

from .._ops import OpOverload, OpOverloadPacket, overload_of
from ..dispatch import dispatcher

__all__ = ["core_aten_decompositions", "decomposition_table", "get_decompositions",
           "register_decomposition"]

decomposition_table: dict = {}     # OpOverload -> function

# Ops PyTorch's core_aten_decompositions() leaves undecomposed: core ATen ops (tagged
# `core`), and native_batch_norm and var_mean, which it also keeps (test_decomp_api checks
# the membership against PyTorch's).
_CORE_ATEN = {"aten::_softmax", "aten::_log_softmax", "aten::native_layer_norm",
              "aten::native_batch_norm", "aten::native_group_norm", "aten::gelu",
              "aten::elu", "aten::leaky_relu", "aten::native_dropout", "aten::var_mean.correction"}


def _overloads(op) -> list:
    if isinstance(op, OpOverload):
        return [op]
    if isinstance(op, OpOverloadPacket):
        return [getattr(op, name) for name in op.overloads()]
    raise TypeError(f"expected an OpOverload or OpOverloadPacket, got {type(op).__name__}")


def register_decomposition(aten_op, registry=None, *, type="post_autograd", unsafe=False):
    """Decorator: register the function as the decomposition of `aten_op` (an OpOverload,
    a packet, meaning all its overloads, or a list of them) in `registry` (default: the
    global `decomposition_table`). Registering an op twice is an error, as in PyTorch.
    `unsafe` is accepted for PyTorch's signature; it changes nothing here."""
    if type not in ("post_autograd", "pre_autograd", "meta"):
        raise ValueError(f"type must be 'post_autograd', 'pre_autograd' or 'meta', got "
                         f"{type!r}")
    table = decomposition_table if registry is None else registry
    ops = [o for op in (aten_op if isinstance(aten_op, (list, tuple)) else [aten_op])
           for o in _overloads(op)]

    def register(fn):
        for op in ops:
            if op in table:
                raise RuntimeError(f"duplicate registrations for {op}")
            table[op] = fn
        return fn
    return register


def define_by_decomposition(schema: str):
    """Decorator for an op PyTorch has and glasstorch had no kernel for: define
    `aten::<schema>` with the function as its CompositeImplicitAutograd kernel (it runs on
    every backend, and autograd records its pieces), and register it as the op's
    decomposition. An op declared elsewhere with kernels of its own keeps them."""
    def register(fn):
        op = dispatcher.define(schema)
        if not op.kernels:
            op.register("CompositeImplicitAutograd", fn)
        return register_decomposition(overload_of(op))(fn)
    return register


def get_decompositions(aten_ops, type="post_autograd") -> dict:
    """{OpOverload: decomposition} for the listed ops; a packet selects every overload of
    it that has a decomposition. Ops without one are left out."""
    if type != "post_autograd":
        return {}
    wanted = set()
    for op in aten_ops:
        wanted.update(_overloads(op))
    return {op: fn for op, fn in decomposition_table.items() if op in wanted}


def core_aten_decompositions() -> dict:
    """The decompositions that lower non-core ATen ops to core ATen ops and primitives."""
    return {op: fn for op, fn in decomposition_table.items() if op.name() not in _CORE_ATEN}


from . import backward, decompositions  # noqa: E402,F401  (fill the table)
