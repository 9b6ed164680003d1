"""glibc's malloc keeps freed memory in the process, as a caching allocator would.

A training step allocates and frees the same large buffers every iteration (activations,
gradients, im2col columns). glibc returns the top of its heap to the system whenever more
than a few megabytes are free there (its trim threshold follows the largest block so far,
capped at 32 MiB), and serves blocks above its mmap threshold with fresh mappings, so the
next step's buffers are new pages, each zeroed by the kernel on first touch: an eager CNN
step took ~3,900 page faults (PyTorch's ~1,600) and a tiny GPT step ~4,300 (PyTorch's ~650),
a compiled GPT step 4,000-6,000, against one or two once the freed memory stays. `mallopt`
sets blocks up to 32 MiB to come from the heap and keeps up to 256 MiB of free heap top.

These are process-wide settings, the ones `MALLOC_MMAP_THRESHOLD_`/`MALLOC_TRIM_THRESHOLD_`
in the environment would make; when the user set either, both are left alone. They are made
once, when glasstorch's CPU allocator loads; `GLASSTORCH_KEEP_FREED_MEMORY=0` in the
environment turns them off (memory then goes back to the system as soon as glibc decides).
"""
from __future__ import annotations

import ctypes
import os
import platform

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3     # glibc's malloc.h
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20

_tuned = False


def keep_freed_memory() -> bool:
    """Make glibc keep freed blocks (see the module docstring), once; False where it does
    not apply (not glibc, turned off, or the user chose malloc's thresholds)."""
    global _tuned
    if _tuned:
        return True
    if os.environ.get("GLASSTORCH_KEEP_FREED_MEMORY", "1") == "0" \
            or platform.libc_ver()[0] != "glibc" or any(
            name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                  and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _tuned
