"""CPU kernels for matrix products, over NumPy's matmul (BLAS for float32/float64/complex).

Kernels receive NumPy arrays that view the tensors' memory and write the result into the
output's array. float32, float64, complex and integer products run in the output's own
dtype, straight into its memory (`np.matmul(a, b, out=o)`: no copy for large matrices);
float16 and bfloat16 are computed in float32 and rounded once, as PyTorch's CPU kernels do.
NumPy's matmul copes with an output that overlaps an input, so only the `beta * input` term
of the addmm family needs care when the output is the input (in-place calls). The same
kernels run on CuPy arrays (CUDA tensors: cuBLAS). The kernels registered for the product ops
(`product_cpu`, `matmul_cpu`, `gemm_kernel`, ...) take tensors and call these on their arrays.

float32 and float64 products from OWN_KERNEL_MNK multiply-adds run on glasstorch's own
kernel where the CPU has AVX-512 (split_gemm.own_matmul). Otherwise mid-sized products run
with one BLAS thread and large ones on threads glasstorch starts itself (`blas_matmul`):
BLAS's own threads spin next to the kernel pool's after them, and wait for one another by
yielding, which collapses on a shared machine (split_gemm.py).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ...core import dtype as dt
from ...core.promotion import common_dtype, opmath
from ...core.shape import wrap_dims
from ...core.tensor import Tensor
from ..arrays import round_through
from . import split_gemm
from .blas_threads import one_thread

_FLOAT32 = np.dtype(np.float32)
_HALVES = frozenset((np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)))


def compute_dtype(np_dtype) -> np.dtype:
    """The dtype a product runs in: float32 for float16/bfloat16, else the dtype itself."""
    return _FLOAT32 if np_dtype in _HALVES else np_dtype


def _upcast(a: np.ndarray, cd: np.dtype) -> np.ndarray:
    return a if a.dtype == cd else a.astype(cd)


_BLAS_SERIAL_MNK = 1 << 19
"""OpenBLAS runs a product of fewer multiply-adds (m*n*k) on one thread anyway (two threads
from 2 * 262144): no thread count to change below it."""

ONE_THREAD_MNK = 1 << 21
"""Products of fewer multiply-adds (~25 us on one core) run on the calling thread alone:
more threads gain little there, and BLAS's, once woken, spin for ~0.1 s on the cores that
the pool's kernels (relu, max_pool, convolution on 64x16x28x28) want next. Larger products
are split across glasstorch's own threads (split_gemm.py)."""


OWN_KERNEL_MNK = 1 << 19
"""Products from this many multiply-adds run on glasstorch's own kernel where it was built
(split_gemm.own_matmul: AVX-512); smaller ones cost less through np.matmul's call."""


def blas_matmul(a: np.ndarray, b: np.ndarray, o: np.ndarray) -> None:
    """np.matmul(a, b, out=o): from OWN_KERNEL_MNK multiply-adds on glasstorch's own kernel
    where it applies; else products from ONE_THREAD_MNK multiply-adds on glasstorch's
    threads (split_gemm; BLAS's own threads where it does not apply), smaller ones on one
    BLAS thread (the CNN step's 64x1568x10 products no longer wake BLAS's threads)."""
    mnk = o.size * (a.shape[-1] if a.ndim else 1)
    if mnk >= OWN_KERNEL_MNK and split_gemm.own_matmul(a, b, o):
        return
    if mnk < _BLAS_SERIAL_MNK or o.__class__ is not np.ndarray:
        np.matmul(a, b, out=o)
    elif mnk >= ONE_THREAD_MNK:
        if not split_gemm.matmul(a, b, o):
            np.matmul(a, b, out=o)
    else:
        with one_thread():
            np.matmul(a, b, out=o)


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """np.matmul(a, b, out=out), returning the result: on glasstorch's own kernel where it
    applies (float32/float64 NumPy arrays, from OWN_KERNEL_MNK multiply-adds), for the
    kernels that multiply arrays of their own making (convolution's columns)."""
    if (a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.ndim >= 2
            and b.ndim >= 2 and a.dtype == b.dtype and (out is None or out.dtype == a.dtype)):
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        ndim = max(a.ndim, b.ndim)
        lead = tuple(max(x, y) for x, y in zip((1,) * (ndim - a.ndim) + a.shape[:-2],
                                                (1,) * (ndim - b.ndim) + b.shape[:-2]))
        if math.prod(lead) * m * n * k >= OWN_KERNEL_MNK:
            o = np.empty(lead + (m, n), a.dtype) if out is None else out
            if o.shape == lead + (m, n) and split_gemm.own_matmul(a, b, o):
                return o
    return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)


