"""Checking and timing one workload in several libraries, interleaved.

A workload's `setup(lib)` prepares a `Case` per library (glasstorch, torch, and for matrix
products NumPy). Before anything is timed, each case's first call is compared against
torch's (values, dtypes, shapes, strides) in this process; a library that raises or
disagrees is reported as an error instead of a time. Timing: a warm-up that also calibrates
how many calls fill `min_time` seconds, then rounds A B A B ..., each timing that many
calls; the reported time is the median per-call time over the rounds, so a noisy neighbour
that slows one round slows both libraries' neighbouring rounds rather than one library's
whole measurement. With a `WorkerPool` each library is timed in a process of its own
(bench/worker.py), as a user runs it, with a pause between rounds so that one library's
spinning threads have stopped before the other's round; without one, in this process.
On a GPU, calls only queue work: a case's `sync` (the library's cuda.synchronize) is called
before and after each timed loop, so the time is that of the work done, not of queueing it.
"""
from __future__ import annotations

import gc
import json
import math
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np


def _no_sync() -> None:
    """A CPU library's calls have finished when they return."""


@dataclass
class Case:
    """One library's prepared workload: `call()` is what is timed; `observe(out)` turns the
    first call's output into the values compared across libraries."""
    call: Callable[[], object]
    observe: Callable[[object], Sequence] = lambda out: (out,)
    sync: Callable[[], None] = _no_sync


@dataclass(frozen=True)
class Target:
    """`metric <= bound` (kind "max") or `metric >= bound` (kind "min"); `label` names the
    metric in the table."""
    bound: float
    kind: str = "max"
    label: str = "ratio"

    def met(self, value: float) -> bool:
        return value <= self.bound if self.kind == "max" else value >= self.bound

    def __str__(self) -> str:
        return f"{self.label} {'<=' if self.kind == 'max' else '>='} {self.bound:g}"


@dataclass
class Settings:
    rounds: int = 7
    min_time: float = 0.3        # seconds of calls per library per round
    warmup_time: float = 0.2     # at most this long warming up (and at least one call)
    quick: bool = False          # smoke runs: shorter special workloads (memory, loaders)
    pause: float = 0.25          # seconds between rounds in worker processes (BLAS spin ends)


@dataclass
class Row:
    """One line of the results table. `times` maps a library to its median seconds per call
    (or, for memory, its peak bytes); `error` replaces the measurement when set."""
    name: str
    description: str
    times: dict = field(default_factory=dict)
    target: Optional[Target] = None
    metric: Optional[float] = None
    extra: str = ""
    error: str = ""
    unit: str = "s"              # "s" (per call), "bytes" or "fraction" (a rate, 0 to 1)

    @property
    def ratio(self) -> Optional[float]:
        ours, theirs = self.times.get("glasstorch"), self.times.get("torch")
        return ours / theirs if ours and theirs else None

    @property
    def met(self) -> Optional[bool]:
        if self.error or self.target is None or self.metric is None:
            return None
        return self.target.met(self.metric)


@dataclass
class Workload:
    """`setup(lib)` -> Case for each library in `libraries`; `metric(times)` is the value
    held against `target` (default: glasstorch time / torch time); `extra(times)` adds a
    note to the row (GFLOP/s, samples/s). A workload with `run` measures itself instead
    (peak memory, the compiled workloads) and returns its Row: `run(settings, workers)`,
    `workers` a WorkerPool or None. `worker_setup(label, module)`, where given, is what a
    worker calls instead of `setup(module)`: labels beyond the library names ("torch.compile")
    time variants of one library."""
    name: str
    description: str
    setup: Optional[Callable] = None
    target: Optional[Target] = None
    libraries: tuple = ("glasstorch", "torch")
    rtol: float = 1e-5
    atol: float | Callable[[int, int], float] = 1e-6   # or atol(output index, output count)
    metric: Optional[Callable[[dict], float]] = None
    extra: Optional[Callable[[dict], str]] = None
    run: Optional[Callable[[Settings, Optional["WorkerPool"]], Row]] = None
    worker_setup: Optional[Callable[[str, object], Case]] = None


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    text = f"{type(e).__name__}: {text}" if text else type(e).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def to_numpy(value) -> np.ndarray:
    """A tensor of either library (on any device), an ndarray or a Python number, as an
    ndarray."""
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def compare(ours: Sequence, reference: Sequence, rtol: float, atol) -> str:
    """'' when `ours` matches `reference` output by output (dtype, shape, tensor strides and
    values to within rtol and atol, a number or atol(index, count)), else a one-line
    description of the first difference."""
    if len(ours) != len(reference):
        return f"{len(ours)} outputs, expected {len(reference)}"
    for i, (a, b) in enumerate(zip(ours, reference)):
        tol = atol(i, len(reference)) if callable(atol) else atol
        x, y = to_numpy(a), to_numpy(b)
        where = f"output {i}" if len(reference) > 1 else "output"
        if x.shape != y.shape:
            return f"{where}: shape {x.shape}, expected {y.shape}"
        if x.dtype != y.dtype:
            return f"{where}: dtype {x.dtype}, expected {y.dtype}"
        if hasattr(a, "stride") and hasattr(b, "stride") and tuple(a.stride()) != tuple(b.stride()):
            return f"{where}: strides {tuple(a.stride())}, expected {tuple(b.stride())}"
        if not np.allclose(x, y, rtol=rtol, atol=tol, equal_nan=True):
            diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
            return (f"{where}: values differ (max abs diff {np.nanmax(diff):.3g}, "
                    f"rtol {rtol:g}, atol {tol:g})")
    return ""


