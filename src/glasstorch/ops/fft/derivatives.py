"""Derivative formulas of the Fourier transforms (transforms.py).

The transforms are linear, so each backward is another transform of the gradient: the
adjoint of a DFT is the inverse DFT with the same normalization code (PyTorch's convention
for complex gradients makes the adjoint, not its conjugate, the gradient's map). A one-sided
transform's adjoint also accounts for the half of the spectrum it dropped or implied.
"""
from __future__ import annotations

from ..derivative import derivative
from .transforms import _fft_c2c, _fft_r2c
from ..shape.joining import _cat
from . import transforms


@derivative(transforms._fft_r2c, "FftR2CBackward0")
def _r2c(grad, self_shape, dim, normalization, onesided):
    last = dim[-1] % len(self_shape)
    missing = self_shape[last] - grad.shape[last]
    if onesided and missing > 0:     # the dropped frequencies had no effect: zero gradient
        shape = list(grad.shape)
        shape[last] = missing
        grad = _cat([grad, grad.new_zeros(shape)], last)
    return (_fft_c2c(grad, dim, normalization, False).real,)


@derivative(transforms._fft_c2r, "FftC2RBackward0")
def _c2r(grad, dim, normalization):
    g = _fft_r2c(grad, dim, normalization, True)
    last = dim[-1] % grad.dim()
    doubled = grad.shape[last] - g.shape[last]
    if doubled > 0:     # entries 1..doubled stand for themselves and their mirror image
        weight = grad.new_ones(g.shape[last])
        weight[1:1 + doubled] = 2
        g = g * weight.reshape((-1,) + (1,) * (grad.dim() - 1 - last))
    return (g,)


@derivative(transforms._fft_c2c, "FftC2CBackward0")
def _c2c(grad, dim, normalization, forward):
    return (_fft_c2c(grad, dim, normalization, not forward),)