def blas_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b of two matrices as a new array, through blas_matmul (no dtype change)."""
    out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    blas_matmul(a, b, out)
    return out


def matmul_into(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """o[...] = a @ b with NumPy's matmul rules for 1-d and batched operands."""
    if o.dtype not in _HALVES:
        blas_matmul(a, b, o)
    elif o.dtype == np.float16 and o.__class__ is not np.ndarray:
        np.matmul(a, b, out=o)      # cuBLAS: tensor cores, float32 sums, as PyTorch on a GPU
    else:
        np.copyto(o, np.matmul(a.astype(_FLOAT32), b.astype(_FLOAT32)), casting="unsafe")


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b in the compute dtype (a new array)."""
    cd = compute_dtype(a.dtype)
    return np.matmul(_upcast(a, cd), _upcast(b, cd))


def dot_into(o: np.ndarray, a: np.ndarray, b: np.ndarray, conj_first: bool = False) -> None:
    """o[()] = sum(a * b) of two vectors (vdot conjugates `a`)."""
    cd = compute_dtype(o.dtype)
    a, b = _upcast(a, cd), _upcast(b, cd)
    r = np.vdot(a, b) if conj_first else np.dot(a, b)
    np.copyto(o, r, casting="unsafe")


def gemm_into(o: np.ndarray, c, a: np.ndarray, b: np.ndarray, beta, alpha,
              batch_sum: bool = False) -> None:
    """o = beta * c + alpha * (a @ b), BLAS-style: beta == 0 ignores `c` (NaN included) and
    alpha == 0 ignores the product. `c` broadcasts to `o`; `batch_sum` sums the batched
    product over its first dimension (addbmm)."""
    cd = compute_dtype(o.dtype)
    if batch_sum and cd != o.dtype:
        narrow = o.dtype
        np.copyto(o, batch_sum_rounded(c.astype(cd), a.astype(cd), b.astype(cd), beta, alpha,
                                       lambda r: r.astype(narrow).astype(cd)),
                  casting="unsafe")
        return
    if batch_sum:
        a, b = _fold_batches(a, b)
    if cd != o.dtype:      # float16 / bfloat16: accumulate in float32, round once
        r = np.zeros_like(o, dtype=cd) if alpha == 0 else product(a, b)
        if alpha != 1 and alpha != 0:
            r *= alpha
        if beta != 0:
            r += np.multiply(c, beta, dtype=cd)
        np.copyto(o, r, casting="unsafe")
        return
    alpha, beta = _np_scalar(alpha, cd), _np_scalar(beta, cd)
    if beta != 0 and (c is o or np.may_share_memory(o, c)):
        # In place: o already holds the input; scale it, then add the product.
        prod = None if alpha == 0 else np.matmul(a, b)
        if beta != 1:
            np.multiply(o, beta, out=o)
        if prod is not None:
            if alpha != 1:
                prod *= alpha
            o += prod
        return
    if alpha == 0:
        o[...] = 0
    else:
        blas_matmul(a, b, o)
        if alpha != 1:
            np.multiply(o, alpha, out=o)
    if beta == 1:
        np.add(o, c, out=o)
    elif beta != 0:
        np.add(o, np.multiply(c, beta, dtype=cd), out=o)


def batch_sum_rounded(c, a, b, beta, alpha, rounded):
    """beta * c + alpha * sum_i a[i] @ b[i] in float32 as PyTorch's addbmm computes float16
    and bfloat16: one addmm per batch, its result rounded to the narrow type (`rounded`:
    float32 values to the nearest narrow ones, kept as float32) before the next adds to it.
    NumPy or CuPy arrays; beta == 0 ignores `c`, alpha == 0 the products."""
    shape = (a.shape[1], b.shape[2])
    acc = np.broadcast_to(c * np.float32(beta), shape) if beta != 0 else None
    if not a.shape[0]:
        return np.zeros_like(c, shape=shape) if acc is None else rounded(acc)
    for i in range(a.shape[0]):
        p = np.matmul(a[i], b[i])
        if alpha == 0:
            p[...] = 0
        elif alpha != 1:
            p *= np.float32(alpha)
        acc = rounded(p if acc is None else acc + p)
    return acc


def _fold_batches(a: np.ndarray, b: np.ndarray):
    """(B, n, k) and (B, k, m) as (n, B*k) and (B*k, m): one product sums over the batch."""
    bsz, n, k = a.shape
    m = b.shape[2]
    return a.transpose(1, 0, 2).reshape(n, bsz * k), b.reshape(bsz * k, m)


def _np_scalar(value, np_dtype):
    """A NumPy scalar of the compute dtype, so integer arithmetic wraps as in C."""
    if np_dtype.kind in "iu":
        return np.array(value).astype(np_dtype)[()]
    return np_dtype.type(value)


def outer_into(o: np.ndarray, v1: np.ndarray, v2: np.ndarray, cd) -> None:
    np.multiply(v1[:, None], v2[None, :], out=o, dtype=cd, casting="unsafe")


def addr_into(o: np.ndarray, c: np.ndarray, v1: np.ndarray, v2: np.ndarray, beta, alpha,
              cd, steps: dt.dtype | None = None) -> None:
    """o = beta * c + alpha * outer(v1, v2) in dtype `cd`; for bool, `and`/`or` instead.
    `steps` (float16 or bfloat16): each operation, and beta and alpha, rounded to it, as
    PyTorch's addr computes `beta * c + alpha * v1 * v2` in the tensors' own dtype."""
    if cd == np.bool_:
        r = np.logical_and(v1[:, None], v2[None, :]) if alpha else np.zeros_like(o, dtype=bool)
        if beta:
            r = np.logical_or(r, c)
        np.copyto(o, r, casting="unsafe")
        return

    def step(x):
        return x if steps is None else round_through(x, steps)
    alpha, beta = step(_np_scalar(alpha, cd)), step(_np_scalar(beta, cd))
    r = np.multiply(step(np.multiply(v1[:, None], alpha, dtype=cd)), v2[None, :], dtype=cd)
    if beta != 0:
        r = np.add(step(np.multiply(c, beta, dtype=cd)), step(r), dtype=cd)
    np.copyto(o, r, casting="unsafe")


# ---- einsum ----------------------------------------------------------------------------

def sum_keepdim(a: np.ndarray, dims, np_dtype) -> np.ndarray:
    """Sum over `dims` keeping them as size 1, in PyTorch's sum result dtype `np_dtype`."""
    acc = compute_dtype(np_dtype)
    r = np.add.reduce(a, axis=tuple(dims), keepdims=True, dtype=acc)
    return r if r.dtype == np_dtype else r.astype(np_dtype)


