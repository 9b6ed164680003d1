"""Derivatives of the bit-flipping views: each is its own adjoint."""
from __future__ import annotations

from ..derivative import derivative, linear_in_inputs
from . import conjugate_views


@derivative(conjugate_views.conj_view, "ConjBackward0")
def _conj(grad):
    return (grad.conj(),)


@derivative(conjugate_views.neg_view, "NegViewBackward0")
def _neg_view(grad):
    return (grad.neg(),)


linear_in_inputs(conjugate_views.conj_view, conjugate_views.neg_view)
