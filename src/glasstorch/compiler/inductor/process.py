"""The settings of the process that compiled C kernels run well under.

- **OpenMP's idle threads sleep.** libgomp's threads spin for a while after each parallel
  region by default. In a compiled training step a parallel kernel is followed by BLAS
  calls and Python, and on a machine with few cores the spinning threads hold the cores
  that OpenBLAS's threads need (a matrix product right after a parallel kernel ran up to
  the compiled tiny GPT step's matrix products took 1.5x the time of the same products in
  eager mode). libgomp reads `OMP_WAIT_POLICY` once, when it loads, so the variable is set
  to `passive` while kernel libraries load (when the user has not set it) and then
  restored: OpenMP runtimes loaded later (another library's) see the user's
  environment. Waking a sleeping thread costs microseconds, waiting for a core that
  OpenBLAS's spinning threads hold costs milliseconds; kernels go parallel only from
  `codegen.PARALLEL_THRESHOLD` elements, milliseconds of work.
- **glibc's malloc keeps freed memory**, which glasstorch's CPU allocator sets up when it
  loads (`memory/host_malloc.py`); a compiled step allocates and frees the same large buffers
  every call, and without it they would be fresh, zero-filled pages each time.

`GLASSTORCH_INDUCTOR_TUNE_PROCESS=0` turns the wait policy off.
"""
from __future__ import annotations

import os
from contextlib import contextmanager


def enabled() -> bool:
    return os.environ.get("GLASSTORCH_INDUCTOR_TUNE_PROCESS", "1") != "0"


@contextmanager
def kernel_library_load():
    """Around loading a kernel library: load with OpenMP's passive wait policy (see the
    module docstring). libgomp comes in with the first library that has a parallel loop,
    which need not be the first one, so every load is wrapped."""
    if not enabled():
        yield
        return
    set_policy = "OMP_WAIT_POLICY" not in os.environ
    if set_policy:
        os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        yield
    finally:
        if set_policy:
            os.environ.pop("OMP_WAIT_POLICY", None)
