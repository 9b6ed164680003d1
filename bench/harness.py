"""Checking and timing one workload in several libraries, interleaved, in this process.

A workload's `setup(lib)` prepares a `Case` per library (glasstorch, torch, and for matrix
products NumPy). Before anything is timed, each case's first call is compared against
torch's (values, dtypes, shapes, strides); a library that raises or disagrees is reported as
an error instead of a time. Timing: a warm-up that also calibrates how many calls fill
`min_time` seconds, then rounds A B A B ..., each timing that many calls; the reported time
is the median per-call time over the rounds, so a noisy neighbour that slows one round
slows both libraries' neighbouring rounds rather than one library's whole measurement.
On a GPU, calls only queue work: a case's `sync` (the library's cuda.synchronize) is called
before and after each timed loop, so the time is that of the work done, not of queueing it.
"""
from __future__ import annotations

import gc
import math
import statistics
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
    (peak memory) and returns its Row."""
    name: str
    description: str
    setup: Optional[Callable] = None
    target: Optional[Target] = None
    libraries: tuple = ("glasstorch", "torch")
    rtol: float = 1e-5
    atol: float | Callable[[int, int], float] = 1e-6   # or atol(output index, output count)
    metric: Optional[Callable[[dict], float]] = None
    extra: Optional[Callable[[dict], str]] = None
    run: Optional[Callable[[Settings], Row]] = None


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


def measure(workload: Workload, modules: dict, settings: Settings) -> Row:
    """Set up, check and time `workload`; errors become the row's `error`."""
    if workload.run is not None:
        try:
            return workload.run(settings)
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
        row.times = time_interleaved({lib: c.call for lib, c in cases.items()}, settings,
                                     {lib: c.sync for lib, c in cases.items()})
    except Exception as e:            # a call that worked once can still fail later
        row.error = f"error: while timing: {_short(e)}"
        return row
    row.metric = (workload.metric or (lambda t: t["glasstorch"] / t["torch"]))(row.times)
    if workload.extra is not None:
        row.extra = workload.extra(row.times)
    return row
