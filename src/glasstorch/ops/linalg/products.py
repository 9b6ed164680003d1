"""Matrix products: mm, bmm, mv, dot, vdot, matmul, inner, outer/ger, addmm, addmv, addr,
addbmm, baddbmm, tensordot and einsum.

Matrix products do not promote dtypes: mixing float32 and float64 raises, and each meta
function checks in the order PyTorch's kernel does, so the first error (and its text) is
PyTorch's. `outer`, `addr` and `inner` with a 0-dim operand are pointwise products and do
promote. `matmul` is one op whose meta function follows PyTorch's choice between dot, mv,
mm (folding batch dimensions into rows when that needs no copy) and bmm, because that
choice decides which error a bad call gets; its CPU kernel (backends/cpu/linalg.py) is a
single `np.matmul`.
`einsum` runs PyTorch's own contraction algorithm (diagonals, permutes, sums, pairwise bmm)
on metadata for the Meta device and on arrays for the CPU, so result dtypes, strides and
the views it returns are PyTorch's.

    >>> a = glasstorch.ones(2, 1, 3, 4); b = glasstorch.ones(5, 4, 6)
    >>> (a @ b).shape
    torch.Size([2, 5, 3, 6])
"""
from __future__ import annotations

import math
import operator
from functools import lru_cache

import numpy as np

from ...backends.arrays import module_of
from ...backends.cpu import linalg as cpu
from ...core import dtype as dt
from ...core.device import META
from ...core.grad_state import state as grad_state
from ...core.shape import (_strides_cache as _STRIDES, Size, broadcast_shapes2,
                          contiguous_strides, expand_strides, is_contiguous,
                          is_non_overlapping_and_dense, iterator_strides, view_strides, wrap_dim,
                          wrap_dims)
from ...core.tensor import Tensor, new_cpu_tensor
from ..pointwise.meta import promoting_meta
from ..registry import PLAIN_FLOATS, TensorSpec, export, kernel_op, structured
from ..wrappers import operator_method
from ..autocast import LOWER_PRECISION, PROMOTE, autocast_policy
from ...backends.cpu.linalg import (TYPE_NAMES, addbmm_kernel, addr_cpu, dot_cpu, gemm_kernel,
    gemm_scalars, inner_cpu, matmul_cpu, outer_cpu, product_cpu, scalar_as, tensordot_cpu,
    vdot_cpu)


def _spec(shape, dtype) -> TensorSpec:
    shape = Size(shape)
    return TensorSpec(shape, dtype, contiguous_strides(shape))


def _need_tensor(fname: str, arg: str, pos: int, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(value).__name__}")


def _not_for_bool(d: dt.dtype, kernel: str) -> None:
    if d is dt.bool:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _mnk(shape) -> str:
    return f"{shape[0]}x{shape[1]}"


def _size0(shape) -> int:
    """shape[0], with PyTorch's IndexError for a 0-dim tensor."""
    return shape[wrap_dim(0, len(shape), scalar_ok=False)]


def _expand_input(self: Tensor, shape) -> None:
    """The broadcast of `self` (the added input) to the product's shape must exist."""
    expand_strides(self._shape, self._stride, shape, self.dtype, self._storage.device.type)


# ---- out= and in-place checks with PyTorch's texts --------------------------------------
# Meta functions take `out` (the out= tensor, else None) and check it where PyTorch's kernel
# does, which is often between the checks of the inputs.

def _with_out(meta):
    """The out= variant's meta function (see registry.structured's `out_meta`)."""
    def out_meta(out, *args):
        return meta(*args, out=out)
    return out_meta


def _out_dtype(out, d: dt.dtype) -> None:
    if out is not None and out.dtype is not d:
        raise RuntimeError(f"Expected out tensor to have dtype {TYPE_NAMES[d]}, but got "
                           f"{TYPE_NAMES[out.dtype]} instead")


def _inplace_same_shape(spec, self, *args) -> None:
    if self._shape != spec.shape:
        raise RuntimeError(f"Bad in-place call: input tensor size {list(self._shape)} and "
                           f"output tensor size {list(spec.shape)} should match")


def _tensordot_out(out, d: dt.dtype) -> None:
    if out is not None and out.dtype is not d:
        raise RuntimeError(f"tensordot: Expected the output tensor to have dtype {d.cname}, "
                           f"but got an output tensor with dtype {out.dtype.cname}")


# ---- the checks of each kernel (shared by matmul's paths) -------------------------------

def _dot_checks(a: Tensor, b: Tensor, out=None) -> None:
    if out is not None and out.dtype is not a.dtype:
        raise RuntimeError(f"result dtype {out.dtype.cname} does not match input dtype "
                           f"{a.dtype.cname}")
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{a.dtype.cname} and {b.dtype.cname}")
    (n,), (m,) = a._shape, b._shape
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to "
                           f"have the same number of elements, but got {n} and {m} elements "
                           "respectively")
    _not_for_bool(a.dtype, "dot")


def _mv_checks(input_shape, d_input, mat_shape, d_mat, vec_shape, d_vec, out=None) -> None:
    """addmv's checks, `input` being the vector that is added."""
    if not (len(mat_shape) == 2 and len(vec_shape) == 1 and len(input_shape) <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {len(input_shape)}, "
                           f"{len(mat_shape)}, {len(vec_shape)}")
    numel = math.prod(input_shape)
    if mat_shape[1] != vec_shape[0] or not (mat_shape[0] == numel or numel == 1):
        raise RuntimeError(f"size mismatch, got input ({_size0(input_shape)}), mat "
                           f"({_mnk(mat_shape)}), vec ({vec_shape[0]})")
    if not d_input is d_mat is d_vec:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{d_input.cname}, {d_mat.cname}, and {d_vec.cname}")
    _out_dtype(out, d_vec)
    if math.prod(mat_shape):                      # an empty matrix runs no kernel
        _not_for_bool(d_mat, "addmv_impl_cpu")


