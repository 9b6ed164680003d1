"""The profiler's recording side: spans that code outside the dispatcher opens and closes.

The dispatcher's calls reach a profile through the dispatch trace (dispatch/trace.py). What
the dispatcher never sees, a user's `record_function` block, a backward node, an optimizer
step or a fused update that writes NumPy arrays directly, is recorded here as a span: a name,
a start and an end on `perf_counter`'s clock, and the thread. The profile nests all of them
by time when it stops.

While no profile is recording, `collectors` is empty and every instrumented place pays one
list test; this module imports nothing of glasstorch so that the layers below the profiler
(autograd's engine, the optimizers) can call it.
"""
from __future__ import annotations

import threading
from time import perf_counter

collectors: list = []        # the recording profiles' span lists; empty while none records
                             # (and GLASSTORCH_DEBUG's printer, which has begin())
_lock = threading.Lock()


class Span:
    """One timed region: `kind` is PyTorch's trace category ("user_annotation" for
    record_function, "cpu_op" for work standing in for an operator)."""

    __slots__ = ("name", "start", "end", "tid", "kind")

    def __init__(self, name: str, start: float, end: float, tid: int, kind: str):
        self.name, self.start, self.end, self.tid, self.kind = name, start, end, tid, kind


def start_collecting(spans: list) -> None:
    with _lock:
        collectors.append(spans)


def stop_collecting(spans: list) -> None:
    with _lock:
        collectors.remove(spans)


def _begin(name: str, kind: str) -> None:
    """Tell collectors that watch as things happen (GLASSTORCH_DEBUG's printer: not a plain
    list) that a span starts."""
    for spans in collectors:
        if spans.__class__ is not list:
            spans.begin(name, kind)


def add_span(name: str, start: float, end: float, kind: str = "user_annotation") -> None:
    span = Span(name, start, end, threading.get_ident(), kind)
    for spans in collectors:
        spans.append(span)


class record_function:
    """Label a block (or every call of a decorated function) in the profile
    (torch.profiler.record_function): `with record_function("loss"): ...`."""

    def __init__(self, name: str, args: str | None = None):
        self.name, self.args = name, args
        self._start = None

    def __enter__(self):
        if collectors:
            _begin(self.name, "user_annotation")
            self._start = perf_counter()
        else:
            self._start = None
        return self

    def __exit__(self, *exc):
        if self._start is not None and collectors:
            add_span(self.name, self._start, perf_counter())
        self._start = None
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper


class span:
    """`with span(name, kind):` for glasstorch's own instrumented places; free when off."""

    __slots__ = ("name", "kind", "start")

    def __init__(self, name: str, kind: str = "cpu_op"):
        self.name, self.kind = name, kind

    def __enter__(self):
        _begin(self.name, self.kind)
        self.start = perf_counter()
        return self

    def __exit__(self, *exc):
        add_span(self.name, self.start, perf_counter(), self.kind)
        return False
