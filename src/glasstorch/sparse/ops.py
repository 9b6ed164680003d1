"""Operators on sparse tensors: the sparse-only ATen ops (`_values`, `to_dense`,
`sparse_mask`, ...) declared here with their derivatives, and SparseCPU / SparseCsrCPU
kernels for the existing ops that keep or use sparsity (mm, add, mul, the zero-preserving
unary ops, sum, transpose, copies). An op without a sparse kernel raises PyTorch's
NotImplementedError through the sparse keys' fallback.

Kernels run below the Autograd key on the stored (history-free) index and value tensors;
gradients come from the derivatives declared on the ops, so a sparse leaf gets a sparse
gradient with its own pattern (`sparse_mask`), as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ..core.dtype import result_type
from ..core.tensor import (Tensor, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr,
                           strided)
from ..dispatch.dispatcher import find, register_fallback
from ..dispatch.keys import SPARSE_KEYS, DispatchKey
from ..ops.derivative import derivative, not_differentiable
from ..ops.registry import kernel_op
from . import kernels as K
from .tensor import (BLOCKED, ROW_COMPRESSED, index_tensor, make_compressed,
                     make_coo, np_of, tensor_of, with_values)

_COO_KEYS = (DispatchKey.SparseCPU, DispatchKey.SparseCUDA)
_CSR_KEYS = (DispatchKey.SparseCsrCPU, DispatchKey.SparseCsrCUDA)


def _no_sparse_kernel(op, ks, *args):
    """The sparse keys' fallback: PyTorch's error for an op with no sparse kernel."""
    key = next((k for k in SPARSE_KEYS
                if any(getattr(a, "_keyset", 0) >> k & 1 for a in _tensors(args))),
               DispatchKey.SparseCPU)
    available = [k.name if isinstance(k, DispatchKey) else k for k in op.kernels]
    raise NotImplementedError(
        f"Could not run '{op.name}' with arguments from the '{key.name}' backend. This could "
        f"be because the operator doesn't exist for this backend. '{op.name}' is only "
        f"available for these backends: [{', '.join(available)}].")


def _tensors(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, Tensor))


for _key in SPARSE_KEYS:
    register_fallback(_key, _no_sparse_kernel)


def sparse_kernel(op, layouts=("coo", "csr")):
    """Decorator: register `fn(*args)` as `op`'s kernel for the sparse keys (boxed: the
    sparse keys sit above the dense backends, whose kernels alone are called unboxed)."""
    operator = find(op) if isinstance(op, str) else op.functional

    def register(fn):
        def boxed(op, ks, *args):
            return fn(*args)
        boxed.__qualname__, boxed.__module__ = fn.__qualname__, fn.__module__
        keys = (_COO_KEYS if "coo" in layouts else ()) + (_CSR_KEYS if "csr" in layouts else ())
        for key in keys:
            operator.register(key, boxed)
        return fn
    return register


# ---- helpers on sparse tensors -----------------------------------------------------------

def coo_arrays(s: Tensor) -> tuple:
    """(indices, values) arrays of any sparse layout as COO (2-D for compressed ones; block
    layouts expand to elements)."""
    d = s._sparse
    if d.layout is sparse_coo:
        return np_of(d.indices), np_of(d.values)
    if d.layout in BLOCKED:
        indices, values = K.dense_to_coo(np_of(to_dense(s)), 2)
        return indices, values
    major, minor = K.expand(np_of(d.compressed)), np_of(d.plain)
    rows, cols = (major, minor) if d.layout is sparse_csr else (minor, major)
    return np.stack([rows, cols]), np_of(d.values)


def coalesced_arrays(s: Tensor) -> tuple:
    d = s._sparse
    if d.layout is sparse_coo and d.coalesced:
        return np_of(d.indices), np_of(d.values)
    indices, values = coo_arrays(s)
    return K.coalesce(indices, values, s._shape[:indices.shape[0]])


def _values_tensor(array, like: Tensor, dtype=None) -> Tensor:
    return tensor_of(array, like.device, like.dtype if dtype is None else dtype)


def coo_from_arrays(indices, values, shape, like: Tensor, coalesced=False, dtype=None):
    return make_coo(index_tensor(indices, like.device), _values_tensor(values, like, dtype),
                    shape, coalesced)


def to_layout_like(result_coo: Tensor, layout) -> Tensor:
    """A COO result in the layout of an operand (CSR @ dense gives CSR, ...)."""
    if layout is sparse_coo:
        return result_coo
    return convert(result_coo, layout)


# ---- sparse-only operators -----------------------------------------------------------------

_values_decl = kernel_op("_values(Tensor(a) self) -> Tensor(a)", function=False)
values_decl = kernel_op("values(Tensor(a) self) -> Tensor(a)", function=False)
_indices_decl = kernel_op("_indices(Tensor(a) self) -> Tensor(a)", function=False)
indices_decl = kernel_op("indices(Tensor(a) self) -> Tensor(a)", function=False)
crow_decl = kernel_op("crow_indices(Tensor(a) self) -> Tensor(a)", function=False)
col_decl = kernel_op("col_indices(Tensor(a) self) -> Tensor(a)", function=False)
ccol_decl = kernel_op("ccol_indices(Tensor(a) self) -> Tensor(a)", function=False)
row_decl = kernel_op("row_indices(Tensor(a) self) -> Tensor(a)", function=False)
to_dense_decl = kernel_op("to_dense(Tensor self, ScalarType? dtype=None, *, bool? masked_grad="
                          "None) -> Tensor", function=False)
coalesce_decl = kernel_op("coalesce(Tensor(a) self) -> Tensor(a)", function=False)
sparse_mask_decl = kernel_op("sparse_mask(Tensor self, Tensor mask) -> Tensor", function=False)
to_sparse_decl = kernel_op("_to_sparse(Tensor self, *, Layout? layout=None, int[2]? blocksize="
                           "None, int? dense_dim=None) -> Tensor", method=False, function=False)
to_sparse_dim_decl = kernel_op("_to_sparse.sparse_dim(Tensor self, int sparse_dim) -> Tensor",
                               method=False, function=False)
coo_with_tensors = kernel_op(
    "_sparse_coo_tensor_with_dims_and_tensors(int sparse_dim, int dense_dim, SymInt[] size, "
    "Tensor indices, Tensor values, *, bool? is_coalesced=None) -> Tensor",
    method=False, function=False)


compressed_with_tensors = kernel_op(
    "_sparse_compressed_tensor_unsafe(Tensor compressed_indices, Tensor plain_indices, "
    "Tensor values, SymInt[] size, *, Layout? layout=None) -> Tensor",
    method=False, function=False)


@compressed_with_tensors.impl("CPU")
def _compressed_with_tensors(compressed_indices, plain_indices, values, size, layout=None):
    return make_compressed(layout, compressed_indices, plain_indices, values, size)


@derivative(compressed_with_tensors, "SparseCompressedTensorBackward0")
def _compressed_with_tensors_backward(grad, compressed_indices, plain_indices, values_shape,
                                      size, layout):
    """The gradient at each stored entry (block) of the result, read from a dense view."""
    dense = grad.to_dense() if grad._sparse is not None else grad
    major, minor = K.expand(np_of(compressed_indices)), np_of(plain_indices)
    rows, cols = (major, minor) if layout in ROW_COMPRESSED else (minor, major)
    rows, cols = index_tensor(rows, grad.device), index_tensor(cols, grad.device)
    if layout not in BLOCKED:
        return None, None, dense[rows, cols]
    bh, bw = values_shape[1:3]
    tiles = dense.reshape(size[0] // bh, bh, size[1] // bw, bw, *size[2:]).transpose(1, 2)
    return None, None, tiles[rows, cols]


@sparse_kernel(_values_decl)
@sparse_kernel(values_decl)
def _values_kernel(self):
    return self._sparse.values.detach()


def _coo_only(name):
    def kernel(self):
        d = self._sparse
        if d.layout is not sparse_coo:
            raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got "
                               f"{LAYOUT_NAME[d.layout]}")
        return d.indices.detach()
    return kernel


LAYOUT_NAME = {sparse_coo: "Sparse", sparse_csr: "SparseCsr", sparse_csc: "SparseCsc",
               sparse_bsr: "SparseBsr", sparse_bsc: "SparseBsc", strided: "Strided"}


def _compressed_part(name, layouts, part):
    kind = "row" if layouts[0] in ROW_COMPRESSED else "column"

    def kernel(self):
        d = self._sparse
        if d.layout not in layouts:
            raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but "
                               f"got {LAYOUT_NAME[d.layout]}")
        return getattr(d, part).detach()
    kernel.__qualname__ = name
    return kernel


sparse_kernel(_indices_decl)(_coo_only("_indices"))
sparse_kernel(indices_decl)(_coo_only("indices"))
sparse_kernel(crow_decl)(_compressed_part("crow_indices", ROW_COMPRESSED, "compressed"))
sparse_kernel(col_decl)(_compressed_part("col_indices", ROW_COMPRESSED, "plain"))
sparse_kernel(ccol_decl)(_compressed_part("ccol_indices", (sparse_csc, sparse_bsc), "compressed"))
sparse_kernel(row_decl)(_compressed_part("row_indices", (sparse_csc, sparse_bsc), "plain"))
not_differentiable(_indices_decl, indices_decl, crow_decl, col_decl, ccol_decl, row_decl)


def _values_backward(grad, self):
    return (with_values(self, grad),)


derivative(_values_decl, "ValuesBackward0")(_values_backward)
derivative(values_decl, "ValuesBackward0")(_values_backward)


def to_dense(self, dtype=None, masked_grad=None):
    d = self._sparse
    shape = self._shape
    if d.layout is sparse_coo:
        array = K.coo_to_dense(np_of(d.indices), np_of(d.values), shape)
    elif d.layout in BLOCKED:
        array = K.blocks_to_dense(np_of(d.compressed), np_of(d.plain), np_of(d.values), shape,
                                  d.layout is sparse_bsc)
    else:
        major, minor = K.expand(np_of(d.compressed)), np_of(d.plain)
        rows, cols = (major, minor) if d.layout is sparse_csr else (minor, major)
        array = K.coo_to_dense(np.stack([rows, cols]), np_of(d.values), shape)
    out = _values_tensor(array, self)
    return out if dtype is None else out.to(dtype)


sparse_kernel(to_dense_decl)(to_dense)


@to_dense_decl.impl("CPU")
def _dense_to_dense(self, dtype=None, masked_grad=None):
    return self if dtype is None else self.to(dtype)


@derivative(to_dense_decl, "ToDenseBackward0")
def _to_dense_backward(grad, self):
    return (grad.sparse_mask(self) if self._sparse is not None else grad,)


@sparse_kernel(coalesce_decl, layouts=("coo",))
def coalesce(self):
    d = self._sparse
    if d.coalesced:
        return self
    indices, values = K.coalesce(np_of(d.indices), np_of(d.values), self._shape[:d.sparse_dim])
    return coo_from_arrays(indices, values, self._shape, self, coalesced=True)


@derivative(coalesce_decl, "CoalesceBackward0")
def _coalesce_backward(grad):
    return (grad,)


@sparse_kernel(sparse_mask_decl)
def sparse_mask(self, mask):
    """self's entries at mask's pattern, in mask's layout (mask's values are ignored)."""
    if self._shape != mask._shape:
        raise RuntimeError("sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self._shape)} but mask has size {list(mask._shape)}.")
    dense = np_of(self) if self._sparse is None else np_of(to_dense(self))
    d = mask._sparse
    if d.layout is not sparse_coo:
        major, minor = K.expand(np_of(d.compressed)), np_of(d.plain)
        rows, cols = (major, minor) if d.layout in ROW_COMPRESSED else (minor, major)
        if d.layout in BLOCKED:          # index the blocks of a (rows/bh, cols/bw) grid
            (bh, bw), (n, m) = d.values._shape[1:3], mask._shape[:2]
            dense = dense.reshape(n // bh, bh, m // bw, bw, *dense.shape[2:]).swapaxes(1, 2)
        return make_compressed(d.layout, d.compressed, d.plain,
                               _values_tensor(dense[rows, cols], self), mask._shape)
    indices, _ = coalesced_arrays(mask)
    values = dense[tuple(indices)]
    return coo_from_arrays(indices, values, mask._shape, self, coalesced=True)


@derivative(sparse_mask_decl, "SparseMaskBackward0")
def _sparse_mask_backward(grad, self, mask, grad_input_mask):
    if not grad_input_mask[0]:
        return None, None
    return (grad.to_dense() if self._sparse is None else grad), None


@coo_with_tensors.impl("CPU")
def _coo_with_tensors(sparse_dim, dense_dim, size, indices, values, is_coalesced=None):
    return make_coo(indices, values, size, bool(is_coalesced))


@derivative(coo_with_tensors, "SparseCooTensorWithDimsAndTensorsBackward0")
def _coo_with_tensors_backward(grad, indices, values):
    return None, _gather(grad, np_of(indices), values._shape)


def _gather(grad: Tensor, indices: np.ndarray, values_shape) -> Tensor:
    """grad's entries at `indices` (a COO pattern, duplicates allowed), as a values tensor."""
    if grad._sparse is None:
        return grad[tuple(index_tensor(row, grad.device) for row in indices)]
    g_idx, g_val = coalesced_arrays(grad)
    shape = grad._shape[:indices.shape[0]]
    out = np.zeros(tuple(values_shape), dtype=g_val.dtype)
    if g_idx.shape[1] and indices.shape[1]:
        keys = np.ravel_multi_index(tuple(g_idx), shape)
        wanted = np.ravel_multi_index(tuple(indices), shape)
        at = np.searchsorted(keys, wanted).clip(0, len(keys) - 1)
        hit = keys[at] == wanted
        out[hit] = g_val[at[hit]]
    return _values_tensor(out, grad)


