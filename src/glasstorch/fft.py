"""glasstorch.fft: the functions of torch.fft.

They are composites (ops/fft.py) over the three transform operators PyTorch uses,
`_fft_r2c`, `_fft_c2r` and `_fft_c2c`, whose derivatives (ops/derivatives_fft.py) make every
function here differentiable.
"""
from __future__ import annotations

from .core.tensor import Tensor
from .ops.fft.transforms import (fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2,
                      ifftn, ifftshift, ihfft, ihfft2, ihfftn, irfft, irfft2, irfftn, rfft,
                      rfft2, rfftfreq, rfftn)

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft",
           "ifft2", "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2",
           "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]

for _f in __all__:
    globals()[_f].__module__ = "glasstorch.fft"
del _f
__all__.append("Tensor")      # torch.fft.Tensor is torch.Tensor, as in PyTorch