def multiply(a: np.ndarray, b: np.ndarray, np_dtype) -> np.ndarray:
    cd = compute_dtype(np_dtype)
    r = np.multiply(a, b, dtype=cd)
    return r if r.dtype == np_dtype else r.astype(np_dtype)


def batched_product(left: np.ndarray, right: np.ndarray, np_dtype) -> np.ndarray:
    """bmm of (B, n, k) and (B, k, m) in `np_dtype` (float16/bfloat16 via float32)."""
    r = product(left, right)
    return r if r.dtype == np_dtype else r.astype(np_dtype)


# C++ type names in PyTorch's messages: TypeMeta names ("long int") and the target types of
# Scalar conversions ("int64_t").
TYPE_NAMES = {dt.bool: "bool", dt.uint8: "unsigned char", dt.int8: "signed char",
               dt.int16: "short int", dt.int32: "int", dt.int64: "long int",
               dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16", dt.float32: "float",
               dt.float64: "double", dt.complex64: "c10::complex<float>",
               dt.complex128: "c10::complex<double>"}

_SCALAR_NAMES = {**TYPE_NAMES, dt.uint8: "uint8_t", dt.int8: "int8_t", dt.int16: "int16_t",
                 dt.int64: "int64_t"}

_FLOAT_MAX = {d: float(dt.finfo(d).max) for d in (dt.float16, dt.bfloat16, dt.float32,
                                                  dt.float64, dt.complex64, dt.complex128)}