# ---- conversions ---------------------------------------------------------------------------

def convert(self: Tensor, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    """`self` in `layout` (PyTorch's to_sparse(layout=...)): through COO or dense arrays."""
    d = self._sparse
    current = strided if d is None else d.layout
    layout = sparse_coo if layout is None else layout
    if layout is strided:
        return self if d is None else to_dense(self)
    if layout in BLOCKED:
        if blocksize is None:
            raise RuntimeError(f"to_sparse for {current} to {LAYOUT_NAME[layout]} conversion "
                               "requires blocksize specified")
        blocksize = tuple(int(b) for b in blocksize)
    if current is layout and (layout not in BLOCKED or tuple(d.values._shape[1:3]) == blocksize):
        return self
    if self.dim() < 2 and layout is not sparse_coo:
        raise RuntimeError(f"to_sparse: conversion from {LAYOUT_NAME[current]} to "
                           f"{LAYOUT_NAME[layout]} requires 2 or more dimensions")
    if layout is sparse_coo:
        if d is None:
            return _dense_to_coo(self, self.dim() - (dense_dim or 0))
        indices, values = coo_arrays(self)
        return coo_from_arrays(indices, values, self._shape, self,
                               coalesced=current is not sparse_coo)
    if layout in BLOCKED:
        dense = np_of(self) if d is None else np_of(to_dense(self))
        rows, cols = dense.shape[:2]
        if rows % blocksize[0] or cols % blocksize[1]:
            raise RuntimeError(f"tensor shape[0] ({rows}) and shape[1] ({cols}) must be "
                               f"divisible by blocksize ({blocksize[0]}, {blocksize[1]})")
        comp, plain, blocks = K.dense_to_blocks(dense, blocksize, layout is sparse_bsc)
        return make_compressed(layout, index_tensor(comp, self.device),
                               index_tensor(plain, self.device), _values_tensor(blocks, self),
                               self._shape)
    if self.dim() != 2:
        raise RuntimeError(f"to_sparse: conversion to {LAYOUT_NAME[layout]} of a "
                           f"{self.dim()}-D tensor is not supported by glasstorch")
    if d is None:
        indices, values = K.dense_to_coo(np_of(self), 2)
    else:
        indices, values = coalesced_arrays(self)
    rows, cols = indices
    if layout is sparse_csc:
        order = np.lexsort((rows, cols))
        comp, plain = K.compress(cols[order], self._shape[1]), rows[order]
    else:
        order = np.arange(len(rows))
        comp, plain = K.compress(rows, self._shape[0]), cols
    return make_compressed(layout, index_tensor(comp, self.device),
                           index_tensor(plain, self.device),
                           _values_tensor(values[order], self), self._shape)


def _dense_to_coo(self, sparse_dim: int) -> Tensor:
    indices, values = K.dense_to_coo(np_of(self), sparse_dim)
    return coo_from_arrays(indices, values, self._shape, self, coalesced=True)


@to_sparse_decl.impl("CPU")
@sparse_kernel(to_sparse_decl)
def _to_sparse(self, layout=None, blocksize=None, dense_dim=None):
    return convert(self, layout, blocksize, dense_dim)


@to_sparse_dim_decl.impl("CPU")
@sparse_kernel(to_sparse_dim_decl)
def _to_sparse_dim(self, sparse_dim):
    if self._sparse is not None:
        return convert(self, sparse_coo)
    if not 0 <= sparse_dim <= self.dim():
        raise RuntimeError(f"sparse_dim argument must be in [0,{self.dim()}] range, but "
                           f"{sparse_dim} is given")
    return _dense_to_coo(self, sparse_dim)


def _to_sparse_backward(grad, self):
    return (grad.to_dense() if self._sparse is None else grad,)


derivative(to_sparse_decl, "ToSparseBackward0")(_to_sparse_backward)
derivative(to_sparse_dim_decl, "ToSparseBackward1")(_to_sparse_backward)


# ---- existing operators on sparse tensors --------------------------------------------------

_ZERO_PRESERVING_LINEAR = ("neg", "conj_physical")
_ZERO_PRESERVING = ("abs", "sqrt", "relu", "sin", "tan", "tanh", "asin", "atan", "sinh",
                    "asinh", "atanh", "sign", "sgn", "expm1", "log1p", "floor", "ceil",
                    "trunc", "erf", "square", "frac", "deg2rad", "rad2deg", "signbit",
                    "isnan", "isinf", "nan_to_num", "erfinv", "angle")


def _unary(name, linear):
    op = find(f"aten::{name}")

    def kernel(self, *args):
        if not linear and self._sparse.layout is sparse_coo and not self._sparse.coalesced:
            self = coalesce(self)
        return with_values(self, op(self._sparse.values, *args))
    kernel.__qualname__ = f"sparse_{name}"
    return kernel


for _name in _ZERO_PRESERVING_LINEAR + _ZERO_PRESERVING:
    try:
        sparse_kernel(f"aten::{_name}")(_unary(_name, _name in _ZERO_PRESERVING_LINEAR))
    except RuntimeError:      # an op glasstorch does not declare
        pass


@sparse_kernel("aten::pow.Tensor_Scalar")
def _pow(self, exponent):
    if not (isinstance(exponent, (int, float)) and exponent > 0):
        raise RuntimeError(f"pow: exponent must be a positive number for sparse tensors "
                           f"(got {exponent}), so that zeros stay zero")
    if self._sparse.layout is sparse_coo:
        self = coalesce(self)
    return with_values(self, self._sparse.values.pow(exponent))


def _scalar(x):
    return not isinstance(x, Tensor) or (x._sparse is None and x.dim() == 0)


@sparse_kernel("aten::mul.Tensor")
def _mul(self, other):
    if _scalar(other):
        return with_values(self, self._sparse.values * other)
    if _scalar(self):
        return with_values(other, other._sparse.values * self)
    if self._sparse is None or other._sparse is None:
        s, dense = (self, other) if other._sparse is None else (other, self)
        return _mul_dense(s, dense)
    return _binary_sparse(self, other, np.multiply, intersect=True)


def _mul_dense(s: Tensor, dense: Tensor) -> Tensor:
    """sparse * dense: sparse, with the dense operand read at the sparse entries."""
    if dense._shape != s._shape:
        dense = dense.expand(s._shape)
    layout = s._sparse.layout
    indices, values = coalesced_arrays(s)
    picked = np_of(dense.contiguous())[tuple(indices)]
    out = coo_from_arrays(indices, values * picked, s._shape, s, coalesced=True,
                          dtype=result_type(s, dense))
    return to_layout_like(out, layout)


@sparse_kernel("aten::div.Tensor")
def _div(self, other):
    if self._sparse is not None and _scalar(other):
        return with_values(self, self._sparse.values / other)
    raise RuntimeError("div: only a sparse tensor divided by a scalar is supported for sparse "
                       "tensors")


def _binary_sparse(a: Tensor, b: Tensor, fn, intersect: bool, alpha=1) -> Tensor:
    if a._shape != b._shape:
        raise RuntimeError(f"sizes of the sparse operands do not match: {list(a._shape)} and "
                           f"{list(b._shape)}")
    layout = a._sparse.layout
    ai, av = coalesced_arrays(a)
    bi, bv = coalesced_arrays(b)
    dtype = result_type(a, b)
    sparse_shape = a._shape[:ai.shape[0]]
    if intersect:
        ak = np.ravel_multi_index(tuple(ai), sparse_shape) if ai.shape[1] else ai[0]
        bk = np.ravel_multi_index(tuple(bi), sparse_shape) if bi.shape[1] else bi[0]
        keys, ia, ib = np.intersect1d(ak, bk, assume_unique=True, return_indices=True)
        indices = ai[:, ia]
        values = fn(av[ia], bv[ib])
        out = coo_from_arrays(indices, values, a._shape, a, coalesced=True, dtype=dtype)
    else:
        indices = np.concatenate([ai, bi], axis=1)
        values = np.concatenate([av.astype(dtype.np), (bv * alpha).astype(dtype.np)])
        indices, values = K.coalesce(indices, values, sparse_shape)
        out = coo_from_arrays(indices, values, a._shape, a, coalesced=True, dtype=dtype)
    return to_layout_like(out, layout)


@sparse_kernel("aten::add.Tensor")
def _add(self, other, alpha=1):
    if self._sparse is not None and other._sparse is not None:
        return _binary_sparse(self, other, None, intersect=False, alpha=alpha)
    if self._sparse is not None or _scalar(other) or _scalar(self):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    dense, s = self, other       # dense + sparse: a dense result
    indices, values = coo_arrays(s)
    dtype = result_type(dense, s)
    array = np.array(np_of(dense.expand(s._shape).contiguous()), dtype=dtype.np)
    np.add.at(array, tuple(indices), (values * alpha).astype(dtype.np))
    return tensor_of(array, dense.device, dtype)


@sparse_kernel("aten::add_.Tensor")
def _add_(self, other, alpha=1):
    if self._sparse is None:
        return self.copy_(_add(self, other, alpha))
    result = _add(self, other, alpha)
    if result._sparse is None:
        raise RuntimeError("add_: a sparse tensor cannot hold the sum with a dense tensor")
    _assign(self, result)
    return self


def _assign(dst: Tensor, src: Tensor) -> None:
    """Give `dst` src's indices and values (in dst's dtype): sparse in-place results."""
    if src.dtype is not dst.dtype:
        src = _to_copy(src, dtype=dst.dtype)
    dst._sparse = src._sparse
    dst._shape = src._shape
    if dst._vc is not None:
        dst._vc.version += 1


@sparse_kernel("aten::copy_")
def _copy_(self, src, non_blocking=False):
    if self._sparse is None or src._sparse is None:
        raise RuntimeError("copy_(): a sparse tensor copies only from a sparse tensor of its "
                           "layout, and a dense tensor from a dense one (use to_dense())")
    if self._shape != src._shape:
        raise RuntimeError("copy_(): sizes of the sparse tensors do not match: "
                           f"{list(self._shape)} and {list(src._shape)}")
    _assign(self, _clone(src))
    return self


@sparse_kernel("aten::clone")
def _clone(self, memory_format=None):
    d = self._sparse
    if d.layout is sparse_coo:
        return make_coo(d.indices.clone(), d.values.clone(), self._shape, d.coalesced)
    return make_compressed(d.layout, d.compressed.clone(), d.plain.clone(), d.values.clone(),
                           self._shape)


@sparse_kernel("aten::detach")
def _detach(self):
    d = self._sparse
    out = with_values(self, d.values)
    out._sparse.coalesced = d.coalesced
    return out


@sparse_kernel("aten::_to_copy")
def _to_copy(self, dtype=None, device=None, non_blocking=False, memory_format=None):
    values = self._sparse.values.to(dtype=dtype, device=device)
    d = self._sparse
    if d.layout is sparse_coo:
        return make_coo(d.indices.to(device=device, copy=True), values.clone(), self._shape,
                        d.coalesced)
    return make_compressed(d.layout, d.compressed.to(device=device, copy=True),
                           d.plain.to(device=device, copy=True), values.clone(), self._shape)


def _empty_sparse(self, dtype=None):
    d = self._sparse
    dtype = self.dtype if dtype is None else dtype
    dense_shape = tuple(d.values._shape[1:])
    values = tensor_of(np.zeros((0,) + dense_shape, dtype=dtype.np), self.device, dtype)
    if d.layout is sparse_coo:
        indices = index_tensor(np.zeros((d.sparse_dim, 0)), self.device)
        return make_coo(indices, values, self._shape, True)
    n_major = self._shape[0 if d.layout in ROW_COMPRESSED else 1]
    if d.layout in BLOCKED:
        n_major //= d.values._shape[1 if d.layout is sparse_bsr else 2]
    return make_compressed(d.layout, index_tensor(np.zeros(n_major + 1), self.device),
                           index_tensor(np.zeros(0), self.device), values, self._shape)


@sparse_kernel("aten::empty_like")
def _empty_like(self, dtype=None, layout=None, device=None, pin_memory=None,
                memory_format=None):
    return _empty_sparse(self, dtype)


@sparse_kernel("aten::zeros_like")
def _zeros_like(self, dtype=None, layout=None, device=None, pin_memory=None,
                memory_format=None):
    return _empty_sparse(self, dtype)


@sparse_kernel("aten::transpose.int")
def _transpose(self, dim0, dim1):
    d = self._sparse
    n = self.dim()
    dim0, dim1 = dim0 % n if n else 0, dim1 % n if n else 0
    shape = list(self._shape)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    if d.layout is sparse_coo:
        sd = d.sparse_dim
        if (dim0 < sd) != (dim1 < sd):
            raise RuntimeError(f"transpose(): cannot transpose a sparse dimension {min(dim0, dim1)}"
                               f" with a dense dimension {max(dim0, dim1)}")
        if dim0 < sd:
            order = list(range(sd))
            order[dim0], order[dim1] = order[dim1], order[dim0]
            return make_coo(d.indices[order], d.values, shape, False)
        return make_coo(d.indices, d.values.transpose(dim0 - sd + 1, dim1 - sd + 1), shape,
                        d.coalesced)
    if {dim0, dim1} != {0, 1} or n != 2:
        raise RuntimeError("transpose(): compressed sparse tensors can only swap their two "
                           "sparse dimensions")
    flipped = {sparse_csr: sparse_csc, sparse_csc: sparse_csr, sparse_bsr: sparse_bsc,
               sparse_bsc: sparse_bsr}[d.layout]
    values = d.values.transpose(1, 2) if d.layout in BLOCKED else d.values
    return make_compressed(flipped, d.compressed, d.plain, values.contiguous(), shape)


@sparse_kernel("aten::t")
def _t(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                           f"self is {self._sparse.sparse_dim} sparse and "
                           f"{self._sparse.dense_dim} dense")
    return self if self.dim() < 2 else _transpose(self, 0, 1)


# ---- products --------------------------------------------------------------------------------

def _matrix_arrays(s: Tensor) -> tuple:
    indices, values = coo_arrays(s)
    return indices[0], indices[1], values


def _check_mm(a: Tensor, b: Tensor, name="mm"):
    if a.dim() != 2 or b.dim() != 2:
        raise RuntimeError(f"{name}: expected 2-D tensors, but got {a.dim()}-D and "
                           f"{b.dim()}-D tensors")
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._shape[0]}x"
                           f"{a._shape[1]} and {b._shape[0]}x{b._shape[1]})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: "
                           f"{a.dtype.cname} != {b.dtype.cname}")


