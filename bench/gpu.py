"""The GPU suite, `python -m bench --device cuda`: glasstorch against PyTorch on 'cuda', in
one process.

It runs through the CPU suite's harness: each workload's first call is compared across the
two libraries (values, dtypes, shapes, strides), then timed in interleaved rounds, median
per call. A CUDA call only queues work, so each case's `sync` is its library's
`cuda.synchronize`, which the harness calls around every timed loop. torch's TF32 switches
are turned off: both libraries then compute float32 at full precision and the check can hold
them to float32 tolerances. The allocator row times nothing: it reads each library's
`cuda.memory_stats()` (PyTorch's key names) around a warm training step, and checks that
the two libraries' losses one step later agree.

Every setup takes the device and the sizes as arguments, so the tests run this same code on
the CPU at small sizes (`workloads("cpu", small_sizes)`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import training
from .harness import Case, Row, Settings, Target, Workload, _short, measure
from .report import text_table


@dataclass(frozen=True)
class Sizes:
    launch: int = 16                       # elements of the per-call overhead workload
    elementwise: int = 64 * 2**20          # float32 elements per operand (256 MiB)
    matmul: int = 4096                     # n of the n x n matrix products
    copy_bytes: int = 2**30                # the device-to-device copy
    upload_bytes: int = 256 * 2**20        # the pinned host-to-device copy


HIT_RATE_STEP = "gpt"      # the training step whose allocations the allocator row counts
WARM_STEPS = 3             # steps before the counted one: optimizer state, cached segments


def _normal(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def _on(lib, values: np.ndarray, device: str):
    """`values` copied into memory that `lib` allocated on `device`."""
    return lib.from_numpy(values).to(device, copy=True)


def _sync(lib, device: str):
    """What waits for `lib`'s queued work on `device`; CPU calls finish as they return."""
    return (lambda: None) if device == "cpu" else lib.cuda.synchronize


def _synced(setup, device: str):
    """`setup` whose cases wait for their device around each timed loop."""
    def synced_setup(lib):
        case = setup(lib)
        case.sync = _sync(lib, device)
        return case
    return synced_setup


def _elements(n: int) -> str:
    return f"{n / 2**20:g}M" if n >= 2**20 else str(n)


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def _add(n: int, device: str):
    def setup(lib):
        a, b = _on(lib, _normal(n, 0), device), _on(lib, _normal(n, 1), device)
        return Case(lambda: a + b)
    return setup


def _fma_relu(n: int, device: str):
    def setup(lib):
        a, b, c = (_on(lib, _normal(n, seed), device) for seed in range(3))
        relu = lib.nn.functional.relu
        return Case(lambda: relu(a * b + c))
    return setup


def _compiled_fma_relu(n: int, device: str):
    """glasstorch's relu(a*b+c) through torch.compile (one fused kernel: 16 bytes an element)
    against torch eager (three kernels: 28 bytes an element)."""
    def setup(lib):
        a, b, c = (_on(lib, _normal(n, seed), device) for seed in range(3))
        relu = lib.nn.functional.relu

        def fn(a, b, c):
            return relu(a * b + c)
        run = lib.compile(fn) if lib.__name__ == "glasstorch" else fn
        return Case(lambda: run(a, b, c))
    return setup


def _fused_bandwidth(n: int):
    def extra(times):
        return ("GB/s (16 bytes an element): " +
                ", ".join(f"{lib} {16 * n / t / 1e9:.1f}" for lib, t in times.items()) +
                "; the issue's goal: 80% of copy_d2d's GB/s")
    return extra


def _matmul(n: int, dtype, device: str):
    """a @ b with b scaled by 1/sqrt(n): the products are about N(0, 1) whatever n, so one
    tolerance fits every size, and float16 stays far from overflow."""
    def setup(lib):
        a = _on(lib, _normal((n, n), 0).astype(dtype), device)
        b = _on(lib, (_normal((n, n), 1) / np.float32(np.sqrt(n))).astype(dtype), device)
        return Case(lambda: a @ b)
    return setup


def _tflops(n: int):
    def extra(times):
        return "TFLOP/s: " + ", ".join(f"{lib} {2 * n ** 3 / t / 1e12:.1f}"
                                       for lib, t in times.items())
    return extra


def _copied(out):
    """A copy's check: a strided sample over the whole destination and its last KiB."""
    return out[::997], out[-256:]


