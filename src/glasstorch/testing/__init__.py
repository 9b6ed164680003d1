"""torch.testing: `assert_close` (PyTorch's messages) and `make_tensor`.

    >>> import glasstorch as torch
    >>> torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
"""
from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_close", "make_tensor", "assert_allclose"]
