"""Tensors built from others: diagonals, block matrices, rotations, index grids."""
from __future__ import annotations

import operator

import numpy as np

from ...backends import arrays
from ...core import dtype as dt
from ...core.device import as_device
from ...core.shape import Size, wrap_dim
from ...core.tensor import Tensor
from ..copying.copies import assign_array
from ..shape.joining import flip, meshgrid, stack
from ..pointwise.special_functions import into_out
from ...core.promotion import common_dtype
from ..registry import TensorSpec, composite, export, spec, structured
from ..shape.views import diagonal


# ---- rot90 ---------------------------------------------------------------------------------

def _rot90_dims(self, dims):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.dim()}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == self.dim():
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    return wrap_dim(dims[0], self.dim()), wrap_dim(dims[1], self.dim())


def _rot90_meta(self, k=1, dims=(0, 1)):
    d0, d1 = _rot90_dims(self, dims)
    k %= 4
    if k == 0:
        return spec(self._shape, self.dtype)
    flipped = flip.meta(self, (d0, d1) if k == 2 else (d1 if k == 1 else d0,))
    if k == 2:
        return flipped
    shape, stride = list(flipped.shape), list(flipped.stride)
    shape[d0], shape[d1] = shape[d1], shape[d0]       # the flip is then transposed
    stride[d0], stride[d1] = stride[d1], stride[d0]
    return TensorSpec(Size(shape), self.dtype, tuple(stride))


rot90 = structured("rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor", _rot90_meta,
                   inplace=False, out=False,
                   doc="Rotate by k quarter turns in the plane of `dims`, from the first "
                       "dim towards the second.")


@rot90.impl("CPU")
def _rot90_kernel(out, self, k=1, dims=(0, 1)):
    d0, d1 = _rot90_dims(self, dims)
    assign_array(out._array(), np.rot90(self._array(), k, (d0, d1)))


# ---- diagonals ---------------------------------------------------------------------------------

def _diag_embed_meta(self, offset=0, dim1=-2, dim2=-1):
    n = self.dim() + 1
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size = self._shape[-1] + abs(offset)        # a 0-dim input has failed the checks above
    rest = list(self._shape[:-1])
    shape = []
    for i in range(n):
        shape.append(size if i in (d1, d2) else rest.pop(0))
    return spec(Size(shape), self.dtype)


diag_embed = structured("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> "
                        "Tensor", _diag_embed_meta, inplace=False, out=False,
                        doc="A tensor whose diagonals (offset, over dim1 and dim2) hold the "
                            "last dim of input; zeros elsewhere.")


@diag_embed.impl("CPU")
def _diag_embed_kernel(out, self, offset=0, dim1=-2, dim2=-1):
    n = out.dim()
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    o = out._array()
    o[...] = 0
    if o.size == 0:
        return
    i = arrays.module_of(o).arange(self._shape[-1])
    moved = np.moveaxis(o, (d1, d2), (-2, -1))      # a view: writes land in `o`
    moved[..., i + max(-offset, 0), i + max(offset, 0)] = self._array()


@composite(method=True)
def diag(input, diagonal=0, *, out=None):
    """A 1-D input gives a matrix with it on the `diagonal`-th diagonal; a matrix gives
    that diagonal as a 1-D tensor (a copy)."""
    if input.dim() == 1:
        return into_out(out, diag_embed.function(input, diagonal))
    if input.dim() != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    return into_out(out, _diagonal(input, diagonal).clone())


_diagonal = diagonal.function


@composite(method=True)
def diagflat(input, offset=0):
    """The flattened input on the `offset`-th diagonal of a square matrix."""
    return diag_embed.function(input.reshape(-1), offset)


# ---- block_diag, cartesian_prod ----------------------------------------------------------------

def _block_shapes(tensors):
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


def _block_diag_meta(tensors):
    shapes = _block_shapes(tensors)
    if not tensors:
        return spec((1, 0), dt.get_default_dtype())
    d = common_dtype(*tensors)
    return spec((sum(s[0] for s in shapes), sum(s[1] for s in shapes)), d)


block_diag_op = structured("block_diag(Tensor[] tensors) -> Tensor", _block_diag_meta,
                           inplace=False, out=False, method=False, function=False,
                           doc="A block-diagonal matrix made of the inputs.")


@block_diag_op.impl("CPU")
def _block_diag_kernel(out, tensors):
    o = out._array()
    o[...] = 0
    r = c = 0
    for t, (h, w) in zip(tensors, _block_shapes(tensors)):
        assign_array(o[r:r + h, c:c + w], t._array().reshape(h, w))
        r, c = r + h, c + w


@composite()
def block_diag(*tensors):
    """A block-diagonal matrix: 0-d inputs count as 1x1, 1-d inputs as one row."""
    if not tensors:
        return Tensor._empty((1, 0), dt.get_default_dtype(), as_device(None))
    return block_diag_op.function(list(tensors))


@composite()
def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D input, as rows."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


# ---- tril_indices, triu_indices ---------------------------------------------------------------

def _tri_indices(name, lower: bool):
    def fn(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=False):
        row, col, offset = operator.index(row), operator.index(col), operator.index(offset)
        if row < 0:
            raise RuntimeError(f"row must be non-negative, got{row}")
        if col < 0:
            raise RuntimeError(f"col must be non-negative, got{col}")
        dtype = dt.int64 if dtype is None else dtype
        if dtype not in (dt.int32, dt.int64):
            raise NotImplementedError(f'"{name}" not implemented for \'{dtype.cname}\'')
        r, c = np.indices((row, col)).reshape(2, -1)
        keep = (c - r <= offset) if lower else (c - r >= offset)
        values = np.stack((r[keep], c[keep]))
        out = Tensor._empty(values.shape, dtype, as_device(device))
        o = out._array()
        assign_array(o, arrays.asarray(values, like=o))      # made on the host
        return out
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "glasstorch"
    fn.__doc__ = (f"The (row, column) indices of the {'lower' if lower else 'upper'} triangle "
                  f"of a row x col matrix (from the `offset`-th diagonal), as a 2 x N tensor "
                  "in row-major order.")
    export(name, fn)
    return fn


tril_indices = _tri_indices("tril_indices", True)
triu_indices = _tri_indices("triu_indices", False)
