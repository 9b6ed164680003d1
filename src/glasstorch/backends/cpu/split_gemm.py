"""Matrix products run on glasstorch's own threads: cut into row (or column) blocks, the
blocks claimed by the calling thread and the helper threads of glasstorch's pool
(native/gemm.c, native/pool.c). Each block is one call of glasstorch's own kernel where the
CPU has AVX-512 (`own_matmul`), else one single-threaded call of the BLAS NumPy loaded
(`matmul`).

Why an own kernel: OpenBLAS picks its kernels by CPU, and runs its AVX2 ("Haswell") ones
where told to (`OPENBLAS_CORETYPE=Haswell`, as on the project's VMs) or where it does not
know the CPU; on an AVX-512 core they do half the multiply-adds a cycle that the core can.
gemm.c's kernel (BLIS's design: packed panels, an 8 x 32 block of C in registers) ran the
bench's products 1.4-1.9x faster than that BLAS on one thread (256x64x256 float32: 40 us
against 70; 512^3: 242 GFLOP/s against 129), with errors of the same size.

Why not BLAS's own threads: OpenBLAS's threads wait for one another by yielding the core
(`sched_yield`), and where another process holds a core, even at nice 19, every yield can
hand it a whole time slice. With a niced `pytest` beside it on the 2-core VM, the bench's
MLP step took 88 ms a step on two threads against 2.7 ms with one BLAS thread (and torch's,
with MKL's threads, 46 ms). The OpenMP team sleeps between regions instead of yielding
(`compiler/inductor/process.py`), but its barrier waits for every thread, and run there
the blocks still collapsed (40 ms). So the pool here never waits for a thread that has not
started: the caller claims pieces of the product with its helpers, and a helper that comes
late finds none left. Under that load the MLP step now takes 2.8 ms (one thread: 2.8);
on a quiet machine a product is within 5-10% of OpenBLAS's own threads (each thread packs
the smaller operand whole, where OpenBLAS's threads share it).

It applies to float32 and float64 NumPy arrays whose matrices are row- or column-major
(a transposed weight is read as it lies), more than one thread, and an ILP64 OpenBLAS (the
one NumPy's wheels carry, or NumPy 1's `openblas64_`); the caller (`linalg.blas_matmul`,
for products large enough to split) sends everything else to `np.matmul` as before.
"""
from __future__ import annotations

import ctypes
import functools
import math

import numpy as np

from . import native, parallel
from .blas_threads import blas_library, one_thread
from .native import function, pointer, runner

_SUFFIX = {np.dtype(np.float32): ("f32", "s"), np.dtype(np.float64): ("f64", "d")}


@functools.lru_cache(maxsize=None)
def _entry(letter: str):
    """The address of the loaded BLAS's ILP64 CBLAS gemm (`s` or `d`), or None."""
    lib = blas_library()
    for name in (f"scipy_cblas_{letter}gemm64_", f"cblas_{letter}gemm64_"):
        fn = None if lib is None else getattr(lib, name, None)
        if fn is not None:
            return ctypes.cast(fn, ctypes.c_void_p).value
    return None


def available() -> bool:
    """Whether large products can be split here: the BLAS's ILP64 gemm was found (whether
    the C kernel builds shows at the first product)."""
    return _entry("s") is not None


def _operand(x: np.ndarray, rows: int, cols: int):
    """(transposed, leading dimension) of a matrix x (shape rows x cols) as CBLAS reads it,
    or None where its layout is neither row- nor column-major with a valid stride."""
    item = x.itemsize
    s0, s1 = x.strides[-2], x.strides[-1]
    if s1 == item or cols == 1:
        ld = s0 // item if rows > 1 else cols
        if s0 % item == 0 and ld >= max(1, cols):
            return 0, ld
    if s0 == item or rows == 1:
        ld = s1 // item if cols > 1 else rows
        if s1 % item == 0 and ld >= max(1, rows):
            return 1, ld
    return None


def _batch_stride(x: np.ndarray, batch: int):
    """x's stride between products in elements (0 for a 2-d or broadcast operand), or None."""
    if x.ndim == 2 or batch == 1:
        return 0
    stride = x.strides[0] // x.itemsize
    return stride if stride >= 0 and x.strides[0] % x.itemsize == 0 else None


@functools.lru_cache(maxsize=None)
def _own_kernels() -> dict:
    """dtype -> glasstorch's own product kernel (gemm.c's gemm_own_f32/f64), or {} where the
    build has none (a CPU without AVX-512) or the C kernels do not build."""
    probe = function("gemm", "gemm_own_available", "")
    if probe is None:
        return {}
    probe.restype = ctypes.c_int
    if not probe():
        return {}
    kernels = {dtype: function("gemm", "gemm_own_" + suffix,
                                "nnnnnpnnnnpnnnnpnnnnip")
               for dtype, (suffix, _) in _SUFFIX.items()}
    for fn in kernels.values():
        fn.restype = ctypes.c_int
    return kernels


def own_kernel_available() -> bool:
    """Whether glasstorch's own product kernel (native/gemm.c, AVX-512) was built here."""
    return native.ENABLED and bool(_own_kernels())


OWN_PARALLEL_MNK = 1 << 19
"""Products from this many multiply-adds (~3 us on one AVX-512 core) are split across
threads: below it the pool's rendezvous costs about what the second thread saves."""


_OWN_MIN_ROW_BYTES = 128
"""Products whose C rows are narrower than the kernel's panel (32 float32, 16 float64
columns) stay with the BLAS: the kernel packs all of A for them, as much work as the
product itself (256x512 @ 512x16 took 48 us on one thread against OpenBLAS's 42, x 4:
48 against 27)."""


