"""`torch._prims`: the primitive operators composite ops decompose into.

About a hundred operators in the `prims` namespace (`glasstorch.ops.prims.add.default`),
with PyTorch's names and schemas where PyTorch has the primitive: elementwise (each with its
scalar expression, `glasstorch._prims.scalar`), reductions, shapes and views, factories,
counter-based random numbers, and extern calls. Each is one `Prim` declaration
(`declaration.py`) holding its meta function and its NumPy implementation; `prims` maps
names to them, and `glasstorch._prims.<name>` is the primitive's OpOverload.
"""
from __future__ import annotations

from . import elementwise, extern, factories, reductions, shapes  # noqa: F401  (declare)
from .declaration import KINDS, Prim, prims
from .scalar import render, substitute

globals().update({name: p.overload for name, p in prims.items()})

__all__ = ["KINDS", "Prim", "prims", "render", "substitute", *prims]