def _calibrate(call: Callable, settings: Settings, sync: Callable = _no_sync) -> int:
    """Warm up and return how many calls fill about `min_time` seconds (at least one)."""
    sync()
    count, start = 0, time.perf_counter()
    while True:
        call()
        count += 1
        if time.perf_counter() - start >= min(settings.warmup_time, settings.min_time):
            break
    sync()                            # work still queued on a device belongs to these calls
    elapsed = time.perf_counter() - start
    return max(1, math.ceil(settings.min_time / (elapsed / count)))


def _timed(call: Callable, number: int, sync: Callable = _no_sync) -> float:
    sync()
    start = time.perf_counter()
    for _ in range(number):
        call()
    sync()
    return (time.perf_counter() - start) / number


def time_interleaved(calls: dict, settings: Settings, syncs: Optional[dict] = None) -> dict:
    """{library: median seconds per call} over `settings.rounds` interleaved rounds;
    `syncs` maps a library to the function that waits for its queued device work."""
    syncs = {lib: (syncs or {}).get(lib, _no_sync) for lib in calls}
    numbers = {lib: _calibrate(call, settings, syncs[lib]) for lib, call in calls.items()}
    samples = {lib: [] for lib in calls}
    gc.collect()
    gc.freeze()                       # the collections below then visit only new objects
    try:
        for _ in range(settings.rounds):
            for lib, call in calls.items():
                gc.collect()          # one library's garbage is not collected on the other's time
                samples[lib].append(_timed(call, numbers[lib], syncs[lib]))
    finally:
        gc.unfreeze()
    return {lib: statistics.median(s) for lib, s in samples.items()}