def spmm(a: Tensor, b: Tensor) -> Tensor:
    """The product of two matrices of which at least one is sparse: dense for sparse @ dense
    and dense @ sparse, sparse (a's layout) for sparse @ sparse."""
    _check_mm(a, b)
    if a._sparse is not None:
        rows, cols, values = _matrix_arrays(a)
        dense = np_of(b.contiguous()) if b._sparse is None else np_of(to_dense(b))
        out = K.spmm(rows, cols, values, dense, a._shape[0])
        if b._sparse is None:
            return tensor_of(out, b.device, a.dtype)
        indices, values = K.dense_to_coo(out, 2)
        return to_layout_like(coo_from_arrays(indices, values, out.shape, a, coalesced=True),
                              a._sparse.layout)
    rows, cols, values = _matrix_arrays(b)       # dense @ sparse = (sparse^T @ dense^T)^T
    out = K.spmm(cols, rows, values, np_of(a.contiguous()).T, b._shape[1]).T
    return tensor_of(out, a.device, a.dtype)


sparse_kernel("aten::mm")(spmm)


@sparse_kernel("aten::addmm")
def _addmm(self, mat1, mat2, beta=1, alpha=1):
    product = spmm(mat1, mat2)
    if product._sparse is not None:
        product = to_dense(product)
    base = self.to_dense() if self._sparse is not None else self
    if beta == 0:
        return product * alpha
    return base * beta + product * alpha


