"""tests/optim's `kernel_path`: the root fixture's two paths, with the optimizers' size
threshold for their C kernels (optim/adam.py, sgd.py _NATIVE_FROM) lowered to 0, so that
the small parameters of these tests take the C kernels on the native path."""
from __future__ import annotations

import pytest

from glasstorch.optim import adam, sgd


@pytest.fixture
def kernel_path(kernel_path, monkeypatch):
    monkeypatch.setattr(adam, "_NATIVE_FROM", 0)
    monkeypatch.setattr(sgd, "_NATIVE_FROM", 0)
    return kernel_path