STATE_DIR_ENV = "BENCH_STATE_DIR"
"""Where the seeded reference weights are kept (bench/training.py, `reference_state`), so
that a worker timing glasstorch reads them instead of importing torch to make them."""

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class WorkerPool:
    """One timing process per library (bench/worker.py), started when first needed and
    reused for every workload; `time(name, libraries, settings)` is `time_interleaved` with
    each library in its own process. Use it as a context manager: leaving it ends the
    workers and removes the reference weights it kept."""

    def __init__(self, threads: Optional[int] = None, timeout: float = 900.0):
        self.threads = threads or os.cpu_count() or 1
        self.timeout = timeout        # seconds a worker may take over one request
        self._workers = {}            # library -> (Popen, stderr file)
        self._state_dir = tempfile.mkdtemp(prefix="bench-states-")
        self._old_state_dir = os.environ.get(STATE_DIR_ENV)
        os.environ[STATE_DIR_ENV] = self._state_dir

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for library in list(self._workers):
            self._stop(library)
        if self._old_state_dir is None:
            os.environ.pop(STATE_DIR_ENV, None)
        else:
            os.environ[STATE_DIR_ENV] = self._old_state_dir
        shutil.rmtree(self._state_dir, ignore_errors=True)

    def _start(self, library: str):
        import glasstorch
        source = os.path.dirname(os.path.dirname(os.path.abspath(glasstorch.__file__)))
        path = [source, ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                 if p]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        errors = tempfile.TemporaryFile(mode="w+")
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", library, "--threads", str(self.threads)],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
            text=True)
        self._workers[library] = (process, errors)
        return process

    def _stop(self, library: str) -> None:
        process, errors = self._workers.pop(library)
        if process.poll() is None:
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        errors.close()

    def request(self, library: str, request: dict) -> dict:
        """Send `request` to `library`'s worker and return its answer; a worker that
        answers with an error raises RuntimeError, one that died, or gave no answer within
        `timeout` seconds (and was killed), is restarted next time."""
        process = self._workers[library][0] if library in self._workers else None
        if process is None or process.poll() is not None:
            process = self._start(library)
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        if not select.select([process.stdout], [], [], self.timeout)[0]:
            process.kill()
            process.wait()
            self._stop(library)
            raise RuntimeError(f"the {library} worker gave no answer to a "
                               f"{'/'.join(request)} request within {self.timeout:g} s")
        line = process.stdout.readline()
        if not line:
            errors = self._workers[library][1]
            errors.seek(0)
            tail = errors.read().strip().splitlines()[-1:] or ["no output"]
            code = process.wait()
            self._stop(library)
            raise RuntimeError(f"the {library} worker exited with code {code}: {tail[0]}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"{library} worker: {answer['error']}")
        return answer

    def time(self, name: str, libraries, settings: Settings) -> dict:
        """{library: median seconds per call} of workload `name` (as `cli.select` finds
        it), each library (or label, as "torch.compile") timed in its worker, rounds
        interleaved."""
        for library in libraries:
            foreign = self.request(library, {"setup": name})["foreign"]
            if foreign:
                self._stop(library)   # the next workload gets a clean worker
                raise RuntimeError(f"the {library} worker imported {', '.join(foreign)} while "
                                   f"setting up {name}: it would not be timed alone")
        numbers = {lib: self.request(lib, {"calibrate": [settings.min_time,
                                                          settings.warmup_time]})["number"]
                   for lib in libraries}
        samples = {lib: [] for lib in libraries}
        for _ in range(settings.rounds):
            for lib in libraries:
                time.sleep(settings.pause)
                samples[lib].append(self.request(lib, {"time": numbers[lib]})["seconds"])
        return {lib: statistics.median(s) for lib, s in samples.items()}


def measure(workload: Workload, modules: dict, settings: Settings,
            workers: Optional[WorkerPool] = None) -> Row:
    """Set up, check and time `workload` (in `workers`' processes where given, else in
    this one); errors become the row's `error`."""
    if workload.run is not None:
        try:
            return workload.run(settings, workers)
        except Exception as e:        # a broken measurement is reported, the suite goes on
            return Row(workload.name, workload.description, target=workload.target,
                       error=f"error: {_short(e)}")
    row = Row(workload.name, workload.description, target=workload.target)
    cases, observed, errors = {}, {}, []
    for lib in workload.libraries:
        try:
            case = workload.setup(modules[lib])
            observed[lib] = case.observe(case.call())
            cases[lib] = case
        except Exception as e:        # a missing op or a crash in one library
            errors.append(f"{lib}: {_short(e)}")
    if "torch" in observed:
        for lib in list(cases):
            if lib != "torch":
                problem = compare(observed[lib], observed["torch"], workload.rtol, workload.atol)
                if problem:
                    errors.append(f"{lib} differs from torch: {problem}")
                    del cases[lib]
    elif not errors:
        errors.append("torch: no reference result")
    if errors:
        row.error = "error: " + "; ".join(errors)
        return row
    observed.clear()                  # the check's outputs need not stay alive while timing
    try:
        if workers is not None:
            cases.clear()             # the workers build their own; these need not stay alive
            row.times = workers.time(workload.name, list(workload.libraries), settings)
        else:
            row.times = time_interleaved({lib: c.call for lib, c in cases.items()}, settings,
                                         {lib: c.sync for lib, c in cases.items()})
    except Exception as e:            # a call that worked once can still fail later
        row.error = f"error: while timing: {_short(e)}"
        return row
    row.metric = (workload.metric or (lambda t: t["glasstorch"] / t["torch"]))(row.times)
    if workload.extra is not None:
        row.extra = workload.extra(row.times)
    return row