def _mv_as_addmv(mat_shape, d_mat, vec_shape, d_vec, out) -> None:
    """mv(mat, vec) runs addmv with beta=0 on an added vector that is `out` when it already
    has a fitting shape, else a new vector of vec's dtype."""
    n = mat_shape[0]
    if out is not None and out.dim() <= 1 and (out.numel() == n or out.numel() == 1):
        _mv_checks(out._shape, out.dtype, mat_shape, d_mat, vec_shape, d_vec, out)
    else:
        _mv_checks((n,), d_vec, mat_shape, d_mat, vec_shape, d_vec, out)


def _mm_checks(s1, d1, s2, d2, out=None) -> None:
    (_, k1), (k2, _) = s1, s2
    if k1 != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_mnk(s1)} and "
                           f"{_mnk(s2)})")
    _out_dtype(out, d1)
    if d1 is not d2:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{TYPE_NAMES[d1]} != {TYPE_NAMES[d2]}")
    if math.prod(s1) and math.prod(s2):           # an empty operand runs no kernel
        _not_for_bool(d1, "addmm_impl_cpu_")


def _bmm_checks(s1, d1, s2, d2, out=None, kernel="bmm") -> None:
    bs, k = s1[0], s1[2]
    if s2[0] != bs or s2[1] != k:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{bs}, {k}] but got: [{s2[0]}, {s2[1]}].")
    _out_dtype(out, d2)       # bmm's result takes batch2's dtype
    if bs * s1[1] * s2[2] and (k or kernel != "bmm"):
        # the dtype is checked by the kernel, which an empty result does not run, nor
        # bmm's empty sum (it zeroes the result)
        _bmm_dtypes(d1, d2, kernel)


def _bmm_dtypes(d1, d2, kernel="bmm") -> None:
    """The kernel is chosen by batch1's dtype, then batch2 must have the same."""
    _not_for_bool(d1, kernel)
    if d1 is not d2:
        raise RuntimeError(f"expected scalar type {d1.cname} but found {d2.cname}")


def _check_3d(batch1: Tensor, batch2: Tensor) -> None:
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")


# ---- mm / bmm / mv / dot / vdot ---------------------------------------------------------

def _mm_meta(self, mat2, *, out=None):
    _need_tensor("mm", "mat2", 2, mat2)
    if self.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    (n, _), (_, m) = self._shape, mat2._shape
    _mm_checks(self._shape, self.dtype, mat2._shape, mat2.dtype, out)
    return _spec((n, m), self.dtype)


mm = structured("mm(Tensor self, Tensor mat2) -> Tensor", _mm_meta, inplace=False,
                promotes=False, out_meta=_with_out(_mm_meta),
                doc="Matrix product of two 2-D tensors of one dtype.")


def _bmm_meta(self, mat2, *, out=None):
    _need_tensor("bmm", "mat2", 2, mat2)
    _check_3d(self, mat2)
    _bmm_checks(self._shape, self.dtype, mat2._shape, mat2.dtype, out)
    return _spec((self._shape[0], self._shape[1], mat2._shape[2]), mat2.dtype)


bmm = structured("bmm(Tensor self, Tensor mat2) -> Tensor", _bmm_meta, inplace=False,
                 promotes=False, out_meta=_with_out(_bmm_meta),
                 doc="Batched matrix product of (b, n, k) and (b, k, m) tensors.")


def _mv_meta(self, vec, *, out=None):
    _need_tensor("mv", "vec", 2, vec)
    n = _size0(self._shape)
    _mv_as_addmv(self._shape, self.dtype, vec._shape, vec.dtype, out)
    return _spec((n,), vec.dtype)


mv = structured("mv(Tensor self, Tensor vec) -> Tensor", _mv_meta, inplace=False,
                promotes=False, out_meta=_with_out(_mv_meta),
                doc="Matrix-vector product of a 2-D and a 1-D tensor.")


mm.impl("CPU")(product_cpu)
bmm.impl("CPU")(product_cpu)
mv.impl("CPU")(product_cpu)


def _dot_meta(self, other, *, out=None):
    _need_tensor("dot", "tensor", 2, other)
    _dot_checks(self, other, out)
    return _spec((), self.dtype)


dot = structured("dot(Tensor self, Tensor tensor) -> Tensor", _dot_meta, inplace=False,
                 promotes=False, out_meta=_with_out(_dot_meta),
                 doc="Inner product of two 1-D tensors of one dtype.")
vdot = structured("vdot(Tensor self, Tensor other) -> Tensor", _dot_meta, inplace=False,
                  promotes=False, out_meta=_with_out(_dot_meta),
                  doc="Inner product of two 1-D tensors, conjugating the first.")


dot.impl("CPU")(dot_cpu)


vdot.impl("CPU")(vdot_cpu)


# ---- matmul ----------------------------------------------------------------------------

def _mT(shape, stride):
    return (shape[:-2] + (shape[-1], shape[-2]), stride[:-2] + (stride[-1], stride[-2]))


