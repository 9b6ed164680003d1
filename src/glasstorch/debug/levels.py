"""GLASSTORCH_DEBUG: graded output of what the machinery does, as tinygrad's DEBUG levels.

    GLASSTORCH_DEBUG=1  every operator call (nested calls indented), backward node,
                        record_function block and fused optimizer update, as it starts
    GLASSTORCH_DEBUG=2  + each call's dispatch key set and every kernel it runs (key: kernel)
    GLASSTORCH_DEBUG=3  + each tensor argument as shape/stride dtype: ([2, 3]/[3, 1] float32)
    GLASSTORCH_DEBUG=4  + every allocation and free of the CPU allocator (bytes, address)

Output goes to stderr. The environment variable applies from `import glasstorch` on, to
the importing thread; `set_debug_level(n)` changes it at run time (0: off), for the calling
thread. Level 1 and up route every call through the dispatch-trace hook: expect it slower.
"""
from __future__ import annotations

import os
import sys

from ..dispatch.trace import DispatchTrace, _start, _stop
from ..memory.cpu_allocator import cpu_allocator
from ..profiler import _recorder

ENV_VAR = "GLASSTORCH_DEBUG"
_EVALUATE = "autograd::engine::evaluate_function: "


def _emit(line: str) -> None:
    print(line, file=sys.stderr)


def _describe(arg) -> str | None:
    shape = getattr(arg, "_shape", None)
    if not isinstance(shape, tuple):
        return None
    return f"{list(shape)}/{list(arg._stride)} {str(arg.dtype).replace('torch.', '')}"


class _DispatchPrinter(DispatchTrace):
    """Prints each call and kernel as it starts, keeping nothing."""

    keep_events = False

    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def on_layer(self, event, layer, args, is_new_call):
        indent = "    " * event.depth
        if is_new_call:
            line = f"{indent}{event.op}"
            if self.level >= 2:
                line += f"  {event.keyset!r}"
            if self.level >= 3:
                described = [d for d in map(_describe, args) if d is not None]
                if described:
                    line += "  (" + ", ".join(described) + ")"
            _emit(line)
        if self.level >= 2:
            _emit(f"{indent}  {layer.key.name}: {layer.kernel_name}")


class _SpanPrinter(list):
    """A span collector that prints backward nodes, labelled blocks and fused updates as
    they begin, and keeps nothing."""

    def begin(self, name: str, kind: str) -> None:
        if name.startswith(_EVALUATE):
            _emit(f"backward: {name[len(_EVALUATE):]}")
        elif kind == "user_annotation":
            _emit(f"record_function: {name}")
        elif name.startswith("aten::_fused"):
            _emit(f"{name}  (fused update, no dispatch)")

    def append(self, span) -> None:
        pass


class _AllocationPrinter:
    """The CPU allocator's observer at level 4: prints, then passes on to the previous one."""

    def __init__(self):
        self.previous = None

    def __call__(self, event, nbytes, address):
        _emit(f"memory: {event} {nbytes} bytes at {address:#x}")
        if self.previous is not None:
            self.previous(event, nbytes, address)


class _State:
    level = 0
    dispatch = None
    spans = None
    memory = None


def get_debug_level() -> int:
    return _State.level


def set_debug_level(level: int) -> None:
    """Print what glasstorch does at `level` (see the module docstring); 0 turns it off."""
    if not isinstance(level, int) or not 0 <= level <= 4:
        raise ValueError(f"{ENV_VAR} level must be an integer from 0 to 4, got {level!r}")
    _off()
    _State.level = level
    if level == 0:
        return
    _State.dispatch = _DispatchPrinter(level)
    _start(_State.dispatch)
    _State.spans = _SpanPrinter()
    _recorder.start_collecting(_State.spans)
    if level >= 4:
        _State.memory = _AllocationPrinter()
        _State.memory.previous = cpu_allocator.observer
        cpu_allocator.observer = _State.memory


def _off() -> None:
    if _State.dispatch is not None:
        _stop(_State.dispatch)
        _State.dispatch = None
    if _State.spans is not None:
        _recorder.stop_collecting(_State.spans)
        _State.spans = None
    if _State.memory is not None:
        if cpu_allocator.observer is _State.memory:
            cpu_allocator.observer = _State.memory.previous
        _State.memory = None
    _State.level = 0


def _from_environment() -> None:
    value = os.environ.get(ENV_VAR, "").strip()
    if not value or value == "0":
        return
    try:
        level = int(value)
    except ValueError:
        raise ValueError(f"{ENV_VAR}: expected an integer from 0 to 4, got {value!r}") from None
    set_debug_level(level)
