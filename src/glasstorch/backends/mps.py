"""torch.backends.mps, so that scripts choosing their device (`'cuda' if ... else 'mps' if
torch.backends.mps.is_available() else 'cpu'`) run unchanged: glasstorch has no Apple GPU
backend, so MPS is neither built nor available."""
from __future__ import annotations


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False

