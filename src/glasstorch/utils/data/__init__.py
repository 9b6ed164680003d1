"""glasstorch.utils.data: datasets, samplers and the DataLoader, as torch.utils.data."""
from . import _sharing  # noqa: F401  (tensors cross process boundaries through shared memory)
from ._collate import default_collate, default_convert
from ._worker import get_worker_info
from .dataloader import DataLoader, _DatasetKind
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .distributed import DistributedSampler
from .datapipes import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe,  # noqa: F401
                        argument_validation, functional_datapipe,
                        guaranteed_datapipes_determinism, non_deterministic,
                        runtime_validation, runtime_validation_disabled)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "_DatasetKind", "default_collate",
           "default_convert", "get_worker_info", "random_split", "DataChunk",
           "DFIterDataPipe", "IterDataPipe", "MapDataPipe", "argument_validation",
           "functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
           "runtime_validation", "runtime_validation_disabled"]
