"""torch.segment_reduce: reductions over consecutive segments of one dim, the segments given
by their lengths or offsets. A composite: each element gets its segment's number (a
searchsorted over the cumulative lengths) and `scatter_reduce` does the reduction, so the
gradient is scatter_reduce's."""
from __future__ import annotations

import math

from ..creation.factories import full, zeros
from ..creation.ranges import arange
from ..registry import composite
from ..shape.joining import where
from ..sorting.sort_and_select import searchsorted

_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "max": "amax", "amax": "amax",
               "min": "amin", "amin": "amin"}
_EMPTY = {"sum": 0.0, "prod": 1.0, "mean": math.nan, "amax": -math.inf, "amin": math.inf}


@composite()
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """`reduce` ("sum", "prod", "mean", "max", "min") over each segment along `axis`;
    an empty segment gives `initial`, or the reduction's identity (nan for mean)."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
    if lengths is None:
        lengths = offsets[..., 1:] - offsets[..., :-1]
    axis = axis % data.dim()
    if lengths.dim() != axis + 1:
        raise RuntimeError(f"segment_reduce(): Expected lengths to have {axis + 1} dims, one "
                           f"more than axis={axis}, but got {lengths.dim()}")
    size = data.shape[axis]
    if not unsafe and not bool((lengths.sum(-1) == size).all()):
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    op = _REDUCTIONS[reduce]
    lead, trailing = tuple(data.shape[:axis]), tuple(data.shape[axis + 1:])
    segments = lengths.shape[-1]
    ends = lengths.cumsum(-1)
    positions = arange(size, device=data.device).expand(lead + (size,)).contiguous()
    ids = searchsorted(ends.contiguous(), positions, right=True)
    ids = ids.reshape(lead + (size,) + (1,) * len(trailing)).expand(tuple(data.shape))
    out_shape = lead + (segments,) + trailing
    counts = lengths.reshape(lead + (segments,) + (1,) * len(trailing))
    if op == "mean":
        start = zeros(out_shape, dtype=data.dtype, device=data.device) if initial is None \
            else full(out_shape, initial, dtype=data.dtype, device=data.device)
        total = start.scatter_add(axis, ids, data)
        empty = _EMPTY["mean"] if initial is None else initial
        return where(counts > 0, total / counts.clamp(min=1).to(data.dtype),
                     full((), empty, dtype=data.dtype, device=data.device))
    if initial is not None:
        start = full(out_shape, initial, dtype=data.dtype, device=data.device)
        return start.scatter_reduce(axis, ids, data, op, include_self=True)
    reduced = zeros(out_shape, dtype=data.dtype, device=data.device).scatter_reduce(
        axis, ids, data, op, include_self=False)
    return where(counts > 0, reduced, full((), _EMPTY[op], dtype=data.dtype,
                                          device=data.device))


