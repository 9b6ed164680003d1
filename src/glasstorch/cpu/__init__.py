"""glasstorch.cpu: the CPU device's namespace (torch.cpu)."""
from . import amp  # noqa: F401


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1
