"""DistributedSampler: each of `num_replicas` processes reads its own 1/num_replicas share.

`num_replicas` and `rank` default to the default process group's world size and rank.

    >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
    [1, 3, 0]
"""
from __future__ import annotations

import math

from ...ops.random.samplers import randperm
from ...random import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Rank r takes every num_replicas-th key from r, after an optional seed+epoch shuffle.

    Without `drop_last` the key list is padded by repeating its start so every rank gets the
    same count; with it the tail is dropped instead. Call `set_epoch` before each epoch.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist       # get_*: PyTorch's error without a group
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            keys = randperm(n, generator=g).tolist()
        else:
            keys = list(range(n))
        if self.drop_last:
            keys = keys[:self.total_size]
        else:
            pad = self.total_size - len(keys)
            keys += (keys * math.ceil(pad / len(keys)))[:pad] if pad else []
        return iter(keys[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle differently (but identically on every rank) for the next epoch."""
        self.epoch = epoch
