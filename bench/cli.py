"""`python -m bench`: glasstorch against PyTorch, every workload, each library timed in a
process of its own."""
from __future__ import annotations

import argparse
import contextlib
import sys
import time

from .harness import Settings, Target, Workload, WorkerPool, measure
from .report import markdown_section, text_table, write_section

WORKLOAD_HELP = "comma-separated workload names (see --list)"


def all_workloads(device: str = "cpu") -> list:
    if device == "cuda":
        from . import gpu
        return gpu.workloads()
    from . import (compiled, mingpt, peak_memory, recurrent, training, transformer_lm,
                   workloads)
    memory = Workload("memory", "peak RSS growth of the CNN training step, fresh process per "
                      "library", target=Target(1.2), run=peak_memory.run)
    return (workloads.OPERATORS + training.WORKLOADS + mingpt.WORKLOADS +
            recurrent.WORKLOADS + transformer_lm.WORKLOADS + compiled.WORKLOADS +
            workloads.LOADERS + [memory])


def select(names: str | None, device: str = "cpu") -> list:
    chosen = all_workloads(device)
    if not names:
        return chosen
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {w.name for w in chosen}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    return [w for w in chosen if w.name in wanted]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: the GPU suite (bench/gpu.py); without a usable GPU it says why "
                   "and exits 0")
    p.add_argument("--only", metavar="NAME[,NAME]", help=WORKLOAD_HELP)
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--rounds", type=int, help="timing rounds per library (default 7)")
    p.add_argument("--min-time", type=float,
                   help="seconds of calls per library per round (default 0.3)")
    p.add_argument("--threads", type=int,
                   help="threads for each library (default: one per core, os.cpu_count())")
    p.add_argument("--one-process", action="store_true",
                   help="time both libraries in this process (each library's threads and "
                   "memory traffic then slow the other's rounds) instead of one worker "
                   "process per library")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: 1 round, tiny rounds, fewer memory steps")
    p.add_argument("--write", action="store_true",
                   help="also write BENCHMARKS.md's generated 'Latest run' section")
    return p


def settings_from(args) -> Settings:
    s = Settings(rounds=1, min_time=0.01, warmup_time=0.01, quick=True, pause=0.0) \
        if args.quick else Settings()
    if args.rounds is not None:
        s.rounds = max(1, args.rounds)
    if args.min_time is not None:
        s.min_time = args.min_time
        s.warmup_time = min(s.warmup_time, args.min_time)
    return s


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.write and args.device == "cuda":
        parser.error("--write records CPU runs in BENCHMARKS.md; it does not take --device cuda")
    chosen = select(args.only, args.device)
    if args.list:
        for w in chosen:
            print(f"{w.name:<11} {w.description}")
        return 0
    if args.device == "cuda":
        from . import gpu
        return gpu.main(chosen, settings_from(args))
    import numpy as np
    import torch

    import glasstorch

    from . import machine
    start = time.perf_counter()
    machine.set_threads(torch, glasstorch, args.threads)
    settings = settings_from(args)
    info = machine.describe(torch, glasstorch)
    info["warning"] = machine.busy_warning()
    print(f"{info['cpu']}; load {info['load_start']}; threads: {info['threads']}")
    print(f"BLAS: {info['blas']}")
    if info["warning"]:
        print(info["warning"])
    print(f"{settings.rounds} round(s) x {settings.min_time:g} s per library, median per call\n",
          flush=True)
    modules = {"glasstorch": glasstorch, "torch": torch, "numpy": np}
    rows = []
    with contextlib.ExitStack() as stack:
        workers = None if args.one_process else stack.enter_context(WorkerPool(args.threads))
        for workload in chosen:
            row = measure(workload, modules, settings, workers)
            rows.append(row)
            print(text_table([row]).splitlines()[-1], flush=True)
    info["elapsed"] = time.perf_counter() - start
    info["load_end"] = machine.load_average()
    rounds = f"{settings.rounds} round{'s' if settings.rounds != 1 else ''}"
    where = ("both libraries in this process" if args.one_process else
             f"each library in a process of its own, {settings.pause:g} s between rounds")
    info["settings"] = (f"{rounds} of about {settings.min_time:g} s of calls per library, "
                        f"interleaved ({where}), median per call")
    print("\n" + text_table(rows))
    print(f"\nwhole run: {info['elapsed']:.0f} s; load {info['load_start']} at start, "
          f"{info['load_end']} at end")
    if args.write:
        write_section(markdown_section(rows, info, {w.name: w.description for w in chosen}))
        print("wrote the 'Latest run' section of BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
