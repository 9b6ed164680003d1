"""Backends: where kernels run. `cpu` (NumPy) is always there; `cuda` (CuPy) is imported
the first time a CUDA tensor or query needs it. As `torch.backends`, this package also has
the switches and queries scripts use: `cudnn.benchmark`, `cuda.matmul.allow_tf32`,
`mps.is_available()`, `mkldnn.enabled`.

Importing this package registers the CUDA backend with core/device.py's registry, through
which storages and tensors reach the GPU without importing this layer."""
from ..core.device import register_device_backend
from . import cudnn, mkldnn, mps  # noqa: F401


class _CudaBackend:
    """core's entry to the CUDA backend: each call imports the module it needs, so CuPy
    loads only when a CUDA tensor or query first needs it."""

    @staticmethod
    def current_device() -> int:
        from .cuda import runtime
        return runtime.current_device()

    @staticmethod
    def index_of(device) -> int:
        from .cuda import runtime
        return runtime.index_of(device)

    @staticmethod
    def resolve(device):
        """The device a new storage goes on: 'cuda' means the current GPU."""
        from .cuda import runtime
        return runtime.resolve(device)

    @staticmethod
    def allocator(index: int):
        from .cuda.allocator import device_allocator
        return device_allocator(index)

    @staticmethod
    def array(buf, shape, dtype, offset, stride):
        from .cuda.arrays import device_array
        return device_array(buf, shape, dtype, offset, stride)

    @staticmethod
    def copy_between(dst, src):
        from .cuda.copy import copy_between
        return copy_between(dst, src)


register_device_backend("cuda", _CudaBackend())


def cuda_available() -> bool:
    """Whether CUDA tensors can be made: CuPy is installed and sees a GPU."""
    from .cuda import runtime
    return runtime.is_available()
