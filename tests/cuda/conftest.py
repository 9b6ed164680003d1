"""The CUDA backend's tests, run on a real GPU when there is one, else on simulated CuPy.

With a GPU (scripts/gpu-check on the GPU machine) they run against real CuPy. Elsewhere,
CI included, each module runs with the backend pointed at `simulated_cupy`: CuPy's API over
NumPy, with CuPy's strictness, so the backend's logic (allocator, streams, copies, dispatch,
every shared kernel) is exercised here too. Tests marked `cuda` mean something only on real
hardware (timings, bandwidth, compiled CUDA C) and skip in simulation, saying why.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))   # lets tests import `simulated_cupy`


def _real_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


REAL_GPU = _real_gpu()


def pytest_collection_modifyitems(config, items):
    if REAL_GPU:
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU (runs in scripts/gpu-check); "
                                   "this machine runs the CUDA tests on simulated CuPy")
    here = os.path.dirname(__file__)
    for item in items:
        if item.get_closest_marker("cuda") and str(item.fspath).startswith(here):
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="module")
def cuda_backend():
    """'real' on a GPU; otherwise the simulated CuPy for the duration of the module."""
    if REAL_GPU:
        yield "real"
        return
    import simulated_cupy
    from glasstorch.backends.cuda import runtime
    simulated_cupy.reset()
    runtime.use_cupy(simulated_cupy)
    try:
        yield "simulated"
    finally:
        runtime.use_cupy(None)