def _batch_strides(x: np.ndarray, lead: tuple):
    """x's strides in bytes over the output's two batch dims `lead` (fewer dims padded with
    leading 1s, as NumPy broadcasts): 0 where x broadcasts (a dim of size 1, or one it
    lacks), None where its batch shape does not fit."""
    if x.ndim == 2:
        return 0, 0
    pad = 4 - x.ndim
    shape, strides = (1,) * pad + x.shape[:-2], (0,) * pad + x.strides[:-2]
    out = []
    for size, stride, want in zip(shape, strides, lead):
        if size == want:
            out.append(stride if want > 1 else 0)
        elif size == 1:
            out.append(0)
        else:
            return None
    return out


def own_matmul(a: np.ndarray, b: np.ndarray, o: np.ndarray) -> bool:
    """o[...] = a @ b with glasstorch's own kernel, for float32/float64 operands of any
    strides (2-d, or batches with up to two batch dims, which broadcast as np.matmul's) into
    an `o` whose rows are dense, at least a panel wide, and which overlaps neither; False,
    with nothing written, where it does not apply or the kernel was not built (a CPU without
    AVX-512)."""
    fn = _own_kernels().get(o.dtype) if native.ENABLED else None
    if (fn is None or a.dtype != o.dtype or b.dtype != o.dtype
            or o.__class__ is not np.ndarray or a.__class__ is not np.ndarray
            or b.__class__ is not np.ndarray or not 2 <= o.ndim <= 4
            or not 2 <= a.ndim <= o.ndim or not 2 <= b.ndim <= o.ndim):
        return False
    m, n = o.shape[-2:]
    k = a.shape[-1]
    if o.ndim == 2:
        lead, sa, sb, sc = (1, 1), (0, 0), (0, 0), (0, 0)
    else:
        lead = (1,) * (4 - o.ndim) + o.shape[:-2]
        sa, sb = _batch_strides(a, lead), _batch_strides(b, lead)
        sc = _batch_strides(o, lead)
        if sa is None or sb is None:
            return False
    item = o.itemsize
    ars, acs = a.strides[-2:]
    brs, bcs = b.strides[-2:]
    ldc = o.strides[-2]
    batch = lead[0] * lead[1]
    if (a.shape[-2] != m or b.shape[-2] != k or b.shape[-1] != n or m * n * k == 0
            or n * item < _OWN_MIN_ROW_BYTES or o.strides[-1] != item
            or (ars | acs | brs | bcs | ldc | sa[0] | sa[1] | sb[0] | sb[1] | sc[0] | sc[1])
            % item
            or np.may_share_memory(o, a) or np.may_share_memory(o, b)):
        return False
    threads = native.pool_threads(batch * m * n * k, OWN_PARALLEL_MNK)
    pool = runner() if threads > 1 else None
    if fn(lead[0], lead[1], m, n, k, pointer(a), ars // item, acs // item, sa[0] // item,
          sa[1] // item, pointer(b), brs // item, bcs // item, sb[0] // item, sb[1] // item,
          pointer(o), ldc // item, sc[0] // item, sc[1] // item,
          threads // math.gcd(batch, threads), threads if pool else 1, pool):
        raise MemoryError("glasstorch's matrix product could not allocate memory for packing "
                          "its operands")
    return True


def matmul(a: np.ndarray, b: np.ndarray, o: np.ndarray) -> bool:
    """o[...] = a @ b on glasstorch's threads, for 2-d operands or a 3-d batch (either
    operand may be 2-d: broadcast); False, with nothing written, where this path does not
    apply (shapes that do not fit included: np.matmul then raises)."""
    dtype = o.dtype
    if (dtype not in _SUFFIX or a.dtype != dtype or b.dtype != dtype
            or o.__class__ is not np.ndarray or a.__class__ is not np.ndarray
            or b.__class__ is not np.ndarray or o.ndim not in (2, 3)
            or a.ndim not in (2, o.ndim) or b.ndim not in (2, o.ndim)):
        return False
    m, n = o.shape[-2:]
    k = a.shape[-1]
    batch = o.shape[0] if o.ndim == 3 else 1
    if ((a.ndim == 3 and a.shape[0] != batch) or (b.ndim == 3 and b.shape[0] != batch)
            or a.shape[-2] != m or b.shape[-2:] != (k, n)):
        return False
    threads = parallel.openmp_threads() if not parallel.in_worker() else 1
    suffix, letter = _SUFFIX[dtype]
    entry = _entry(letter)
    if threads == 1 or entry is None:
        return False
    layout_a, layout_b = _operand(a, m, k), _operand(b, k, n)
    layout_o = _operand(o, m, n)
    sa, sb, sc = _batch_stride(a, batch), _batch_stride(b, batch), _batch_stride(o, batch)
    if (layout_a is None or layout_b is None or layout_o is None or layout_o[0]
            or None in (sa, sb, sc) or (batch > 1 and sc < m * layout_o[1])
            or m * n * k == 0 or np.may_share_memory(o, a)
            or np.may_share_memory(o, b)):
        return False
    fn = function("gemm", "gemm_split_" + suffix, "piinnnnpnnpnnpnnnip")
    pool = runner()
    if fn is None or pool is None:
        return False
    # Pieces a multiple of the thread count, so that the threads' shares come out even.
    blocks = threads // math.gcd(batch, threads)
    with one_thread():
        fn(entry, layout_a[0], layout_b[0], batch, m, n, k, pointer(a), layout_a[1], sa,
           pointer(b), layout_b[1], sb, pointer(o), layout_o[1], sc, blocks, threads, pool)
    return True
