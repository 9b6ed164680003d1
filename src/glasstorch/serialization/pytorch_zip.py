"""torch.save's zip container, written and read without torch.

Layout (one top-level folder, `archive/` when we write): `data.pkl` (the pickle),
`data/<key>` (each storage's raw bytes, 64-byte aligned so they can be memory-mapped),
`byteorder`, `version`, `.format_version`, `.storage_alignment`. Entries are stored, not
compressed. Files in PyTorch's legacy (pre-1.6) pickle-stream format are recognised and
refused with advice, since they would need torch's own legacy reader.
"""
from __future__ import annotations

import io
import os
import sys
import zipfile
import zlib

import numpy as np

from ..core.device import CPU, device as Device
from ..core.storage import UntypedStorage, meta_storage
from . import limits
from .unpickler import RestrictedUnpickler

__all__ = ["write_archive", "read_archive", "read_pickle", "CorruptFile", "LEGACY_MAGIC"]

ALIGNMENT = 64
ARCHIVE = "archive"
# The magic number (as a pickled long) that starts every legacy torch.save file.
LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"
_LOCAL_HEADER = 30               # fixed size of a zip local file header
_PAD_ID = b"FB"                  # the extra-field id torch uses for alignment padding


def _host_bytes(storage: UntypedStorage):
    buf = storage.buf
    if hasattr(buf, "get"):          # a device (CuPy) buffer
        buf = buf.get()
    return memoryview(np.ascontiguousarray(buf)).cast("B")


def _write_entry(zf: zipfile.ZipFile, name: str, data, align: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    if align:
        start = zf.fp.tell() + _LOCAL_HEADER + len(name.encode("utf-8")) + 4
        pad = -start % ALIGNMENT
        info.extra = _PAD_ID + pad.to_bytes(2, "little") + b"Z" * pad
    zf.writestr(info, data)


def write_archive(fileobj, pickled: bytes, storages: dict, byteorder_record=True) -> None:
    """Write the zip to a seekable binary file object."""
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED) as zf:
        _write_entry(zf, f"{ARCHIVE}/data.pkl", pickled)
        _write_entry(zf, f"{ARCHIVE}/.format_version", b"1")
        _write_entry(zf, f"{ARCHIVE}/.storage_alignment", str(ALIGNMENT).encode())
        if byteorder_record:
            _write_entry(zf, f"{ARCHIVE}/byteorder", sys.byteorder.encode())
        for key, storage in storages.items():
            _write_entry(zf, f"{ARCHIVE}/data/{key}", _host_bytes(storage), align=True)
        _write_entry(zf, f"{ARCHIVE}/version", b"3\n")
        _write_entry(zf, f"{ARCHIVE}/.data/serialization_id", os.urandom(16).hex().encode())


class CorruptFile(RuntimeError):
    """Raised with the reason a checkpoint cannot be read; the caller names the file."""


def _prefix(zf: zipfile.ZipFile) -> str:
    pkls = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pkls) != 1:
        raise CorruptFile("it is a zip archive but not a torch.save checkpoint "
                          f"(expected one '<archive>/data.pkl', found {len(pkls)})")
    return pkls[0][: -len("data.pkl")]


def _cuda_storage(storage: UntypedStorage, dev) -> UntypedStorage:
    try:
        new = UntypedStorage._new(storage.nbytes(), dev)
    except (ImportError, RuntimeError, OSError, AssertionError) as exc:   # no CuPy/GPU
        raise RuntimeError(
            f"Attempting to deserialize object on a CUDA device ({dev}) but CUDA is not "
            "available to glasstorch. If you are running on a CPU-only machine, please use "
            "glasstorch.load with map_location=torch.device('cpu') to map your storages to "
            f"the CPU. ({exc})") from None
    if hasattr(new.buf, "set"):          # CuPy: copy host -> device
        new.buf.set(storage.buf)
    else:
        new.buf[:] = storage.buf
    return new


def _to_device(storage: UntypedStorage, target) -> UntypedStorage:
    dev = Device(target)
    if dev.type == "cpu":
        return storage
    if dev.type == "meta":
        return meta_storage(storage.nbytes())
    return _cuda_storage(storage, dev)


def _place(storage: UntypedStorage, location: str, map_location) -> UntypedStorage:
    """Apply map_location (None, str/device, dict of location strings, or callable)."""
    if map_location is None:
        return _to_device(storage, location)
    if callable(map_location) and not isinstance(map_location, (str, Device)):
        moved = map_location(storage, location)
        if moved is None:
            return _to_device(storage, location)
        if not isinstance(moved, UntypedStorage):
            raise TypeError("map_location callable must return a storage or None, got "
                            f"{type(moved).__name__}")
        return moved
    if isinstance(map_location, dict):
        return _to_device(storage, map_location.get(location, location))
    if isinstance(map_location, (str, Device)):
        return _to_device(storage, map_location)
    raise TypeError("map_location should be a string, a device, a dict or a callable, "
                    f"got {type(map_location).__name__}")


_CHUNK = 16 * 2**20           # bytes per read of a stored storage
_INFLATE_CHUNK = 2**20        # bytes per read of a compressed one (zipfile copies each)


