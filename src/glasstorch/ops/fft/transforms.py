"""Discrete Fourier transforms behind glasstorch.fft (NumPy's pocketfft).

As in PyTorch, three operators do every transform, each over a list of dims with a
normalization code (0: none, 1: 1/sqrt(n), 2: 1/n):
`_fft_r2c` (real to complex, optionally one-sided: the last dim keeps n // 2 + 1 entries),
`_fft_c2r` (one-sided Hermitian complex to real, an inverse transform) and `_fft_c2c`.
The torch.fft functions are composites over them: they promote the input, pad or trim it to
the requested sizes, pick the normalization from `norm` and conjugate for the Hermitian
transforms, so autograd only needs the three operators' derivatives.

Transforms compute in double precision and round once to the output dtype (the kernels are
in backends/cpu/fft.py). Outputs take
the layout PyTorch's CPU (MKL) path gives them: batch dims outermost, ordered by the input's
strides, then the transformed dims.
"""
from __future__ import annotations

import operator

from ...core import dtype as dt
from ...core.device import as_device
from ...core.grad_state import state as _grad_state
from ...core.shape import contiguous_strides, wrap_dim
from ...core.tensor import Tensor, preserve_format
from ..copying.copies import strides_for
from ..shape.joining import _cat
from ..registry import resize_output, spec, structured
from ...backends.cpu.fft import (BY_N, BY_ROOT_N, NONE, c2c_cpu, c2r_cpu, fftfreq_values,
    frequencies_into, inverse, r2c_cpu, rfftfreq_values)

# ---- output layout ---------------------------------------------------------------------

def _sort_dims(stride, dims, exclude_last=False) -> list:
    """The transform order: by decreasing input stride (stable), a one-sided dim kept last."""
    head = sorted(dims[:-1] if exclude_last else dims, key=lambda d: -stride[d])
    return head + [dims[-1]] if exclude_last else head


def _partition_batch(perm: list, transformed: list) -> int:
    """Move the batch (untransformed) dims of `perm` to its front with the same swaps as
    the C++ library's std::partition, which decides the order of equal-stride batch dims."""
    first, last = 0, len(perm)
    while True:
        while True:
            if first == last:
                return first
            if transformed[perm[first]]:
                break
            first += 1
        last -= 1
        while True:
            if first == last:
                return first
            if not transformed[perm[last]]:
                break
            last -= 1
        perm[first], perm[last] = perm[last], perm[first]
        first += 1


def _out_strides(in_stride, out_shape, fft_dims) -> tuple:
    """Dense strides with the batch dims outermost (by decreasing input stride), then the
    transformed dims in transform order."""
    n = len(out_shape)
    perm = list(range(n))
    transformed = [False] * n
    for d in fft_dims:
        transformed[d] = True
    n_batch = _partition_batch(perm, transformed)
    order = sorted(perm[:n_batch], key=lambda d: -in_stride[d]) + list(fft_dims)
    dense = contiguous_strides(tuple(out_shape[d] for d in order))
    stride = [0] * n
    for i, d in enumerate(order):
        stride[d] = dense[i]
    return tuple(stride)


# ---- the three operators ---------------------------------------------------------------

def _check_dims(name, self, dim, sizes=None) -> list:
    if len(dim) == 0 and name != "_fft_c2c":
        raise RuntimeError(f"{name}: expected at least one dim to transform, got none")
    dims = [wrap_dim(d, self.dim(), scalar_ok=False) for d in dim]
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    for d in dims:
        if self._shape[d] < 1:
            raise RuntimeError(f"Invalid number of data points ({self._shape[d]}) specified")
    return dims