def _should_fold(a: Tensor, b: Tensor) -> bool:
    """PyTorch folds the batch dims of the larger operand into matrix rows (one mm or mv)
    when the smaller one is a vector or matrix and the fold needs no copy."""
    if a.dim() >= b.dim():
        shape, stride, small = a._shape, a._stride, b
    else:
        (shape, stride), small = _mT(b._shape, b._stride), a
    if not (len(shape) >= 3 and small.dim() <= 2):
        return False
    if small._requires_grad:
        return True
    if a.dim() == 2:
        return False
    if 0 in shape:
        return True
    return all(stride[i] == stride[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _matmul_meta(self, other, *, out=None):
    """Checks in the order of the kernel PyTorch's matmul reaches: dot, mv, mm (also for a
    folded batch) or bmm."""
    _need_tensor("matmul", "other", 2, other)
    a, b = self, other
    da, db = a.dim(), b.dim()
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == db == 1:
        _dot_checks(a, b, out)
        return _spec((), a.dtype)
    if da == 2 and db == 1:
        _mv_as_addmv(a._shape, a.dtype, b._shape, b.dtype, out)
        return _spec((a._shape[0],), a.dtype)
    if da == 1 and db == 2:
        _mm_checks((1, a._shape[0]), a.dtype, b._shape, b.dtype, out)
        return _spec((b._shape[1],), a.dtype)
    if da == db == 2:
        (n, _), (_, m) = a._shape, b._shape
        _mm_checks(a._shape, a.dtype, b._shape, b.dtype, out)
        return _spec((n, m), a.dtype)
    if _should_fold(a, b):
        transpose = db > da         # fold b.mT; the result comes back transposed
        if transpose:
            t1_shape, d1 = _mT(b._shape, b._stride)[0], b.dtype
            t2_shape, d2 = a._shape[::-1], a.dtype
        else:
            t1_shape, d1, t2_shape, d2 = a._shape, a.dtype, b._shape, b.dtype
        lead = tuple(t1_shape[:-1])
        folded = (math.prod(lead), t1_shape[-1])
        if len(t2_shape) == 1:      # out (resized first) is the added vector
            _mv_checks((folded[0],), d2 if out is None else out.dtype, folded, d1, t2_shape,
                       d2, out)
            return _spec(lead, a.dtype)
        _mm_checks(folded, d1, t2_shape, d2, out)
        shape = lead + (t2_shape[1],)
        return _spec(shape[:-2] + (shape[-1], shape[-2]) if transpose else shape, a.dtype)
    n = a._shape[-2] if da > 1 else 1
    m2 = b._shape[-2] if db > 1 else b._shape[0]
    p = b._shape[-1] if db > 1 else 1
    batch = broadcast_shapes2(tuple(a._shape[:-2]), tuple(b._shape[:-2]))
    nb = math.prod(batch)
    _bmm_checks((nb, n, a._shape[-1]), a.dtype, (nb, m2, p), b.dtype, out)
    return _spec(batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ()), b.dtype)


matmul = structured("matmul(Tensor self, Tensor other) -> Tensor", _matmul_meta, inplace=False,
                    promotes=False, out_meta=_with_out(_matmul_meta),
                    doc="Matrix product with NumPy's rules: 1-D operands become a row/column "
                        "and are removed again, batch dimensions broadcast.")
matmul.impl("CPU")(matmul_cpu)


def _row_major_output(shape: tuple, d: dt.dtype) -> Tensor:
    """A fresh row-major (m, n) output for the products' fast paths, made as the dispatcher
    makes one (a tensor of its own version counter outside inference mode)."""
    row_major = _STRIDES.get(shape)      # None: a shape no output has had yet
    if row_major is None or grad_state.inference:
        return Tensor._empty(shape, d)
    return new_cpu_tensor(shape, d, row_major, shape[0] * shape[1] * d.itemsize, True)


def _plain_float_matmul(general):
    """matmul's fast path (`OpDeclaration.fast_path`): two matrices of one dtype, float32
    or float64, whose inner sizes agree: `blas_matmul` into a row-major output, the call
    `matmul_cpu` makes for them after the meta function's walk through matmul's cases."""

    def kernel(self, other):
        if self.__class__ is Tensor and other.__class__ is Tensor:
            d = self.dtype
            if d in PLAIN_FLOATS and other.dtype is d and len(self._shape) == 2 and \
                    len(other._shape) == 2 and self._shape[1] == other._shape[0]:
                out = _row_major_output((self._shape[0], other._shape[1]), d)
                cpu.blas_matmul(self._np if self._np is not None else self._array(),
                                other._np if other._np is not None else other._array(),
                                out._np if out._np is not None else out._array())
                return out
        return general(self, other)
    return kernel


matmul.fast_path(_plain_float_matmul)


def _rmatmul_operator(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return _matmul_fn(other, self)


_matmul_fn = matmul.function
export("__matmul__", operator_method(Tensor.matmul, "__matmul__"), method=True,
       function=False)
export("__rmatmul__", _rmatmul_operator, method=True, function=False)


# ---- addmm / addmv / baddbmm / addbmm ---------------------------------------------------

def _addmm_meta(self, mat1, mat2, beta=1, alpha=1, *, out=None):
    _need_tensor("addmm", "mat1", 2, mat1)
    _need_tensor("addmm", "mat2", 3, mat2)
    if self.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{self.dtype.cname} and {mat2.dtype.cname}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{mat1.dtype.cname} and {mat2.dtype.cname}")
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.dim() != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.dim()}-D tensor")
    if mat1._shape[1] != mat2._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_mnk(mat1._shape)} "
                           f"and {_mnk(mat2._shape)})")
    _out_dtype(out, mat1.dtype)
    shape = (mat1._shape[0], mat2._shape[1])
    _expand_input(self, shape)
    _not_for_bool(mat1.dtype, "addmm_impl_cpu_")
    gemm_scalars(mat1.dtype, beta, alpha)
    return _spec(shape, mat1.dtype)


addmm = structured("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
                   "Scalar alpha=1) -> Tensor", _addmm_meta, promotes=False,
                   out_meta=_with_out(_addmm_meta), check_inplace=_inplace_same_shape,
                   doc="beta * input + alpha * (mat1 @ mat2); beta=0 ignores input (NaN too).")


def _addmv_meta(self, mat, vec, beta=1, alpha=1, *, out=None):
    _need_tensor("addmv", "mat", 2, mat)
    _need_tensor("addmv", "vec", 3, vec)
    _mv_checks(self._shape, self.dtype, mat._shape, mat.dtype, vec._shape, vec.dtype, out)
    gemm_scalars(vec.dtype, beta, alpha)
    return _spec((mat._shape[0],), vec.dtype)


