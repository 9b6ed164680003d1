"""default_collate and default_convert: turning samples into batches, as torch does.

`collate` walks a batch (a list of samples) by the type of its first sample: tensors are
stacked, NumPy arrays and Python/NumPy numbers become tensors (Python floats float64, ints
int64, bools bool), strings stay a list, and containers are collated field by field,
keeping their type where it can be rebuilt.

    >>> import glasstorch as torch
    >>> default_collate([{"x": torch.ones(2), "y": 1}, {"x": torch.zeros(2), "y": 2}])
    {'x': tensor([[1., 1.],
            [0., 0.]]), 'y': tensor([1, 2])}
"""
from __future__ import annotations

import collections.abc
import copy
import re
from math import prod

import numpy as np

from ...core import dtype as dt
from ...core.tensor import Tensor
from ...ops.creation.factories import as_tensor, tensor
from ...ops.indexing.subscripts import index_select
from ...ops.shape.joining import stack
from ._sharing import empty_shared, shared_memory_enabled

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map",
           "default_collate_err_msg_format", "collate_tensor_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_float_fn", "collate_int_fn", "collate_str_fn"]

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}")

# NumPy dtypes that cannot become tensors: bytes, unicode and object arrays.
_np_str_obj_array_pattern = re.compile(r"[SaUO]")


def _is_numpy_value(x) -> bool:
    """A NumPy array or scalar that is not a NumPy string."""
    t = type(x)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "bytes_", "string_")


def _rebuild_mapping(elem, items: dict):
    """`items` in elem's mapping type when that type can be rebuilt, else a plain dict."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(items)
            return clone
        return type(elem)(items)
    except TypeError:       # the mapping type does not support copy/update or construction
        return items


def _rebuild_sequence(elem, items: list):
    """`items` in elem's sequence type when that type can be rebuilt, else a list."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(elem)(items)
    except TypeError:       # the sequence type cannot be rebuilt from a list
        return items


def default_convert(data):
    """Convert NumPy arrays and numbers inside `data` to tensors, without batching.

    Used when auto-batching is off (`batch_size=None`): containers are walked, tuples become
    lists, and anything else is returned unchanged.
    """
    if isinstance(data, Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and _np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):        # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate_tensor_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    shape = (len(batch),) + tuple(elem.shape)
    if elem.device.type == "cpu" and shared_memory_enabled(prod(shape) * elem.dtype.itemsize):
        return stack(batch, 0, out=empty_shared(shape, elem.dtype))   # in a worker: no copy
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=dt.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    np.memmap: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def collate(batch, *, collate_fn_map=None):
    """Collate `batch` with per-type functions from `collate_fn_map` (exact type first, then
    the first isinstance match), recursing into mappings, namedtuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for types, fn in collate_fn_map.items():
            if isinstance(elem, types):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {k: collate([d[k] for d in batch],
                                                  collate_fn_map=collate_fn_map)
                                       for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):        # namedtuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map)
                           for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        return _rebuild_sequence(elem, columns)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_rows(tensors, index) -> list | None:
    """default_collate of samples `index` of a TensorDataset over `tensors`, with one
    index_select per tensor instead of a select per sample and a stack: the same batch
    (contiguous, in shared memory inside a worker). None where that shortcut does not give
    exactly the same result (views, tensors that record gradients, negative indices)."""
    if not index or min(index) < 0:
        return None
    for t in tensors:
        if t.requires_grad or t.device.type != "cpu" or not t.is_contiguous():
            return None
    rows = tensor(list(index), dtype=dt.int64)
    batch = []
    for t in tensors:
        shape = (len(index),) + tuple(t.shape[1:])
        if shared_memory_enabled(prod(shape) * t.dtype.itemsize):
            batch.append(index_select(t, 0, rows, out=empty_shared(shape, t.dtype)))
        else:
            batch.append(index_select(t, 0, rows))
    return batch


def default_collate(batch):
    """Stack a list of samples into a batch (the DataLoader's default `collate_fn`).

    Tensors and NumPy arrays are stacked along a new first dim; Python floats give float64,
    ints int64 and bools bool; strings are kept as a list; dicts, namedtuples, tuples and
    lists are collated field by field (tuples come back as lists, as in torch).
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
