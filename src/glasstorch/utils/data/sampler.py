"""Samplers: the orders in which a DataLoader reads a map-style dataset's keys.

Random samplers draw from their `generator`, or, without one, from a fresh generator seeded
by the default generator each epoch (torch's rule, so `manual_seed` makes runs repeat).

    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
"""
from __future__ import annotations

from ...core import dtype as dt
from ...ops.creation.factories import as_tensor, empty
from ...ops.random.samplers import multinomial, randint, randperm
from ...random import Generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: subclasses define `__iter__` over keys (and `__len__` when known)."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _epoch_generator(generator):
    """The generator to draw one epoch from: the given one, or a new one seeded by torch's rule."""
    if generator is not None:
        return generator
    seed = int(empty((), dtype=dt.int64).random_().item())
    return Generator().manual_seed(seed)


def _check_bool(name: str, value, error=TypeError) -> None:
    if not isinstance(value, bool):
        raise error(f"{name} should be a boolean value, but got {name}={value}")


def _check_positive(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


class RandomSampler(Sampler):
    """A random permutation, or `num_samples` draws with replacement.

    Without replacement and with `num_samples > len`, whole permutations follow each other.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples=None,
                 generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_bool("replacement", replacement)
        _check_positive("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = _epoch_generator(self.generator)
        count = self.num_samples
        if self.replacement:
            for _ in range(count // 32):
                yield from randint(high=n, size=(32,), dtype=dt.int64, generator=g).tolist()
            yield from randint(high=n, size=(count % 32,), dtype=dt.int64,
                               generator=g).tolist()
        else:
            for _ in range(count // n):
                yield from randperm(n, generator=g).tolist()
            yield from randperm(n, generator=g).tolist()[:count % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, without replacement."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        _check_positive("num_samples", num_samples)
        _check_bool("replacement", replacement)
        weights = as_tensor(weights, dtype=dt.float64)
        if weights.dim() != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's keys into lists of `batch_size` (the last may be short)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        _check_positive("batch_size", batch_size)
        _check_bool("drop_last", drop_last, ValueError)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        size = self.batch_size
        while True:
            batch = [k for _, k in zip(range(size), it)]
            if len(batch) == size or (batch and not self.drop_last):
                yield batch
            if len(batch) < size:
                return

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
