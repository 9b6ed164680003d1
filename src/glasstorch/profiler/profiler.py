"""torch.profiler.profile: record the dispatcher's calls, labelled regions, backward nodes
and optimizer steps of a block, then show them as PyTorch does.

Operator calls come from a dispatch trace (dispatch/trace.py) that the profile keeps open
while it records; everything else comes from spans (profiler/_recorder.py). Both use
perf_counter's clock, so the profile nests them by time when recording stops. Only the
thread that starts recording has its operator calls recorded; spans come from every thread.
"""
from __future__ import annotations

import enum
import os
import socket
import threading
import time
import warnings
from time import perf_counter

from ..dispatch.trace import DispatchTrace
from ..memory.cpu_allocator import cpu_allocator
from . import _recorder
from .events import EventList, build_events, estimate_flops, write_chrome_trace


class ProfilerActivity(enum.Enum):
    """What to profile. glasstorch records host-side (CPU) activity; with CUDA the GPU
    work shows as the host calls that launched it."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities() -> set:
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA}


def kineto_available() -> bool:
    """Whether PyTorch's Kineto tracer is here: never (glasstorch records in Python)."""
    return False


class ProfilerAction(enum.Enum):
    """What a profile does during a step, as a schedule decides."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """The step -> ProfilerAction function of torch.profiler.schedule: skip `skip_first`
    steps, then cycle through `wait` idle, `warmup` and `active` recorded steps, `repeat`
    times (0: until the profile ends); the last active step of a cycle saves the trace."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup="
            f"{warmup} (need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step >= repeat * cycle:
            return ProfilerAction.NONE
        within = step % cycle
        if within < wait:
            return ProfilerAction.NONE
        if within < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if within < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class _MemoryObserver:
    """Samples (time, signed bytes, thread) of every CPU allocation and free while a
    profile records, passing each on to the observer that was there before (memory
    history)."""

    def __init__(self, samples: list):
        self.samples = samples
        self.previous = None

    def __call__(self, event, nbytes, address):
        self.samples.append((perf_counter(), nbytes if event == "alloc" else -nbytes,
                             threading.get_ident()))
        if self.previous is not None:
            self.previous(event, nbytes, address)

    def install(self):
        self.previous = cpu_allocator.observer
        cpu_allocator.observer = self

    def remove(self):
        if cpu_allocator.observer is self:
            cpu_allocator.observer = self.previous


