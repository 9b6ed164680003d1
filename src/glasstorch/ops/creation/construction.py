"""Tensors built from others: diagonals, block matrices, rotations, index grids.

The kernels of rot90, diag_embed and block_diag are in backends/cpu/construction.py."""
from __future__ import annotations

import operator

from ...backends import arrays
from ...core import dtype as dt
from ...core.device import as_device
from ...core.shape import Size, wrap_dim
from ...core.tensor import Tensor
from ..copying.copies import assign_array
from ..shape.joining import flip, meshgrid, stack
from ...core.promotion import common_dtype
from ..registry import TensorSpec, composite, export, into_out, spec, structured
from ..shape.views import diagonal
from ...backends.cpu.construction import (block_diag_kernel, block_shapes, diag_embed_kernel,
    rot90_dims, rot90_kernel, triangle_indices)


# ---- rot90 ---------------------------------------------------------------------------------

def _rot90_meta(self, k=1, dims=(0, 1)):
    d0, d1 = rot90_dims(self, dims)
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
rot90.impl("CPU")(rot90_kernel)


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
diag_embed.impl("CPU")(diag_embed_kernel)


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

def _block_diag_meta(tensors):
    shapes = block_shapes(tensors)
    if not tensors:
        return spec((1, 0), dt.get_default_dtype())
    d = common_dtype(*tensors)
    return spec((sum(s[0] for s in shapes), sum(s[1] for s in shapes)), d)


block_diag_op = structured("block_diag(Tensor[] tensors) -> Tensor", _block_diag_meta,
                           inplace=False, out=False, method=False, function=False,
                           doc="A block-diagonal matrix made of the inputs.")
block_diag_op.impl("CPU")(block_diag_kernel)


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
        values = triangle_indices(row, col, offset, lower)
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
