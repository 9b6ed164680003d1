"""Extern primitives: what a code generator calls a library for rather than writes itself.

Matrix products (BLAS), convolution, sorting, FFTs (pocketfft), and LAPACK factorisations
(SVD, Cholesky). A fused kernel ends at each of these; the compiler places a library call.
The FFT primitives are PyTorch's: unnormalised, along `dim`.
"""
from __future__ import annotations

import string

import numpy as np

from ..core import dtype as dt
from ..backends.cpu.convolution import col2im_add, pad_array, windows
from ..ops.nn.convolution import conv_params
from ..ops.registry import spec
from .declaration import prim


def _same_dtype(name, *tensors):
    for t in tensors[1:]:
        if t is not None and t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"prims::{name}: expected tensors of one dtype, got "
                               f"{tensors[0].dtype} and {t.dtype}")


def _mm_meta(a, b):
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise RuntimeError(f"prims::mm: shapes {list(a.shape)} and {list(b.shape)} cannot be "
                           "multiplied")
    _same_dtype("mm", a, b)
    return spec((a.shape[0], b.shape[1]), a.dtype)


def _bmm_meta(a, b):
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"prims::bmm: shapes {list(a.shape)} and {list(b.shape)} cannot be "
                           "multiplied batch by batch")
    _same_dtype("bmm", a, b)
    return spec((a.shape[0], a.shape[1], b.shape[2]), a.dtype)


prim("mm(Tensor self, Tensor mat2) -> Tensor", kind="extern", meta=_mm_meta, impl=np.matmul)
prim("bmm(Tensor self, Tensor mat2) -> Tensor", kind="extern", meta=_bmm_meta, impl=np.matmul)


# ---- convolution -------------------------------------------------------------------------------

def _conv_meta(input, weight, bias, stride, padding, dilation, transposed, output_padding,
               groups):
    *_, shape = conv_params(input, weight, bias, stride, padding, dilation, transposed,
                            output_padding, groups)
    _same_dtype("convolution", input, weight, bias)
    return spec(shape, input.dtype)


