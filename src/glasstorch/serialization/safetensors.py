"""The safetensors format, written and parsed here (no dependency).

A file is: an 8-byte little-endian header length N, N bytes of JSON (padded with spaces to
a multiple of 8), then the tensors' bytes back to back. The header maps each name to
{"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (offsets relative to the data
section) plus an optional "__metadata__" of string pairs. Parsing is strict: the tensors
must tile the data section exactly, with no overlap, gap or out-of-range offset, so a
crafted header can never alias or overrun memory.
"""
from __future__ import annotations

import json
import os
import sys
from math import prod

import numpy as np

from ..core import dtype as dt
from ..core.device import CPU, device as Device
from ..core.shape import contiguous_strides
from ..core.storage import UntypedStorage
from ..core.tensor import Tensor
from .files import write_atomic

__all__ = ["save", "save_file", "load", "load_file", "safe_open", "SafetensorError"]

_CODES = {
    dt.bool: "BOOL", dt.uint8: "U8", dt.int8: "I8", dt.int16: "I16", dt.int32: "I32",
    dt.int64: "I64", dt.float16: "F16", dt.bfloat16: "BF16", dt.float32: "F32",
    dt.float64: "F64", dt.complex64: "C64", dt.uint16: "U16", dt.uint32: "U32",
    dt.uint64: "U64", dt.float8_e4m3fn: "F8_E4M3", dt.float8_e5m2: "F8_E5M2",
}
_DTYPES = {code: d for d, code in _CODES.items()}
_MAX_HEADER = 100_000_000


class SafetensorError(Exception):
    """A malformed safetensors buffer or file."""


def _check_tensors(tensors) -> list:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, Tensor] but received {type(tensors)}")
    items = []
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise ValueError(f"Expected a dict of [str, Tensor] but found a key of type "
                             f"{type(name).__name__}: {name!r}")
        if not isinstance(t, Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected Tensor but received "
                             f"{type(t)}")
        if t.dtype not in _CODES:
            raise ValueError(f"safetensors cannot store tensor `{name}` of dtype {t.dtype}")
        if not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not "
                "allowed. It either means you are trying to save tensors which are reference "
                "of each other in which case it's recommended to save only the full tensors, "
                "and reslice at load time, or simply call `.contiguous()` on your tensor to "
                "pack it before saving.")
        items.append((name, t))
    _check_no_sharing(items)
    return items


def _check_no_sharing(items) -> None:
    """Tensors whose bytes overlap in one storage cannot be stored (they would load apart)."""
    spans: dict = {}
    for name, t in items:
        if t.numel():
            start = t._offset * t.dtype.itemsize
            spans.setdefault(id(t._storage), []).append((start, start + t.nbytes, name))
    for group in spans.values():
        group.sort()
        for (_, end, a), (start, _, b) in zip(group, group[1:]):
            if start < end:
                raise RuntimeError(
                    f"Some tensors share memory, this will lead to duplicate memory on disk "
                    f"and potential differences when loading them again: [{a!r}, {b!r}]. "
                    "Save clones (or only one of them) instead.")


def _host_bytes(t: Tensor) -> bytes:
    arr = t._array()
    if hasattr(arr, "get"):
        arr = arr.get()
    arr = np.ascontiguousarray(arr)
    if sys.byteorder != "little" and arr.dtype.itemsize > 1:
        arr = arr.byteswap()
    return arr.tobytes()


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of a dict of contiguous tensors (and string metadata)."""
    items = _check_tensors(tensors)
    header: dict = {}
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("metadata must be a dict of str to str")
        header["__metadata__"] = metadata
    # Larger elements first, then by name: each tensor starts aligned to its element size.
    items.sort(key=lambda item: (-item[1].dtype.itemsize, item[0]))
    chunks, offset = [], 0
    for name, t in items:
        data = _host_bytes(t)
        header[name] = {"dtype": _CODES[t.dtype], "shape": list(t._shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return b"".join([len(text).to_bytes(8, "little"), text, *chunks])


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Write `tensors` to `filename` as safetensors (atomically)."""
    data = save(tensors, metadata)
    write_atomic(filename, lambda fh: fh.write(data))


