"""Tensor.apply_ and Tensor.map_: a Python function applied to each element, in place.

PyTorch keeps these for quick experiments on CPU tensors; each element goes through the
interpreter, so they are slow by nature. The function gets Python numbers (an element's
`tolist()` value) and its results are converted to the tensor's dtype as `copy_` converts
(floats truncated into an integer tensor). Outside autograd, as in PyTorch: a tensor that
requires grad is refused, and the write leaves the version counter as it was.
"""
from __future__ import annotations

import numpy as np

from ...backends.cpu.copy import assign_array
from ...core.tensor import Tensor
from ..registry import composite


def _check_target(self: Tensor, name: str) -> bool:
    """Whether the elements are to be visited: PyTorch's checks, and nothing to do on
    'meta'."""
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    if self.device.type == "meta":
        return False
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    return True


def _write(self: Tensor, values: list) -> Tensor:
    assign_array(self._array(), np.asarray(values).reshape(self._shape))
    return self


@composite(method=True, function=False)
def apply_(self, callable):
    """Replace each element x by callable(x) (CPU tensors only)."""
    if not _check_target(self, "apply_"):
        return self
    return _write(self, [callable(x) for x in self.reshape(-1).tolist()])


@composite(method=True, function=False)
def map_(self, tensor, callable):
    """Replace each element x by callable(x, y), y the matching element of `tensor`
    (broadcast to this tensor's shape, of its dtype and device; CPU tensors only)."""
    if not _check_target(self, "map_"):
        return self
    if tensor.dtype is not self.dtype or tensor.device != self.device:
        raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
    other = tensor.expand_as(self).reshape(-1).tolist()
    return _write(self, [callable(x, y) for x, y in zip(self.reshape(-1).tolist(), other)])
