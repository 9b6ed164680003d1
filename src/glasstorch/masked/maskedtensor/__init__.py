"""MaskedTensor: a tensor whose elements are each present or masked out (a prototype in
PyTorch too)."""
from .core import MaskedTensor, is_masked_tensor  # noqa: F401
from .creation import as_masked_tensor, masked_tensor  # noqa: F401
