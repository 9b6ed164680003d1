"""OutOfMemoryError (torch's), and the one way glasstorch writes a number of bytes."""
from __future__ import annotations


class OutOfMemoryError(RuntimeError):
    """Raised when an allocator cannot find memory: a caching allocator after freeing its
    cache and retrying, the CPU allocator past its limit or when the system refuses."""


def format_size(nbytes: int) -> str:
    """c10's format_size, used in every message and report: 'N bytes' up to 1 KiB, else two
    decimals in KiB, MiB, GiB or TiB ('1.50 KiB')."""
    if abs(nbytes) <= 1024:
        return f"{nbytes} bytes"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if abs(value) <= 1024 or unit == "TiB":
            return f"{value:.2f} {unit}"
