"""Hand-written C kernels for the eager operators whose NumPy form costs many passes.

NumPy runs one formula step per pass over memory: float32 GELU is twelve passes and
its gradient fifteen, each a trip through memory for a large tensor. ATen runs such an
operator as one vectorised loop; so do these kernels (`*.c` beside this module, one file
per concept, after the generated code's prelude (`codegen.PRELUDE`: headers, NumPy's pairwise
sum) and the shared `elementwise.h` and `pairwise.h`). They are built the way the compiler's
generated code is (`compiler/inductor/build.py`: the system C compiler, a disk cache keyed by source,
compiler and CPU, ctypes, OpenMP's threads sleeping between regions), on first use, and
split across OpenMP threads from the compiler's `PARALLEL_THRESHOLD` elements.

They do the NumPy formulas' arithmetic in the same order, with the same float constants,
so the two agree to the rounding of `exp`, `tanh` and `erf` (libm's against NumPy's).
Where a kernel does not apply (a dtype, a layout it does not take), or there is no
compiler, or `GLASSTORCH_NATIVE=0` (read at import; tests set `ENABLED`), the NumPy
formulas run instead: every operator has both, and the tests run both.
"""
from __future__ import annotations

import ctypes
import functools
import os
import warnings
from pathlib import Path

import numpy as np

from .. import parallel
from ....memory.cpu_allocator import _DATA_AT

ENABLED = os.environ.get("GLASSTORCH_NATIVE", "1") != "0"

# ctypes argument types by letter, for `function`'s signatures.
_TYPES = {"n": ctypes.c_int64, "p": ctypes.c_void_p, "i": ctypes.c_int,
          "d": ctypes.c_double}


@functools.lru_cache(maxsize=None)
def _library(name: str):
    from ....compiler.inductor import build, codegen, process
    here = Path(__file__).parent
    try:
        vector_math = build.vector_math_available()
        source = "".join([codegen.PRELUDE,
                          codegen.vector_math_declarations() if vector_math else "",
                          (here / "elementwise.h").read_text(), (here / "pairwise.h").read_text(),
                          (here / "pool.h").read_text(), (here / f"{name}.c").read_text()])
        with process.kernel_library_load():
            return build.load(source, extra_libs=build.libs(vector_math))
    except (build.BuildError, OSError) as e:     # the compiler failed, or the disk cache
        if build.compiler() is not None:          # cannot be written; no compiler: silent
            warnings.warn(f"glasstorch: the native {name} kernels did not build, so the NumPy "
                          f"ones run instead:\n{e}", RuntimeWarning, stacklevel=3)
        return None


@functools.lru_cache(maxsize=None)
def _function(library_name: str, name: str, signature: str):
    lib = _library(library_name)
    if lib is None:
        return None
    fn = getattr(lib, name)
    fn.argtypes = [_TYPES[c] for c in signature]
    fn.restype = None
    return fn


def function(library_name: str, name: str, signature: str):
    """The C function `name` of `library_name.c`, its arguments typed by `signature` (one
    letter each: n int64, p pointer, i int, d double), built on first use; None where
    native kernels are off or cannot be built."""
    return _function(library_name, name, signature) if ENABLED else None


@functools.lru_cache(maxsize=None)
def _runner():
    lib = _library("pool")
    return None if lib is None else ctypes.cast(lib.gt_run_pieces, ctypes.c_void_p).value


def runner():
    """The address of the thread pool's gt_run_pieces (pool.c), which kernels that split
    their work on glasstorch's own threads take as their `runner` argument; None where
    native kernels are off or cannot be built."""
    return _runner() if ENABLED else None


def describe() -> str:
    """What `glasstorch info` says of the C kernels (without building them)."""
    from ....compiler.inductor import build
    if not ENABLED:
        return "C kernels off (GLASSTORCH_NATIVE=0)"
    cc = build.compiler()
    if cc is None:
        return "no C compiler: the hot ops run as NumPy formulas too"
    return f"C kernels for the hot ops (built by {cc} on first use)"


_codegen = None      # compiler.inductor.codegen, imported on first use (it sits above)


def threads(n: int) -> int:
    """OpenMP threads for `n` elements of work. As for generated kernels, 1 below
    `codegen.PARALLEL_THRESHOLD`: on few cores a parallel region waits for the core that
    OpenBLAS's threads hold, spinning, after the matrix product that usually comes just
    before (a Linear's output into GELU). Also 1 on the CPU pool's workers (no nested
    parallelism) and in a forked child (`parallel.openmp_threads`)."""
    global _codegen
    if _codegen is None:
        from ....compiler.inductor import codegen
        _codegen = codegen
    if n < _codegen.PARALLEL_THRESHOLD or parallel.in_worker():
        return 1
    return parallel.openmp_threads()


POOL_THRESHOLD = 1 << 15
"""Elements from which a costly elementwise kernel (GELU and its gradient: ~0.3 ns an
element) splits across glasstorch's pool (pool.c), whose helpers join as they come and
cost a few microseconds where an OpenMP region costs far more on a busy core: PyTorch
splits such ops from 32K elements too."""


def pool_threads(work: int, threshold: int = POOL_THRESHOLD) -> int:
    """Threads for `work` (elements, or a product's multiply-adds) of a kernel that splits
    on the pool: 1 below `threshold`, on the pool's own workers and in a forked child."""
    if work < threshold or parallel.in_worker():
        return 1
    return parallel.openmp_threads()


def address(a: np.ndarray) -> int:
    """a's data address, an integer (for pointer arithmetic: a row of it)."""
    return a.__array_interface__["data"][0]


_word = ctypes.c_size_t.from_address


def pointer(a: np.ndarray) -> int:
    """a's data address as a pointer argument, read from the ndarray object where its
    layout was confirmed at import (`cpu_allocator._DATA_AT`: 0.17 us a call, where a
    ctypes view of the buffer took 0.41 and `__array_interface__` 1.5; a kernel call
    passes up to a dozen). An address holds no reference: the caller keeps the memory
    alive through the call (an array it holds, or a view of one)."""
    if _DATA_AT and a.__class__ is np.ndarray:
        return _word(id(a) + _DATA_AT).value
    return address(a)


def pointers(*arrays) -> list:
    """`pointer` of each array, for a call's arguments."""
    return [pointer(a) for a in arrays]


def dense(*arrays) -> bool:
    """Whether the arrays are C-contiguous NumPy arrays of one float dtype, float32 or
    float64 (the kernels' element types)."""
    d = arrays[0].dtype
    return (d in FLOAT_SUFFIX and all(a.__class__ is np.ndarray and a.dtype == d
                                       and a.flags.c_contiguous for a in arrays))


# The kernels' element types and the suffix of their C functions' names.
FLOAT_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def suffix(a: np.ndarray) -> str:
    return FLOAT_SUFFIX[a.dtype]
