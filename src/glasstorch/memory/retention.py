"""Storage retention: small views that keep large storages alive.

A view shares its base's storage, so `small = big[:10]; del big` still holds all of big's
bytes for as long as `small` lives, and saving `small` writes all of them (torch.save, like
glasstorch.save, writes whole storages). `retention_report()` finds such tensors among the
live objects; `_warn_oversized_storages` is save()'s check. `.clone()` is the fix for both.
"""
from __future__ import annotations

import gc
import sys
import types
import warnings

from . import history
from .errors import format_size

__all__ = ["retention_report", "RetentionReport", "Retained"]

RATIO = 4.0                 # storage >= RATIO x the viewed bytes ...
MIN_EXTRA = 1 << 20         # ... and at least this many bytes more


def _span(t) -> tuple[int, int] | None:
    """[start, end) byte range of the storage that tensor `t` can reach; None if empty."""
    lo = hi = t._offset
    for size, stride in zip(t._shape, t._stride):
        if size == 0:
            return None
        step = (size - 1) * stride
        if step < 0:
            lo += step
        else:
            hi += step
    item = t.dtype.itemsize
    return lo * item, (hi + 1) * item


def _covered(spans: list) -> int:
    """Bytes in the union of [start, end) ranges."""
    total, end = 0, None
    for lo, hi in sorted(spans):
        if end is None or lo >= end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


def _is_oversized(storage_bytes: int, viewed: int, ratio: float, min_extra: int) -> bool:
    return storage_bytes >= ratio * viewed and storage_bytes - viewed >= min_extra


class Retained:
    """One storage pinned by views that use a small part of it."""

    __slots__ = ("address", "storage_bytes", "viewed_bytes", "shapes", "dtype", "frames")

    def __init__(self, address, storage_bytes, viewed_bytes, shapes, dtype, frames):
        self.address = address      # the storage's data_ptr(), as in memory snapshots
        self.storage_bytes = storage_bytes
        self.viewed_bytes = viewed_bytes
        self.shapes = shapes        # the shape of every live view, largest first
        self.dtype = dtype
        self.frames = frames        # the allocating stack (history recording), else None

    @property
    def kept_alive_bytes(self) -> int:
        """Bytes held only because of these views: freed by `.clone()`-ing them."""
        return self.storage_bytes - self.viewed_bytes

    @property
    def site(self) -> str:
        f = history._user_frame(self.frames) if self.frames else None
        return "(not recorded)" if f is None else f"{f['filename']}:{f['line']} ({f['name']})"

    def __repr__(self):
        return (f"Retained(kept_alive={format_size(self.kept_alive_bytes)}, "
                f"storage={format_size(self.storage_bytes)}, shapes={self.shapes})")


class RetentionReport(list):
    """A list of Retained, largest waste first, that prints as a table."""

    def __str__(self):
        if not self:
            return "No live tensor keeps a much larger storage alive."
        head = f"{'kept alive':>12} {'storage':>12} {'viewed':>12}  {'dtype':<14} " \
               f"{'view shapes':<24} allocated at"
        rows = [head, "-" * len(head)]
        for r in self:
            shapes = ", ".join(str(tuple(s)) for s in r.shapes[:3])
            if len(r.shapes) > 3:
                shapes += f" +{len(r.shapes) - 3}"
            rows.append(f"{format_size(r.kept_alive_bytes):>12} {format_size(r.storage_bytes):>12}"
                        f" {format_size(r.viewed_bytes):>12}  {str(r.dtype):<14} "
                        f"{shapes:<24} {r.site}")
        rows.append(f"{len(self)} storage(s); {format_size(sum(r.kept_alive_bytes for r in self))}"
                    " kept alive by views. `.clone()` a small view to free its storage.")
        return "\n".join(rows)

    __repr__ = __str__