@sparse_kernel("aten::matmul")
def _matmul(self, other):
    if self.dim() == 2 and other.dim() == 1:
        return spmm(self, other.unsqueeze(1)).squeeze(1)
    if self.dim() == 1 and other.dim() == 2:
        return spmm(self.unsqueeze(0), other).squeeze(0)
    return spmm(self, other)


# ---- reductions ------------------------------------------------------------------------------

@sparse_kernel("aten::sum")
def _sum(self, dtype=None):
    values = self._sparse.values
    return values.sum(dtype=dtype) if values.numel() else values.new_zeros(()).to(
        dtype or values.dtype)


@sparse_kernel("aten::sum.dim_IntList", layouts=("coo",))
def sum_dims(self, dim=None, keepdim=False, dtype=None):
    if keepdim:
        raise RuntimeError("sum: keepdim=True is not supported for sparse tensors")
    n = self.dim()
    dims = sorted({d % n for d in (range(n) if dim is None or dim == () else dim)})
    d = self._sparse
    sd = d.sparse_dim
    sparse_dims = [x for x in dims if x < sd]
    dense_dims = [x - sd + 1 for x in dims if x >= sd]
    values = d.values.sum(dense_dims, dtype=dtype) if dense_dims else (
        d.values if dtype is None else d.values.to(dtype))
    if len(sparse_dims) == sd:         # every sparse dim summed: a dense result
        return values.sum(0)
    keep = [x for x in range(sd) if x not in sparse_dims]
    indices = d.indices[keep]
    shape = [s for i, s in enumerate(self._shape) if i not in dims]
    out = make_coo(indices, values, shape, False)
    return coalesce(out)
