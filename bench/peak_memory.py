"""Peak memory of the CNN training step, one fresh process per library.

    python -m bench.peak_memory glasstorch --steps 5     # prints one JSON line

Each process imports only the library it measures, builds the model and inputs, runs one
warm-up step (optimizer state, caches), returns the C heap's free pages to the system
(glibc's malloc_trim: otherwise the warm-up step's freed memory, still counted in RSS,
would hide what the next steps need), then resets the kernel's high-water mark
(`/proc/self/clear_refs` <- 5, Linux) and runs `--steps` steps. The figure is the peak RSS
during those steps minus the RSS before them: the memory a step needs beyond the model,
inputs and state that persist. glasstorch also reports its allocator's own count (the peak
of live tensor bytes over the same steps), which PyTorch does not keep on the CPU.
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import importlib
import json
import os
import subprocess
import sys

import numpy as np

from .harness import Row, Settings, Target
from .training import cnn
from .workloads import array

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {key}")


def _return_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim), so the RSS
    before the measured steps holds what is live, not what an earlier step freed into
    malloc's free lists (which would hide the steps' own needs from the peak)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc: the free lists stay counted
        pass


def measure_here(name: str, steps: int) -> dict:
    """Peak RSS growth (bytes) over `steps` CNN training steps in this process."""
    lib = importlib.import_module(name)
    threads = os.cpu_count() or 1
    if hasattr(lib, "set_num_threads"):
        lib.set_num_threads(threads)
    lib.manual_seed(0)
    model = cnn(lib)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.from_numpy(array((64, 1, 28, 28), 4))
    y = lib.from_numpy(np.random.default_rng(7).integers(0, 10, 64))

    def step():
        optimizer.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    step()
    gc.collect()
    _return_free_memory()
    allocator = getattr(lib, "memory", None) if name == "glasstorch" else None
    if allocator is not None:
        allocator.reset_peak_memory_stats("cpu")
        live_before = allocator.memory_allocated("cpu")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                  # VmHWM := current RSS
    rss_before = _status_kib("VmHWM")
    for _ in range(steps):
        step()
    result = {"rss_growth": (_status_kib("VmHWM") - rss_before) * 1024}
    if allocator is not None:
        result["allocator_peak_growth"] = allocator.max_memory_allocated("cpu") - live_before
    return result


def _in_subprocess(name: str, steps: int) -> dict:
    done = subprocess.run([sys.executable, "-m", "bench.peak_memory", name, "--steps",
                           str(steps)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(f"{name} process failed: {lines[-1] if lines else done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(settings: Settings, workers=None) -> Row:
    """The memory row (its own fresh processes: `workers` is not used)."""
    steps = 2 if settings.quick else 5
    row = Row("memory", f"peak RSS growth over {steps} CNN training steps (fresh process each)",
              target=Target(1.2), unit="bytes")
    results = {name: _in_subprocess(name, steps) for name in ("glasstorch", "torch")}
    row.times = {name: r["rss_growth"] for name, r in results.items()}
    row.metric = row.ratio
    if "allocator_peak_growth" in results["glasstorch"]:
        row.extra = ("glasstorch allocator: peak live tensors "
                     f"+{results['glasstorch']['allocator_peak_growth'] / 2**20:.1f} MiB")
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", choices=("glasstorch", "torch"))
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(measure_here(args.library, args.steps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
