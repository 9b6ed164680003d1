"""torch.AcceleratorError: an error the accelerator's runtime reported (a failed launch, an
illegal address), raised as a RuntimeError so existing handlers still catch it."""
from __future__ import annotations


class AcceleratorError(RuntimeError):
    pass