def _r2c_meta(self, dim, normalization, onesided):
    if self.dtype not in (dt.float32, dt.float64):
        if not self.dtype.is_floating_point:
            raise RuntimeError("Only supports floating-point dtypes, but found: "
                               f"{self.dtype.cname}")
        raise RuntimeError(f"Unsupported dtype {self.dtype.cname}")
    dims = _check_dims("_fft_r2c", self, dim)
    shape = list(self._shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    order = _sort_dims(self._stride, dims, exclude_last=True)
    return spec(shape, self.dtype.to_complex(), _out_strides(self._stride, shape, order))


def _c2c_meta(self, dim, normalization, forward):
    if not self.dtype.is_complex:
        raise RuntimeError(f"Only supports complex dtypes, but found: {self.dtype.cname}")
    dims = _check_dims("_fft_c2c", self, dim)
    if not dims:        # nothing to transform: a copy, as clone() lays it out
        return spec(self._shape, self.dtype, strides_for(self, preserve_format))
    return spec(self._shape, self.dtype,
                _out_strides(self._stride, self._shape, _sort_dims(self._stride, dims)))


def _c2r_meta(self, dim, normalization, last_dim_size):
    if not self.dtype.is_complex:
        raise RuntimeError(f"Only supports complex dtypes, but found: {self.dtype.cname}")
    dims = _check_dims("_fft_c2r", self, dim)
    if last_dim_size < 1:
        raise RuntimeError(f"Invalid number of data points ({last_dim_size}) specified")
    stride = self._stride
    if len(dims) > 1:   # a c2c transform of the leading dims comes first
        stride = _out_strides(stride, self._shape, _sort_dims(stride, dims[:-1]))
    shape = list(self._shape)
    shape[dims[-1]] = last_dim_size
    return spec(shape, self.dtype.to_real(), _out_strides(stride, shape, dims[-1:]))


_fft_r2c = structured(
    "_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", _r2c_meta,
    method=False, inplace=False,
    doc="The DFT of a real tensor over `dim`; one-sided keeps n // 2 + 1 entries of the last.")
_fft_c2c = structured(
    "_fft_c2c(Tensor self, int[] dim, int normalization, bool forward) -> Tensor", _c2c_meta,
    method=False, inplace=False,
    doc="The forward or inverse DFT of a complex tensor over `dim`.")
_fft_c2r = structured(
    "_fft_c2r(Tensor self, int[] dim, int normalization, int last_dim_size) -> Tensor",
    _c2r_meta, method=False, inplace=False,
    doc="The inverse DFT of one-sided Hermitian data over `dim`, real, with `last_dim_size` "
        "entries in the last dim.")


_fft_r2c.impl("CPU")(r2c_cpu)


_fft_c2c.impl("CPU")(c2c_cpu)


_fft_c2r.impl("CPU")(c2r_cpu)


# ---- the torch.fft functions -------------------------------------------------------------

def _promote(x: Tensor, require_complex: bool) -> Tensor:
    """Complex stays; integers take the default float dtype; float32/float64 only."""
    d = x.dtype
    if d.is_complex:
        return x
    t = d if d.is_floating_point else dt.get_default_dtype()
    if t not in (dt.float32, dt.float64):
        raise RuntimeError(f"Unsupported dtype {t.cname}")
    if require_complex:
        t = t.to_complex()
    return x if t is d else x.to(t)


def _norm_mode(fname: str, norm, forward: bool) -> int:
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    if not isinstance(norm, str):
        raise TypeError(f"fft_{fname}(): argument 'norm' must be str, not {type(norm).__name__}")
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _int(fname: str, name: str, value) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"fft_{fname}(): argument '{name}' must be int, not "
                        f"{type(value).__name__}") from None


def _int_list(fname: str, name: str, value):
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        return [_int(fname, name, value)]
    return [_int(fname, name, v) for v in value]


