"""Native CUDA kernels for softmax, log_softmax, their input gradients and layer_norm: one
launch of glasstorch's own CUDA C (backends/cuda/fused.py) where the shared kernel (the CPU
kernel on CuPy arrays) makes a chain of CuPy launches, each a pass over memory.

The fused kernels reduce over rows of a C-contiguous (rows, n) block. They are used on real
CuPy (`runtime.runs_cuda_c()`; the test suite's simulated CuPy runs no CUDA C) when:
- softmax's `dim` is the last dimension and has unit stride in every operand (the other
  dimensions may be strided: a contiguous copy is made), layer_norm always (its normalized
  dimensions are the trailing ones; a strided input is copied, as the CPU kernel's reshape
  copies);
- the dtypes are ones the kernels compute: float16, float32 and float64 each run their own
  kernel; bfloat16 (bit patterns on the GPU) and the mixed cases (softmax's half_to_float,
  a float16 gradient of a float32 softmax, float16 layer_norm with float32 parameters) run
  the float32 kernel on widened operands and round once at the end, as the shared kernel
  and PyTorch compute them.
Everything else takes the shared kernel. The output is written in place when it is
C-contiguous in the kernel's dtype, else through a temporary copied (and rounded) into it.
"""
from __future__ import annotations

from math import prod

from ...core import dtype as dt
from .. import gpu_kernels
from .loss import _log_softmax, _log_softmax_backward_data, _softmax, _softmax_backward_data
from .normalization import native_layer_norm

_OWN = (dt.float16, dt.float32, dt.float64)        # dtypes with kernels of their own
_WIDENED = (dt.float16, dt.bfloat16, dt.float32)    # mixed among these: float32 kernels


def _kernel_dtype(dtypes):
    """The dtype the kernel computes operands and results of `dtypes` in; None: no kernel."""
    first = dtypes[0]
    if all(d is first for d in dtypes):
        if first in _OWN:
            return first
        return dt.float32 if first is dt.bfloat16 else None
    return dt.float32 if all(d in _WIDENED for d in dtypes) else None


def _last_dim_rows(dim: int, tensors):
    """(rows, n) when `dim` is the last dimension and has unit stride in every tensor (a
    0-d tensor is one row of one), else None."""
    shape = tensors[0]._shape
    if not shape:
        return 1, 1
    if dim % len(shape) != len(shape) - 1:
        return None
    n = shape[-1]
    if n > 1 and any(t._stride[-1] != 1 for t in tensors):
        return None
    return prod(shape[:-1]), n


def _operand(cp, t, kernel_dtype, rows: int, n: int):
    """t's elements as a C-contiguous (rows, n) CuPy array of kernel_dtype: a view of t's
    memory where it already is one, else a copy."""
    from ...backends.cuda import bfloat16
    a = t._array().reshape(rows, n)
    if not a.flags.c_contiguous:
        a = cp.ascontiguousarray(a)
    if t.dtype is dt.bfloat16:
        return bfloat16.to_float32(cp, a)
    return a if t.dtype is kernel_dtype else a.astype(kernel_dtype.np)


def _target(out, kernel_dtype, rows: int, n: int):
    """out's memory as the kernel's (rows, n) output array when it can be, else None."""
    o = out._array()
    return o.reshape(rows, n) if out.dtype is kernel_dtype and o.flags.c_contiguous else None


def _store(cp, out, y) -> None:
    """The kernel's result `y` (C-contiguous) into out, rounded to out's dtype."""
    from ...backends.cuda import bfloat16, fused
    o = out._array()
    if out.dtype is dt.bfloat16:
        if o.flags.c_contiguous:
            fused.float32_to_bf16(y, out=o.reshape(y.shape))
            return
        y = bfloat16.from_float32(cp, y)
    cp.copyto(o, y.reshape(o.shape), casting="unsafe")


