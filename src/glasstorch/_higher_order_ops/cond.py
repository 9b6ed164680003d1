"""torch.cond: choose between two functions by a predicate.

`cond(pred, true_fn, false_fn, operands)` is `true_fn(*operands)` when `pred` holds and
`false_fn(*operands)` otherwise. Written as one operator (rather than an `if`), a traced
program keeps both branches; run eagerly, only the chosen one runs, as in PyTorch.
"""
from __future__ import annotations

from collections.abc import Callable

from ..core.tensor import Tensor

__all__ = ["cond"]


def cond(pred, true_fn: Callable, false_fn: Callable, operands: tuple | list = ()):
    """Run `true_fn(*operands)` if `pred` (a bool or a one-element tensor) is true, else
    `false_fn(*operands)`."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError("Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        chosen = bool(pred.item())
    elif isinstance(pred, (bool, int, float)):
        chosen = bool(pred)
    else:
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("Expect both branches to be callable.")
    return (true_fn if chosen else false_fn)(*operands)
