"""Two settings of the process that compiled C kernels run well under, made when kernel
libraries load.

- **OpenMP's idle threads sleep.** libgomp's threads spin for a while after each parallel
  region by default. In a compiled training step a parallel kernel is followed by BLAS
  calls and Python, and on a machine with few cores the spinning threads hold the cores
  that OpenBLAS's threads need (a matrix product right after a parallel kernel ran up to
  the compiled tiny GPT step's matrix products took 1.5x the time of the same products in eager mode). libgomp reads `OMP_WAIT_POLICY` once, when it loads, so the variable is set
  to `passive` while kernel libraries load (when the user has not set it) and then
  restored: OpenMP runtimes loaded later (another library's) see the user's
  environment. Waking a sleeping thread costs microseconds; kernels go parallel only from
  `codegen.PARALLEL_THRESHOLD` elements, hundreds of microseconds of work.
- **glibc's malloc keeps freed memory.** A compiled step allocates and frees the same large
  buffers every call. glibc returns the top of its heap to the system whenever more than a
  few megabytes are free there (its trim threshold follows the largest block so far, capped
  at 32 MiB), so the next call's buffers are new pages, each zeroed by the kernel on first
  touch: a compiled tiny GPT step took 4,000-6,000 page faults (about 25 MB of fresh pages,
  several milliseconds) against none once the freed memory stays. `mallopt` sets blocks up
  to 32 MiB to come from the heap and keeps up to 256 MiB of free heap top (glibc's
  process-wide settings, as `MALLOC_MMAP_THRESHOLD_`/`MALLOC_TRIM_THRESHOLD_` in the
  environment would set them; those, when the user set them, are left alone).

`GLASSTORCH_INDUCTOR_TUNE_PROCESS=0` turns both off.
"""
from __future__ import annotations

import ctypes
import os
import platform
from contextlib import contextmanager

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3     # glibc's malloc.h
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20

_malloc_tuned = False


def enabled() -> bool:
    return os.environ.get("GLASSTORCH_INDUCTOR_TUNE_PROCESS", "1") != "0"


def tune_malloc() -> bool:
    """Make glibc keep freed blocks (see the module docstring), once; False where it does
    not apply (not glibc, turned off, or the user chose malloc's thresholds)."""
    global _malloc_tuned
    if _malloc_tuned:
        return True
    if not enabled() or platform.libc_ver()[0] != "glibc" or any(
            name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _malloc_tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                         and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _malloc_tuned


@contextmanager
def kernel_library_load():
    """Around loading a kernel library: tune malloc (once) and load with OpenMP's passive
    wait policy (see the module docstring). libgomp comes in with the first library that
    has a parallel loop, which need not be the first one, so every load is wrapped."""
    if not enabled():
        yield
        return
    tune_malloc()
    set_policy = "OMP_WAIT_POLICY" not in os.environ
    if set_policy:
        os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        yield
    finally:
        if set_policy:
            os.environ.pop("OMP_WAIT_POLICY", None)
