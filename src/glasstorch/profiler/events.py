"""What a profile holds: FunctionEvents nested by time, their averages, PyTorch's table.

Times are microseconds, as in torch.autograd.profiler_util. An event's total is its
duration less the profiler's own work inside it (the dispatch trace's bookkeeping around
each kernel, about a microsecond and a half a layer, would otherwise show a view of three
layers at twice its cost), and its self time that less its children's totals;
`cpu_memory_usage` counts the bytes allocated minus freed
while it ran, its children included, and `self_cpu_memory_usage` leaves them out.
"""
from __future__ import annotations

import json
import math
import os
import threading
from bisect import bisect_right
from collections import defaultdict


class FunctionEvent:
    """One recorded region: an operator call ("aten::mm"), a backward node, a
    record_function block, an optimizer step."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, kind="cpu_op",
                 stack=None):
        self.id, self.thread = id, thread
        self.trace_name = name
        # the step markers ProfilerStep#0, #1, ... share one row in the tables (PyTorch's)
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.time_range = _Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.kind = kind
        self.stack = stack or []
        self.cpu_children: list = []
        self.cpu_parent = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.count = 1
        self.device_type = "CPU"
        self.is_async = False
        self.flops = 0
        self._overhead_within_us = 0.0     # the profiler's own work in it, children's too

    @property
    def key(self) -> str:
        return self.name

    @property
    def profiler_overhead_us(self) -> float:
        """The profiler's own work inside this event and not inside a child, left out of
        its times."""
        return self._overhead_within_us - sum(c._overhead_within_us for c in self.cpu_children)

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us() - self._overhead_within_us

    @property
    def self_cpu_time_total(self) -> float:
        return max(0.0, self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children))

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} "
                f"cpu_time_total={_format_time(self.cpu_time_total)} "
                f"self_cpu_time_total={_format_time(self.self_cpu_time_total)} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class _Interval:
    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start


class FunctionEventAvg:
    """The events of one key (name, and input shapes or stack when grouped by them),
    summed: `count` calls, total and self times, memory; `cpu_time` is the average."""

    def __init__(self, key, input_shapes=None, stack=None):
        self.key, self.input_shapes, self.stack = key, input_shapes, stack
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.flops = 0
        self.is_async = False
        self.device_type = "CPU"

    def add(self, event) -> "FunctionEventAvg":
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        self.flops += event.flops
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time={_format_time(self.cpu_time)}"
                f" input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of FunctionEvents (or of their averages) that can print PyTorch's table."""

    def __init__(self, *args, profile_memory: bool = False, with_flops: bool = False, **kw):
        super().__init__(*args, **kw)
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> "EventList":
        """One FunctionEventAvg per name (and input shapes, and first `group_by_stack_n`
        stack frames, when asked), in order of first appearance."""
        groups: dict = {}
        for e in self:
            key = [e.key]
            if group_by_input_shape:
                key.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                key += e.stack[:group_by_stack_n]
            key = tuple(key)
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shape else None,
                    e.stack[:group_by_stack_n] if group_by_stack_n > 0 else None)
            avg.add(e)
        return EventList(groups.values(), profile_memory=self._profile_memory,
                         with_flops=self._with_flops)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header=None, top_level_events_only: bool = False, time_unit=None) -> str:
        """PyTorch's text table, sorted by an attribute (`"cpu_time_total"`,
        `"self_cpu_memory_usage"`, ...) descending, at most `row_limit` rows (-1: all)."""
        return build_table(self, sort_by, row_limit, max_name_column_width,
                           max_shapes_column_width, max_src_column_width, header,
                           self._profile_memory, self._with_flops, top_level_events_only,
                           time_unit)

    def export_chrome_trace(self, path: str) -> None:
        write_chrome_trace(path, self, [])

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Folded stacks for flame graphs (flamegraph.pl, speedscope): one line per event
        recorded with a stack, its frames outermost first joined by ';', then the metric in
        whole microseconds. Needs profile(with_stack=True)."""
        if metric not in _STACK_METRICS:
            raise ValueError(f"metric should be one of: {list(_STACK_METRICS)}")
        unsafe = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for e in self:
                value = int(getattr(e, metric))
                if e.stack and value > 0:
                    frames = ";".join(frame.translate(unsafe) for frame in reversed(e.stack))
                    f.write(f"{frames} {value}\n")


_STACK_METRICS = ("self_cpu_time_total",)


# ---- FLOPs ------------------------------------------------------------------------------------

def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def estimate_flops(name: str, shapes) -> int:
    """Floating-point operations of one call from its input shapes, for the operators
    PyTorch's profiler counts (matrix products: 2*M*K*N; element-wise mul and add: one per
    element of the first input); 0 for the others."""
    if not shapes:
        return 0
    if name == "aten::mm" and len(shapes) >= 2 and len(shapes[0]) == 2:
        return 2 * shapes[0][0] * shapes[0][1] * shapes[1][-1]
    if name == "aten::addmm" and len(shapes) >= 3 and len(shapes[1]) == 2:
        return 2 * shapes[1][0] * shapes[1][1] * shapes[2][-1]
    if name == "aten::bmm" and len(shapes) >= 2 and len(shapes[0]) == 3:
        b, m, k = shapes[0]
        return 2 * b * m * k * shapes[1][-1]
    if name == "aten::baddbmm" and len(shapes) >= 3 and len(shapes[1]) == 3:
        b, m, k = shapes[1]
        return 2 * b * m * k * shapes[2][-1]
    if name in ("aten::mul", "aten::add"):
        return _prod(shapes[0])
    return 0


_FLOP_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _flops_scale(events) -> tuple:
    """(factor, header) for the FLOPs column: the unit of the smallest nonzero count."""
    smallest = min(e.flops for e in events if e.flops > 0)
    index = min(int(math.log10(smallest) // 3), len(_FLOP_UNITS) - 1)
    return 10.0 ** (-3 * index), f"Total {_FLOP_UNITS[index]}"


# ---- the table ----------------------------------------------------------------------------

def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us: float, total: float) -> str:
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


def _format_memory(nbytes: int) -> str:
    """The profiler table's memory cells (decimal-looking names for binary units, as
    PyTorch prints them: '1.50 KB' is 1536 bytes)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


