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
