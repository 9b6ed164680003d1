"""Where in the user's code something happened: the nearest frame outside glasstorch and
Python's own library, and the source line there."""
from __future__ import annotations

import linecache
import os
import sys
import sysconfig
from dataclasses import dataclass

from glasstorch.autograd import engine as _engine

_SKIP = tuple(os.path.normcase(os.path.realpath(p)) + os.sep for p in {
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})


@dataclass(frozen=True)
class Site:
    """A line of the user's code."""
    filename: str
    lineno: int

    @property
    def source(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self):
        name = self.filename
        try:
            rel = os.path.relpath(name)
            if not rel.startswith(".."):
                name = rel
        except ValueError:                  # another drive on Windows
            pass
        return f"{name}:{self.lineno}"


_user_files: dict = {}


def is_user_file(filename: str) -> bool:
    known = _user_files.get(filename)
    if known is None:
        real = os.path.normcase(os.path.realpath(filename))
        known = not (filename.startswith(("<frozen", "<glasstorch")) or real.startswith(_SKIP))
        _user_files[filename] = known
    return known


def user_site(depth: int = 2) -> Site | None:
    """The innermost user frame calling into here (`depth` frames up to start from)."""
    f = sys._getframe(depth)
    while f is not None:
        if is_user_file(f.f_code.co_filename):
            return Site(f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return None


def user_frame(depth: int = 2):
    """The innermost user frame object calling into here, or None."""
    f = sys._getframe(depth)
    while f is not None and not is_user_file(f.f_code.co_filename):
        f = f.f_back
    return f


def called_from_user(depth: int = 2) -> bool:
    """Whether the caller `depth` frames up is the user's code (not glasstorch's own use)."""
    return is_user_file(sys._getframe(depth).f_code.co_filename)


def traceback_site(tb) -> Site | None:
    """The innermost user frame of a traceback: the user's line that led to the error."""
    site = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename):
            site = Site(code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return site


def running_node():
    """The autograd node whose backward is running on this thread, or None: read from the
    engine's frame (`_run_node`'s, or the loop's, which applies a plain formula node itself),
    so that nothing is paid until a finding needs it."""
    engine_codes = (_engine._run_node.__code__, _engine.run_backward.__code__)
    f = sys._getframe(1)
    while f is not None:
        if f.f_code in engine_codes:
            return f.f_locals.get("node")
        f = f.f_back
    return None
