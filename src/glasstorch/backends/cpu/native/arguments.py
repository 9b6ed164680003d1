"""Arguments of native kernels called once per small array (an optimizer's parameters, a
recurrent cell's steps), where the few microseconds of Python around each call are a large
part of the work: data pointers at a third of the cost of `native.address`, and the thread
count without its look-ups below the parallel threshold."""
from __future__ import annotations

import ctypes

from ....compiler.inductor import codegen
from . import address, threads as _threads

_view, _reference = ctypes.c_char.from_buffer, ctypes.byref


def pointers(*arrays) -> list:
    """The arrays' data addresses as ctypes arguments: a reference to a ctypes view of each
    buffer (cheaper than reading __array_interface__); its address where the array is
    read-only or empty (no view)."""
    out = []
    for a in arrays:
        try:
            out.append(_reference(_view(a)))
        except (TypeError, ValueError):
            out.append(address(a))
    return out


def threads(n: int) -> int:
    """`native.threads(n)`: 1 below the parallel threshold, read here without its imports."""
    return 1 if n < codegen.PARALLEL_THRESHOLD else _threads(n)
