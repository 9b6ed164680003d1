"""torch.autograd.Variable: the wrapper tensors needed before PyTorch 0.4, when a Tensor
could not require grad. Every tensor is now a Variable (isinstance holds for any Tensor),
and `Variable(data, requires_grad=True)` gives a tensor over data's memory that requires
grad, leaving `data` as it was."""
from __future__ import annotations

from ..core.tensor import Tensor

__all__ = ["Variable", "variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if data is None:
            from ..ops.creation.factories import empty
            return empty(0, requires_grad=requires_grad)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)


class Variable(metaclass=_VariableMeta):
    pass


def variable(*args, **kwargs):
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) "
                       "instead")
