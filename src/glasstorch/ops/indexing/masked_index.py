"""torch._unsafe_masked_index and _unsafe_masked_index_put_accumulate: advanced indexing in
which a mask marks the valid positions. Where the mask is False the index may be out of
range; it is clamped into range and the result there is `fill` (or nothing is added). The
compiler emits them for padding; written in indexing ops, so they are differentiable."""
from __future__ import annotations

from ...core import dtype as dt
from ..creation.factories import full
from ..registry import composite


def _checked(name, input, mask, indices):
    for index in indices:
        if index is not None and index.dtype not in (dt.int64, dt.int32):
            raise IndexError("tensors used as indices must be long or int tensors")
    if mask.dtype is not dt.bool:
        raise RuntimeError("tensors used as masks must be bool tensors")
    return tuple(slice(None) if index is None else index.clamp(0, input.shape[d] - 1)
                 for d, index in enumerate(indices))


@composite()
def _unsafe_masked_index(input, mask, indices, fill):
    """input[indices] where mask is True, `fill` elsewhere (out-of-range indices allowed
    there)."""
    where = _checked("_unsafe_masked_index", input, mask, indices)
    if input.numel() == 0:
        return full(tuple(mask.shape) + tuple(input.shape[len(indices):]), fill,
                    dtype=input.dtype, device=input.device)
    return input[where].masked_fill(~mask, fill)


@composite()
def _unsafe_masked_index_put_accumulate(input, mask, indices, values):
    """input with values added at indices where mask is True (a copy)."""
    where = _checked("_unsafe_masked_index_put_accumulate", input, mask, indices)
    return input.index_put(where, values.masked_fill(~mask, 0), accumulate=True)
