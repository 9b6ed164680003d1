"""glasstorch.cuda: the CUDA device's namespace (torch.cuda). Without a GPU (and until the
CUDA backend exists) `is_available()` is False and nothing here touches CuPy."""
from . import amp  # noqa: F401
from ..backends import cuda_available


def is_available() -> bool:
    return cuda_available()


def device_count() -> int:
    return 0 if not cuda_available() else 1
