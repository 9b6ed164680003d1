"""Sequence packing: PackedSequence and the helpers that pack, pad and unpad batches.

A packed batch stores, for each time step t, the rows of the batch_sizes[t] sequences still
running, longest sequences first, one step after another; recurrent layers then run each
step on a shrinking prefix of the batch. Every conversion here is one gather over an index
computed with NumPy from the lengths (index_select or advanced indexing), so it is
differentiable and has no per-element Python loop.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable

import numpy as np

from ...core import dtype as dt
from ...core.tensor import Tensor, contiguous_format
from ...ops.creation.factories import as_tensor, empty_like, full
from ...ops.shape.joining import cat
from ...ops.creation.ranges import arange
from ...ops.sorting.sort_and_select import sort

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


def _index(values, device) -> Tensor:
    return as_tensor(np.ascontiguousarray(values, dtype=np.int64), device=device)


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(namedtuple("PackedSequence_",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A packed batch of variable-length sequences (made by pack_padded_sequence/pack_sequence).

    `data` holds the rows step by step, `batch_sizes` (int64, CPU) how many sequences run at
    each step, `sorted_indices` the order the batch was sorted into (None if it was already
    sorted) and `unsorted_indices` its inverse.
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(
            data, batch_sizes, sorted_indices, unsorted_indices))

    def pin_memory(self) -> "PackedSequence":
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          _bind(self.sorted_indices, lambda t: t.pin_memory()),
                          _bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs) -> "PackedSequence":
        """Convert `data` as Tensor.to does (indices follow its device; batch_sizes stays)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        non_blocking = kwargs.get("non_blocking", False)

        def move(t):
            return t.to(data.device, non_blocking=non_blocking)
        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, move),
                          _bind(self.unsorted_indices, move))

    def cuda(self, device=None, non_blocking: bool = False) -> "PackedSequence":
        return self.to("cuda" if device is None else device, non_blocking=non_blocking)

    def cpu(self) -> "PackedSequence":
        return self.to("cpu")

    def double(self) -> "PackedSequence":
        return self.to(dtype=dt.float64)

    def float(self) -> "PackedSequence":
        return self.to(dtype=dt.float32)

    def half(self) -> "PackedSequence":
        return self.to(dtype=dt.float16)

    def long(self) -> "PackedSequence":
        return self.to(dtype=dt.int64)

    def int(self) -> "PackedSequence":
        return self.to(dtype=dt.int32)

    def short(self) -> "PackedSequence":
        return self.to(dtype=dt.int16)

    def char(self) -> "PackedSequence":
        return self.to(dtype=dt.int8)

    def byte(self) -> "PackedSequence":
        return self.to(dtype=dt.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None,
                               unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should "
                "never be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D permutation (None stays None)."""
    if permutation is None:
        return None
    output = empty_like(permutation, memory_format=contiguous_format)
    output.scatter_(0, permutation, arange(0, permutation.numel(),
                                           device=permutation.device))
    return output


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) batch (B, T, * with batch_first) of sequences of `lengths`."""
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=dt.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=dt.int64)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
    if lengths.dim() != 1 or lengths.device.type != "cpu":
        raise RuntimeError(
            f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
            f"{lengths.device} Long tensor")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    batch_dim = 0 if batch_first else 1
    time_dim = 1 - batch_dim
    batch_size, steps = input.size(batch_dim), input.size(time_dim)
    lens = np.asarray(lengths.tolist(), dtype=np.int64)
    if lens.size != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={batch_size})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if enforce_sorted and np.any(lens[1:] > lens[:-1]):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
            "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
            "pack_sequence to sidestep this requirement if you do not need ONNX "
            "exportability.")
    if lens[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a sequence length of {lens[0]} exceeds "
                           f"the {steps} time steps of the padded input")
    # row-major over (t, b) lists step t's running sequences in sorted order
    t_idx, b_idx = np.nonzero(np.arange(lens[0])[:, None] < lens[None, :])
    if sorted_indices is not None:
        b_idx = np.asarray(sorted_indices.tolist(), dtype=np.int64)[b_idx]
    t_idx, b_idx = _index(t_idx, input.device), _index(b_idx, input.device)
    data = input[b_idx, t_idx] if batch_first else input[t_idx, b_idx]
    batch_sizes = as_tensor((lens[None, :] > np.arange(lens[0])[:, None]).sum(1),
                            dtype=dt.int64)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Undo packing: (padded (T, B, *) or (B, T, *), lengths (int64, CPU))."""
    data = sequence.data
    sizes = np.asarray(sequence.batch_sizes.tolist(), dtype=np.int64)
    steps = sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}")
        steps = total_length
    batch = int(sizes[0])
    sizes = np.concatenate([sizes, np.zeros(steps - sizes.size, np.int64)])
    starts = np.cumsum(sizes) - sizes
    cols = np.arange(batch)
    # row (t, b) gathers data[starts[t] + b] while b runs at step t, else the padding row
    idx = np.where(cols[None, :] < sizes[:, None], starts[:, None] + cols[None, :],
                   data.size(0))
    pad = full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype,
               device=data.device)
    padded = cat([data, pad]).index_select(0, _index(idx.ravel(), data.device))
    padded = padded.view((steps, batch) + tuple(data.shape[1:]))
    if batch_first:
        padded = padded.transpose(0, 1)
    lengths = as_tensor((sizes[None, :] > cols[:, None]).sum(1), dtype=dt.int64)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        return (padded.index_select(0 if batch_first else 1, unsorted),
                lengths[unsorted.cpu()])
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack variable-length (L_i, *) tensors into (T, B, *) (B, T, * with batch_first)."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    first = sequences[0]
    if any(s.dim() == 0 for s in sequences):
        raise RuntimeError("pad_sequence: Expected every sequence to have at least one "
                           "dimension, but got a 0-dim tensor")
    trailing = tuple(first.shape[1:])
    for s in sequences:
        if s.dim() != first.dim():
            raise RuntimeError(f"pad_sequence: every sequence must have {first.dim()} "
                               f"dimensions, but got one with {s.dim()}")
        for d, (size, want) in enumerate(zip(s.shape[1:], trailing), start=1):
            if size != want:
                raise RuntimeError(f"The size of tensor a ({want}) must match the size of "
                                   f"tensor b ({size}) at non-singleton dimension {d}")
    lens = np.asarray([s.size(0) for s in sequences], dtype=np.int64)
    steps = int(lens.max())
    starts = np.cumsum(lens) - lens
    t = np.arange(steps)[:, None]
    shift = steps - lens[None, :] if padding_side == "left" else 0
    pos = t - shift
    idx = np.where((pos >= 0) & (pos < lens[None, :]), starts[None, :] + pos, lens.sum())
    if batch_first:
        idx = idx.T
    pad = full((1,) + trailing, padding_value, dtype=first.dtype, device=first.device)
    rows = cat([s.to(first.dtype) for s in sequences] + [pad])
    out = rows.index_select(0, _index(idx.ravel(), first.device))
    return out.view(idx.shape + trailing)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its sequences (copies, one per length)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    idx = arange(padded_sequences.shape[1], device=lengths.device)
    return [seq[idx < length] for seq, length in zip(padded_sequences, lengths)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of variable-length (L_i, *) tensors (longest first if enforce_sorted)."""
    lengths = as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