def _device_copy(nbytes: int, device: str):
    def setup(lib):
        src = _on(lib, np.arange(nbytes // 4, dtype=np.int32), device)
        dst = lib.empty(nbytes // 4, dtype=lib.int32, device=device)
        return Case(lambda: dst.copy_(src), _copied)
    return setup


def _upload(nbytes: int, device: str):
    """A pinned host tensor into device memory; pinning exists only next to a GPU, so on the
    CPU (the tests) the source is plain host memory."""
    pinned = device != "cpu"

    def setup(lib):
        src = lib.from_numpy(np.arange(nbytes // 4, dtype=np.int32))
        if pinned:
            src = src.pin_memory()
            if not src.is_pinned():
                raise RuntimeError("pin_memory() returned memory that is not pinned")
        dst = lib.empty(nbytes // 4, dtype=lib.int32, device=device)
        return Case(lambda: dst.copy_(src), _copied)
    return setup


def _bandwidth(nbytes: int):
    def extra(times):
        return "GB/s copied: " + ", ".join(f"{lib} {nbytes / t / 1e9:.1f}"
                                           for lib, t in times.items())
    return extra


def _bandwidth_ratio(times) -> float:
    """glasstorch's GB/s over torch's."""
    return times["torch"] / times["glasstorch"]


def _gpu_step_atol(i: int, count: int) -> float:
    """training.STEP_ATOL with room for the GPU's other summation orders (other cuBLAS
    algorithms, atomics in the backward passes): outputs are (loss, grads..., step
    errors...); 1e-5 for the loss and gradients, 1e-4 for the step errors (relative, see
    training.step_error)."""
    return 1e-5 if i <= count // 2 else 1e-4


def allocator_hit_rate(case: Case, stats, warm_steps: int = WARM_STEPS) -> tuple:
    """(hit rate, block allocations, new segments, allocation retries) of one call of `case`
    after `warm_steps` calls, from `stats()` (a memory_stats dict) before and after it. The
    hit rate is the share of the call's block allocations served from segments the caching
    allocator already held: 1 - segments allocated / blocks allocated."""
    for _ in range(warm_steps):
        case.call()
    case.sync()
    before = stats()
    case.call()
    case.sync()
    after = stats()
    blocks = after["allocation.all.allocated"] - before["allocation.all.allocated"]
    segments = after["segment.all.allocated"] - before["segment.all.allocated"]
    retries = after.get("num_alloc_retries", 0) - before.get("num_alloc_retries", 0)
    if blocks <= 0:
        raise RuntimeError(f"memory_stats() counted {blocks} block allocations over a training "
                           "step: the allocator's statistics are not being kept")
    return 1 - segments / blocks, blocks, segments, retries


def _hit_rate_row(name: str, description: str, target: Target, device: str):
    """The allocator row: each library's hit rate, after a check that both trained the same
    (the losses of one more step agree)."""
    def run(settings: Settings, workers=None) -> Row:    # on the device: no workers
        import torch

        import glasstorch
        row = Row(name, description, target=target, unit="fraction")
        notes, losses = [], {}
        for lib_name, lib in (("glasstorch", glasstorch), ("torch", torch)):
            case = _synced(training.step_setup(HIT_RATE_STEP, device), device)(lib)
            rate, blocks, segments, retries = allocator_hit_rate(case, lib.cuda.memory_stats)
            losses[lib_name] = case.call().item()
            row.times[lib_name] = rate
            notes.append(f"{lib_name} {blocks} blocks, {segments} new segments, "
                         f"{retries} retries")
        if not np.isclose(losses["glasstorch"], losses["torch"], rtol=1e-3):
            raise RuntimeError(f"glasstorch's loss after {WARM_STEPS + 2} steps, "
                               f"{losses['glasstorch']:.6g}, differs from torch's, "
                               f"{losses['torch']:.6g}")
        row.metric = row.times["glasstorch"]
        row.extra = "; ".join(notes)
        return row
    return run


def workloads(device: str = "cuda", sizes: Sizes = Sizes()) -> list:
    """The suite's workloads with their data on `device`, at `sizes`."""
    def timed(name, description, setup, target, **options):
        return Workload(name, description, _synced(setup, device), target, **options)
    steps = {w.name: w.description for w in training.WORKLOADS}
    n, m = sizes.elementwise, sizes.matmul
    copies = dict(rtol=0, atol=0, metric=_bandwidth_ratio)
    hits = ("alloc_hits", f"caching allocator hit rate over a warm {HIT_RATE_STEP} step: "
            "1 - segments / blocks allocated", Target(0.95, "min", "hit rate"))
    return [
        timed("add", f"a + b, {sizes.launch} float32: the per-call overhead",
              _add(sizes.launch, device), Target(3.0)),
        timed("fma_relu", f"relu(a*b+c), {_elements(n)} float32", _fma_relu(n, device),
              Target(1.2), rtol=1e-5, atol=1e-6),
        timed("c_fma_relu", f"compiled relu(a*b+c), {_elements(n)} float32, against torch "
              "eager", _compiled_fma_relu(n, device), Target(0.6), rtol=1e-5, atol=1e-6,
              extra=_fused_bandwidth(n)),
        timed("matmul_f32", f"a @ b, {m}x{m} float32", _matmul(m, np.float32, device),
              Target(1.1), rtol=1e-4, atol=1e-4, extra=_tflops(m)),
        timed("matmul_f16", f"a @ b, {m}x{m} float16", _matmul(m, np.float16, device),
              Target(1.1), rtol=1e-2, atol=1e-2, extra=_tflops(m)),
        timed("cnn", steps["cnn"], training.step_setup("cnn", device), Target(1.5),
              rtol=1e-3, atol=_gpu_step_atol),
        timed("gpt", steps["gpt"], training.step_setup("gpt", device), Target(1.5),
              rtol=1e-3, atol=_gpu_step_atol),
        Workload(hits[0], hits[1], target=hits[2], run=_hit_rate_row(*hits, device)),
        timed("copy_d2d", f"dst.copy_(src), {_bytes(sizes.copy_bytes)} device to device",
              _device_copy(sizes.copy_bytes, device), Target(0.9, "min", "GB/s / torch's"),
              extra=_bandwidth(sizes.copy_bytes), **copies),
        timed("copy_h2d", f"dst.copy_(src), {_bytes(sizes.upload_bytes)} pinned host to "
              "device", _upload(sizes.upload_bytes, device),
              Target(0.9, "min", "GB/s / torch's"), extra=_bandwidth(sizes.upload_bytes),
              **copies),
    ]


def unavailable(torch, glasstorch) -> str:
    """Why the suite cannot run here ('' when both libraries see a GPU)."""
    reasons = []
    for name, lib in (("glasstorch", glasstorch), ("torch", torch)):
        try:
            available = lib.cuda.is_available()
        except Exception as e:        # a broken installation says so instead of crashing
            reasons.append(f"{name}.cuda.is_available() raised {_short(e)}")
            continue
        if not available:
            cpu_build = lib is torch and torch.version.cuda is None
            reasons.append(f"{name}.cuda.is_available() is False" + (
                f" (torch {torch.__version__} is built without CUDA)" if cpu_build else ""))
    return "; ".join(reasons)


def describe(torch, glasstorch) -> str:
    """The GPU and the versions a run measured."""
    props = torch.cuda.get_device_properties(0)
    try:
        import cupy
        cupy_version = cupy.__version__
    except ImportError:
        cupy_version = "not installed"
    return (f"GPU: {props.name}, compute capability {props.major}.{props.minor}, "
            f"{props.total_memory / 2**30:.0f} GiB; torch {torch.__version__} "
            f"(CUDA {torch.version.cuda}); CuPy {cupy_version}; "
            f"glasstorch {glasstorch.__version__}")


def verdict(rows: list) -> str:
    """One line for scripts: how many targets were met, which were missed, which failed."""
    met = [r.name for r in rows if r.met]
    missed = [r.name for r in rows if r.met is False]
    errors = [r.name for r in rows if r.error]
    parts = [f"{len(met)} met"]
    for count, names, word in ((len(missed), missed, "missed"), (len(errors), errors, "error")):
        if names:
            parts.append(f"{count} {word} ({', '.join(names)})")
    return f"targets: {', '.join(parts)} of {len(rows)}"


def main(chosen: list, settings: Settings) -> int:
    """Measure `chosen` on the GPU and print the table. 0 after a line saying why when either
    library has no usable GPU; 1 when a workload raised or disagreed with torch."""
    import torch

    import glasstorch
    reason = unavailable(torch, glasstorch)
    if reason:
        print(f"skipped the GPU benchmarks: {reason}")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    start = time.perf_counter()
    print(describe(torch, glasstorch))
    print(f"{settings.rounds} round(s) x {settings.min_time:g} s per library, synchronized "
          "around each loop, median per call; torch's TF32 off\n", flush=True)
    modules = {"glasstorch": glasstorch, "torch": torch}
    rows = []
    for workload in chosen:
        row = measure(workload, modules, settings)
        rows.append(row)
        print(text_table([row]).splitlines()[-1], flush=True)
    print("\n" + text_table(rows))
    print(f"\n{verdict(rows)}; whole run {time.perf_counter() - start:.0f} s")
    return 1 if any(row.error for row in rows) else 0
