"""torch._chunk_cat: split each tensor into num_chunks along dim (padding with zeros to a
multiple of it), flatten each chunk, and concatenate the tensors chunk by chunk, giving
(*leading, num_chunks, total). FSDP uses it to lay out gradient shards in one buffer."""
from __future__ import annotations

from ..nn.sampling import constant_pad_nd
from ..registry import composite, into_out
from ..shape.joining import cat


@composite()
def _chunk_cat(tensors, dim, num_chunks, *, out=None):
    """The tensors, each cut into num_chunks flattened chunks along dim, joined chunk-wise."""
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    first = tensors[0]
    for t in tensors:
        if t.numel() == 0:
            raise RuntimeError("_chunk_cat expects non-empty tensor")
        if t.dtype is not first.dtype:
            raise RuntimeError("_chunk_cat expects all input tensors with the same dtype")
        if t.device != first.device:
            raise RuntimeError("_chunk_cat expects all inputs tensors on the same device")
    if all(t.dim() == first.dim() for t in tensors):
        if not -first.dim() <= dim < first.dim():
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-first.dim()}, {first.dim() - 1}], but got {dim})")
        dim %= first.dim()
    else:
        if dim < 0:
            raise RuntimeError("_chunk_cat expects non-negative dim when input tensors have "
                               "different ndims")
        if any(dim >= t.dim() for t in tensors):
            raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
    if any(tuple(t.shape[:dim]) != tuple(first.shape[:dim]) for t in tensors):
        raise RuntimeError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all "
                           "tensors")
    pieces = []
    for t in tensors:
        size = t.shape[dim]
        padded = -(-size // num_chunks) * num_chunks
        if padded != size:
            t = constant_pad_nd(t, [0, 0] * (t.dim() - dim - 1) + [0, padded - size], 0)
        pieces.append(t.reshape(tuple(t.shape[:dim]) + (num_chunks, -1)))
    return into_out(out, cat(pieces, dim + 1))
