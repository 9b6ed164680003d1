"""Higher-order operators: ops that take functions (torch.cond)."""
from .cond import cond  # noqa: F401

__all__ = ["cond"]
