"""torch.nn.parallel: DistributedDataParallel (gradients averaged across processes, in
buckets overlapped with the backward pass) and DataParallel."""
from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
