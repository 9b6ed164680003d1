"""nn.DataParallel: replicating a module over several GPUs of one process. With one device
(or on the CPU) it runs the module, as PyTorch does."""
from __future__ import annotations

from ..modules.module import Module


class DataParallel(Module):
    """torch.nn.DataParallel; glasstorch has at most one device per process, so forward calls
    the wrapped module (PyTorch does the same when one device or none is visible)."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
