"""Allocation history: every storage allocation and free, with the Python stack behind it.

The API and the snapshot layout follow torch.cuda.memory's `_record_memory_history`,
`_snapshot` and `_dump_snapshot`, so the same scripts and viewers work. Recording hooks the
CPU allocator through its `observer` attribute: when recording is off the allocator pays
one attribute check and nothing else.

The CPU allocator does not cache, so each live allocation is its own segment with one
block, and a free completes the moment it is requested (the trace holds "alloc" and
"free_completed" entries only). A GPU's allocator caches: its snapshot is the caching
allocator's segments and blocks, each live block with the stack that allocated it. Each
device records separately (`device='cuda:0'`; glasstorch.cuda.memory's functions default
to the current GPU).
"""
from __future__ import annotations

import collections
import os
import pickle
import sys
import time

from ..core.device import as_device, device_backend
from .cpu_allocator import cpu_allocator

__all__ = ["_record_memory_history", "_snapshot", "_dump_snapshot"]

_ENABLED = (None, "state", "all")
_CONTEXT = (None, "state", "alloc", "all")
_STACKS = ("python", "all")


def _stack(depth: int) -> tuple:
    """(filename, line, name) of each frame from `depth` frames up, innermost first."""
    f = sys._getframe(depth)
    frames = []
    while f is not None:
        code = f.f_code
        frames.append((code.co_filename, f.f_lineno, code.co_name))
        f = f.f_back
    return tuple(frames)


class _Recorder:
    """The allocator observer: keeps live allocations (with their stacks) and the trace."""

    __slots__ = ("live", "trace", "stack_alloc", "stack_trace_alloc", "stack_free",
                 "trace_alloc", "trace_free")

    def __init__(self):
        self.live: dict = {}     # address -> (size, frames, time_us)
        self.trace = None        # deque of (action, addr, size, frames, time_us) or None

    def configure(self, enabled, context, max_entries, skip):
        self.stack_alloc = context is not None
        self.stack_trace_alloc = context in ("alloc", "all")
        self.stack_free = context == "all"
        self.trace_alloc = "alloc" not in skip
        self.trace_free = "free_completed" not in skip
        if enabled != "all":
            self.trace = None
        elif self.trace is None or self.trace.maxlen != max_entries:
            self.trace = collections.deque(self.trace or (), maxlen=max_entries)

    def __call__(self, event: str, nbytes: int, addr: int) -> None:
        if not nbytes:          # zero-byte storages hold no memory (a null pointer in c10)
            return
        now = time.time_ns() // 1000
        trace = self.trace
        if event == "alloc":
            frames = _stack(2) if self.stack_alloc else ()
            self.live[addr] = (nbytes, frames, now)
            if trace is not None and self.trace_alloc:
                trace.append(("alloc", addr, nbytes,
                              frames if self.stack_trace_alloc else (), now))
        else:
            self.live.pop(addr, None)
            if trace is not None and self.trace_free:
                trace.append(("free_completed", addr, nbytes,
                              _stack(2) if self.stack_free else (), now))


_recorders: dict = {}       # device string -> _Recorder, while that device records


def _device_key(device) -> str:
    """'cpu' or 'cuda:N' (None means the CPU here; glasstorch.cuda.memory passes its GPU)."""
    d = as_device("cpu" if device is None else device)
    if d.type == "cpu":
        return "cpu"
    if d.type == "cuda":
        return f"cuda:{device_backend('cuda').index_of(d)}"
    raise RuntimeError(f"no memory history for device '{d}'")


def _allocator_of(key: str):
    """The allocator whose `observer` attribute sees that device's allocations."""
    if key == "cpu":
        return cpu_allocator
    return device_backend("cuda").allocator(int(key.split(":")[1]))


