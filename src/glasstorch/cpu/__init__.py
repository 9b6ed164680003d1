"""glasstorch.cpu: the CPU device's namespace (torch.cpu)."""
from . import amp  # noqa: F401


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def set_per_process_memory_fraction(fraction: float) -> None:
    """Cap the CPU allocations at `fraction` of physical memory: past it, an allocation
    raises OutOfMemoryError (a glasstorch extension mirroring torch.cuda's)."""
    from ..memory import set_per_process_memory_fraction as _set
    _set(fraction, "cpu")
