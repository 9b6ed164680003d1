"""CPU kernels for the FFT ops (_fft_r2c, _fft_c2c, _fft_c2r) over numpy.fft, with PyTorch's
normalization modes; float32/complex64 results are computed in double and rounded once."""
from __future__ import annotations

import numpy as np

from ...core.shape import wrap_dim
from ..arrays import asarray
from .copy import assign_array


NONE, BY_ROOT_N, BY_N = 0, 1, 2

_NUMPY_NORM = {True: {NONE: "backward", BY_ROOT_N: "ortho", BY_N: "forward"},
               False: {NONE: "forward", BY_ROOT_N: "ortho", BY_N: "backward"}}


def _dims(self, dim):
    return [wrap_dim(d, self.dim(), scalar_ok=False) for d in dim]


def r2c_cpu(out, self, dim, normalization, onesided):
    a = self._array().astype(np.float64, copy=False)
    norm = _NUMPY_NORM[True][normalization]
    dims = _dims(self, dim)
    transform = np.fft.rfftn if onesided else np.fft.fftn
    assign_array(out._array(), transform(a, axes=dims, norm=norm))


def c2c_cpu(out, self, dim, normalization, forward):
    a = self._array().astype(np.complex128, copy=False)
    dims = _dims(self, dim)
    if dims:
        transform = np.fft.fftn if forward else np.fft.ifftn
        a = transform(a, axes=dims, norm=_NUMPY_NORM[forward][normalization])
    assign_array(out._array(), a)


def c2r_cpu(out, self, dim, normalization, last_dim_size):
    a = self._array().astype(np.complex128, copy=False)
    dims = _dims(self, dim)
    sizes = [a.shape[d] for d in dims[:-1]] + [last_dim_size]
    assign_array(out._array(), np.fft.irfftn(a, s=sizes, axes=dims,
                                             norm=_NUMPY_NORM[False][normalization]))


def frequencies_into(out, values: np.ndarray, scale: float, dtype) -> None:
    """out = values * scale: the integers made in `dtype`, then scaled in its opmath type."""
    a = values.astype(dtype.np)
    compute = np.dtype(np.float32) if dtype.itemsize < 4 else dtype.np
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = a.astype(compute) * compute.type(scale)
    assign_array(out._array(), asarray(a, like=out._array()))


def fftfreq_values(n: int) -> np.ndarray:
    """[0, 1, ..., -(n // 2), ..., -1]: an n-point DFT's frequencies times n."""
    return np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)])


def rfftfreq_values(n: int) -> np.ndarray:
    """[0, 1, ..., n // 2]: rfft's frequencies times n."""
    return np.arange(n // 2 + 1)


def inverse(x):
    """1 / x in double precision, inf for 0 (PyTorch scales by it: 0 * inf is nan)."""
    with np.errstate(divide="ignore"):
        return float(np.float64(1.0) / np.float64(x))
