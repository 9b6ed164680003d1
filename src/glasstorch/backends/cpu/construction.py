"""CPU kernels for constructing matrices from others: rot90, diag_embed, block_diag."""
from __future__ import annotations

import numpy as np

from .. import arrays
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from .copy import assign_array


def rot90_dims(self, dims):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.dim()}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == self.dim():
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    return wrap_dim(dims[0], self.dim()), wrap_dim(dims[1], self.dim())


def rot90_kernel(out, self, k=1, dims=(0, 1)):
    d0, d1 = rot90_dims(self, dims)
    assign_array(out._array(), np.rot90(self._array(), k, (d0, d1)))


def diag_embed_kernel(out, self, offset=0, dim1=-2, dim2=-1):
    n = out.dim()
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    o = out._array()
    o[...] = 0
    if o.size == 0:
        return
    i = arrays.module_of(o).arange(self._shape[-1])
    moved = np.moveaxis(o, (d1, d2), (-2, -1))      # a view: writes land in `o`
    moved[..., i + max(-offset, 0), i + max(offset, 0)] = self._array()


def block_shapes(tensors):
    shapes = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): argument 'tensors' must be tuple of Tensors, not "
                            f"{type(t).__name__}")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.dim()} dimensions")
        s = tuple(t._shape)
        shapes.append(s if len(s) == 2 else (1, s[0]) if s else (1, 1))
    return shapes


def block_diag_kernel(out, tensors):
    o = out._array()
    o[...] = 0
    r = c = 0
    for t, (h, w) in zip(tensors, block_shapes(tensors)):
        assign_array(o[r:r + h, c:c + w], t._array().reshape(h, w))
        r, c = r + h, c + w


def triangle_indices(row: int, col: int, offset: int, lower: bool) -> np.ndarray:
    """(2, N) row and column indices of the lower (upper) triangle of a row x col matrix
    from the `offset`-th diagonal, in row-major order, made on the host."""
    r, c = np.indices((row, col)).reshape(2, -1)
    keep = (c - r <= offset) if lower else (c - r >= offset)
    return np.stack((r[keep], c[keep]))
