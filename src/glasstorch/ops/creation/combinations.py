"""combinations: the r-length combinations of a 1-D tensor's elements, as rows
(itertools.combinations, with or without replacement).
"""
from __future__ import annotations

import numpy as np

from ..registry import composite, require_tensor


@composite()
def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-D tensor's elements, as rows (itertools order)."""
    import itertools
    require_tensor("combinations", "input", 1, input)
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    from ..creation.factories import tensor
    return input[tensor(rows, device=input.device)]