def _parse_header(read, total: int) -> tuple[dict, int]:
    """(header dict, start of the data section) of a source of `total` bytes, read with
    read(offset, size); SafetensorError on any inconsistency."""
    if total < 8:
        raise SafetensorError(f"Error while deserializing header: HeaderTooSmall (the buffer "
                              f"has {total} bytes, fewer than the 8-byte length prefix)")
    n = int.from_bytes(read(0, 8), "little")
    if n > _MAX_HEADER:
        raise SafetensorError(f"Error while deserializing header: HeaderTooLarge ({n} bytes)")
    if 8 + n > total:
        raise SafetensorError(f"Error while deserializing header: InvalidHeaderLength (the "
                              f"header claims {n} bytes but only {total - 8} follow)")
    try:
        header = json.loads(read(8, n).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SafetensorError(f"Error while deserializing header: InvalidHeaderDeserialization"
                              f" ({exc})") from None
    if not isinstance(header, dict):
        raise SafetensorError("Error while deserializing header: the header is not a JSON "
                              "object")
    return header, 8 + n


def _tensor_infos(header: dict, data_len: int) -> list:
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict) and all(
            isinstance(v, str) for v in meta.values())):
        raise SafetensorError("Error while deserializing header: __metadata__ must map "
                              "strings to strings")
    infos = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorError(f"Error while deserializing header: tensor '{name}' must "
                                  "have exactly dtype, shape and data_offsets")
        dtype = _DTYPES.get(info["dtype"])
        shape, offsets = info["shape"], info["data_offsets"]
        if dtype is None:
            raise SafetensorError(f"Error while deserializing header: tensor '{name}' has an "
                                  f"unsupported dtype {info['dtype']!r}")
        if not (isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)):
            raise SafetensorError(f"Error while deserializing header: tensor '{name}' has an "
                                  f"invalid shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(
                type(o) is int for o in offsets) and 0 <= offsets[0] <= offsets[1]):
            raise SafetensorError(f"Error while deserializing header: tensor '{name}' has "
                                  f"invalid data_offsets {offsets!r}")
        if offsets[1] - offsets[0] != prod(shape) * dtype.itemsize:
            raise SafetensorError(f"Error while deserializing header: TensorInvalidInfo "
                                  f"(tensor '{name}' of shape {shape} and dtype "
                                  f"{info['dtype']} needs {prod(shape) * dtype.itemsize} "
                                  f"bytes, its data_offsets {offsets} span "
                                  f"{offsets[1] - offsets[0]})")
        infos.append((name, dtype, tuple(shape), offsets[0], offsets[1]))
    end = 0
    for name, _, _, begin, stop in sorted(infos, key=lambda i: (i[3], i[4])):
        if begin != end:
            what = "overlaps the previous tensor" if begin < end else "leaves a gap before it"
            raise SafetensorError(f"Error while deserializing header: InvalidOffset (tensor "
                                  f"'{name}' at data_offsets [{begin}, {stop}] {what})")
        end = stop
    if end != data_len:
        raise SafetensorError(f"Error while deserializing header: MetadataIncompleteBuffer "
                              f"(the tensors cover {end} bytes, the data section has "
                              f"{data_len})")
    return infos


def _finish(storage: UntypedStorage, dtype, shape: tuple, device) -> Tensor:
    t = Tensor._make(storage, 0, shape, contiguous_strides(shape), dtype)
    if sys.byteorder != "little" and dtype.itemsize > 1:
        t._array()[...] = t._array().byteswap()
    return t if Device(device).type == "cpu" else t.to(device)


def load(data: bytes) -> dict:
    """The tensors in a safetensors buffer, by name."""
    view = memoryview(data).cast("B")
    header, start = _parse_header(lambda offset, size: bytes(view[offset:offset + size]),
                                  len(view))
    out = {}
    for name, dtype, shape, begin, stop in _tensor_infos(header, len(view) - start):
        storage = UntypedStorage._new(stop - begin, CPU)
        storage.buf[:] = np.frombuffer(view[start + begin:start + stop], np.uint8)
        out[name] = _finish(storage, dtype, shape, CPU)
    return out


class safe_open:
    """A safetensors file opened for reading single tensors: the header is parsed and
    validated once, each get_tensor reads only that tensor's bytes.

    >>> with safe_open("model.safetensors", framework="pt") as f:   # doctest: +SKIP
    ...     weight = f.get_tensor("weight")
    """

    def __init__(self, filename, framework="pt", device="cpu"):
        if framework not in ("pt", "torch", "glasstorch", "numpy", "np"):
            raise ValueError(f"framework {framework!r} is not supported: use 'pt'")
        self._name = os.fsdecode(filename)
        self._device = device
        self._fh = open(filename, "rb")
        try:
            total = os.fstat(self._fh.fileno()).st_size
            self._header, self._start = _parse_header(self._read_at, total)
            self._infos = {info[0]: info for info in
                           _tensor_infos(self._header, total - self._start)}
        except SafetensorError as exc:
            self._fh.close()
            raise SafetensorError(f"{self._name}: {exc}") from None
        except BaseException:
            self._fh.close()
            raise

    def _read_at(self, offset: int, size: int) -> bytes:
        self._fh.seek(offset)
        return self._fh.read(size)

    def keys(self) -> list:
        return list(self._infos)

    def metadata(self) -> dict | None:
        return self._header.get("__metadata__")

    def get_tensor(self, name: str) -> Tensor:
        info = self._infos.get(name)
        if info is None:
            raise SafetensorError(f"File does not contain tensor {name}")
        _, dtype, shape, begin, stop = info
        storage = UntypedStorage._new(stop - begin, CPU)
        self._fh.seek(self._start + begin)
        if self._fh.readinto(memoryview(storage.buf)) != stop - begin:
            raise SafetensorError(f"{self._name}: tensor '{name}' is cut short (the file "
                                  "changed since it was opened)")
        return _finish(storage, dtype, shape, self._device)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def load_file(filename, device="cpu") -> dict:
    """The tensors in a safetensors file, by name, on `device`."""
    with safe_open(filename, framework="pt", device=device) as f:
        return {name: f.get_tensor(name) for name in f.keys()}
