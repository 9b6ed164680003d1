"""torch.backends.mkldnn's switch and query, so that CPU scripts setting them run unchanged:
glasstorch does not call oneDNN (its CPU kernels are NumPy, BLAS and its own C), so
`enabled` selects nothing and `is_available()` is False."""
from __future__ import annotations

enabled = True
deterministic = False


def is_available() -> bool:
    return False