def _linear_addmm(general):
    """addmm's fast path (`OpDeclaration.fast_path`): the call `nn.Linear` makes, a bias
    (a row, or the whole output) plus the product of two matrices of its dtype, float32 or
    float64, beta and alpha 1: the product into a row-major output, then the bias added,
    as `gemm_into` does them, without the meta function's checks."""

    def kernel(self, mat1, mat2, beta=1, alpha=1):
        if beta.__class__ is int and alpha.__class__ is int and beta == 1 and alpha == 1 \
                and mat1.__class__ is Tensor and mat2.__class__ is Tensor:
            d = mat1.dtype
            if d in PLAIN_FLOATS and mat2.dtype is d and self.dtype is d and \
                    len(mat1._shape) == 2 and len(mat2._shape) == 2 and \
                    mat1._shape[1] == mat2._shape[0]:
                shape = (mat1._shape[0], mat2._shape[1])
                bias = self._shape
                if bias == shape[1:] or bias == (1, shape[1]) or bias == shape:
                    out = _row_major_output(shape, d)
                    o = out._array()
                    cpu.blas_matmul(mat1._array(), mat2._array(), o)
                    np.add(o, self._array(), out=o)
                    return out
        return general(self, mat1, mat2, beta, alpha)
    return kernel


addmm.fast_path(_linear_addmm)


addmv = structured("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, "
                   "Scalar alpha=1) -> Tensor", _addmv_meta, promotes=False,
                   out_meta=_with_out(_addmv_meta), check_inplace=_inplace_same_shape,
                   doc="beta * input + alpha * (mat @ vec); beta=0 ignores input (NaN too).")


def _batch_size(t: Tensor, dim: int) -> int:
    return t._shape[wrap_dim(dim, t.dim())]


def _baddbmm_meta(self, batch1, batch2, beta=1, alpha=1, *, out=None):
    _need_tensor("baddbmm", "batch1", 2, batch1)
    _need_tensor("baddbmm", "batch2", 3, batch2)
    shape = (_batch_size(batch1, 0), _batch_size(batch1, 1), _batch_size(batch2, 2))
    _expand_input(self, shape)
    if self.dtype is not batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input "
                           f"{TYPE_NAMES[self.dtype]}, batch1: {TYPE_NAMES[batch1.dtype]}, "
                           f"batch2: {TYPE_NAMES[batch2.dtype]}")
    _check_3d(batch1, batch2)
    _bmm_checks(batch1._shape, batch1.dtype, batch2._shape, batch2.dtype, out, "baddbmm")
    gemm_scalars(batch2.dtype, beta, alpha)
    return _spec(shape, batch2.dtype)


baddbmm = structured("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
                     "Scalar alpha=1) -> Tensor", _baddbmm_meta, promotes=False,
                     out_meta=_with_out(_baddbmm_meta), check_inplace=_inplace_same_shape,
                     doc="beta * input + alpha * bmm(batch1, batch2).")


def _addbmm_meta(self, batch1, batch2, beta=1, alpha=1, *, out=None):
    _need_tensor("addbmm", "batch1", 2, batch1)
    _need_tensor("addbmm", "batch2", 3, batch2)
    shape = (_batch_size(batch1, 1), _batch_size(batch2, 2))
    _expand_input(self, shape)
    _check_3d(batch1, batch2)
    b1, b2 = batch1._shape, batch2._shape
    if b1[0] != b2[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b1[0]} "
                           f"and {b2[0]}")
    if b1[2] != b2[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({_mnk(b1[1:])} and "
                           f"{_mnk(b2[1:])})")
    d = self.dtype if out is None else out.dtype     # the result accumulates addmm_ calls
    if b1[0]:      # one addmm_ per batch; its checks apply only when there is one
        if d is not batch2.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {d.cname} "
                               f"and {batch2.dtype.cname}")
        if batch1.dtype is not batch2.dtype:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{batch1.dtype.cname} and {batch2.dtype.cname}")
        _not_for_bool(d, "addmm_impl_cpu_")
    gemm_scalars(d, beta, alpha)
    return _spec(shape, d)


addbmm = structured("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
                    "Scalar alpha=1) -> Tensor", _addbmm_meta, promotes=False,
                    out_meta=_with_out(_addbmm_meta), check_inplace=_inplace_same_shape,
                    doc="beta * input + alpha * (sum over the batch of batch1[i] @ batch2[i]).")


addmm.impl("CPU")(gemm_kernel())
addmv.impl("CPU")(gemm_kernel())
baddbmm.impl("CPU")(gemm_kernel())
addbmm.impl("CPU")(addbmm_kernel)


@addbmm.impl("CUDA")
def _addbmm_cuda(out, self, batch1, batch2, beta=1, alpha=1):
    """bfloat16 (bit patterns on the GPU) as PyTorch computes it, one addmm per batch each
    rounded to bfloat16 (cpu.batch_sum_rounded); other dtypes by the CPU kernel on CuPy
    arrays. Runs on the output's GPU."""
    from ...backends.cuda.bfloat16 import from_float32, to_float32
    from ...backends.cuda.runtime import DeviceGuard
    with DeviceGuard(out._storage.device.index):
        if out.dtype is not dt.bfloat16:
            addbmm_kernel(out, self, batch1, batch2, beta, alpha)
            return
        beta, alpha = gemm_scalars(out.dtype, beta, alpha)
        xp = module_of(out._array())

        def wide(t):
            a = t._array()
            return to_float32(xp, a) if t.dtype is dt.bfloat16 else a.astype(np.float32)
        result = cpu.batch_sum_rounded(wide(self), wide(batch1), wide(batch2), beta, alpha,
                                       lambda r: to_float32(xp, from_float32(xp, r)))
        out._array()[...] = from_float32(xp, result)


# ---- outer / ger / addr / inner ----------------------------------------------------------

def _check_1d(fname: str, arg: str, t: Tensor) -> None:
    if t.dim() != 1:
        raise RuntimeError(f"{fname}: Expected 1-D argument {arg}, but got {t.dim()}-D")


