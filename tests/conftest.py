import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # lets tests import `oracle`

import gc

import pytest


@pytest.fixture
def quiet_gc():
    """Exact memory counts: collect earlier tests' cyclic garbage first, and keep the cyclic
    collector from freeing more of it in the middle of the measurement."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.fixture(params=["native", "numpy"])
def kernel_path(request, monkeypatch):
    """Runs a test twice: with the C kernels of backends/cpu/native (where they build) and
    with the NumPy formulas every such operator also has."""
    from glasstorch.backends.cpu import native
    monkeypatch.setattr(native, "ENABLED", request.param == "native")
    return request.param