def _view_references(tensors: list) -> dict:
    """id -> how many references views hold to that tensor: a view keeps its `_base` and,
    for replaying, the tensor it was made from."""
    held: dict = {}
    for t in tensors:
        meta = t._view_meta
        for h in (t._base, None if meta is None else meta[0]):
            if h is not None:
                held[id(h)] = held.get(id(h), 0) + 1
    return held


def _user_tensors(tensors: list) -> list:
    """Drop tensors alive only because views refer to them: the user no longer holds those."""
    held = _view_references(tensors)
    # references while counting: the list `tensors`, the loop variable, getrefcount's argument
    return [t for t in tensors if id(t) not in held or sys.getrefcount(t) - 3 > held[id(t)]]


def retention_report(ratio: float = RATIO, min_extra_bytes: int = MIN_EXTRA) -> RetentionReport:
    """Live CPU tensors whose storage is >= `ratio` x the bytes they view and at least
    `min_extra_bytes` larger, grouped by storage, largest waste first. With
    `_record_memory_history()` on, each row names the line that allocated the storage."""
    from ..core.tensor import Tensor     # memory is imported while core is initialising
    gc.collect()
    objects = gc.get_objects()
    # type(), not isinstance: isinstance reads __class__, which some lazy objects compute
    tensors = [o for o in objects if issubclass(type(o), Tensor)]
    del objects
    by_storage: dict = {}
    for t in _user_tensors(tensors):
        storage = t._storage
        if storage is None or storage.buf is None:
            continue
        by_storage.setdefault(id(storage), (storage, []))[1].append(t)
    del tensors
    report = RetentionReport()
    for storage, views in by_storage.values():
        spans = [s for s in map(_span, views) if s is not None]
        viewed, total = _covered(spans), storage.nbytes()
        if not _is_oversized(total, viewed, ratio, min_extra_bytes):
            continue
        views.sort(key=lambda v: -v.numel())
        address = storage.data_ptr()
        report.append(Retained(address, total, viewed, [tuple(v._shape) for v in views],
                               views[0].dtype, history._allocation_frames(address)))
    report.sort(key=lambda r: -r.kept_alive_bytes)
    return report


# pickled by reference, so their attributes are not saved
_BY_NAME = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
            types.MethodType)


def _tensors_with_paths(obj):
    """(path, tensor) for every tensor reachable through containers and attributes of `obj`."""
    from ..core.tensor import Tensor
    seen = set()
    stack = [("", obj)]
    while stack:
        path, o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, Tensor):
            yield path, o
        elif isinstance(o, dict):
            stack.extend((f"{path}[{k!r}]", v) for k, v in reversed(list(o.items())))
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(o))))
        elif isinstance(getattr(o, "__dict__", None), dict) and not isinstance(o, _BY_NAME):
            stack.extend((f"{path}.{k}", v) for k, v in reversed(list(vars(o).items())))


def _warn_oversized_storages(obj, storages: dict, stacklevel: int = 3) -> None:
    """save()'s check: warn for each written storage that the saved views barely use."""
    written = {id(s) for s in storages.values()}
    views: dict = {}
    for path, t in _tensors_with_paths(obj):
        if id(t._storage) in written:
            views.setdefault(id(t._storage), (t._storage, []))[1].append((path, t))
    for storage, found in views.values():
        spans = [s for s in (_span(t) for _, t in found) if s is not None]
        viewed, total = _covered(spans), storage.nbytes()
        if not _is_oversized(total, viewed, RATIO, MIN_EXTRA):
            continue
        path, t = found[0]
        name = f"the tensor at {path}" if path else "the saved tensor"
        more = f" (and {len(found) - 1} other view(s) of it)" if len(found) > 1 else ""
        warnings.warn(
            f"save: {name}{more} has shape {tuple(t._shape)} and needs {format_size(viewed)}, "
            f"but its storage is {format_size(total)}; the whole storage is written to the "
            f"file (as torch.save does). Save a .clone() of it to write only the "
            f"{format_size(viewed)} it views.", UserWarning, stacklevel=stacklevel)