def _outer_meta(self, vec2):
    _need_tensor("outer", "vec2", 2, vec2)
    _check_1d("outer", "self", self)
    _check_1d("outer", "vec2", vec2)
    return _spec((self._shape[0], vec2._shape[0]), dt.promote_types(self.dtype, vec2.dtype))


outer = structured("outer(Tensor self, Tensor vec2) -> Tensor", _outer_meta, inplace=False,
                   doc="Outer product of two 1-D tensors (promotes dtypes like mul).")
ger = structured("ger(Tensor self, Tensor vec2) -> Tensor", _outer_meta, inplace=False,
                 doc="Alias of outer.")


outer.impl("CPU")(outer_cpu)
ger.impl("CPU")(outer_cpu)


def _addr_scalar(d: dt.dtype, value, name: str):
    if isinstance(value, (bool, np.bool_)) and d is not dt.bool:
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if d.category <= dt.INT and isinstance(value, (float, complex, np.inexact)):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                           "floating point number.")
    return scalar_as(value, d)


def _addr_meta(self, vec1, vec2, beta=1, alpha=1):
    _need_tensor("addr", "vec1", 2, vec1)
    _need_tensor("addr", "vec2", 3, vec2)
    _check_1d("addr", "vec1", vec1)
    _check_1d("addr", "vec2", vec2)
    shape = (vec1._shape[0], vec2._shape[0])
    _, self_strides = expand_strides(self._shape, self._stride, shape, self.dtype,
                                     self._storage.device.type)
    d = dt.promote_types(dt.promote_types(self.dtype, vec1.dtype), vec2.dtype)
    _addr_scalar(d, beta, "beta")
    _addr_scalar(d, alpha, "alpha")
    column = view_strides(vec1._shape, vec1._stride, (shape[0], 1))   # vec1 as (n, 1)
    operands = [(shape, self_strides), ((shape[0], 1), column), (vec2._shape, vec2._stride)]
    return TensorSpec(Size(shape), d, iterator_strides(shape, operands))


def _addr_inplace(spec, self, vec1, vec2, *scalars) -> None:
    if self.dim() != 2:
        raise RuntimeError(f"2D tensor expected, got {self.dim()}D tensor for input")
    if self._shape != spec.shape:
        raise RuntimeError(f"size mismatch, input: {list(self._shape)}, v1: "
                           f"{list(vec1._shape)}, v2: {list(vec2._shape)}")


addr = structured("addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, "
                  "Scalar alpha=1) -> Tensor", _addr_meta, check_inplace=_addr_inplace,
                  doc="beta * input + alpha * outer(vec1, vec2), promoting dtypes; for bool, "
                      "`or` and `and`.")
addr.impl("CPU")(addr_cpu)


def _inner_meta(self, other, *, out=None):
    _need_tensor("inner", "other", 2, other)
    if self.dim() == 0 or other.dim() == 0:     # a pointwise product; promotes
        return promoting_meta(self, other)
    if self._shape[-1] != other._shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(self._shape)} and {list(other._shape)}")
    if self.dtype is not other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    _tensordot_bool(self, other, (self.dim() - 1,), (other.dim() - 1,))
    _tensordot_out(out, self.dtype)
    return _spec(self._shape[:-1] + other._shape[:-1], self.dtype)


inner = structured("inner(Tensor self, Tensor other) -> Tensor", _inner_meta, inplace=False,
                   out_meta=_with_out(_inner_meta),
                   doc="Sum of products over the last dimension of both inputs (a product "
                       "with a 0-dim input is pointwise).")
inner.impl("CPU")(inner_cpu)


# ---- tensordot -------------------------------------------------------------------------

def _tensordot_bool(a: Tensor, b: Tensor, c1, c2) -> None:
    """PyTorch contracts with mm, or with dot when nothing is left uncontracted and both
    operands are contiguous in contraction order; neither runs on bool."""
    if a.dtype is not dt.bool:
        return
    p1 = [i for i in range(a.dim()) if i not in c1] + list(c1)
    p2 = list(c2) + [i for i in range(b.dim()) if i not in c2]
    if math.prod(a._shape[i] for i in p1[:a.dim() - len(c1)]) != 1 or \
            math.prod(b._shape[i] for i in p2[len(c2):]) != 1:
        _not_for_bool(a.dtype, "addmm_impl_cpu_")
    if all(is_contiguous([t._shape[i] for i in p], [t._stride[i] for i in p])
           for t, p in ((a, p1), (b, p2))):
        _not_for_bool(a.dtype, "dot")


def _tensordot_meta(self, other, dims_self, dims_other, *, out=None):
    _need_tensor("tensordot", "other", 2, other)
    if len(dims_self) != len(dims_other):
        raise RuntimeError("both dimension lists should have same length")
    if self.dtype is not other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for d1, d2 in zip(dims_self, dims_other):
        s1 = self._shape[wrap_dim(d1, self.dim())]
        s2 = other._shape[wrap_dim(d2, other.dim())]
        if s1 != s2 and s1 != 1 and s2 != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} "
                               f"in dim {d1} and second has size {s2} in dim {d2}")
    c1, c2 = wrap_dims(dims_self, self.dim()), wrap_dims(dims_other, other.dim())
    _tensordot_bool(self, other, c1, c2)
    _tensordot_out(out, self.dtype)
    shape = tuple(s for i, s in enumerate(self._shape) if i not in c1) + \
        tuple(s for i, s in enumerate(other._shape) if i not in c2)
    return _spec(shape, self.dtype)


tensordot_op = structured("tensordot(Tensor self, Tensor other, int[] dims_self, "
                          "int[] dims_other) -> Tensor", _tensordot_meta, method=False,
                          function=False, inplace=False, promotes=False,
                          out_meta=_with_out(_tensordot_meta),
                          doc="Contract dims_self of input with dims_other of other.")
tensordot_op.impl("CPU")(tensordot_cpu)


