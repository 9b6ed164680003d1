"""Small torch.func helpers: looking under a BatchedTensor, and batch norm without running
statistics (which vmap cannot update per example)."""
from __future__ import annotations

from ..nn.modules.batchnorm import _BatchNorm
from .batched_tensor import BatchedTensor

__all__ = ["debug_unwrap", "replace_all_batch_norm_modules_"]


def debug_unwrap(tensor, *, recurse=True):
    """The tensor under a BatchedTensor (under every level with `recurse`, else one); other
    tensors are returned as they are. For debugging: the result holds the batch dimension."""
    while isinstance(tensor, BatchedTensor):
        tensor = tensor._value
        if not recurse:
            break
    return tensor


def replace_all_batch_norm_modules_(root):
    """Make every batch norm module in `root` use batch statistics only (running_mean and
    running_var None, track_running_stats False), in place; returns `root`."""
    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
