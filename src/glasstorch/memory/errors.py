"""OutOfMemoryError: what a caching allocator raises when no memory can be found (torch's)."""
from __future__ import annotations


class OutOfMemoryError(RuntimeError):
    """Raised by a caching allocator after freeing its cache and retrying has failed."""


def format_size(nbytes: int) -> str:
    """PyTorch's OOM-message sizes: 'N bytes' up to 1 KiB, else two decimals in KiB/MiB/GiB."""
    if nbytes <= 1024:
        return f"{nbytes} bytes"
    if nbytes <= 1048576:
        return f"{nbytes / 1024:.2f} KiB"
    if nbytes <= 1073741824:
        return f"{nbytes / 1048576:.2f} MiB"
    return f"{nbytes / 1073741824:.2f} GiB"
