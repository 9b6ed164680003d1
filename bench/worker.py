"""One library's timing process: `python -m bench.worker LIBRARY --threads N`.

A user runs one library per process. Timing both in one process flatters whichever runs
second less: glasstorch's OpenBLAS threads keep spinning for about 0.1 s after a matrix
product and its memory traffic evicts the other's caches, so a torch round that follows a
glasstorch round ran 30-100% slower than torch alone (BENCHMARKS.md, session 12). So the
parent (bench/harness.py, `WorkerPool`) checks results in its own process and times each
library in a worker of its own, which imports that library only.

Protocol: one JSON request per line on stdin, one JSON answer per line on the worker's
original stdout (anything a workload prints goes to stderr instead):

    {"setup": NAME}      -> {"ok": true, "foreign": [other libraries imported]}
    {"calibrate": [min_time, warmup_time]} -> {"number": calls per round}
    {"time": N}          -> {"seconds": seconds per call over N calls}

and {"error": text} when a request fails.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys

from .harness import Settings, _calibrate, _short, _timed

LIBRARIES = ("glasstorch", "torch", "numpy", "torch.compile")
"""What a worker can time: a library, or a variant of one (its module: the name before '.')."""


def _foreign(own: str) -> list:
    """The other libraries this process has imported: a worker that imported one (a setup
    that built its reference in torch, say) no longer measures its library alone."""
    return [name for name in ("glasstorch", "torch") if name != own and name in sys.modules]


class Worker:
    def __init__(self, label: str, threads: int):
        self.label, self.library = label, label.split(".")[0]
        self.module = importlib.import_module(self.library)
        if threads and hasattr(self.module, "set_num_threads"):
            self.module.set_num_threads(threads)
        self.case = None

    def setup(self, name: str) -> dict:
        from .cli import select
        gc.unfreeze()
        self.case = None              # the previous workload's tensors go before the next's
        gc.collect()
        (workload,) = select(name)
        if workload.worker_setup is not None:
            self.case = workload.worker_setup(self.label, self.module)
        else:
            self.case = workload.setup(self.module)
        self.case.call()              # the first call (caches, lazy state) is never timed
        gc.collect()
        gc.freeze()                   # the collections before each round visit new objects only
        return {"ok": True, "foreign": _foreign(self.library)}

    def calibrate(self, min_time: float, warmup_time: float) -> dict:
        settings = Settings(min_time=min_time, warmup_time=warmup_time)
        return {"number": _calibrate(self.case.call, settings, self.case.sync)}

    def time(self, number: int) -> dict:
        gc.collect()
        return {"seconds": _timed(self.case.call, number, self.case.sync)}

    def answer(self, request: dict) -> dict:
        try:
            if "setup" in request:
                return self.setup(request["setup"])
            if self.case is None:
                return {"error": "no workload set up"}
            if "calibrate" in request:
                return self.calibrate(*request["calibrate"])
            if "time" in request:
                return self.time(int(request["time"]))
            return {"error": f"unknown request {sorted(request)}"}
        except Exception as e:        # reported to the parent, which shows it in the row
            return {"error": _short(e)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    parser.add_argument("label", choices=LIBRARIES)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(argv)
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())   # stray prints cannot break the protocol
    worker = Worker(args.label, args.threads)
    for line in sys.stdin:
        answers.write(json.dumps(worker.answer(json.loads(line))) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
