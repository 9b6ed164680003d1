"""Helpers of the C-kernel tests (tests/backends/test_native*.py): a function run on both
paths, and the C functions a test's code asks for."""
from glasstorch.backends.cpu import native


def both_paths(fn, monkeypatch) -> list:
    """[fn() with the C kernels, fn() with the NumPy formulas]."""
    results = []
    for enabled in (True, False):
        monkeypatch.setattr(native, "ENABLED", enabled)
        results.append(fn())
    return results


def spy_kernels(monkeypatch, library=None) -> list:
    """The names of the C functions handed out from now on (of native/`library`.c only,
    where given), the C kernels turned on: the list fills as the code under test runs."""
    monkeypatch.setattr(native, "ENABLED", True)
    calls = []
    real = native.function

    def spy(lib, name, signature):
        fn = real(lib, name, signature)
        if fn is not None and (library is None or lib == library):
            calls.append(name)
        return fn
    monkeypatch.setattr(native, "function", spy)
    return calls
