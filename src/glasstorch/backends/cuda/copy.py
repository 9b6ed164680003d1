"""Copies that involve a GPU: host to device, device to host, device to device.

A copy converts dtypes on whichever side is cheaper to reason about: host-side with NumPy
(and ml_dtypes for bfloat16) before an upload or after a download, device-side with CuPy
between GPU tensors. `non_blocking=True` is asynchronous, as in PyTorch, only between a
GPU and *pinned* host memory with nothing to convert; every other copy is synchronous.
"""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from . import bfloat16, pinned, runtime


def _device_values(t, dtype):
    """t's elements as a CuPy array of `dtype` (bfloat16 as bit patterns)."""
    cp = runtime.cupy()
    a = t._array()
    if t.dtype is dtype:
        return a
    if t.dtype is dt.bfloat16:
        a = bfloat16.to_float32(cp, a)
    if dtype is dt.bfloat16:
        if t.dtype.category == dt.COMPLEX:
            a = a.real
        return bfloat16.from_float32(cp, a.astype(cp.float32))
    if t.dtype.category == dt.COMPLEX and dtype.category != dt.COMPLEX:
        a = a.real
    return a.astype(dtype.np)


def _host_values(t, dtype) -> np.ndarray:
    """t's (CPU) elements as a NumPy array of `dtype` in the device's storage form."""
    a = t._array()
    if t.dtype is not dtype:
        if t.dtype.category == dt.COMPLEX and dtype.category != dt.COMPLEX:
            a = a.real
        a = a.astype(dtype.np)
    return a.view(np.uint16) if dtype is dt.bfloat16 else a


def _broadcast(xp, a, shape):
    return a if a.shape == tuple(shape) else xp.broadcast_to(a, shape)


def copy_between(dst, src, non_blocking: bool = False):
    """dst[...] = src, broadcasting src and converting its dtype, where either is on a GPU."""
    cp = runtime.cupy()
    shape = dst._shape
    if dst.device.type == "cuda" and src.device.type == "cuda":
        if src.device != dst.device:    # convert on src's GPU, then one peer copy
            with runtime.DeviceGuard(src.device.index):
                values = cp.ascontiguousarray(_broadcast(cp, _device_values(src, dst.dtype),
                                                         shape))
            with runtime.DeviceGuard(dst.device.index):
                staged = cp.empty(values.shape, values.dtype)
                staged.data.copy_from_device(values.data, values.nbytes)
                cp.copyto(dst._array(), staged)
            return dst
        with runtime.DeviceGuard(dst.device.index):
            cp.copyto(dst._array(), _broadcast(cp, _device_values(src, dst.dtype), shape))
        return dst
    if dst.device.type == "cuda":               # upload
        host = np.broadcast_to(_host_values(src, dst.dtype), shape)
        target = dst._array()
        with runtime.DeviceGuard(dst.device.index):
            if target.flags.c_contiguous and host.flags.c_contiguous:
                if non_blocking and src.dtype is dst.dtype and pinned.is_pinned(src):
                    stream = cp.cuda.get_current_stream()
                    target.data.copy_from_host_async(host.ctypes.data, host.nbytes, stream)
                    pinned.record_use(src, stream.ptr)
                else:
                    target.set(host)
            else:
                cp.copyto(target, cp.asarray(np.ascontiguousarray(host)))
        return dst
    # download
    with runtime.DeviceGuard(src.device.index):
        values = cp.ascontiguousarray(_broadcast(cp, src._array(), shape))
        target = dst._array()
        if (non_blocking and src.dtype is dst.dtype and pinned.is_pinned(dst)
                and target.flags.c_contiguous):
            stream = cp.cuda.get_current_stream()
            values.data.copy_to_host_async(target.ctypes.data, values.nbytes, stream)
            pinned.record_use(dst, stream.ptr)
            return dst
        host = values.get()
    if src.dtype is dt.bfloat16:
        host = host.view(dt.bfloat16.np)
    np.copyto(target, host, casting="unsafe")
    return dst


def fill(t, value) -> None:
    """Fill a GPU tensor with one Python number, converted as the CPU's fill_ converts it."""
    value = np.asarray(value).astype(t.dtype.np)
    if t.dtype is dt.bfloat16:
        value = value.view(np.uint16)
    with runtime.DeviceGuard(t.device.index):
        t._array().fill(value[()])
