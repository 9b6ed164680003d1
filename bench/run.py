"""glasstorch and PyTorch side by side, in one process: per-call time of a few ops.

    python bench/run.py              # a table
    python bench/run.py --markdown   # the section for BENCHMARKS.md

Each case is timed with timeit: `--repeat` rounds, each round timing glasstorch and then
torch for about `--min-time` seconds (interleaved, so a noisy neighbour slows both), and the
median per-call time of the rounds is reported with the ratio glasstorch / torch. Both
libraries run with their default thread settings (unless `--torch-threads` is given); the
thread counts are printed.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import timeit

import numpy as np
import torch

import glasstorch
from glasstorch import cli


def _add(lib, n):
    a, b = lib.ones(n, dtype=lib.float32), lib.ones(n, dtype=lib.float32)
    return "lib.add(a, b)", {"lib": lib, "a": a, "b": b}


def _add_inplace(lib, n):
    a, b = lib.ones(n, dtype=lib.float32), lib.ones(n, dtype=lib.float32)
    return "a.add_(b)", {"lib": lib, "a": a, "b": b}


def _forward_backward(lib, n):
    x = lib.ones(n, dtype=lib.float32, requires_grad=True)

    def step():
        x.grad = None
        y = (x * 2 + 1).sum()
        y.backward()
        return x.grad
    return "step()", {"step": step}


CASES = [
    ("add, 16 float32", lambda lib: _add(lib, 16)),
    ("add, 1000x1000 float32", lambda lib: _add(lib, (1000, 1000))),
    ("add_ (in-place), 16 float32", lambda lib: _add_inplace(lib, 16)),
    ("(x*2+1).sum().backward(), 16 float32", lambda lib: _forward_backward(lib, 16)),
]


def _per_call(stmt: str, env: dict, min_time: float) -> tuple:
    """(timer, number of calls per measurement) giving about `min_time` seconds."""
    timer = timeit.Timer(stmt, globals=env)
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= min_time:
            return timer, number
        number = max(number * 2, int(number * min_time / max(elapsed, 1e-9)))


def _check_same(case, results) -> None:
    """Both libraries compute the same values before either is timed."""
    ours, theirs = (np.asarray(r.numpy()) for r in results)
    if not np.array_equal(ours, theirs):
        raise SystemExit(f"{case}: glasstorch and torch disagree; not timing it")


def measure(repeat: int, min_time: float) -> list:
    rows = []
    for name, make in CASES:
        setups = [make(glasstorch), make(torch)]
        _check_same(name, [eval(stmt, dict(env)) for stmt, env in setups])
        timers = [_per_call(stmt, env, min_time) for stmt, env in setups]
        samples = ([], [])
        for _ in range(repeat):
            for (timer, number), out in zip(timers, samples):
                out.append(timer.timeit(number) / number)
        ours, theirs = statistics.median(samples[0]), statistics.median(samples[1])
        rows.append((name, ours, theirs, ours / theirs))
    return rows


def _cpu_model() -> str:
    if shutil.which("lscpu"):
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    return cli.collect_info()["cpu"]


def machine() -> dict:
    info = cli.collect_info()
    return {
        "date": datetime.date.today().isoformat(),
        "cpu": f"{_cpu_model()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "glasstorch": f"{glasstorch.__version__} (NumPy {np.__version__}, {info['blas']}, "
                      f"BLAS threads: {info['blas_threads']})",
        "torch": f"{torch.__version__} (threads: {torch.get_num_threads()}, "
                 f"interop threads: {torch.get_num_interop_threads()})",
    }


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def text_table(rows, env) -> str:
    lines = [f"{k}: {v}" for k, v in env.items()] + [""]
    width = max(len(r[0]) for r in rows)
    lines.append(f"{'case'.ljust(width)}  {'glasstorch':>11}  {'torch':>11}  {'ratio':>7}")
    for name, ours, theirs, ratio in rows:
        lines.append(f"{name.ljust(width)}  {_time(ours):>11}  {_time(theirs):>11}  "
                     f"{ratio:6.1f}x")
    return "\n".join(lines)


def markdown_table(rows, env, repeat: int) -> str:
    lines = [f"- Date: {env['date']}", f"- Machine: {env['cpu']}",
             f"- Python {env['python']}", f"- glasstorch {env['glasstorch']}",
             f"- PyTorch {env['torch']}",
             f"- Median of {repeat} rounds of timeit per case; ratio = glasstorch / torch "
             "(lower is better for glasstorch).", "",
             "| case | glasstorch | torch | ratio |", "|---|---:|---:|---:|"]
    for name, ours, theirs, ratio in rows:
        lines.append(f"| {name} | {_time(ours)} | {_time(theirs)} | {ratio:.1f}x |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a BENCHMARKS.md table")
    parser.add_argument("--repeat", type=int, default=9, help="timing rounds per case")
    parser.add_argument("--min-time", type=float, default=0.1,
                        help="seconds each measurement runs for")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads(N) first (default: torch's own choice)")
    args = parser.parse_args(argv)
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    rows = measure(args.repeat, args.min_time)
    env = machine()
    print(markdown_table(rows, env, args.repeat) if args.markdown else text_table(rows, env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
