"""The per-parameter glue of the optimizers' native kernels (backends/cpu/native/optim.c):
an optimizer step calls one per parameter, so the few microseconds of Python around each
call are a large part of a small parameter's update."""
from __future__ import annotations

import ctypes

from ..backends.cpu import native
from ..compiler.inductor import codegen

_pointer, _by_reference = ctypes.c_char.from_buffer, ctypes.byref


def pointers(*arrays) -> list:
    """The arrays' data addresses as ctypes arguments of native kernels (non-empty arrays):
    a reference to a ctypes view of the buffer, a third of the cost of reading
    __array_interface__, where the array is writable."""
    out = []
    for a in arrays:
        try:
            out.append(_by_reference(_pointer(a)))
        except TypeError:                           # a read-only array
            out.append(native.address(a))
    return out


def threads(n: int) -> int:
    """native.threads(n), without its look-ups for the small parameters that run on one."""
    return 1 if n < codegen.PARALLEL_THRESHOLD else native.threads(n)
