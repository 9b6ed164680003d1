"""The operator workloads: per-op overhead, a tiny autograd graph, large elementwise work,
reductions, matrix products, a convolution and the DataLoader.

Every setup takes the library module (`glasstorch`, `torch`, or `numpy` for the matmul
ceiling) and builds its inputs from the same seeded NumPy arrays, copied into memory the
library allocated itself (`from_numpy(...).clone()`), as a program's own tensors would be.
"""
from __future__ import annotations

import numpy as np

from .harness import Case, Target, Workload

PER_OP = Target(2.5)
AT_PAR = Target(1.0)


def array(shape, seed=0, dist="normal", dtype=np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) if dist == "normal" else rng.random(shape)
    return values.astype(dtype)


def tensor(lib, values: np.ndarray, requires_grad=False):
    """`values` as `lib`'s own tensor (NumPy: a copy of the array)."""
    if lib is np:
        return values.copy()
    out = lib.from_numpy(values).clone()
    return out.requires_grad_() if requires_grad else out


def _binary(expr):
    def setup(lib):
        a, b = tensor(lib, array(16, 0)), tensor(lib, array(16, 1))
        return Case(lambda: expr(a, b))
    return setup


def _matmul4(lib):
    a, b = tensor(lib, array((4, 4), 0)), tensor(lib, array((4, 4), 1))
    return Case(lambda: a @ b)


def _transpose(lib):
    x = tensor(lib, array((4, 4)))
    return Case(lambda: x.t())


def _view(lib):
    x = tensor(lib, array((4, 4)))
    return Case(lambda: x.view(16))


def _sum16(lib):
    x = tensor(lib, array(16))
    return Case(lambda: x.sum())


def _tiny_autograd(lib):
    x = tensor(lib, array(16), requires_grad=True)

    def call():
        x.grad = None
        y = (x * 2 + 1).sum()
        y.backward()
        return y
    return Case(call, lambda y: (y.detach(), x.grad))


BIG = 10_000_000


def _fma_relu(lib):
    a, b, c = (tensor(lib, array(BIG, seed)) for seed in range(3))
    relu = lib.nn.functional.relu
    return Case(lambda: relu(a * b + c))


def _gelu(lib):
    x = tensor(lib, array(BIG))
    gelu = lib.nn.functional.gelu
    return Case(lambda: gelu(x, approximate="tanh"))


def _sum_big(lib):
    x = tensor(lib, array(BIG, dist="uniform"))   # positive: a relative tolerance is meaningful
    return Case(lambda: x.sum())


def _softmax(lib):
    x = tensor(lib, array((4096, 4096)))
    softmax = lib.nn.functional.softmax
    return Case(lambda: softmax(x, dim=-1))


def _matmul(n):
    def setup(lib):
        a, b = tensor(lib, array((n, n), 0)), tensor(lib, array((n, n), 1))
        return Case(lambda: a @ b)
    return setup


def _gflops(n):
    def extra(times):
        rate = {lib: 2 * n ** 3 / t / 1e9 for lib, t in times.items()}
        return (f"GFLOP/s: glasstorch {rate['glasstorch']:.1f}, torch {rate['torch']:.1f}, "
                f"NumPy {rate['numpy']:.1f}; glasstorch/NumPy {rate['glasstorch'] / rate['numpy']:.2f}")
    return extra


def _conv2d(lib):
    F = lib.nn.functional
    x = tensor(lib, array((64, 3, 32, 32)))
    w = tensor(lib, array((32, 3, 3, 3), 1) * np.float32(0.1), requires_grad=True)
    b = tensor(lib, array(32, 2) * np.float32(0.1), requires_grad=True)

    def call():
        w.grad = b.grad = None
        out = F.conv2d(x, w, b, padding=1)
        out.square().mean().backward()
        return out
    return Case(call, lambda out: (out.detach(), w.grad, b.grad))


SAMPLES, BATCH = 8192, 64


def _loader(workers):
    def setup(lib):
        data = lib.utils.data
        x = tensor(lib, array((SAMPLES, 1, 28, 28)))
        y = lib.from_numpy(np.random.default_rng(1).integers(0, 10, SAMPLES))
        loader = data.DataLoader(data.TensorDataset(x, y), batch_size=BATCH,
                                 num_workers=workers)

        def epoch():
            count = 0
            for xb, yb in loader:
                count += len(yb)
            return count, xb, yb
        return Case(epoch, lambda out: out)
    return setup


def _samples_per_second(times):
    return ("samples/s: " + ", ".join(f"{lib} {SAMPLES / t:,.0f}" for lib, t in times.items()))


OPERATORS = [
    Workload("add", "a + b, 16 float32", _binary(lambda a, b: a + b), PER_OP),
    Workload("matmul4", "a @ b, 4x4 float32", _matmul4, PER_OP),
    Workload("transpose", "x.t() (a view), 4x4", _transpose, PER_OP),
    Workload("view", "x.view(16) (a view), 4x4", _view, PER_OP),
    Workload("sum16", "x.sum(), 16 float32", _sum16, PER_OP),
    Workload("autograd", "x.grad=None; (x*2+1).sum().backward(), 16 float32",
             _tiny_autograd, Target(1.3)),
    Workload("fma_relu", "relu(a*b+c), 10M float32", _fma_relu, AT_PAR, rtol=1e-5, atol=1e-6),
    Workload("gelu", "gelu(x, approximate='tanh'), 10M float32", _gelu, AT_PAR,
             rtol=1e-4, atol=1e-6),
    Workload("sum", "x.sum(), 10M float32", _sum_big, AT_PAR, rtol=1e-5),
    Workload("softmax", "softmax(x, dim=-1), 4096x4096 float32", _softmax, AT_PAR,
             rtol=1e-4, atol=1e-8),
] + [
    Workload(f"matmul{n}", f"a @ b, {n}x{n} float32", _matmul(n),
             Target(0.95, "min", "GFLOP/s / NumPy's"), ("glasstorch", "torch", "numpy"),
             rtol=1e-3, atol=1e-3, metric=lambda t: t["numpy"] / t["glasstorch"],
             extra=_gflops(n))
    for n in (512, 1024, 2048)
] + [
    Workload("conv2d", "conv2d fwd+bwd, 64x3x32x32, 32 3x3 filters, padding 1", _conv2d,
             Target(1.5), rtol=1e-4, atol=1e-5),
]

LOADERS = [
    Workload(f"loader{w}", f"DataLoader epoch, {SAMPLES} x 1x28x28, batch {BATCH}, "
             f"{w} workers", _loader(w), None, rtol=0, atol=0, extra=_samples_per_second)
    for w in (0, 2)
]
