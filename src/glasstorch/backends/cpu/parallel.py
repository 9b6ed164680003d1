"""Splitting a CPU kernel's work across a pool of threads, as ATen's `parallel_for` does.

NumPy releases the GIL inside its ufunc loops, so Python threads running NumPy calls on
disjoint parts of an array use every core. The pool is created on first use and kept.
Work runs inline (on the calling thread) when it is small (see `GRAIN`: handing a chunk
to a sleeping thread costs 0.1-0.4 ms on a VM), when one thread is configured, or when
the caller is itself a worker (no nested parallelism, so a worker never waits on the pool).
NumPy's floating-point error state is per thread: workers run under the caller's.
Device (CuPy) arrays are never split: their ufunc is one kernel launch on the GPU.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .blas_threads import set_blas_threads

# Elements below which a kernel does not split its work. Module level so that tests can
# lower it to send small tensors down the threaded paths. Unlike ATen's OpenMP threads,
# which spin between parallel regions, the pool's thread sleeps, and on the 2-core EPYC VM
# waking it and handing the GIL back and forth cost 0.1-0.4 ms per split (session 15,
# BENCHMARKS.md): splitting broke even at 512K elements for exp, GELU and softmax and paid
# from 1M, but paid only from 2M for a float32 sum and from 4M for one-pass arithmetic
# (a + b, a * 1.0: 2-3x slower split at 512K). Those kinds take GRAIN times these factors.
GRAIN = 1 << 19
REDUCTION_FACTOR = 4
ARITHMETIC_FACTOR = 8

# The ufuncs of one cheap pass over memory, which `ufunc` splits from
# GRAIN * ARITHMETIC_FACTOR elements.
_ARITHMETIC = frozenset({
    np.add, np.subtract, np.multiply, np.true_divide, np.negative, np.positive,
    np.absolute, np.maximum, np.minimum, np.fmax, np.fmin, np.less, np.less_equal,
    np.greater, np.greater_equal, np.equal, np.not_equal, np.logical_and, np.logical_or,
    np.logical_xor, np.logical_not, np.bitwise_and, np.bitwise_or, np.bitwise_xor,
    np.invert, np.left_shift, np.right_shift})

# Elements a fused multi-pass kernel (softmax, gelu) processes at a time, so that its
# passes over a block hit the cache instead of memory.
BLOCK = 1 << 16


def _default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                       # not on Linux
        return os.cpu_count() or 1


_num_threads = _default_threads()
_num_interop_threads = _num_threads
_interop_fixed = False
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_worker = threading.local()
_forked = False


def _check_count(name: str, n) -> None:
    if type(n) is not int:
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")


def get_num_threads() -> int:
    """The number of threads CPU kernels split their work across."""
    return _num_threads


def set_num_threads(n: int) -> None:
    """Set the number of threads CPU kernels split their work across, and NumPy's BLAS's
    (as torch.set_num_threads sets MKL's)."""
    global _num_threads, _pool
    _check_count("set_num_threads", n)
    set_blas_threads(n)
    with _pool_lock:
        if n != _num_threads and _pool is not None:
            _pool.shutdown(wait=False)
            _pool = None
        _num_threads = n


def get_num_interop_threads() -> int:
    """The number of threads for inter-op parallelism (kept for PyTorch's API; glasstorch
    runs ops one after another)."""
    return _num_interop_threads


def set_num_interop_threads(n: int) -> None:
    """Set the inter-op thread count; as in PyTorch, only once."""
    global _num_interop_threads, _interop_fixed
    _check_count("set_num_interop_threads", n)
    if _interop_fixed:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _num_interop_threads, _interop_fixed = n, True


def _mark_worker() -> None:
    _worker.active = True


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_num_threads - 1, thread_name_prefix="glasstorch-cpu",
                                       initializer=_mark_worker)
        return _pool


def _forget_pool() -> None:
    """A forked child has none of the parent's threads: start a new pool when needed, and
    run OpenMP kernels on one thread (see openmp_threads)."""
    global _pool, _pool_lock, _forked
    _pool, _pool_lock, _forked = None, threading.Lock(), True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def in_worker() -> bool:
    """Whether this thread is one of the pool's (whose work must not split again)."""
    return getattr(_worker, "active", False)