def _conv(x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    nd, g = w.ndim - 2, groups
    n = x.shape[0]
    sp, kr = string.ascii_lowercase[:nd], string.ascii_uppercase[:nd]
    xg = x.reshape(n, g, x.shape[1] // g, *x.shape[2:])
    if not transposed:
        out_sizes = [(s + 2 * p - d * (k - 1) - 1) // st + 1 for s, p, d, k, st in
                     zip(x.shape[2:], padding, dilation, w.shape[2:], stride)]
        win = windows(pad_array(xg, padding), w.shape[2:], stride, dilation, out_sizes)
        wg = w.reshape(g, w.shape[0] // g, *w.shape[1:])
        out = np.einsum(f"ngc{sp}{kr},gdc{kr}->ngd{sp}", win, wg)
    else:
        wg = w.reshape(g, w.shape[0] // g, *w.shape[1:])
        cols = np.einsum(f"ngc{sp},gcd{kr}->{kr}ngd{sp}", xg, wg)
        full = np.zeros((n, g, w.shape[1]) + tuple(
            (s - 1) * st + d * (k - 1) + 1 + op for s, st, d, k, op in
            zip(x.shape[2:], stride, dilation, w.shape[2:], output_padding)), cols.dtype)
        col2im_add(full, cols, w.shape[2:], stride, dilation)
        out = full[(Ellipsis,) + tuple(slice(p, full.shape[3 + i] - p)
                                       for i, p in enumerate(padding))]
    out = out.reshape(n, -1, *out.shape[3:])
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * nd)
    return out


prim("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, "
     "SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, "
     "SymInt groups) -> Tensor", kind="extern", meta=_conv_meta, impl=_conv,
     doc="N-d convolution, or with transposed=True its adjoint, as aten::convolution")


# ---- sorting -----------------------------------------------------------------------------------

def _sort_meta(a, dim, descending, stable):
    if not -max(a.dim(), 1) <= dim < max(a.dim(), 1):
        raise IndexError(f"prims::sort: dimension {dim} is out of range for a tensor of "
                         f"{a.dim()} dimensions")
    return spec(a.shape, a.dtype), spec(a.shape, dt.int64)


def _sort(x, dim, descending, stable):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    if descending:       # stable descending: sort the reversed array, then reverse back
        last = x.shape[dim] - 1
        index = last - np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
    else:
        index = np.argsort(x, axis=dim, kind="stable")
    return np.take_along_axis(x, index, dim), index


prim("sort(Tensor a, int dim, bool descending, bool stable) -> (Tensor values, "
     "Tensor indices)", kind="extern", meta=_sort_meta, impl=_sort,
     doc="always stable (so `stable` only documents the caller's need); nan sorts last")


# ---- FFT ---------------------------------------------------------------------------------------

def _fft_meta(name):
    def meta(x, dim, option):            # onesided, forward or last_dim_size
        dims = [d % max(x.dim(), 1) for d in dim]
        shape = list(x.shape)
        if name == "fft_r2c":
            if x.dtype.category != 2:
                raise RuntimeError(f"prims::fft_r2c expects a real tensor, got {x.dtype}")
            if option:
                shape[dims[-1]] = shape[dims[-1]] // 2 + 1
            return spec(shape, dt.promote_types(x.dtype, dt.complex64))
        if x.dtype.category != 3:
            raise RuntimeError(f"prims::{name} expects a complex tensor, got {x.dtype}")
        if name == "fft_c2r":
            shape[dims[-1]] = option
            return spec(shape, x.dtype.to_real())
        return spec(shape, x.dtype)
    meta.__qualname__ = f"{name}_meta"
    return meta


def _r2c(x, dim, onesided):
    return np.fft.rfftn(x, axes=dim) if onesided else np.fft.fftn(x, axes=dim)


def _c2c(x, dim, forward):
    return np.fft.fftn(x, axes=dim) if forward else np.fft.ifftn(x, axes=dim, norm="forward")


def _c2r(x, dim, last_dim_size):
    sizes = [x.shape[d] for d in dim[:-1]] + [last_dim_size]
    return np.fft.irfftn(x, s=sizes, axes=dim, norm="forward")


prim("fft_r2c(Tensor self, *, int[] dim, bool onesided) -> Tensor", kind="extern",
     meta=_fft_meta("fft_r2c"), impl=_r2c)
prim("fft_c2c(Tensor self, *, int[] dim, bool forward) -> Tensor", kind="extern",
     meta=_fft_meta("fft_c2c"), impl=_c2c)
prim("fft_c2r(Tensor self, *, int[] dim, SymInt last_dim_size) -> Tensor", kind="extern",
     meta=_fft_meta("fft_c2r"), impl=_c2r)


# ---- LAPACK ------------------------------------------------------------------------------------

def _square_or_matrix(name, a, square=False):
    if a.dim() < 2 or (square and a.shape[-1] != a.shape[-2]):
        raise RuntimeError(f"prims::{name}: expected a {'square ' if square else ''}matrix or "
                           f"a batch of them, got shape {list(a.shape)}")
    if a.dtype.category < 2:
        raise RuntimeError(f"prims::{name}: expected a floating or complex tensor, got "
                           f"{a.dtype}")


def _svd_meta(A, full_matrices):
    _square_or_matrix("svd", A)
    *batch, m, n = A.shape
    k = min(m, n)
    return (spec(batch + [m, m if full_matrices else k], A.dtype),
            spec(batch + [k], A.dtype.to_real()),
            spec(batch + [n if full_matrices else k, n], A.dtype))


def _svd(A, full_matrices):
    return np.linalg.svd(A, full_matrices=full_matrices)


def _cholesky_meta(a, upper):
    _square_or_matrix("cholesky", a, square=True)
    return spec(a.shape, a.dtype)


def _cholesky(a, upper):
    lower = np.linalg.cholesky(a)
    return np.conj(np.swapaxes(lower, -1, -2)) if upper else lower


prim("svd(Tensor A, *, bool full_matrices) -> (Tensor U, Tensor S, Tensor Vh)",
     kind="extern", meta=_svd_meta, impl=_svd)
prim("cholesky(Tensor a, bool upper) -> Tensor", kind="extern", meta=_cholesky_meta,
     impl=_cholesky, doc="raises numpy.linalg.LinAlgError unless `a` is positive definite")
