"""The thread count of the BLAS NumPy loaded. `torch.set_num_threads` sets MKL's as well as
ATen's pool, so `glasstorch.set_num_threads` sets NumPy's OpenBLAS (or MKL) too: otherwise a
"one thread" comparison gives glasstorch's matrix products every core while PyTorch's get
one. The library is found among the process's loaded libraries by name (Linux's
/proc/self/maps); where it cannot be found the count is left as it is.

Kernels that split their work across glasstorch's own pool run their products with one BLAS
thread (`one_thread`): OpenBLAS's threads spin for about 0.1 s after each product, so on two
cores they take the core the pool's other thread wants, and when the machine is shared a
product whose two threads wait for each other's time slice took 35x as long (the bench's MLP
step, 160 ms against 4.6 ms with one BLAS thread)."""
from __future__ import annotations

import contextlib
import ctypes
import functools

_PREFIXES = ("scipy_openblas", "openblas", "MKL")
_SUFFIXES = ("64_", "")


def _loaded_blas_paths() -> list:
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    paths = {line.split()[-1] for line in lines if line.split() and line.split()[-1][:1] == "/"}
    return sorted(p for p in paths if "openblas" in p.lower() or "mkl_rt" in p.lower())


@functools.lru_cache(maxsize=1)
def _library_and_functions():
    """(library, set, get): the loaded BLAS and its thread-count functions, or Nones."""
    import numpy  # noqa: F401  (loads its BLAS)
    for path in _loaded_blas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                if prefix == "MKL":
                    setter = getattr(lib, "MKL_Set_Num_Threads", None)
                    getter = getattr(lib, "MKL_Get_Max_Threads", None)
                else:
                    setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                    getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    getter.restype = ctypes.c_int
                    return lib, setter, getter
    return None, None, None


@functools.lru_cache(maxsize=1)
def _functions():
    """(set, get) of the loaded BLAS's thread count, or (None, None)."""
    return _library_and_functions()[1:]


def blas_library():
    """The BLAS NumPy loaded (a ctypes library), or None where it was not found."""
    return _library_and_functions()[0]


_configured = None   # the count set last (or found), restored after one_thread


def set_blas_threads(n: int) -> bool:
    """Set NumPy's BLAS thread count; False when its library was not found."""
    global _configured
    setter, _ = _functions()
    if setter is None:
        return False
    setter(ctypes.c_int(n))
    _configured = n
    return True


@contextlib.contextmanager
def one_thread():
    """Run the block's BLAS calls on the calling thread alone (from any thread: the count is
    the library's, not per thread), then restore the count set_blas_threads set. Costs
    about a microsecond: for products large enough that BLAS would use its threads."""
    global _configured
    setter, getter = _functions()
    if setter is not None and _configured is None:
        _configured = int(getter())        # the library's own default
    if setter is None or _configured == 1:
        yield
        return
    setter(ctypes.c_int(1))
    try:
        yield
    finally:
        setter(ctypes.c_int(_configured))


def get_blas_threads() -> int | None:
    """NumPy's BLAS thread count, or None when its library was not found."""
    _, getter = _functions()
    return None if getter is None else int(getter())