class _Session:
    """One recording window: the dispatch trace, the spans and the memory samples."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool,
                 with_flops: bool):
        # FLOPs are computed from the input shapes, which are shown only when asked for
        self.record_shapes, self.with_flops = record_shapes, with_flops
        self.trace = DispatchTrace(record_shapes=record_shapes or with_flops,
                                   record_stack=with_stack)
        self.spans: list = []
        self.samples: list = []
        self.memory = _MemoryObserver(self.samples) if profile_memory else None

    def start(self):
        self.base_us = time.time_ns() / 1e3
        self.t0 = perf_counter()
        self.trace.__enter__()
        _recorder.start_collecting(self.spans)
        if self.memory is not None:
            self.memory.install()

    def stop(self):
        if self.memory is not None:
            self.memory.remove()
        _recorder.stop_collecting(self.spans)
        self.trace.__exit__(None, None, None)

    def events(self) -> list:
        tid = threading.get_ident()
        records = [(_short_name(e.op), e.start, e.start + e.total, tid, e.shapes, "cpu_op",
                    e.stack) for e in self.trace.events if e.layers]
        records += [(s.name, s.start, s.end, s.tid, None, s.kind, None) for s in self.spans]
        events = build_events(records, self.samples, self.base_us, self.t0,
                              self.trace.bookkeeping)
        if self.with_flops:
            for e in events:
                e.flops = estimate_flops(e.name, e.input_shapes)
        if not self.record_shapes:
            for e in events:
                e.input_shapes = []
        return events

    def memory_samples_us(self) -> list:
        """(ts µs, bytes, total allocated so far in the window, thread) for the trace."""
        total, out = 0, []
        for t, nbytes, tid in self.samples:
            total += nbytes
            out.append((self.base_us + (t - self.t0) * 1e6, nbytes, total, tid))
        return out


def _short_name(op_name: str) -> str:
    """'aten::add.Tensor' -> 'aten::add': the profiler names an op without its overload."""
    ns, _, rest = op_name.partition("::")
    return f"{ns}::{rest.split('.', 1)[0]}" if rest else op_name


class profile:
    """torch.profiler.profile: a context manager that records the block (or, with a
    `schedule`, the steps it marks with `step()`) and hands the result to `on_trace_ready`.

        with profile(record_shapes=True) as prof:
            model(x).sum().backward()
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

    `with_stack` keeps the user's frames of each operator call (`FunctionEvent.stack`, and
    `key_averages(group_by_stack_n=n)` groups by the first n of them); `with_flops` counts
    the FLOPs of matrix products and element-wise mul/add from their input shapes.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False,
                 use_cuda=None, custom_trace_id_callback=None, post_processing_timeout_s=None):
        self.activities = set(activities) if activities else supported_activities()
        for a in self.activities:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"activities must be ProfilerActivity values, got {a!r}")
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops, self.with_modules = with_stack, with_flops, with_modules
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._session = None
        self._events = None
        self._samples_us: list = []
        self._step_label = None

    # ---- life cycle ------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self) -> None:
        self._close_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark the start of the next step: the schedule decides what happens now."""
        self._close_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._open_step()

    def _open_step(self):
        if self.record_steps:
            self._step_label = _recorder.record_function(f"ProfilerStep#{self.step_num}")
            self._step_label.__enter__()

    def _close_step(self):
        if self._step_label is not None:
            self._step_label.__exit__(None, None, None)
            self._step_label = None

    def _transit(self, previous, current) -> None:
        """Start, stop and save as PyTorch's profiler does for each pair of actions."""
        was = previous in _RECORDING
        now = current in _RECORDING
        if previous is ProfilerAction.RECORD_AND_SAVE and current is not None:
            self._stop_trace()
            self._ready()
            was = False
        elif was and current is None:
            self._stop_trace()
            self._ready()
            return
        elif was and not now:
            warnings.warn(f"Incorrect schedule: {previous.name} followed by {current.name}")
            self._stop_trace()
            return
        if previous is ProfilerAction.WARMUP and current is ProfilerAction.NONE:
            warnings.warn("Incorrect schedule: WARMUP followed by NONE")
        if now and not was:
            self._start_trace()

    def _start_trace(self):
        self._session = _Session(self.record_shapes, self.profile_memory, self.with_stack,
                                 self.with_flops)
        self._session.start()

    def _stop_trace(self):
        session, self._session = self._session, None
        if session is None:
            return
        session.stop()
        self._events = EventList(session.events(), profile_memory=self.profile_memory,
                                 with_flops=self.with_flops)
        self._samples_us = session.memory_samples_us()

    def _ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ---- results ---------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every recorded event of the last finished window, in start order."""
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running: there are no events yet "
                               "(read them after the `with` block or in on_trace_ready)")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the trace as Chrome trace-event JSON (Perfetto, chrome://tracing)."""
        write_chrome_trace(path, self.events(), self._samples_us)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Folded stacks for flame graphs (needs with_stack=True)."""
        self.events().export_stacks(path, metric)

    def export_memory_timeline(self, path: str, device=None) -> None:
        raise NotImplementedError("export_memory_timeline is not supported by glasstorch's "
                                  "profiler; use glasstorch.memory._record_memory_history")

    def add_metadata(self, key: str, value: str) -> None:
        """Accepted for compatibility; the trace file carries no user metadata yet."""

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):
    """An on_trace_ready that writes each trace to `dir_name` as
    `<worker>.<time in ms>.pt.trace.json[.gz]`, where TensorBoard's profiler plugin looks."""

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(dir_name, name)
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip
            import shutil
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)

    return handler
