"""`torch.version`: which PyTorch API glasstorch implements, and glasstorch's own version.

`__version__` is the PyTorch release whose API glasstorch follows, so libraries that gate
on `torch.__version__` take their modern paths; `glasstorch` is this package's own release.
There is no CUDA or ROCm build: `cuda` and `hip` are None (CUDA tensors go through CuPy).
"""
from .torch_version import TorchVersion

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]

__version__ = TorchVersion("2.13.0")
glasstorch = "0.1.0"
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"     # glasstorch is not built from PyTorch's tree
