"""Backends: where kernels run. `cpu` (NumPy) exists; CUDA arrives with the CUDA issue."""


def device_allocator(device):
    """The allocator that owns a device's memory."""
    raise RuntimeError(f"glasstorch has no backend for device '{device}' yet: tensors can "
                       "live on 'cpu' or 'meta' (CUDA support is planned)")


def cuda_available() -> bool:
    """Whether CUDA tensors can be made: not until the CUDA backend exists."""
    return False
