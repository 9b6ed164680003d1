"""Datasets: the map-style and iterable-style protocols, and the combinators torch ships.

A map-style `Dataset` answers `dataset[i]` (and usually `len`); an `IterableDataset` is a
stream. The combinators only index or chain their parts, so they cost nothing until read.

    >>> import glasstorch as torch
    >>> ds = TensorDataset(torch.arange(6).view(3, 2), torch.tensor([0, 1, 0]))
    >>> ds[1]
    (tensor([2, 3]), tensor(1))
    >>> train, val = random_split(range(10), [0.8, 0.2], generator=torch.Generator())
    >>> len(train), len(val)
    (8, 2)
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings

from ...ops.random.samplers import randperm
from ...random import default_generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]


class Dataset:
    """A map from keys to samples: subclasses define `__getitem__` (and usually `__len__`).

    A subclass may also define `__getitems__(indices)` to fetch a whole batch at once; the
    DataLoader then calls it instead of indexing one sample at a time.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define `__iter__`.

    With `num_workers > 0` every worker iterates its own copy; shard the stream inside
    `__iter__` with `get_worker_info()` or every worker yields everything.
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: "IterableDataset") -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample i is `tuple(t[i] for t in tensors)`; every tensor has the same first dim."""

    def __init__(self, *tensors):
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Zips datasets of equal length: sample i is a tuple (positional) or dict (keywords)."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = args or tuple(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list):
        parts = self.datasets.items() if isinstance(self.datasets, dict) else \
            enumerate(self.datasets)
        columns = {}
        for key, d in parts:
            if callable(getattr(d, "__getitems__", None)):
                got = d.__getitems__(indices)
                if len(got) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch. Expected "
                                     f"{len(indices)}, got {len(got)}")
                columns[key] = got
            else:
                columns[key] = [d[i] for i in indices]
        if isinstance(self.datasets, dict):
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        return [tuple(col[j] for col in columns.values()) for j in range(len(indices))]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets end to end; `cumulative_sizes[k]` is where part k ends."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        part = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[part - 1] if part else 0
        return self.datasets[part][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, chained lazily."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=default_generator):
    """Split into non-overlapping random `Subset`s of the given lengths.

    Fractions that sum to 1 become floor(frac * len) items each; the leftover items go one
    at a time to the splits in order, as torch distributes them.
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(n * frac))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              "empty dataset.", stacklevel=2)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input "
                         "dataset!")
    order = randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - length:end]) for end, length in zip(ends, lengths)]
