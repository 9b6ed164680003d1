"""`torch.compiler`: compile Python that uses tensors into graphs run by a backend.

The capture half lives here: `eval_frame` (torch.compile, OptimizedModule, cache entries),
`capture` (lazy capture: record operators, flush at data, graph breaks), `guards`,
`backends` (the registry: inductor, eager, aot_eager, yours), `explain`, `config`, `logs`.
`glasstorch._dynamo` is PyTorch's name for the same machinery. docs/15-compiler.md explains
the design.
"""
from __future__ import annotations

from typing import Callable

from . import config  # noqa: F401
from .backends import list_backends, register_backend  # noqa: F401
from .eval_frame import OptimizedModule, compile, is_compiling  # noqa: F401
from .eval_frame import disable as _disable, reset as _reset

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling",
           "allow_in_graph", "list_backends", "assume_constant_result"]


def reset() -> None:
    """Clear every compiled function's cache: later calls capture and compile anew."""
    _reset()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Run `fn` eagerly even inside a compiled region (a decorator too)."""
    return _disable(fn, recursive, reason=reason)


def is_dynamo_compiling() -> bool:
    return is_compiling()


def allow_in_graph(fn: Callable) -> Callable:
    """Let capture trace through `fn`. Lazy capture already records every operator `fn`
    runs, so `fn` is returned unchanged."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(x) for x in fn]
    if not callable(fn):
        raise TypeError(f"allow_in_graph expects a callable, got {type(fn).__name__}")
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """Mark `fn`'s result constant for capture. Lazy capture runs `fn` on every call, so its
    result is always the current one; `fn` is returned marked, as PyTorch does."""
    fn._dynamo_marked_constant = True
    return fn


from .. import _dynamo, _logging  # noqa: E402,F401  (PyTorch's names for this package's parts)
