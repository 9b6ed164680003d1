"""Derivative formulas of the copies and casts (copies.py).

See ops/derivative.py for how a formula is declared and what it receives.
"""
from __future__ import annotations

from ..creation.factories import full
from ..derivative import derivative, overwrites, recorded_through
from ..shape.joining import where
from . import copies


@derivative(copies.clone_op, "CloneBackward0")
def _clone(grad):
    return (grad,)


@derivative(copies.to_copy, "ToCopyBackward0")
def _to_copy(grad):
    return (grad,)      # the engine casts the gradient back to the input's dtype


# In-place copies and fills, recorded through what they compute out of place.
def _copied(self, src, non_blocking=False):
    """Every element becomes src's: self's old history gets a zero gradient (even when src
    does not require grad) and src the gradient, through where() as in fill_.Tensor."""
    return where(full(self._shape, True, device=self.device), src.to(self.dtype), self)


def _filled_with_tensor(self, value):
    """Every element becomes the value: self's gradient is zero and the value's the sum,
    which where() records (its mask selects the value everywhere)."""
    return where(full(self._shape, True, device=self.device), value.to(self.dtype), self)


recorded_through(copies.copy_, _copied, "CopyBackwards")
recorded_through(copies.fill_tensor_, _filled_with_tensor, "FillBackward3")
overwrites(copies.fill_, "FillBackward2")
