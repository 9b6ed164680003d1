"""Shared by the matrix-product kernel tests (tests/backends/test_split_gemm.py and
test_own_gemm.py)."""
import threading

import numpy as np


def products_from_python_threads(matmul, threads: int = 4, calls: int = 20) -> list:
    """`matmul(a, b, o)` (which must say True) `calls` times from each of `threads` Python
    threads at once, each on a (200, 150) @ (150, 120) float32 pair of its own: the
    [(a, b, its last o)] of every thread; the first error a thread met is raised."""
    rng = np.random.default_rng(0)
    pairs = [(rng.standard_normal((200, 150)).astype(np.float32),
              rng.standard_normal((150, 120)).astype(np.float32)) for _ in range(threads)]
    results, errors = [None] * threads, []

    def run(i):
        try:
            a, b = pairs[i]
            for _ in range(calls):
                o = np.empty((200, 120), np.float32)
                assert matmul(a, b, o)
            results[i] = o
        except Exception as e:                       # noqa: BLE001 (raised below)
            errors.append(e)
    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    if errors:
        raise errors[0]
    return [(a, b, o) for (a, b), o in zip(pairs, results)]
