"""Derivative formulas of the copies and casts (copies.py).

See ops/derivative.py for how a formula is declared and what it receives.
"""
from __future__ import annotations

from ..derivative import derivative
from . import copies


@derivative(copies.clone_op, "CloneBackward0")
def _clone(grad):
    return (grad,)


@derivative(copies.to_copy, "ToCopyBackward0")
def _to_copy(grad):
    return (grad,)      # the engine casts the gradient back to the input's dtype
