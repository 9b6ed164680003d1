"""Where checkpoints go: atomic writes to paths, file-like objects, and naming the source.

A save to a path writes a temporary file in the same folder, flushes and fsyncs it, then
`os.replace`s it over the target: a crash or an exception mid-save leaves the previous file
as it was. The temporary file is named `.<target name>.<pid>.<16 hex digits>.tmp` (e.g.
`.model.pt.4242.9f86d081884c7d65.tmp`): an exception removes it at once, and a process
killed mid-save leaves it behind until the next save to the same target, which removes
every temporary of that target whose process (the pid in its name) no longer runs, or
that has not been written to for a day (a pid since reused by another process).

The saved file gets the permissions `open(path, "wb")` would give it, as torch.save's do:
0666 less the umask for a new file (0644 under the usual umask 022), the old file's mode
when it replaces one.
"""
from __future__ import annotations

import io
import os
import re
import secrets
import stat
import time

__all__ = ["is_path", "write_atomic", "write_to", "describe", "temporary_name",
           "remove_stale_temporaries"]

STALE_AFTER_S = 24 * 3600       # an untouched temporary this old is abandoned, whatever its pid


def is_path(f) -> bool:
    return isinstance(f, (str, bytes, os.PathLike))


def describe(f) -> str:
    """How an error message names the checkpoint."""
    if is_path(f):
        return f"'{os.fsdecode(f)}'"
    name = getattr(f, "name", None)
    return f"'{name}'" if isinstance(name, str) else f"the {type(f).__name__} object"


def temporary_name(target_name: str, pid: int | None = None) -> str:
    """The name of a save's temporary file for the target file name `target_name`."""
    pid = os.getpid() if pid is None else pid
    return f".{target_name}.{pid}.{secrets.token_hex(8)}.tmp"


def _temporary_pattern(target_name: str):
    return re.compile(rf"\.{re.escape(target_name)}\.(\d+)\.[0-9a-f]{{16}}\.tmp")


def _process_runs(pid: int) -> bool:
    """Whether process `pid` may still be writing. Our own pid: another thread may be
    saving. On Windows signal 0 is Ctrl-C, so there only a temporary's age marks it stale."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)     # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True         # exists but belongs to someone else, or cannot tell: keep it
    return True


def remove_stale_temporaries(folder: str, target_name: str) -> list:
    """Remove the temporaries that killed saves to `target_name` left in `folder`;
    returns their paths."""
    pattern, removed = _temporary_pattern(target_name), []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        try:
            old = now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER_S
            if old or not _process_runs(int(match.group(1))):
                os.unlink(entry.path)
                removed.append(entry.path)
        except FileNotFoundError:
            pass            # removed meanwhile by another save of the same target
    return removed


def _create_temporary(folder: str, target_name: str) -> tuple[int, str]:
    """Open a new temporary file next to the target with open()'s default permissions
    (0666 less the umask), unlike tempfile.mkstemp's 0600."""
    while True:
        tmp = os.path.join(folder, temporary_name(target_name))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                           | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue


def write_atomic(path, write) -> None:
    """Call write(binary_file) on a temporary file, then move it over `path`."""
    path = os.fsdecode(os.fspath(path))
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    target_name = os.path.basename(path)
    remove_stale_temporaries(folder, target_name)
    fd, tmp = _create_temporary(folder, target_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            try:
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))   # keep the old file's mode
            except FileNotFoundError:
                pass
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