def _check_points(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _resize(x: Tensor, dims, sizes) -> Tensor:
    """Trim (a view) or zero-pad each dim in `dims` to its size in `sizes`."""
    for d, n in zip(dims, sizes):
        have = x._shape[d]
        if have > n:
            x = x.narrow(d, 0, n)
        elif have < n:
            shape = list(x._shape)
            shape[d] = n - have
            x = _cat([x, x.new_zeros(shape)], d)
    return x


def _check_out(fname: str, out, complex_out: bool) -> None:
    if out is None:
        return
    if complex_out and not out.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a complex output tensor, but got {out.dtype.cname}")
    if not complex_out and not out.dtype.is_floating_point:
        raise RuntimeError(f"{fname} expects a floating point output tensor, but got "
                           f"{out.dtype.cname}")


def _to_out(fname: str, result: Tensor, out):
    if out is None:
        return result
    if _grad_state.enabled and result.requires_grad:
        raise RuntimeError(f"fft_{fname}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    if out._shape != result._shape:
        resize_output(out, result._shape)
    return out.copy_(result)


def _check_input(fname: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"fft_{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _c2c(fname, input, n, dim, norm, forward, out):
    _check_out(fname, out, True)
    dim = wrap_dim(dim, input.dim(), scalar_ok=False)
    size = input._shape[dim] if n is None else _int(fname, "n", n)
    _check_points(size)
    x = input if n is None else _resize(input, (dim,), (size,))
    return _to_out(fname, _fft_c2c(x, [dim], _norm_mode(fname, norm, forward), forward), out)


def _r2c(fname, input, n, dim, norm, forward, onesided, out):
    _check_input(fname, input)
    if input.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a real input tensor, but got {input.dtype.cname}")
    _check_out(fname, out, True)
    x = _promote(input, False)
    dim = wrap_dim(dim, x.dim(), scalar_ok=False)
    size = x._shape[dim] if n is None else _int(fname, "n", n)
    _check_points(size)
    if n is not None:
        x = _resize(x, (dim,), (size,))
    result = _fft_r2c(x, [dim], _norm_mode(fname, norm, forward), onesided)
    return _to_out(fname, result if forward else result.conj(), out)


def _c2r(fname, input, n, dim, norm, forward, out):
    _check_input(fname, input)
    _check_out(fname, out, False)
    x = _promote(input, True)
    dim = wrap_dim(dim, x.dim(), scalar_ok=False)
    size = 2 * (x._shape[dim] - 1) if n is None else _int(fname, "n", n)
    _check_points(size)
    if n is not None:
        x = _resize(x, (dim,), (size // 2 + 1,))
    mode = _norm_mode(fname, norm, forward)
    if forward:
        x = x.conj()
    return _to_out(fname, _fft_c2r(x, [dim], mode, size), out)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional DFT along `dim` (zero-padded or trimmed to `n`)."""
    _check_input("fft", input)
    if input.dtype.is_complex:
        return _c2c("fft", input, n, dim, norm, True, out)
    return _r2c("fft", input, n, dim, norm, True, False, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional inverse DFT along `dim`."""
    _check_input("ifft", input)
    if input.dtype.is_complex:
        return _c2c("ifft", input, n, dim, norm, False, out)
    return _r2c("ifft", input, n, dim, norm, False, False, out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The DFT of real input: the n // 2 + 1 non-negative frequencies."""
    return _r2c("rfft", input, n, dim, norm, True, True, out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: n real points (2 * (input.size(dim) - 1) by default)."""
    return _c2r("irfft", input, n, dim, norm, False, out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The DFT of a Hermitian-symmetric signal given by its first half: real output."""
    return _c2r("hfft", input, n, dim, norm, True, out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the one-sided inverse DFT of a real signal."""
    return _r2c("ihfft", input, n, dim, norm, False, True, out)


def _shape_and_dims(fname, x: Tensor, s, dim):
    """The dims to transform and their sizes, from `s` and `dim` (either may be None)."""
    s, dim = _int_list(fname, "s", s), _int_list(fname, "dim", dim)
    ndim = x.dim()
    if dim is not None:
        dims = [wrap_dim(d, ndim, scalar_ok=False) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dim is not None and len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        if dim is None:
            dims = list(range(ndim - len(s), ndim))
        sizes = [x._shape[d] if n == -1 else n for d, n in zip(dims, s)]
    elif dim is None:
        dims, sizes = list(range(ndim)), list(x._shape)
    else:
        sizes = [x._shape[d] for d in dims]
    for n in sizes:
        _check_points(n)
    return dims, sizes, s


def _at_least_one(fname, dims):
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")


def _c2r_sizes(fname, x, dims, sizes, given):
    """The real output size of the last dim, and the one-sided input sizes."""
    _at_least_one(fname, dims)
    last = 2 * (x._shape[dims[-1]] - 1) if given is None or given[-1] == -1 else sizes[-1]
    _check_points(last)
    return last, sizes[:-1] + [last // 2 + 1]


def _fftn_c2c(fname, input, s, dim, norm, forward, out):
    _check_input(fname, input)
    _check_out(fname, out, True)
    dims, sizes, _ = _shape_and_dims(fname, input, s, dim)
    x = _resize(_promote(input, True), dims, sizes)
    return _to_out(fname, _fft_c2c(x, dims, _norm_mode(fname, norm, forward), forward), out)


def _rfftn(fname, input, s, dim, norm, out):
    _check_input(fname, input)
    if input.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a real-valued input tensor, but got "
                           f"{input.dtype.cname}")
    _check_out(fname, out, True)
    dims, sizes, _ = _shape_and_dims(fname, input, s, dim)
    _at_least_one(fname, dims)
    x = _resize(_promote(input, False), dims, sizes)
    return _to_out(fname, _fft_r2c(x, dims, _norm_mode(fname, norm, True), True), out)


def _irfftn(fname, input, s, dim, norm, out):
    _check_input(fname, input)
    _check_out(fname, out, False)
    dims, sizes, given = _shape_and_dims(fname, input, s, dim)
    last, sizes = _c2r_sizes(fname, input, dims, sizes, given)
    x = _resize(_promote(input, True), dims, sizes)
    return _to_out(fname, _fft_c2r(x, dims, _norm_mode(fname, norm, False), last), out)


def _hfftn(fname, input, s, dim, norm, out):
    _check_input(fname, input)
    _check_out(fname, out, False)
    dims, sizes, given = _shape_and_dims(fname, input, s, dim)
    last, sizes = _c2r_sizes(fname, input, dims, sizes, given)
    x = _resize(_promote(input, True), dims, sizes)
    mode = _norm_mode(fname, norm, True)
    if len(dims) > 1:
        x = _fft_c2c(x, dims[:-1], mode, True)
    return _to_out(fname, _fft_c2r(x.conj(), dims[-1:], mode, last), out)


def _ihfftn(fname, input, s, dim, norm, out):
    _check_input(fname, input)
    _check_out(fname, out, True)
    dims, sizes, _ = _shape_and_dims(fname, input, s, dim)
    _at_least_one(fname, dims)
    x = _resize(_promote(input, False), dims, sizes)
    mode = _norm_mode(fname, norm, False)
    result = _fft_r2c(x, dims[-1:], mode, True).conj()
    if len(dims) > 1:
        result = _fft_c2c(result, dims[:-1], mode, False)
    return _to_out(fname, result, out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional DFT over `dim` (all dims by default), sizes `s`."""
    return _fftn_c2c("fftn", input, s, dim, norm, True, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional inverse DFT."""
    return _fftn_c2c("ifftn", input, s, dim, norm, False, out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional DFT of real input, one-sided in the last transformed dim."""
    return _rfftn("rfftn", input, s, dim, norm, out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn."""
    return _irfftn("irfftn", input, s, dim, norm, out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional DFT of a Hermitian signal given by its one-sided half."""
    return _hfftn("hfftn", input, s, dim, norm, out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn."""
    return _ihfftn("ihfftn", input, s, dim, norm, out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional DFT (fftn over the last two dims)."""
    return _fftn_c2c("fft2", input, s, dim, norm, True, out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional inverse DFT."""
    return _fftn_c2c("ifft2", input, s, dim, norm, False, out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional DFT of real input."""
    return _rfftn("rfft2", input, s, dim, norm, out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of rfft2."""
    return _irfftn("irfft2", input, s, dim, norm, out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional DFT of a one-sided Hermitian signal."""
    return _hfftn("hfft2", input, s, dim, norm, out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of hfft2."""
    return _ihfftn("ihfft2", input, s, dim, norm, out)


# ---- frequencies and shifts ----------------------------------------------------------

def _frequencies(fname, values, scale, out, dtype, device, requires_grad):
    if out is not None:
        dtype = out.dtype if dtype is None else dtype
    dtype = dt.get_default_dtype() if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{fname} requires a floating point or complex dtype")
    if dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dtype.cname}'")
    if out is None:
        out = Tensor._empty((len(values),), dtype, as_device(device))
    elif out._shape != (len(values),):
        resize_output(out, (len(values),))
    frequencies_into(out, values, scale, dtype)
    if requires_grad:
        out.requires_grad_(True)
    return out


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point DFT with sample spacing d: [0, 1, ...,
    -(n // 2), ..., -1] / (d * n)."""
    n = _int("fftfreq", "n", n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return _frequencies("fftfreq", fftfreq_values(n), inverse(n * d), out, dtype, device,
                        requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """The non-negative sample frequencies of rfft: [0, 1, ..., n // 2] / (d * n)."""
    n = _int("rfftfreq", "n", n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return _frequencies("rfftfreq", rfftfreq_values(n), inverse(n * d), out, dtype, device,
                        requires_grad)


def _shift(fname, input, dim, inverse):
    _check_input(fname, input)
    if dim is None:
        dims = list(range(input.dim()))
    else:
        dims = [wrap_dim(d, input.dim()) for d in _int_list(fname, "dim", dim)]
    shifts = [(input._shape[d] + inverse) // 2 for d in dims]
    return input.roll(shifts, dims)


def fftshift(input, dim=None):
    """Roll the zero frequency to the centre of each dim in `dim` (all by default)."""
    return _shift("fftshift", input, dim, 0)


def ifftshift(input, dim=None):
    """The inverse of fftshift."""
    return _shift("ifftshift", input, dim, 1)