def _launch_rows(launcher, out, inputs, kernel_dtype, rows: int, n: int) -> None:
    from ...backends.cuda import runtime
    if rows == 0 or n == 0:         # no elements: nothing to write
        return
    cp = runtime.cupy()
    with runtime.DeviceGuard(out.device.index):
        arrays = [_operand(cp, t, kernel_dtype, rows, n) for t in inputs]
        target = _target(out, kernel_dtype, rows, n)
        y = launcher(*arrays, out=target)
        if target is None:
            _store(cp, out, y)


def _runs_cuda_c() -> bool:
    from ...backends.cuda import runtime
    return runtime.runs_cuda_c()


def _shared(decl):
    return gpu_kernels._shared_structured(decl, decl.impls["CPU"])


def _forward(decl, launcher_name: str):
    """The CUDA kernel of _softmax/_log_softmax(self, dim, half_to_float): the output's
    dtype (float32 for a float16 input with half_to_float) is the one the meta gave `out`."""
    shared = _shared(decl)

    def kernel(out, self, dim, half_to_float):
        if _runs_cuda_c():
            kd = _kernel_dtype((self.dtype, out.dtype))
            rows = _last_dim_rows(dim, (self,)) if kd is not None else None
            if rows is not None:
                from ...backends.cuda import fused
                _launch_rows(getattr(fused, launcher_name), out, (self,), kd, *rows)
                return
        shared(out, self, dim, half_to_float)
    kernel.__qualname__ = kernel.__name__ = f"{decl.name}_cuda"
    return kernel


def _backward(decl, launcher_name: str):
    """The CUDA kernel of _(log_)softmax_backward_data(grad_output, output, dim,
    input_dtype): `out` has the input's gradient dtype the meta gave it."""
    shared = _shared(decl)

    def kernel(out, grad_output, output, dim, input_dtype):
        if _runs_cuda_c():
            kd = _kernel_dtype((grad_output.dtype, output.dtype, out.dtype))
            rows = _last_dim_rows(dim, (grad_output, output)) if kd is not None else None
            if rows is not None:
                from ...backends.cuda import fused
                _launch_rows(getattr(fused, launcher_name), out, (grad_output, output), kd,
                             *rows)
                return
        shared(out, grad_output, output, dim, input_dtype)
    kernel.__qualname__ = kernel.__name__ = f"{decl.name}_cuda"
    return kernel


_shared_layer_norm = _shared(native_layer_norm)


def _layer_norm_cuda(outs, input, normalized_shape, weight, bias, eps):
    """native_layer_norm's CUDA kernel: rows of prod(normalized_shape) elements, the saved
    mean and rstd stored in the dtype the meta gave them."""
    params = tuple(p for p in (weight, bias) if p is not None)
    kd = _kernel_dtype((input.dtype,) + tuple(p.dtype for p in params)) \
        if _runs_cuda_c() else None
    if kd is None:
        _shared_layer_norm(outs, input, normalized_shape, weight, bias, eps)
        return
    from ...backends.cuda import fused, runtime
    n = prod(normalized_shape)
    rows = prod(input._shape[:input.dim() - len(normalized_shape)])
    if rows == 0:                   # no rows: no statistics either
        return
    cp = runtime.cupy()
    with runtime.DeviceGuard(outs[0].device.index):
        x = _operand(cp, input, kd, rows, n)
        w, b = (None if p is None else _operand(cp, p, kd, 1, n).reshape(n)
                for p in (weight, bias))
        target = _target(outs[0], kd, rows, n)
        y, mean, rstd = fused.layer_norm_rows(x, w, b, eps, out=target)
        if target is None:
            _store(cp, outs[0], y)
        _store(cp, outs[1], mean)
        _store(cp, outs[2], rstd)


_softmax.impl("CUDA")(_forward(_softmax, "softmax_rows"))
_log_softmax.impl("CUDA")(_forward(_log_softmax, "log_softmax_rows"))
_softmax_backward_data.impl("CUDA")(_backward(_softmax_backward_data, "softmax_rows_backward"))
_log_softmax_backward_data.impl("CUDA")(
    _backward(_log_softmax_backward_data, "log_softmax_rows_backward"))
native_layer_norm.impl("CUDA")(_layer_norm_cuda)
