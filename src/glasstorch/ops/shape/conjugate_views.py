"""conj() as a view: the conjugate and negative bits (PyTorch's `_conj`, `_neg_view`).

`x.conj()` of a complex tensor shares x's storage and carries the conjugate bit: its values
are the stored ones conjugated, computed only when something reads them (ops/math_bits.py
resolves the bits for kernels that don't understand them). `x.conj().imag` carries the
negative bit the same way. `resolve_conj()`/`resolve_neg()` materialise; `conj_physical()`
always computes.
"""
from __future__ import annotations

from ...core.tensor import make_alias
from ...dispatch.keys import CONJ_BIT, NEG_BIT
from .. import math_bits  # noqa: F401  (the Conjugate and Negative keys' kernels)
from ..registry import composite, export, view
from .views import _alias_meta


def _toggling(bit: int, name: str):
    """The kernel of a view that flips one of the bits."""
    def kernel(self):
        out = make_alias(self, self._shape, self._stride, self._offset)
        out._keyset ^= bit
        return out
    kernel.__qualname__ = kernel.__name__ = name
    return kernel


conj_view = view("_conj(Tensor(a) self) -> Tensor(a)", _alias_meta,
                 doc="A view of self with the conjugate bit flipped (what conj() returns).")
conj_view.functional.register("CompositeExplicitAutograd", _toggling(CONJ_BIT, "_conj"))
neg_view = view("_neg_view(Tensor(a) self) -> Tensor(a)", _alias_meta,
                doc="A view of self with the negative bit flipped: its values are -self.")
neg_view.functional.register("CompositeExplicitAutograd", _toggling(NEG_BIT, "_neg_view"))


@composite(method=True)
def conj(input):
    """The complex conjugate, as a lazily conjugated view; a real tensor is returned itself
    and a sparse one conjugated (as PyTorch: sparse layouts carry no bit)."""
    if not input.dtype.is_complex:
        return input
    return input._conj() if input._sparse is None else input.conj_physical()


@composite(method=True)
def resolve_conj(input):
    """input with its conjugation computed: a new tensor if it has the conjugate bit, else
    input itself."""
    return input.clone() if input._keyset & CONJ_BIT else input


@composite(method=True)
def resolve_neg(input):
    """input with its negation computed: a new tensor if it has the negative bit, else input
    itself."""
    return input.clone() if input._keyset & NEG_BIT else input


def is_conj(input) -> bool:
    """Whether input is a lazily conjugated view (its conjugate bit is set)."""
    return input.is_conj()


def is_neg(input) -> bool:
    """Whether input's negative bit is set (`x.conj().imag`)."""
    return input.is_neg()


export("is_conj", is_conj)
export("is_neg", is_neg)