def tensordot(a, b, dims=2, out=None):
    """Sum products over the last `dims` dims of `a` and the first `dims` of `b`, or over the
    dims listed in `dims=(dims_a, dims_b)`.

    >>> glasstorch.tensordot(glasstorch.ones(2, 3, 4), glasstorch.ones(3, 4, 5)).shape
    torch.Size([2, 5])
    """
    if isinstance(dims, Tensor):
        if dims.numel() > 1:
            dims_a, dims_b = dims[0].tolist(), dims[1].tolist()
        else:
            dims = int(dims.item())
            if dims < 0:
                raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
            dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    elif isinstance(dims, (tuple, list)):
        dims_a, dims_b = dims
    elif isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] "
                           "or list[list[int]] containing two lists, but got "
                           f"dims={dims}")
    for pos, name, ds in ((3, "dims_self", dims_a), (4, "dims_other", dims_b)):
        if not isinstance(ds, (list, tuple)):
            raise TypeError(f"tensordot(): argument '{name}' (position {pos}) must be tuple "
                            f"of ints, not {type(ds).__name__}")
    return tensordot_op.function(a, b, tuple(map(operator.index, dims_a)),
                                 tuple(map(operator.index, dims_b)), out=out)


export("tensordot", tensordot)


# ---- einsum ----------------------------------------------------------------------------
# PyTorch's algorithm, step for step: parse the labels; take diagonals of repeated labels,
# unsqueeze missing ones and permute every operand to [output dims..., contracted dims...];
# then contract operands pairwise (left to right, or along `path`), summing away dims that
# only one operand still has and turning each pair into one bmm. Running it on metadata gives
# the result's dtype and strides; running it on arrays gives its values.

_ELLIPSIS = 52


def _label_index(ch: str) -> int:
    return ord(ch) - ord("A") if ch <= "Z" else ord(ch) - ord("a") + 26


def _label_char(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else chr(ord("a") + index - 26)


def _is_label(ch: str) -> bool:
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z")


@lru_cache(maxsize=512)
def _parse_operands(lhs: str, num_ops: int) -> tuple:
    """The labels of each operand (ints 0..51, _ELLIPSIS for '...'), with PyTorch's errors."""
    labels = [[] for _ in range(num_ops)]
    cur, ell, i = 0, False, 0
    while i < len(lhs):
        ch = lhs[i]
        if ch == " ":
            pass
        elif ch == ".":
            if ell:
                raise RuntimeError(f"einsum(): found '.' for operand {cur} for which an "
                                   "ellipsis was already found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {cur} that is not part of"
                                   " any ellipsis")
            i += 2
            labels[cur].append(_ELLIPSIS)
            ell = True
        elif ch == ",":
            cur += 1
            if cur >= num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in "
                                   "the equation")
            ell = False
        elif _is_label(ch):
            labels[cur].append(_label_index(ch))
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation"
                               " string, subscripts must be in [a-zA-Z]")
        i += 1
    if cur != num_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    return tuple(tuple(x) for x in labels)


class _Term:
    """One operand during the contraction: metadata, plus its values when computing."""

    __slots__ = ("shape", "stride", "dtype", "arr")

    def __init__(self, shape, stride, dtype, arr=None):
        self.shape, self.stride, self.dtype, self.arr = tuple(shape), tuple(stride), dtype, arr

    def permuted(self, perm):
        arr = None if self.arr is None else self.arr.transpose(perm)
        return _Term([self.shape[p] for p in perm], [self.stride[p] for p in perm],
                     self.dtype, arr)


def _sum_dtype(d: dt.dtype) -> dt.dtype:
    return dt.int64 if d.category <= dt.INT else d


def _term_sum(t: _Term, dims) -> _Term:
    """t.sum(dims, keepdim=True): contiguous, integers and bool widen to int64."""
    shape = tuple(1 if i in dims else s for i, s in enumerate(t.shape))
    d = _sum_dtype(t.dtype)
    arr = None if t.arr is None else cpu.sum_keepdim(t.arr, dims, d.np)
    return _Term(shape, contiguous_strides(shape), d, arr)


def _term_mul(a: _Term, b: _Term) -> _Term:
    """a * b. TensorIterator first converts an input of another dtype into a copy, which
    keeps dense strides and otherwise gets dense strides in the same dimension order; the
    result's layout follows the copy."""
    shape = broadcast_shapes2(a.shape, b.shape)
    d = dt.promote_types(a.dtype, b.dtype)
    operands = [(t.shape, t.stride) if t.dtype is d or is_non_overlapping_and_dense(
        t.shape, t.stride) else (t.shape, iterator_strides(t.shape, [(t.shape, t.stride)]))
        for t in (a, b)]
    arr = None if a.arr is None else cpu.multiply(a.arr, b.arr, d.np)
    return _Term(shape, iterator_strides(shape, operands), d, arr)


