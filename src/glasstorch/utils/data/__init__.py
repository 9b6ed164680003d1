"""glasstorch.utils.data: datasets, samplers and the DataLoader, as torch.utils.data."""
from . import _sharing  # noqa: F401  (tensors cross process boundaries through shared memory)
from ._collate import default_collate, default_convert
from ._worker import get_worker_info
from .dataloader import DataLoader, _DatasetKind
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "_DatasetKind", "default_collate",
           "default_convert", "get_worker_info", "random_split"]
