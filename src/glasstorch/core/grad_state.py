"""The thread-local grad-mode flags (PyTorch's c10 GradMode and InferenceMode state).

They live in core because layers below autograd read them too: view ops remember the mode
a view was made in, so that a later in-place write through it can be refused.
"""
from __future__ import annotations

import threading


class _GradState(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False


state = _GradState()