def _sumproduct_pair(left: _Term, right: _Term, sum_dims) -> _Term:
    """(left * right).sum(sum_dims, keepdim=True) as one bmm over permuted operands."""
    if not sum_dims:
        return _term_mul(left, right)
    lro, lo, ro = [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i, (sl, sr) in enumerate(zip(left.shape, right.shape)):
        if i in sum_dims:
            sum_size *= sl
        elif sl != 1 and sr != 1:
            lro.append(i)
            lro_size *= sl
        elif sl != 1:
            lo.append(i)
            lo_size *= sl
        else:
            ro.append(i)
            ro_size *= sr
    if lo and ro and ro[-1] < lo[0]:
        # The right operand's dims all come first in the output: bmm(right, left) writes
        # the result in output order.
        left, right, lo, ro, lo_size, ro_size = right, left, ro, lo, ro_size, lo_size
    _bmm_dtypes(left.dtype, right.dtype)
    out_size = ([left.shape[d] for d in lro] + [left.shape[d] for d in lo] +
                [1] * len(sum_dims) + [right.shape[d] for d in ro])
    order = lro + lo + list(sum_dims) + ro
    operm = [0] * len(order)
    for pos, d in enumerate(order):
        operm[d] = pos
    bmm_shape = (lro_size, lo_size, ro_size)
    stride = view_strides(bmm_shape, contiguous_strides(bmm_shape), tuple(out_size))
    arr = None
    if left.arr is not None:
        lm = left.arr.transpose(lro + lo + list(sum_dims) + ro).reshape(
            lro_size, lo_size, sum_size)
        rm = right.arr.transpose(lro + list(sum_dims) + ro + lo).reshape(
            lro_size, sum_size, ro_size)
        arr = cpu.batched_product(lm, rm, left.dtype.np).reshape(out_size)
    return _Term(out_size, stride, left.dtype, arr).permuted(operm)


def _output_layout(equation: str, arrow: int, lhs: str, label_count: dict,
                   ell_num_dim: int):
    """Where each label goes in the aligned layout [output dims..., contracted dims...]:
    (label -> position, ellipsis start, number of output dims, total dims)."""
    perm_of = {}
    perm_index = ell_index = 0
    ell_in_output = False
    if arrow < 0:       # implicit output: the ellipsis, then labels seen once, sorted
        perm_index, ell_in_output = ell_num_dim, True
        for lab in sorted(label_count):
            if label_count[lab] == 1:
                perm_of[lab] = perm_index
                perm_index += 1
    else:
        rhs = equation[arrow + 2:]
        i = 0
        while i < len(rhs):
            ch = rhs[i]
            if ch == ".":
                if ell_in_output:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) "
                                       "was already found")
                if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError("einsum(): found '.' for output that is not part of "
                                       "any ellipsis (...)")
                i += 2
                ell_index, ell_in_output = perm_index, True
                perm_index += ell_num_dim
            elif ch != " ":
                if not _is_label(ch):
                    raise RuntimeError(f"einsum(): invalid subscript given at index "
                                       f"{len(lhs) + 2 + i} in the equation string, "
                                       "subscripts must be in [a-zA-Z]")
                lab = _label_index(ch)
                if lab not in label_count or lab in perm_of:
                    raise RuntimeError(
                        f"einsum(): output subscript {ch}" +
                        (" appears more than once in the output" if lab in perm_of
                         else " does not appear in the equation for any input operand"))
                perm_of[lab] = perm_index
                perm_index += 1
            i += 1
    out_num_dim = perm_index
    if not ell_in_output:
        ell_index = perm_index
        perm_index += ell_num_dim
    for lab in sorted(label_count):
        if lab not in perm_of:
            perm_of[lab] = perm_index
            perm_index += 1
    return perm_of, ell_index, out_num_dim, perm_index


def _align(i, op, labels, perm_of, ell_index, ell_num_dim, perm_index, sizes, dim_counts):
    """Operand i as (shape, stride) in the aligned layout: diagonals for repeated labels,
    size-1 dims for missing ones. Checks and records label sizes in `sizes`."""
    shape, stride = list(op._shape), list(op._stride)
    permutation = [-1] * perm_index
    dim = 0
    for lab in labels:
        if lab == _ELLIPSIS:
            covered = len(shape) - (len(labels) - 1)
            for j in range(ell_num_dim - covered, ell_num_dim):
                pos = ell_index + j
                if shape[dim] != 1:
                    seen = sizes.get(pos, 1)
                    if seen != 1 and seen != shape[dim]:
                        raise RuntimeError(
                            f"einsum(): dimension {dim} covered by ellipsis in operand {i}"
                            f"has size {shape[dim]} which does not broadcast with previously "
                            f"seen ellipsis with size {seen} for the respective dimension")
                    sizes[pos] = shape[dim]
                    dim_counts[pos] += 1
                permutation[pos] = dim
                dim += 1
        elif permutation[perm_of[lab]] == -1:
            pos = perm_of[lab]
            if shape[dim] != 1:
                seen = sizes.get(pos, 1)
                if seen != 1 and seen != shape[dim]:
                    raise RuntimeError(
                        f"einsum(): subscript {_label_char(lab)} has size {shape[dim]} for "
                        f"operand {i} which does not broadcast with previously seen size "
                        f"{seen}")
                sizes[pos] = shape[dim]
                dim_counts[pos] += 1
            permutation[pos] = dim
            dim += 1
        else:       # a repeated label: its diagonal, in the first occurrence's place
            prev = permutation[perm_of[lab]]
            if shape[dim] != shape[prev]:
                raise RuntimeError(
                    f"einsum(): subscript {_label_char(lab)} is repeated for operand {i} but "
                    f"the sizes don't match, {shape[dim]} != {shape[prev]}")
            stride[prev] += stride[dim]
            del shape[dim], stride[dim]
    for k, val in enumerate(permutation):
        if val == -1:           # a label this operand lacks: a size-1 dim at the end
            shape.append(1)
            stride.append(1)
            permutation[k] = dim
            dim += 1
    return [shape[p] for p in permutation], [stride[p] for p in permutation]


def _contract(ops: list, path, out_num_dim: int, perm_index: int, dim_counts) -> _Term:
    """Contract the aligned operands pairwise (left to right, or along `path`)."""
    steps = iter(path or ())
    while len(ops) > 1:
        i, j = 0, 1
        if path is not None:
            i, j = next(steps), next(steps)
            if j < i:
                i, j = j, i
            if i == j or i < 0 or j >= len(ops):
                raise RuntimeError(
                    f"einsum(): invalid contraction ({i}, {j})" +
                    (" cannot contract an operand with itself" if i == j
                     else " operand index is out of bounds"))
        a, b = ops[i], ops[j]
        del ops[j], ops[i]
        sum_dims, a_sum, b_sum = [], [], []
        for dim in range(out_num_dim, perm_index):
            if a.shape[dim] != 1 and b.shape[dim] != 1:
                dim_counts[dim] -= 1
                if dim_counts[dim] == 1:       # no other operand has it: sum it now
                    sum_dims.append(dim)
                    dim_counts[dim] = 0
            elif dim_counts[dim] == 1:
                if a.shape[dim] != 1:
                    a_sum.append(dim)
                    dim_counts[dim] = 0
                elif b.shape[dim] != 1:
                    b_sum.append(dim)
                    dim_counts[dim] = 0
        if a_sum:
            a = _term_sum(a, a_sum)
        if b_sum:
            b = _term_sum(b, b_sum)
        r = _sumproduct_pair(a, b, sum_dims)
        if path is not None:
            ops.append(r)
        else:
            ops.insert(0, r)
    t = ops[0]
    if perm_index > out_num_dim:       # drop the contracted dims, all size 1 by now
        shape = t.shape[:out_num_dim]
        t = _Term(shape, view_strides(t.shape, t.stride, shape), t.dtype,
                  None if t.arr is None else t.arr.reshape(shape))
    return t