def scalar_as(value, d: dt.dtype):
    """`value` converted to dtype `d` as c10's checked Scalar conversion does: RuntimeError
    when it does not fit (a complex with an imaginary part into a real type, a finite float
    beyond the range), C truncation of floats into integers, wrap-around of small negative
    integers into unsigned types."""
    if value.__class__ is int and (value == 1 or value == 0):
        return value if d is not dt.bool else bool(value)
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, (int, float, complex, np.number, np.bool_)):
        raise TypeError(f"expected a number for a Scalar argument, but got "
                        f"{type(value).__name__}")
    ok = True
    if d.category == dt.BOOL:
        return bool(value)
    if d.category == dt.COMPLEX:
        v = complex(value)
        ok = all(not math.isfinite(x) or abs(x) <= _FLOAT_MAX[d] for x in (v.real, v.imag))
    else:
        if isinstance(value, (complex, np.complexfloating)):
            ok, value = value.imag == 0, value.real
        if d.category == dt.FLOAT:
            try:
                v = float(value)
            except OverflowError:
                v, ok = 0.0, False
            ok = ok and (not math.isfinite(v) or abs(v) <= _FLOAT_MAX[d])
        else:
            v, ok = _int_scalar(value, d, ok)
    if not ok:
        raise RuntimeError(f"value cannot be converted to type {_SCALAR_NAMES[d]} without "
                           "overflow")
    return v


def _int_scalar(value, d: dt.dtype, ok: bool):
    info = dt.iinfo(d)
    if isinstance(value, (float, np.floating)):
        ok = ok and math.isfinite(value) and info.min <= value <= info.max
        return (int(value) if ok else 0), ok
    v = int(value)
    if not d.is_signed and v < 0:      # -1 into uint8 is 255, as in C
        return v & info.max, ok and -v <= info.max
    return v, ok and info.min <= v <= info.max


def gemm_scalars(d: dt.dtype, beta, alpha):
    """beta and alpha as the addmm family's kernels read them (float for float16/bfloat16)."""
    target = dt.float32 if d is dt.float16 or d is dt.bfloat16 else d
    return scalar_as(beta, target), scalar_as(alpha, target)


def product_cpu(out, self, other):
    if self.dtype is not other.dtype:    # allowed only when empty or summing over nothing
        out._array()[...] = 0
        return
    matmul_into(out._array(), self._array(), other._array())


def dot_cpu(out, self, other):
    dot_into(out._array(), self._array(), other._array())


def vdot_cpu(out, self, other):
    dot_into(out._array(), self._array(), other._array(), conj_first=True)


matmul_cpu = product_cpu


def gemm_kernel(batch_sum=False):
    def kernel(out, self, a, b, beta=1, alpha=1):
        beta, alpha = gemm_scalars(out.dtype, beta, alpha)
        gemm_into(out._array(), self._array(), a._array(), b._array(), beta, alpha,
                      batch_sum)
    return kernel


addbmm_kernel = gemm_kernel(batch_sum=True)


def outer_cpu(out, self, vec2):
    cd = opmath(dt.promote_types(self.dtype, vec2.dtype))
    outer_into(out._array(), self._array(), vec2._array(), cd)


def addr_cpu(out, self, vec1, vec2, beta=1, alpha=1, *, steps_in=None):
    """`steps_in`: see backends/cpu/pointwise.div (bfloat16 operands widened on a GPU)."""
    d = dt.promote_types(dt.promote_types(self.dtype, vec1.dtype), vec2.dtype)
    steps = steps_in or (d if d in (dt.float16, dt.bfloat16) else None)
    addr_into(out._array(), self._array(), vec1._array(), vec2._array(),
              scalar_as(beta, d), scalar_as(alpha, d), np.dtype(opmath(d)), steps)


addr_cpu.takes_steps_in = True


def inner_cpu(out, self, other):
    a, b = self._array(), other._array()
    if a.ndim == 0 or b.ndim == 0:
        np.multiply(a, b, out=out._array(), dtype=opmath(common_dtype(self, other)),
                    casting="unsafe")
        return
    cd = compute_dtype(a.dtype)
    np.copyto(out._array(), np.inner(a.astype(cd, copy=False), b.astype(cd, copy=False)),
              casting="unsafe")


def tensordot_cpu(out, self, other, dims_self, dims_other):
    a, b = self._array(), other._array()
    c1, c2 = wrap_dims(dims_self, a.ndim), wrap_dims(dims_other, b.ndim)
    for d1, d2 in zip(c1, c2):          # a size-1 contracted dim broadcasts: sum the other
        if b.shape[d2] == 1 and a.shape[d1] != 1:
            a = sum_keepdim(a, (d1,), a.dtype)
        elif a.shape[d1] == 1 and b.shape[d2] != 1:
            b = sum_keepdim(b, (d2,), b.dtype)
    cd = compute_dtype(a.dtype)
    np.copyto(out._array(), np.tensordot(a.astype(cd, copy=False), b.astype(cd, copy=False),
                                         axes=(c1, c2)), casting="unsafe")
