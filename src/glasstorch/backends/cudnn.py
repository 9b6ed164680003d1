"""torch.backends.cudnn's switches, so GPU training scripts that set them run unchanged.

glasstorch does not call cuDNN: convolutions run as matrix products (cuBLAS through CuPy on
a GPU), so `benchmark` and `deterministic` select nothing and `is_available()` is False.
"""
from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version():
    return None
