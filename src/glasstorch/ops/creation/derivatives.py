"""Derivative formulas of the tensors built from others (construction.py, factories.py).

See ops/derivative.py for how a formula is declared and what it receives.
"""
from __future__ import annotations

from ..derivative import derivative
from . import construction, factories


@derivative(construction.rot90, "Rot90Backward0")
def _rot90(grad, k, dims):
    return (grad.rot90(-k, dims),)


@derivative(construction.diag_embed, "DiagEmbedBackward0")
def _diag_embed(grad, offset, dim1, dim2):
    return (grad.diagonal(offset, dim1, dim2),)


@derivative(construction.block_diag_op, "BlockDiagBackward0")
def _block_diag(grad, tensors):
    out, r, c = [], 0, 0
    for t in tensors:
        shape = tuple(t.shape)
        h, w = shape if len(shape) == 2 else (1, shape[0]) if shape else (1, 1)
        out.append(grad[r:r + h, c:c + w].reshape(shape))
        r, c = r + h, c + w
    return tuple(out)


@derivative(factories.lift_fresh_copy_op, "LiftFreshBackward0_copy")    # PyTorch's name
def _lift_fresh_copy(grad):
    return (grad,)
