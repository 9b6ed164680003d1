"""glasstorch.save / glasstorch.load, safetensors, and reading PyTorch checkpoints.

Checkpoints use torch.save's zip format (see pytorch_zip.py and pickler.py), so files
written by either library load in the other. Loading goes through a restricted unpickler
(unpickler.py): only tensors, storages, containers and plain values come back, unless
weights_only=False, where PyTorch's class names map onto glasstorch's (torch_names.py).
Saves to a path are atomic (files.py); loads refuse files over the size limits (limits.py).
"""
from __future__ import annotations

import io
import pickle
import struct
import zipfile

from ..memory.retention import _warn_oversized_storages
from . import safetensors  # noqa: F401  (glasstorch.serialization.safetensors)
from .files import describe, is_path, write_to
from .limits import LoadLimitExceeded, get_load_limits, set_load_limits  # noqa: F401
from .pickler import pickle_with_storages
from .pytorch_zip import LEGACY_MAGIC, CorruptFile, read_archive, read_pickle, write_archive
from .unpickler import (MissingTorchGlobalError, WeightsOnlyUnpicklingError,  # noqa: F401
                        add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals,
                        unsafe_globals)

__all__ = ["save", "load"]

DEFAULT_PROTOCOL = 2


def save(obj, f, pickle_module=None, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False) -> None:
    """Save `obj` (tensors, state dicts, containers of them, plain values) to a path or a
    writable binary file in torch.save's zip format. Writes to a path are atomic.

    Like torch.save, it writes each tensor's whole storage, so a small view of a large
    tensor writes all of it: a UserWarning names such tensors (save a .clone() instead)."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("glasstorch.save supports only the standard pickle module")
    if not _use_new_zipfile_serialization:
        raise ValueError("glasstorch.save writes only the zip format "
                         "(_use_new_zipfile_serialization=True)")
    pickled, storages = pickle_with_storages(obj, pickle_protocol)
    _warn_oversized_storages(obj, storages)
    write_to(f, lambda fh: write_archive(fh, pickled, storages,
                                         byteorder_record=not _disable_byteorder_record))


def get_unsafe_globals_in_checkpoint(f) -> list:
    """The 'module.name' globals in a checkpoint that weights_only loading would refuse
    (neither allowed by default nor by add_safe_globals), found without unpickling it."""
    if is_path(f):
        with open(f, "rb") as fh:
            return get_unsafe_globals_in_checkpoint(fh)
    fh = _seekable(f)
    start = fh.tell()
    try:
        if fh.read(2) != b"PK":
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        fh.seek(start)
        return unsafe_globals(read_pickle(fh))
    except CorruptFile as exc:
        raise RuntimeError(f"cannot read {describe(f)}: {exc}") from None
    finally:
        fh.seek(start)          # the file object is left where it was


def _seekable(f):
    if not hasattr(f, "read"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a "
                             f"'read' attribute (got {type(f).__name__})")
    if hasattr(f, "seekable") and f.seekable():
        return f
    return io.BytesIO(f.read())


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load an object saved by glasstorch.save or torch.save (zip format).

    map_location: None (where it was saved), 'cpu' / a device, a dict mapping saved
    locations to new ones, or a callable(storage, location) -> storage or None.
    weights_only=True (the default) allows only tensors, containers and plain values;
    any other global in the file raises pickle.UnpicklingError naming it and saying what
    would load it. weights_only=False also builds whole pickled objects, PyTorch's classes
    (`torch.nn.modules.linear.Linear`) as glasstorch's; only for trusted files. The
    storages are read into memory (`mmap` is accepted for compatibility), each straight
    into its final buffer, after the file's declared sizes pass the limits of
    set_load_limits (LoadLimitExceeded otherwise). A load that fails leaves a file
    object's position where it was.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("glasstorch.load supports only the standard pickle module")
    if weights_only is None:
        weights_only = True
    if is_path(f):
        with open(f, "rb") as fh:
            return _load_from(fh, describe(f), map_location, bool(weights_only),
                              pickle_load_args)
    return _load_from(_seekable(f), describe(f), map_location, bool(weights_only),
                      pickle_load_args)


def _load_from(fh, name: str, map_location, weights_only: bool, pickle_load_args: dict):
    start = fh.tell()
    head = fh.read(len(LEGACY_MAGIC))
    fh.seek(start)
    if not head:
        raise RuntimeError(f"glasstorch.load: {name} is empty (0 bytes), not a checkpoint")
    if head == LEGACY_MAGIC:
        raise RuntimeError(
            f"glasstorch.load: {name} was written in PyTorch's legacy (pre-1.6, non-zip) "
            "format, which glasstorch cannot read. Re-save it with a newer PyTorch: "
            "torch.save(torch.load(path, weights_only=False), path)")
    if not head.startswith(b"PK"):
        raise RuntimeError(f"glasstorch.load: {name} is not a checkpoint (it does not start "
                           "with a zip header as torch.save/glasstorch.save files do)")
    try:
        return _read_checkpoint(fh, name, map_location, weights_only, pickle_load_args)
    except BaseException:
        fh.seek(start)          # a failed load leaves a file object where it was
        raise


def _read_checkpoint(fh, name: str, map_location, weights_only: bool, pickle_load_args):
    try:
        return read_archive(fh, map_location, weights_only, pickle_load_args)
    except LoadLimitExceeded as exc:
        raise LoadLimitExceeded(f"glasstorch.load: refusing {name}: {exc}") from None
    except CorruptFile as exc:
        raise RuntimeError(f"glasstorch.load: cannot read {name}: {exc}") from None
    except (WeightsOnlyUnpicklingError, MissingTorchGlobalError):
        raise
    except pickle.UnpicklingError as exc:
        raise RuntimeError(f"glasstorch.load: cannot read {name}: its data.pkl is invalid "
                           f"({exc})") from None
    except (EOFError, ValueError, KeyError, IndexError, OSError, struct.error,
            zipfile.BadZipFile) as exc:
        raise RuntimeError(f"glasstorch.load: cannot read {name}: the file is truncated or "
                           f"corrupt ({type(exc).__name__}: {exc})") from None
