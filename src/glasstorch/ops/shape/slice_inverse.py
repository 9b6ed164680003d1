"""torch.slice_inverse: the base a slice was taken from, rebuilt as a view. Given `self`, a
slice of `src` (dim, start, end, step), it views self's storage with src's sizes, strides and
offset; functionalization uses it to write a mutated slice back into its base."""
from __future__ import annotations

from ..registry import composite


@composite(method=True)
def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """A view of self's storage laid out as src."""
    return self.as_strided(tuple(src.shape), src.stride(), src.storage_offset())