def _stored_data_offset(fileobj, info: zipfile.ZipInfo) -> int:
    """Where a stored entry's bytes start in the file (after its local header)."""
    fileobj.seek(info.header_offset)
    header = fileobj.read(_LOCAL_HEADER)
    if len(header) != _LOCAL_HEADER or header[:4] != b"PK\x03\x04":
        raise CorruptFile(f"storage record '{info.filename}' has no valid local header")
    name_len = int.from_bytes(header[26:28], "little")
    extra_len = int.from_bytes(header[28:30], "little")
    return info.header_offset + _LOCAL_HEADER + name_len + extra_len


def _read_stored(fileobj, info: zipfile.ZipInfo, view: memoryview) -> None:
    """Read an uncompressed entry from the file straight into `view` (no intermediate
    buffer), checking its CRC as zipfile would."""
    fileobj.seek(_stored_data_offset(fileobj, info))
    readinto = getattr(fileobj, "readinto", None)
    crc, done = 0, 0
    while done < len(view):
        part = view[done:done + _CHUNK]
        if readinto is not None:
            n = readinto(part)
        else:
            data = fileobj.read(len(part))
            n = len(data)
            part[:n] = data
        if not n:
            raise CorruptFile(f"storage record '{info.filename}' ends after {done} bytes")
        crc = zlib.crc32(part[:n], crc)
        done += n
    if crc != info.CRC:
        raise CorruptFile(f"storage record '{info.filename}' fails its CRC check")


def _read_inflated(zf: zipfile.ZipFile, info: zipfile.ZipInfo, view: memoryview) -> None:
    """Inflate a compressed entry into `view` a chunk at a time; reading to the end makes
    zipfile verify the CRC."""
    done = 0
    with zf.open(info) as src:
        while done < len(view):
            data = src.read(min(_INFLATE_CHUNK, len(view) - done))
            if not data:
                raise CorruptFile(f"storage record '{info.filename}' ends after {done} bytes")
            view[done:done + len(data)] = data
            done += len(data)
        if src.read(1):
            raise CorruptFile(f"storage record '{info.filename}' is longer than its header "
                              "says")


def _read_into(zf: zipfile.ZipFile, fileobj, info: zipfile.ZipInfo, buf: np.ndarray) -> None:
    """Stream an entry into a storage's bytes: the storage is the only full-size buffer."""
    view = memoryview(buf).cast("B")
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size == info.file_size:
        _read_stored(fileobj, info, view)
    else:
        _read_inflated(zf, info, view)


def _archive_size(fileobj) -> int:
    start = fileobj.tell()
    end = fileobj.seek(0, io.SEEK_END)
    fileobj.seek(start)
    return end - start


def _open(fileobj) -> zipfile.ZipFile:
    """The checkpoint's zip, once its declared sizes are within the load limits."""
    archive_size = _archive_size(fileobj)
    try:
        zf = zipfile.ZipFile(fileobj)
    except zipfile.BadZipFile as exc:
        raise CorruptFile(f"it is not a complete zip archive ({exc}); the file is truncated "
                          "or corrupt") from None
    limits.check_inflation(sum(i.file_size for i in zf.infolist()), archive_size)
    return zf


def _read_pickle(zf: zipfile.ZipFile, prefix: str) -> bytes:
    info = zf.getinfo(prefix + "data.pkl")
    limits.check_pickle_size(info.filename, info.file_size)
    return zf.read(info)


def read_pickle(fileobj) -> bytes:
    """The checkpoint's data.pkl, read within the load limits."""
    with _open(fileobj) as zf:
        return _read_pickle(zf, _prefix(zf))


def read_archive(fileobj, map_location=None, weights_only: bool = True,
                 pickle_load_args: dict | None = None):
    """Load the object stored in a torch.save zip (raises CorruptFile on damage)."""
    with _open(fileobj) as zf:
        prefix = _prefix(zf)
        names = set(zf.namelist())
        order = "little"
        if prefix + "byteorder" in names:
            order = zf.read(prefix + "byteorder").decode("ascii", "replace").strip()
            if order not in ("little", "big"):
                raise CorruptFile(f"unknown byteorder record {order!r}")
        loaded: dict = {}

        def load_storage(dtype, key, location, numel):
            storage = loaded.get(key)
            if storage is None:
                name = f"{prefix}data/{key}"
                if name not in names:
                    raise CorruptFile(f"storage record '{name}' is missing")
                itemsize = 1 if dtype is None else dtype.itemsize
                info = zf.getinfo(name)
                size = info.file_size
                if size != numel * itemsize:
                    raise CorruptFile(f"storage record '{name}' holds {size} bytes, "
                                      f"expected {numel} elements of {itemsize} bytes")
                storage = UntypedStorage._new(size, CPU)
                _read_into(zf, fileobj, info, storage.buf)
                if order != sys.byteorder and itemsize > 1:
                    storage.buf.view(dtype.np).byteswap(inplace=True)
                storage = _place(storage, location, map_location)
                loaded[key] = storage
            return storage

        pkl = io.BytesIO(_read_pickle(zf, prefix))
        return RestrictedUnpickler(pkl, load_storage, weights_only,
                                   **(pickle_load_args or {})).load()

