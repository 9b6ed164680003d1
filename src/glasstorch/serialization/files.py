"""Where checkpoints go: atomic writes to paths, file-like objects, and naming the source.

A save to a path writes a temporary file in the same folder, flushes and fsyncs it, then
`os.replace`s it over the target: a crash or an exception mid-save leaves the previous file
as it was and no temporary file behind.
"""
from __future__ import annotations

import io
import os
import tempfile

__all__ = ["is_path", "write_atomic", "write_to", "describe"]


def is_path(f) -> bool:
    return isinstance(f, (str, bytes, os.PathLike))


def describe(f) -> str:
    """How an error message names the checkpoint."""
    if is_path(f):
        return f"'{os.fsdecode(f)}'"
    name = getattr(f, "name", None)
    return f"'{name}'" if isinstance(name, str) else f"the {type(f).__name__} object"


def write_atomic(path, write) -> None:
    """Call write(binary_file) on a temporary file, then move it over `path`."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {os.fsdecode(folder)} does not exist.")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(os.fsdecode(path))}.",
                               suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_to(f, write) -> None:
    """Write to a path atomically, or to a writable binary file object."""
    if is_path(f):
        write_atomic(f, write)
        return
    if not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a "
                             f"'write' attribute (got {type(f).__name__})")
    buf = io.BytesIO()       # built fully first, so a failing save writes nothing to f
    write(buf)
    f.write(buf.getvalue())
    if hasattr(f, "flush"):
        f.flush()
