"""Finding things in the user's program: the variable that keeps old graphs alive, the
line that fills it, whether a graph reaches a parameter."""
from __future__ import annotations

import inspect
import linecache
import re

from glasstorch.autograd.graph import AccumulateGrad
from glasstorch.core.tensor import Tensor

from .frames import Site, is_user_file


def holder(frame, alive: set):
    """The user's variable keeping old losses alive: (name, kind) or None."""
    if frame is None:
        return None
    scopes = list(frame.f_locals.items()) + list(frame.f_globals.items())
    for name, value in scopes:
        if isinstance(value, (list, tuple, dict)):
            items = value.values() if isinstance(value, dict) else value
            if any(isinstance(v, Tensor) and id(v.grad_fn) in alive for v in items):
                return name, type(value).__name__
    for name, value in scopes:
        if isinstance(value, Tensor) and value.grad_fn is not None \
                and id(value.grad_fn) not in alive:
            seen, stack, n = set(), [value.grad_fn], 0
            while stack and n < 20000:
                node = stack.pop()
                n += 1
                if node is None or id(node) in seen:
                    continue
                if id(node) in alive:
                    return name, "tensor"
                seen.add(id(node))
                stack.extend(nxt for nxt, _ in node.next_functions)
    return None


def assignment_site(frame, name: str):
    """The line in the frame's function that appends to or adds into `name`."""
    if frame is None:
        return None
    pattern = re.compile(rf"\b{re.escape(name)}\s*(\+=|\.append\(|\.extend\(|=\s*{re.escape(name)}\s*\+)")
    try:
        lines = inspect.getsourcelines(frame.f_code)[0] if frame.f_code.co_name != "<module>" \
            else open(frame.f_code.co_filename).read().splitlines()
        start = frame.f_code.co_firstlineno if frame.f_code.co_name != "<module>" else 1
    except OSError:
        return None
    for i, line in enumerate(lines):
        if pattern.search(line):
            return Site(frame.f_code.co_filename, start + i)
    return None


def pinning_lists(frame, min_bytes: int = 1 << 20):
    """The user's lists whose tensors are small views of separate large storages, each
    keeping its whole storage alive: (name, length, bytes of the values, bytes kept), an
    estimate from the last items. Views of one storage (rows of a dataset tensor) pin nothing
    that is not kept anyway, and neither do copies."""
    if frame is None:
        return
    for name, value in list(frame.f_locals.items()) + list(frame.f_globals.items()):
        if not isinstance(value, list) or len(value) < 8 or name.startswith("_"):
            continue
        sample = [v for v in value[-16:] if isinstance(v, Tensor)]
        if len(sample) < 8:
            continue
        storages, own = {}, 0
        for t in sample:
            storage = t.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
            own += t.numel() * t.element_size()
        kept = sum(storages.values())
        if len(storages) * 2 < len(sample) or kept < 4 * max(own, 1):
            continue
        scale = len(value) / len(sample)
        if kept * scale >= min_bytes:
            yield name, len(value), int(own * scale), int(kept * scale)


def tensors_in(obj, depth: int = 3):
    """The tensors in a saved object: itself, or inside dicts, lists and tuples."""
    if isinstance(obj, Tensor):
        yield obj
    elif depth and isinstance(obj, dict):
        for v in obj.values():
            yield from tensors_in(v, depth - 1)
    elif depth and isinstance(obj, (list, tuple)):
        for v in obj:
            yield from tensors_in(v, depth - 1)


def variable_name(frame, value):
    """The name the user's frame gives `value`, or None."""
    if frame is None:
        return None
    for scope in (frame.f_locals, frame.f_globals):
        for name, v in scope.items():
            if v is value and not name.startswith("_"):
                return name
    return None


def reaches(node, variable) -> bool:
    """Whether the graph below `node` accumulates into `variable`."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        if isinstance(n, AccumulateGrad):
            if n.variable is variable:
                return True
            continue
        stack.extend(nxt for nxt, _ in n.next_functions)
    return False


def made_at(tb, tensor):
    """(name, Site) of the user's line that last assigned `tensor` to a variable, found
    from the frames of a traceback, innermost first; None when no variable holds it."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    for frame, lineno in reversed(frames):
        if not is_user_file(frame.f_code.co_filename):
            continue
        name = next((n for n, v in frame.f_locals.items() if v is tensor), None)
        if name is None:
            continue
        pattern = re.compile(rf"^\s*(?:{re.escape(name)}\s*(?:,[^=]*)?=(?!=)|[^=]*,\s*"
                             rf"{re.escape(name)}\s*=(?!=)|for\b.*\b{re.escape(name)}\b.*\bin\b)")
        lines = linecache.getlines(frame.f_code.co_filename)
        first = frame.f_code.co_firstlineno
        for n in range(min(lineno, len(lines)), first - 1, -1):
            if pattern.search(lines[n - 1]):
                return name, Site(frame.f_code.co_filename, n)
        return name, None
    return None
