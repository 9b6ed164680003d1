"""Backends: where kernels run. `cpu` (NumPy) is always there; `cuda` (CuPy) is imported
the first time a CUDA tensor or query needs it. As `torch.backends`, this package also has
the switches scripts set: `cudnn.benchmark`, `cuda.matmul.allow_tf32`."""
from . import cudnn  # noqa: F401


def device_allocator(device):
    """The allocator that owns a device's memory."""
    if device.type == "cuda":
        from .cuda.allocator import device_allocator as cuda_allocator
        return cuda_allocator(device.index)
    raise RuntimeError(f"glasstorch has no backend for device '{device}'")


def resolve_device(device):
    """The device a new storage goes on: 'cuda' means the current GPU."""
    if device.type == "cuda":
        from .cuda import runtime
        return runtime.resolve(device)
    return device


def cuda_available() -> bool:
    """Whether CUDA tensors can be made: CuPy is installed and sees a GPU."""
    from .cuda import runtime
    return runtime.is_available()