def _einsum_run(equation: str, operands, path=None, compute=False):
    """PyTorch's einsum on metadata (and arrays when `compute`). Returns a _Term, or
    ('view', shape, stride, offset) when the result is a view of the single operand."""
    num_ops = len(operands)
    if num_ops == 0:
        raise RuntimeError("einsum(): must provide at least one operand")
    if path is not None:
        want = 1 if num_ops == 1 else (num_ops - 1) * 2
        if len(path) != want:
            raise RuntimeError(f"einsum(): expected contraction path given in path parameter "
                               f"to have size {want} but got {len(path)}")
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    op_labels = _parse_operands(lhs, num_ops)

    label_count: dict = {}
    ell_num_dim = 0
    for i, (op, labels) in enumerate(zip(operands, op_labels)):
        ndims, nlabels, has_ell = len(op._shape), len(labels), False
        for lab in labels:
            if lab == _ELLIPSIS:
                nlabels -= 1
                has_ell = True
                ell_num_dim = max(ell_num_dim, ndims - nlabels)
            else:
                label_count[lab] = label_count.get(lab, 0) + 1
        if not (nlabels <= ndims if has_ell else nlabels == ndims):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({nlabels}) "
                + ("is more than" if has_ell else "does not match")
                + f" the number of dimensions ({ndims}) for operand {i}"
                + ("" if has_ell else " and no ellipsis was given"))
    perm_of, ell_index, out_num_dim, perm_index = _output_layout(
        equation, arrow, lhs, label_count, ell_num_dim)

    sizes: dict = {}
    dim_counts = [0] * perm_index
    ops = []
    for i, (op, labels) in enumerate(zip(operands, op_labels)):
        shape, stride = _align(i, op, labels, perm_of, ell_index, ell_num_dim, perm_index,
                               sizes, dim_counts)
        if num_ops == 1 and perm_index == out_num_dim:
            return "view", tuple(shape), tuple(stride), op._offset
        arr = None
        if compute:
            arr = Tensor._make(op._storage, op._offset, shape, stride, op.dtype)._array()
        ops.append(_Term(shape, stride, op.dtype, arr))

    if num_ops == 1:
        t = _term_sum(ops[0], range(out_num_dim, perm_index))
        shape = t.shape[:out_num_dim]
        return _Term(shape, contiguous_strides(shape), t.dtype,
                     None if t.arr is None else t.arr.reshape(shape))
    return _contract(ops, path, out_num_dim, perm_index, dim_counts)


einsum_op = kernel_op("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
                      method=False, function=False,
                      doc="Einstein summation over the operands' labelled dimensions.")
einsum_op.on_cuda = "shared"


def _einsum_kernel(device):
    def kernel(equation, tensors, path=None):
        r = _einsum_run(equation, tensors, path, compute=device is None)
        if r.__class__ is tuple:
            return tensors[0].as_strided(*r[1:])
        out = Tensor._empty(r.shape, r.dtype, device or tensors[0].device, r.stride)
        if device is None:
            np.copyto(out._array(), r.arr)
        return out
    return kernel


einsum_op.impl("CPU")(_einsum_kernel(None))
einsum_op.impl("Meta")(_einsum_kernel(META))


def _sublist_label(n) -> str:
    if n is Ellipsis:
        return "..."
    if isinstance(n, int) and 0 <= n < 52:
        return _label_char(n)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range "
                     "[0, 52)")


def einsum(*args):
    """einsum(equation, *operands): sum of products over labelled dimensions, e.g.
    'ij,jk->ik' (matrix product), 'ii' (trace), 'bij,bjk->bik' (batched), '...ij->...ji'.
    Operands may also be one list, or interleaved with their subscript lists
    (einsum(a, [0, 1], b, [1, 2], [0, 2])).

    >>> glasstorch.einsum('ij,jk->ik', glasstorch.ones(2, 3), glasstorch.ones(3, 4)).shape
    torch.Size([2, 4])
    """
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one "
                         "operand, or at least one operand and its subscripts list")
    if isinstance(args[0], Tensor):
        equation = ",".join("".join(map(_sublist_label, s)) for s in args[1::2])
        if len(args) % 2 == 1:
            equation += "->" + "".join(map(_sublist_label, args[-1]))
            operands = args[:-1:2]
        else:
            operands = args[::2]
    else:
        equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        return einsum(equation, *operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not "
                        f"{type(equation).__name__}")
    for i, op in enumerate(operands):
        if not isinstance(op, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(op).__name__}")
    if len(operands) == 1:
        r = _einsum_run(equation, operands)
        if r.__class__ is tuple:        # no summation: a view, as in PyTorch
            return operands[0].as_strided(*r[1:])
    return einsum_op.functional(equation, list(operands), None)


export("einsum", einsum)

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(mm, bmm, baddbmm, addmm, addbmm, matmul, cpu=LOWER_PRECISION, cuda=LOWER_PRECISION)
autocast_policy(addmv, addr, mv, cuda=LOWER_PRECISION)
autocast_policy(dot, tensordot_op, cuda=PROMOTE)
