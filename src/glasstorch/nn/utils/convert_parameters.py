"""Flatten parameters into one vector and back (e.g. for second-order optimisers)."""
from __future__ import annotations

from ...core.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param: Tensor, old_device):
    """Every parameter must be on the same device (-1 for CPU, else the CUDA index)."""
    device = param.get_device() if param.is_cuda else -1
    if old_device is not None and device != old_device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return device


def parameters_to_vector(parameters) -> Tensor:
    """One 1-D tensor holding every parameter, flattened, in order."""
    from ...ops.shape.joining import cat
    device = None
    vec = []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Point each parameter's data at its slice of vec (the inverse of the above)."""
    if not isinstance(vec, Tensor):
        from ..modules.module import _typename
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
