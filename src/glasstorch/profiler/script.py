"""The `glasstorch profile` and `glasstorch memory` commands: run a script, then say where
its time went (the profiler's table) or how much memory it needed (peak and summary)."""
from __future__ import annotations

import os
import runpy
import sys
import traceback

from .. import memory
from ..memory.errors import format_size
from .profiler import profile


def run_script(path: str, args: list) -> int:
    """Run `path` as __main__ with `args` as its sys.argv[1:]; its exit status (a crash
    prints its traceback and gives 1)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
        return 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def profile_script(path: str, args: list, *, trace: str | None = None,
                   sort_by: str = "cpu_time_total", row_limit: int = 20,
                   record_shapes: bool = False, profile_memory: bool = False) -> int:
    """Profile the whole script; print key_averages().table(); write a Chrome trace if
    asked. Returns the script's exit status."""
    with profile(record_shapes=record_shapes, profile_memory=profile_memory) as prof:
        status = run_script(path, args)
    averages = prof.key_averages(group_by_input_shape=record_shapes)
    print(averages.table(sort_by=sort_by, row_limit=row_limit) or "(no events recorded)")
    if trace:
        prof.export_chrome_trace(trace)
        print(f"Chrome trace written to {trace} (open it in https://ui.perfetto.dev)")
    return status


def memory_script(path: str, args: list, device: str = "cpu") -> int:
    """Run the script with peak statistics reset first; print the peak, what is still
    allocated when it ends, and memory_summary(). Returns the script's exit status."""
    start = memory.memory_allocated(device)
    memory.reset_peak_memory_stats(device)
    status = run_script(path, args)
    peak, now = memory.max_memory_allocated(device), memory.memory_allocated(device)
    print(f"peak {device} memory allocated: {format_size(peak)} "
          f"({format_size(peak - start)} above the {format_size(start)} held before the "
          f"script); still allocated at its end: {format_size(now)}")
    print(memory.memory_summary(device), end="")
    return status
