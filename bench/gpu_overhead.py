"""`python -m bench.gpu_overhead`: where a small GPU op's time goes, and elementwise bandwidth.

The GPU suite's `add` row times glasstorch's `a + b` on 16 elements against torch's; this
takes that time apart: CuPy's own launch, a CuPy array over a pointer, glasstorch's caching
allocator, a storage's buffer, an empty tensor, `add` with and without `out=`, and the same
op on the CPU. Then the bandwidth of one elementwise op over 64M float32: CuPy's kernel,
torch's, and glasstorch's (which takes its own CUDA C there). Medians of 5 loops, each
synchronised at its end. Needs CuPy, a GPU and torch with CUDA; scripts/gpu-check runs it.
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

ELEMENTWISE_N = 64 << 20


def per_call_us(fn, sync, calls: int = 3000, rounds: int = 5) -> float:
    for _ in range(50):
        fn()
    sync()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main() -> int:
    try:
        import cupy as cp
        import torch
        import glasstorch as gt
        if not (torch.cuda.is_available() and gt.cuda.is_available()):
            raise RuntimeError("torch or glasstorch sees no GPU")
    except Exception as error:          # no CuPy, no GPU, a CPU build of torch
        print(f"skipped the GPU overhead breakdown: {error}")
        return 0
    from glasstorch.backends.cuda.allocator import device_allocator
    from glasstorch.core.tensor import Tensor

    sync = cp.cuda.runtime.deviceSynchronize
    ca, cb, co = (cp.ones(16, cp.float32) for _ in range(3))
    buf = cp.empty(4096, cp.uint8)
    allocator = device_allocator(0)
    a, b, o = (gt.ones(16, device="cuda") for _ in range(3))
    x = gt.ones(16)
    ta, tb = torch.ones(16, device="cuda"), torch.ones(16, device="cuda")
    cuda0 = gt.device("cuda", 0)
    rows = [
        ("CuPy add(a, b, out=o)", lambda: cp.add(ca, cb, out=co)),
        ("CuPy array over a pointer", lambda: cp.ndarray((16,), cp.float32, buf.data)),
        ("caching allocator malloc + free", lambda: allocator.caching.free(
            allocator.caching.malloc(512, 0))),
        ("a storage's buffer (allocate + free)", lambda: allocator.allocate(64)),
        ("Tensor._empty on cuda", lambda: Tensor._empty((16,), gt.float32, cuda0)),
        ("glasstorch add(a, b, out=o)", lambda: gt.add(a, b, out=o)),
        ("glasstorch a + b", lambda: a + b),
        ("glasstorch a + b on the CPU", lambda: x + x),
        ("torch a + b", lambda: ta + tb),
    ]
    print("per call, 16 float32 elements (median of 5 loops of 3000 calls)")
    for name, fn in rows:
        print(f"  {name:40s} {per_call_us(fn, sync):8.2f} us", flush=True)

    n = ELEMENTWISE_N
    A, B, O = (cp.random.standard_normal(n, dtype=cp.float32) for _ in range(3))
    TA, TB, TO = (torch.randn(n, device="cuda") for _ in range(3))
    GA, GB = gt.randn(n, device="cuda"), gt.randn(n, device="cuda")
    print(f"a * b over {n >> 20}M float32 (12 bytes an element)")
    for name, fn in (("CuPy multiply(out=)", lambda: cp.multiply(A, B, out=O)),
                     ("torch mul(out=)", lambda: torch.mul(TA, TB, out=TO)),
                     ("glasstorch a * b", lambda: GA * GB)):
        us = per_call_us(fn, sync, calls=20)
        print(f"  {name:40s} {us:8.1f} us {12 * n / us / 1e3:8.1f} GB/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
