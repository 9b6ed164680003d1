"""NVTX ranges and marks for NVIDIA's profilers (torch.cuda.nvtx), through CuPy's binding.
Without CUDA they raise, as on PyTorch's CPU build."""
from __future__ import annotations

from contextlib import contextmanager

from ..backends.cuda import runtime

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]


def _nvtx():
    if runtime.is_available():
        nvtx = getattr(runtime.cupy().cuda, "nvtx", None)
        if nvtx is not None and getattr(nvtx, "available", True):
            return nvtx
    raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")


_open_ranges: list = []


def range_push(msg: str) -> int:
    """Open a nested range named `msg`; its depth (0 for the outermost)."""
    _nvtx().RangePush(msg)
    _open_ranges.append(msg)
    return len(_open_ranges) - 1


def range_pop() -> int:
    """Close the innermost range; the depth it had."""
    _nvtx().RangePop()
    _open_ranges.pop()
    return len(_open_ranges)


def range_start(msg: str) -> int:
    """Open a range (that range_end closes); an id for it."""
    return range_push(msg)


def range_end(range_id: int) -> None:
    range_pop()


def mark(msg: str) -> None:
    """An instantaneous event named `msg`."""
    _nvtx().Mark(msg)


@contextmanager
def range(msg: str, *args, **kwargs):
    """A range around a block; `msg` is formatted with args and kwargs."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
