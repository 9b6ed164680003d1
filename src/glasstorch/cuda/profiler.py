"""Start and stop the CUDA profiler around a region (torch.cuda.profiler), for nsys/ncu
runs that capture only that region."""
from __future__ import annotations

import contextlib

from ..backends.cuda import runtime

__all__ = ["init", "start", "stop", "profile"]


def init(output_file=None, flags=None, output_mode="key_value"):
    raise RuntimeError("torch.cuda.profiler.init configured the legacy command-line profiler, "
                       "which CUDA 12 removed; use nsys with start()/stop()")


def start() -> None:
    runtime.require()
    runtime.cupy().cuda.runtime.profilerStart()


def stop() -> None:
    runtime.require()
    runtime.cupy().cuda.runtime.profilerStop()


@contextlib.contextmanager
def profile():
    start()
    try:
        yield
    finally:
        stop()
