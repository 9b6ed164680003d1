"""The thread-local grad-mode flags (PyTorch's c10 GradMode and InferenceMode state).

They live in core because layers below autograd read them too: view ops remember the mode
a view was made in, so that a later in-place write through it can be refused.
"""
from __future__ import annotations

import contextlib
import threading


class _GradState(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False


state = _GradState()


class _Inference:
    """How many inference_mode blocks are open, on any thread: the hot paths (every op's
    output) read this one global, and their thread's flag only where it is not zero (each
    read of a thread-local flag looks up the thread's dict; overrides.anywhere does the
    same for modes)."""

    __slots__ = ("blocks",)

    def __init__(self):
        self.blocks = 0


inference_anywhere = _Inference()
_lock = threading.Lock()


def count_inference_block(delta: int) -> None:
    """An inference_mode block opening (+1) or closing (-1)."""
    with _lock:
        inference_anywhere.blocks += delta


@contextlib.contextmanager
def grad_disabled():
    """PyTorch's NoGradGuard, for code below autograd that calls ops it must not record (a
    kernel updating running statistics). The public, decorator-capable form is no_grad."""
    previous = state.enabled
    state.enabled = False
    try:
        yield
    finally:
        state.enabled = previous
