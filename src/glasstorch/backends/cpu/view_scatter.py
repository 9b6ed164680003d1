"""The CPU kernel of the view scatters (diagonal/select/slice_scatter): a copy of the input
with the source written into the view that the view op's meta function describes."""
from __future__ import annotations

from ...core.tensor import Tensor
from .copy import assign_array


def scatter_kernel(view_meta):
    """out = self, then src written into out's view (found by the view op's own meta)."""
    def kernel(out, self, src, *args):
        assign_array(out._array(), self._array())
        shape, stride, offset = view_meta(out, *args)
        target = Tensor._make(out._storage, offset, tuple(shape), tuple(stride), out.dtype)
        assign_array(target._array(), src._array())
    return kernel