_TIME_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0}


def _time_cell(us: float, unit) -> str:
    if unit is None:
        return _format_time(us)
    return f"{us / _TIME_UNITS[unit]:.3f}{unit}"


def _trim_path(path: str, width: int) -> str:
    """The end of a long source location, marked with '...' (the file and line matter)."""
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def build_table(events, sort_by, row_limit, max_name_width, max_shapes_width, max_src_width,
                header, profile_memory, with_flops, top_level_only, time_unit) -> str:
    if not events:
        return ""
    if time_unit is not None and time_unit not in _TIME_UNITS:
        raise ValueError(f"time_unit must be one of {sorted(_TIME_UNITS)}, got {time_unit!r}")
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    name_width = min(max(len(e.key) for e in events) + 4, max_name_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_width)
    stacks = [e.stack for e in events if e.stack]
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    with_flops = with_flops and any(e.flops > 0 for e in events)
    if with_flops:
        flops_factor, flops_header = _flops_scale(events)
        headers.append(flops_header)
        widths.append(12)
    aligns = [">"] * len(headers)
    if stacks:
        headers.append("Source Location")
        widths.append(min(max(len(f) for s in stacks for f in s) + 4, max_src_width))
        aligns.append("<")

    def row(cells):
        return "".join(f"{c:{a}{w}}  " for c, a, w in zip(cells, aligns, widths))

    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2
    total = sum(e.self_cpu_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row(headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and getattr(e, "cpu_parent", None) is not None:
            continue
        shown += 1
        name = e.key
        if len(name) >= max_name_width - 3:
            name = name[:max_name_width - 3] + "..."
        cells = [name, _format_share(e.self_cpu_time_total, total),
                 _time_cell(e.self_cpu_time_total, time_unit),
                 _format_share(e.cpu_time_total, total),
                 _time_cell(e.cpu_time_total, time_unit), _time_cell(e.cpu_time, time_unit)]
        if profile_memory:
            cells += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        cells.append(e.count)
        if has_shapes:
            cells.append(str(e.input_shapes)[:shapes_width])
        if with_flops:
            cells.append(f"{e.flops * flops_factor:8.3f}" if e.flops > 0 else "--")
        if stacks:
            stack = e.stack or []
            cells.append(_trim_path(stack[0], widths[-1]) if stack else "")
        out.append(row(cells))
        if stacks:            # the further frames below, then a blank row (PyTorch's layout)
            for frame in (e.stack or [])[1:]:
                out.append(row([""] * (len(headers) - 1) + [_trim_path(frame, widths[-1])]))
            out.append(row([""] * len(headers)))
    out.append(sep)
    out.append(f"Self CPU time total: {_time_cell(total, time_unit)}")
    return "\n".join(out) + "\n"


# ---- building events from the raw records ---------------------------------------------------

def build_events(records, samples, base_us: float, t0: float, bookkeeping=()) -> list:
    """FunctionEvents from raw records (name, start, end, tid, shapes, kind, stack), memory
    samples (time, signed bytes, tid) and the profiler's bookkeeping (time, seconds) on the
    recording thread, all on perf_counter's clock; nested per thread by time: an event is
    another's child when its interval lies inside the other's."""
    events = []
    order = sorted(range(len(records)), key=lambda i: (records[i][3], records[i][1],
                                                         -records[i][2]))
    stacks: dict = defaultdict(list)
    for n, i in enumerate(order):
        name, start, end, tid, shapes, kind, stack = records[i]
        event = FunctionEvent(n + 1, name, tid, base_us + (start - t0) * 1e6,
                              base_us + (end - t0) * 1e6, shapes, kind, stack)
        event._start, event._end = start, end
        open_ = stacks[tid]
        while open_ and open_[-1]._end < end:
            open_.pop()
        if open_:
            event.cpu_parent = open_[-1]
            open_[-1].cpu_children.append(event)
        open_.append(event)
        events.append(event)
    timeline = _Timeline(events)
    _attribute_memory(events, timeline, samples, base_us, t0)
    _attribute_bookkeeping(timeline, bookkeeping)
    events.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
    return events


class _Timeline:
    """Each thread's events in start order, to find the innermost one running at a time."""

    def __init__(self, events):
        self.by_thread = defaultdict(list)
        for e in events:               # in start order per thread (build_events' order)
            self.by_thread[e.thread].append(e)
        self.starts = {tid: [e._start for e in evs] for tid, evs in self.by_thread.items()}

    def innermost(self, tid, t):
        evs = self.by_thread.get(tid, [])
        i = bisect_right(self.starts.get(tid, []), t) - 1
        owner = evs[i] if i >= 0 else None
        while owner is not None and owner._end < t:    # the last one started has ended:
            owner = owner.cpu_parent                    # its enclosing one may still run
        return owner


def _attribute_memory(events, timeline, samples, base_us, t0) -> None:
    """Each sample goes to the innermost event of its thread running at its time; one
    outside every event becomes a '[memory]' event of its own, as PyTorch reports it."""
    for t, nbytes, tid in samples:
        owner = timeline.innermost(tid, t)
        if owner is None:
            ts = base_us + (t - t0) * 1e6
            mem = FunctionEvent(0, "[memory]", tid, ts, ts, None, "memory")
            mem.cpu_memory_usage = mem.self_cpu_memory_usage = nbytes
            mem._start = mem._end = t
            events.append(mem)
            continue
        owner.self_cpu_memory_usage += nbytes
        while owner is not None:
            owner.cpu_memory_usage += nbytes
            owner = owner.cpu_parent


def _attribute_bookkeeping(timeline, bookkeeping) -> None:
    """The profiler's work at each time goes to the innermost event of this thread (the
    dispatch trace's) running then: its self time and its and its parents' totals leave
    it out."""
    tid = threading.get_ident()
    for t, seconds in bookkeeping:
        owner = timeline.innermost(tid, t)
        while owner is not None:
            owner._overhead_within_us += seconds * 1e6
            owner = owner.cpu_parent


# ---- Chrome trace ---------------------------------------------------------------------------

def write_chrome_trace(path: str, events, samples_us) -> None:
    """Chrome's trace-event JSON (chrome://tracing, Perfetto): a complete ("X") event per
    FunctionEvent with ts/dur in microseconds, memory samples as instant events."""
    pid = os.getpid()
    trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
              "args": {"name": "python"}}]
    for tid in sorted({e.thread for e in events}):
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                      "args": {"name": "main thread" if tid == threading.main_thread().ident
                               else f"thread {tid}"}})
    for e in events:
        if e.kind == "memory":
            continue
        args = {"External id": e.id}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        trace.append({"ph": "X", "cat": e.kind, "name": e.trace_name, "pid": pid, "tid": e.thread,
                      "ts": e.time_range.start, "dur": e.time_range.elapsed_us(), "args": args})
    for ts, nbytes, total, tid in samples_us:
        trace.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                      "pid": pid, "tid": tid, "ts": ts,
                      "args": {"Device Type": 0, "Device Id": -1, "Bytes": nbytes,
                               "Total Allocated": total}})
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": trace,
                   "traceName": os.path.abspath(path)}, f)