def openmp_threads() -> int:
    """The thread count for a C kernel's OpenMP region: glasstorch's, except in a forked
    child, where it is 1. libgomp is not fork-safe: a child whose parent had started
    OpenMP threads waits forever in its first parallel region with more than one thread
    (a DataLoader worker, say); with one thread the kernels skip the region."""
    return 1 if _forked else _num_threads


def _run_chunk(err, fn, start, stop):
    with np.errstate(**err):
        return fn(start, stop)


def threads_for(work: int, factor: int = 1) -> int:
    """How many chunks `work` elements should be split into (1: run inline); `factor`
    raises the threshold for cheap kinds of work (ARITHMETIC_FACTOR, REDUCTION_FACTOR)."""
    if work < GRAIN * factor or _num_threads == 1 or in_worker():
        return 1
    return _num_threads


def parallel_for(n: int, fn, grain: int = 1, factor: int = 1) -> list:
    """Call fn(start, stop) over disjoint chunks covering range(n), in parallel when the
    work (`n * grain` elements) is large (see threads_for's `factor`); returns the chunks'
    results in order. The caller runs the first chunk itself, then any chunk no worker has
    started (on a busy machine a worker can wait long for a core: the caller does not wait
    for it); an exception from any chunk is raised once all have finished (so none is
    still writing when the caller sees it)."""
    k = min(threads_for(n * grain, factor), n)
    if k <= 1:
        return [fn(0, n)]
    bounds = [n * i // k for i in range(k + 1)]
    err = np.geterr()
    pool = _get_pool()
    futures = [pool.submit(_run_chunk, err, fn, bounds[i], bounds[i + 1])
               for i in range(1, k)]
    results, error = [], None
    try:
        results.append(fn(bounds[0], bounds[1]))
    except BaseException as e:            # wait for the other chunks before raising
        error = e
    for i, f in enumerate(futures, 1):
        try:
            results.append(fn(bounds[i], bounds[i + 1]) if f.cancel() else f.result())
        except BaseException as e:
            error = error or e
    if error is not None:
        raise error
    return results


def parallel_tasks(n: int, fn, work: int) -> list:
    """[fn(i) for i in range(n)], the calling thread and the pool's threads each taking the
    next task not yet taken (when `work` elements are worth splitting). The caller waits
    only for tasks a worker has started: on a busy machine a worker may wait long for a
    core, and then the caller runs the tasks it has not reached (with parallel_for's fixed
    chunks it would wait; max_pool at load 3 on 2 cores took twice its serial time)."""
    k = min(threads_for(work), n)
    if k <= 1:
        return [fn(i) for i in range(n)]
    results, errors = [None] * n, []
    lock, finished = threading.Lock(), threading.Event()
    state = {"next": 0, "left": n}
    err = np.geterr()

    def loop():
        with np.errstate(**err):
            while True:
                with lock:
                    i = state["next"]
                    if i >= n:
                        return
                    state["next"] = i + 1
                try:
                    results[i] = fn(i)
                except BaseException as e:
                    errors.append(e)
                with lock:
                    state["left"] -= 1
                    if not state["left"]:
                        finished.set()
    pool = _get_pool()
    for _ in range(k - 1):
        pool.submit(loop)
    was_worker = in_worker()
    _worker.active = True          # the caller's tasks do not split again either
    try:
        loop()
    finally:
        _worker.active = was_worker
    finished.wait()
    if errors:
        raise errors[0]
    return results


def split_axis(shape, exclude=()) -> int | None:
    """The axis to split an array of `shape` along: the outermost one (not in `exclude`)
    with at least as many entries as threads, else the longest; None if none is > 1."""
    best = None
    for ax, size in enumerate(shape):
        if ax in exclude or size < 2:
            continue
        if size >= _num_threads:
            return ax
        if best is None or size > shape[best]:
            best = ax
    return best


def _alias_hazard(args, out: np.ndarray) -> bool:
    """An operand overlapping the output other than element for element: NumPy buffers
    such a call as a whole, which chunks written in parallel would not reproduce."""
    for a in args:
        if isinstance(a, np.ndarray) and a.ndim and np.may_share_memory(a, out):
            if (a.shape != out.shape or a.strides != out.strides
                    or a.__array_interface__["data"][0] != out.__array_interface__["data"][0]):
                return True
    return False


def ufunc(fn, args, out: np.ndarray, **kwargs) -> None:
    """fn(*args, out=out, **kwargs) for an elementwise ufunc, split across threads when
    `out` is large (one-pass arithmetic: ARITHMETIC_FACTOR times larger). Operands broadcast
    against `out` and are sliced like it. Small outputs (every op on small tensors comes
    here) cost two comparisons before the ufunc runs; a CuPy `out` goes to _device_ufunc."""
    if out.__class__ is not np.ndarray:
        _device_ufunc(fn, args, out, kwargs)
        return
    if (out.size < GRAIN
            or threads_for(out.size, ARITHMETIC_FACTOR if fn in _ARITHMETIC else 1) == 1
            or _alias_hazard(args, out)):
        fn(*args, out=out, **kwargs)
        return
    shape = out.shape
    arrays = [isinstance(a, np.ndarray) and a.ndim > 0 for a in args]
    if out.flags.c_contiguous and all(
            not is_arr or (a.shape == shape and a.flags.c_contiguous)
            for a, is_arr in zip(args, arrays)):
        o = out.reshape(-1)
        ops = [a.reshape(-1) if is_arr else a for a, is_arr in zip(args, arrays)]
        ax = 0
    else:
        o = out
        ops = [np.broadcast_to(a, shape) if is_arr else a for a, is_arr in zip(args, arrays)]
        ax = split_axis(shape)
        if ax is None:
            fn(*args, out=out, **kwargs)
            return
    lead = (slice(None),) * ax

    def chunk(start, stop):
        region = lead + (slice(start, stop),)
        fn(*[a[region] if is_arr else a for a, is_arr in zip(ops, arrays)], out=o[region],
           **kwargs)

    parallel_for(o.shape[ax], chunk, o.size // max(o.shape[ax], 1))


_elementwise = None     # backends.cuda.elementwise, imported at the first GPU call


def _device_ufunc(fn, args, out, kwargs) -> None:
    """fn(*args, out=out) on CuPy arrays: glasstorch's vectorised CUDA C where it applies
    (large contiguous float operands), else CuPy's kernel."""
    global _elementwise
    if _elementwise is None:
        from ..cuda import elementwise
        _elementwise = elementwise
    elementwise = _elementwise
    if (out.size < elementwise.MIN_ELEMENTS or not kwargs.keys() <= {"dtype", "casting"}
            or not elementwise.launch(fn, args, out, **kwargs)):
        fn(*args, out=out, **kwargs)


def chunked(fn, arrays, block: int | None = None) -> None:
    """fn(*parts) over matching parts of arrays of one shape (typically inputs and the
    output), split across threads; each thread walks its share in parts of about `block`
    elements, so that a chain of NumPy passes over a part stays in cache. Arrays under
    `GRAIN` elements go to fn whole, on this thread."""
    shape = arrays[0].shape
    if arrays[0].size < GRAIN or arrays[0].__class__ is not np.ndarray:
        fn(*arrays)                     # small, or on a GPU: one call on the whole arrays
        return
    if all(a.flags.c_contiguous for a in arrays):
        views = [a.reshape(-1) for a in arrays]
        ax = 0
    else:
        views = arrays
        ax = split_axis(shape)
        if ax is None:
            fn(*arrays)
            return
    n = views[0].shape[ax]
    inner = views[0].size // n if n else 0
    step = max(1, block // max(inner, 1)) if block else n
    lead = (slice(None),) * ax

    def run(start, stop):
        for s in range(start, stop, step):
            region = lead + (slice(s, min(s + step, stop)),)
            fn(*[v[region] for v in views])

    parallel_for(n, run, inner)
