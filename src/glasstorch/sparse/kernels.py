"""NumPy kernels of the sparse layouts: conversions between COO, CSR/CSC, BSR/BSC and
dense arrays, coalescing, and the sparse-times-dense product. They take and return arrays
only; sparse/ops.py wraps them as operators."""
from __future__ import annotations

import numpy as np


def coalesce(indices: np.ndarray, values: np.ndarray, sparse_shape) -> tuple:
    """Sorted, duplicate-free indices, and values with duplicates summed."""
    if indices.shape[1] == 0:
        return indices.copy(), values.copy()
    if len(sparse_shape) == 0:
        return indices[:, :1].copy(), values.sum(axis=0, keepdims=True)
    linear = np.ravel_multi_index(tuple(indices), tuple(sparse_shape))
    keys, inverse = np.unique(linear, return_inverse=True)
    out = np.zeros((len(keys),) + values.shape[1:], dtype=values.dtype)
    np.add.at(out, inverse.reshape(-1), values)
    return np.stack(np.unravel_index(keys, tuple(sparse_shape))).astype(np.int64), out


def coo_to_dense(indices, values, shape) -> np.ndarray:
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, tuple(indices), values)
    return out


def dense_to_coo(array: np.ndarray, sparse_dim: int) -> tuple:
    """Indices and values of the entries (or dense slices) that are not all zero."""
    lead = array.reshape(array.shape[:sparse_dim] + (-1,))
    mask = (lead != 0).any(axis=-1) if array.ndim > sparse_dim else array != 0
    if array.ndim > sparse_dim and lead.shape[-1] == 0:
        mask = np.zeros(array.shape[:sparse_dim], dtype=bool)
    where = np.nonzero(mask)
    indices = np.stack(where).astype(np.int64) if sparse_dim else np.zeros((0, 1), np.int64)
    values = array[where] if sparse_dim else array[None]
    return indices.reshape(sparse_dim, -1), np.ascontiguousarray(values)


def compress(major: np.ndarray, length: int) -> np.ndarray:
    """Compressed (crow/ccol) indices from sorted row (column) indices."""
    counts = np.bincount(major, minlength=length) if major.size else np.zeros(length, np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def expand(compressed: np.ndarray) -> np.ndarray:
    """Row (column) index of each entry from compressed indices."""
    return np.repeat(np.arange(len(compressed) - 1, dtype=np.int64), np.diff(compressed))


def dense_to_blocks(array: np.ndarray, blocksize, by_column: bool) -> tuple:
    """(compressed, plain, blocks) of the blocks of a 2-D array that are not all zero."""
    (rows, cols), (bh, bw) = array.shape[:2], blocksize
    tiles = array.reshape(rows // bh, bh, cols // bw, bw, *array.shape[2:]).swapaxes(1, 2)
    if by_column:
        tiles = tiles.swapaxes(0, 1)
    flat = tiles.reshape(tiles.shape[:2] + (-1,))
    r, c = np.nonzero((flat != 0).any(axis=-1))
    return compress(r, tiles.shape[0]), c.astype(np.int64), np.ascontiguousarray(tiles[r, c])


def blocks_to_dense(compressed, plain, blocks, shape, by_column: bool) -> np.ndarray:
    bh, bw = blocks.shape[1:3]
    grid = (shape[0] // bh, shape[1] // bw)
    tiles = np.zeros((grid[::-1] if by_column else grid) + blocks.shape[1:], dtype=blocks.dtype)
    tiles[expand(compressed), plain] = blocks
    if by_column:
        tiles = tiles.swapaxes(0, 1)
    return tiles.swapaxes(1, 2).reshape(tuple(shape))


def spmm(rows, cols, values, dense: np.ndarray, n_rows: int) -> np.ndarray:
    """(COO matrix given by rows, cols, values) @ dense, summing duplicates."""
    out = np.zeros((n_rows,) + dense.shape[1:], dtype=np.result_type(values, dense))
    if values.size:
        np.add.at(out, rows, values.reshape((-1,) + (1,) * (dense.ndim - 1)) * dense[cols])
    return out