def _record_memory_history(enabled: str | None = "all", context: str | None = "all",
                           stacks: str = "all", max_entries: int = sys.maxsize, device=None,
                           clear_history: bool = False, compile_context: bool = False,
                           global_record_annotations: bool = False,
                           skip_actions: list | None = None) -> None:
    """Start, reconfigure or stop recording allocations (torch.cuda.memory's signature).

    enabled: None stops and forgets everything; "state" keeps the live allocations (for
    `_snapshot()['segments']` and the retention report); "all" also keeps a trace of every
    alloc/free, the newest `max_entries` of them. context: which events get a stack
    (None, "state": live allocations only, "alloc": also trace allocs, "all": also frees).
    stacks: "python" or "all" (the same here: there are no C++ frames to add).
    skip_actions: trace actions ("alloc", "free_completed") not to record.
    compile_context and global_record_annotations are accepted for compatibility.
    clear_history forgets the trace. Allocations made while recording was off have no
    entry; their frees are traced.
    """
    if enabled not in _ENABLED:
        raise ValueError(f"_record_memory_history: enabled must be one of {_ENABLED}, "
                         f"got {enabled!r}")
    if context not in _CONTEXT:
        raise ValueError(f"_record_memory_history: context must be one of {_CONTEXT}, "
                         f"got {context!r}")
    if stacks not in _STACKS:
        raise ValueError(f"_record_memory_history: stacks must be one of {_STACKS}, "
                         f"got {stacks!r}")
    max_entries = int(max_entries)
    if max_entries < 1:
        raise ValueError(f"_record_memory_history: max_entries must be positive, "
                         f"got {max_entries}")
    key = _device_key(device)
    allocator = _allocator_of(key)
    if enabled is None:
        allocator.observer = None
        _recorders.pop(key, None)
        return
    recorder = _recorders.get(key)
    if recorder is None:
        recorder = _recorders[key] = _Recorder()
    elif clear_history and recorder.trace is not None:
        recorder.trace.clear()              # the live allocations keep their stacks
    recorder.configure(enabled, context, max_entries, frozenset(skip_actions or ()))
    allocator.observer = recorder


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_frame(frames: list) -> dict | None:
    """The innermost frame outside glasstorch itself (its files and the op wrappers it
    generates, named '<glasstorch...>'): the line that asked for the memory."""
    for f in frames:
        name = f["filename"]
        if not (name.startswith(_PACKAGE_DIR) or name.startswith("<glasstorch")):
            return f
    return frames[0] if frames else None


def _frames(frames) -> list:
    return [{"filename": f, "line": line, "name": name} for f, line, name in frames]


def _allocation_frames(address: int) -> list | None:
    """The stack that allocated the live memory at `address`, when it was recorded."""
    rec = _recorders.get("cpu")
    entry = None if rec is None else rec.live.get(address)
    return None if entry is None else _frames(entry[1])


def _snapshot(device=None) -> dict:
    """{'segments': live allocations, 'device_traces': [trace]} in torch's layout.

    Each live allocation made while recording is a segment holding one 'active_allocated'
    block; trace entries have action, addr, size, stream, frames and time_us.
    """
    key = _device_key(device)
    rec = _recorders.get(key)
    if key != "cpu":
        return _cached_snapshot(_allocator_of(key).caching, rec)
    if rec is None:
        return {"segments": [], "device_traces": [[]]}
    segments = []
    for addr, (size, frames, _) in sorted(rec.live.copy().items()):
        fr = _frames(frames)
        block = {"address": addr, "size": size, "requested_size": size,
                 "state": "active_allocated", "frames": fr}
        segments.append({"device": "cpu", "address": addr, "total_size": size,
                         "allocated_size": size, "active_size": size,
                         "requested_size": size, "stream": 0,
                         "segment_type": "small" if size <= 1 << 20 else "large",
                         "segment_pool_id": (0, 0), "is_expandable": False,
                         "frames": fr, "blocks": [block]})
    return {"segments": segments, "device_traces": [_trace(rec)]}


def _trace(rec) -> list:
    entries = () if rec is None or rec.trace is None else rec.trace.copy()
    return [{"action": action, "addr": addr, "size": size, "stream": 0,
             "frames": _frames(frames), "time_us": t}
            for action, addr, size, frames, t in entries]


def _cached_snapshot(caching, rec) -> dict:
    """A caching allocator's segments and blocks, live blocks with their recorded stacks."""
    snap = caching.snapshot()
    live = {} if rec is None else rec.live.copy()
    for segment in snap["segments"]:
        for block in segment["blocks"]:
            entry = live.get(block["address"])
            if entry is not None and block["state"] == "active_allocated":
                block["frames"] = _frames(entry[1])
    snap["device_traces"] = [_trace(rec)]
    return snap


def _dump_snapshot(filename: str = "dump_snapshot.pickle", device=None) -> None:
    """Pickle `_snapshot(device)` to `filename` (as torch does; load it with pickle.load)."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(device), f)
