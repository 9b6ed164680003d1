"""Helpers of the C-kernel tests (tests/backends/test_native*.py): a function run on both
paths, the C functions a test's code asks for, and kernels forced onto several threads."""
from contextlib import contextmanager

import pytest

import glasstorch as gt
from glasstorch.backends.cpu import native
from glasstorch.compiler.inductor import build, codegen

needs_compiler = pytest.mark.skipif(build.compiler() is None, reason="no C compiler")


def both_paths(fn, monkeypatch) -> list:
    """[fn() with the C kernels, fn() with the NumPy formulas]."""
    results = []
    for enabled in (True, False):
        monkeypatch.setattr(native, "ENABLED", enabled)
        results.append(fn())
    return results


def spy_kernels(monkeypatch, library=None) -> list:
    """The names of the C functions handed out from now on (of native/`library`.c only,
    where given; else of all but random.c's samplers, which draw the tests' inputs), the C
    kernels turned on: the list fills as the code under test runs."""
    monkeypatch.setattr(native, "ENABLED", True)
    calls = []
    real = native.function

    def spy(lib, name, signature):
        fn = real(lib, name, signature)
        if fn is not None and (lib == library if library else lib != "random"):
            calls.append(name)
        return fn
    monkeypatch.setattr(native, "function", spy)
    return calls


@contextmanager
def threaded_kernels(monkeypatch, threads: int = 3):
    """Within the block, the C kernels split across `threads` OpenMP threads whatever their
    size (the thread count restored after)."""
    monkeypatch.setattr(codegen, "PARALLEL_THRESHOLD", 1)
    before = gt.get_num_threads()
    gt.set_num_threads(threads)
    try:
        yield
    finally:
        gt.set_num_threads(before)
