"""Shape and stride arithmetic: broadcasting, contiguity, view compatibility, bounds checks.

Pure functions over tuples of ints; no tensors. Strides are in elements, as in PyTorch.
"""
from __future__ import annotations

import operator
from math import prod

from .dtype import type_in_messages


class Size(tuple):
    """torch.Size: a tuple of ints that prints as `torch.Size([2, 3])`."""

    __slots__ = ()

    def __repr__(self):
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        return prod(self)

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))


def as_shape(size) -> tuple:
    """Normalise `(2, 3)`, `[2, 3]`, `Size` or `((2, 3),)` varargs into a tuple of ints."""
    if len(size) == 1 and not isinstance(size[0], int):
        size = size[0]
    try:
        return tuple(map(operator.index, size))       # an int is its own index
    except TypeError:
        raise TypeError(f"expected a sequence of integers as the size, but got {size!r}") from None


def check_nonnegative(shape) -> None:
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")


_strides_cache: dict = {}


def contiguous_strides(shape) -> tuple:
    """Row-major strides; size-1 and size-0 dimensions still get their computed stride."""
    r = _strides_cache.get(shape)
    if r is None:
        r = _compute_contiguous_strides(shape)
        if len(_strides_cache) < 4096:
            _strides_cache[tuple(shape)] = r
    return r


def _compute_contiguous_strides(shape) -> tuple:
    strides = [1] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def channels_last_strides(shape) -> tuple:
    """NHWC physical order for an NCHW (or NCDHW) logical shape. Sizes multiply as they
    are, 0 included, as PyTorch's (its contiguous strides count a 0 as 1)."""
    if len(shape) == 4:
        order = (1, 3, 2, 0)
    elif len(shape) == 5:
        order = (1, 4, 3, 2, 0)
    else:
        raise RuntimeError("required rank 4 tensor to use channels_last format" if len(shape) < 5
                           else "required rank 5 tensor to use channels_last_3d format")
    strides = [0] * len(shape)
    acc = 1
    for d in order:
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def is_contiguous(shape, strides) -> bool:
    """PyTorch's rule: empty is contiguous; size-1 dimensions are ignored."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def is_channels_last(shape, strides) -> bool:
    """Strides match NHWC order (C, W, H, N from fastest), size-1 dimensions ignored; as
    PyTorch's, also when the tensor is empty (unlike contiguity, which every empty tensor
    has)."""
    if len(shape) not in (4, 5):
        return False
    order = (1, 3, 2, 0) if len(shape) == 4 else (1, 4, 3, 2, 0)
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def strides_like_channels_last(shape, strides) -> bool:
    """PyTorch's `suggest_memory_format` test: strides increasing in NHWC order (C, W, H, N
    from fastest), gaps allowed; ambiguous layouts (N's stride equal to C's, a zero C
    stride, an empty dimension) count as NCHW. Looser than `is_channels_last` on gaps,
    stricter on size-1 dimensions."""
    if len(shape) not in (4, 5) or strides[1] == 0:
        return False
    low = 0
    for d in ((1, 3, 2, 0) if len(shape) == 4 else (1, 4, 3, 2, 0)):
        if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * shape[d] if shape[d] > 1 else strides[d]
    return True


def is_non_overlapping_and_dense(shape, strides) -> bool:
    """Some permutation of the dimensions is contiguous (every element has its own byte)."""
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    dims = sorted(range(len(shape)), key=lambda d: (strides[d], shape[d]))
    expected = 1
    for d in dims:
        if shape[d] == 1:
            continue
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def has_internal_overlap(shape, strides) -> bool:
    """True when a stride-0 (expanded) dimension makes two elements share memory (never for
    an empty tensor, which has no elements)."""
    return 0 not in shape and any(st == 0 and sz > 1 for sz, st in zip(shape, strides))


def check_no_partial_overlap(out, inputs) -> None:
    """Refuse an input tensor that shares some but not all of the written tensor's memory,
    as TensorIterator does: the result would depend on the order elements are written in."""
    storage = out._storage
    for x in inputs:
        if x.__class__ is out.__class__ and x._storage is storage and x is not out and \
                _partially_overlaps(out, x):
            raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                "performing the operation.")


def _partially_overlaps(a, b) -> bool:
    """PyTorch's overlap status PARTIAL: both dense (else it cannot tell, and allows it),
    byte ranges that intersect without being the same elements in the same order."""
    if 0 in a._shape or 0 in b._shape or not is_non_overlapping_and_dense(
            a._shape, a._stride) or not is_non_overlapping_and_dense(b._shape, b._stride):
        return False
    a_start, b_start = a._offset * a.dtype.itemsize, b._offset * b.dtype.itemsize
    a_end = a_start + a.numel() * a.dtype.itemsize
    b_end = b_start + b.numel() * b.dtype.itemsize
    if a_start == b_start and a_end == b_end and a._stride == b._stride:
        return False                                     # the same elements: allowed
    return a_start < b_end and b_start < a_end


def wrap_dim(dim, ndim: int, *, scalar_ok: bool = True) -> int:
    """Turn a possibly negative dim into an index, with PyTorch's IndexError when out of range."""
    dim = operator.index(dim)
    n = max(ndim, 1) if scalar_ok else ndim
    if n == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}],"
                         f" but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims, ndim: int) -> tuple:
    out = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        repeated = next(d for i, d in enumerate(out) if d in out[:i])
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    return out


def broadcast_shapes2(a: tuple, b: tuple) -> tuple:
    """Broadcast two shapes, with TensorIterator's message naming tensors a and b."""
    if a == b:
        return a
    n = max(len(a), len(b))
    out = [1] * n
    for i in range(n - 1, -1, -1):      # from the right: PyTorch reports the last mismatch
        sa = a[i - n + len(a)] if i - n + len(a) >= 0 else 1
        sb = b[i - n + len(b)] if i - n + len(b) >= 0 else 1
        if sa == sb or sb == 1:
            out[i] = sa
        elif sa == 1:
            out[i] = sb
        else:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b "
                               f"({sb}) at non-singleton dimension {i}")
    return tuple(out)


def broadcast_shapes(*shapes) -> Size:
    """torch.broadcast_shapes, with its error text."""
    shapes = [tuple(s) if not isinstance(s, int) else (s,) for s in shapes]
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for idx, s in enumerate(shapes):
        for i in range(1, len(s) + 1):
            size = s[-i]
            if size == 1 or size == out[-i]:
                continue
            if out[-i] == 1:
                out[-i] = size
            else:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {size} at -{i}! Mismatching"
                    f" argument at index {idx} had {tuple(s)}; but expected shape should be "
                    f"broadcastable to {out}")
    return Size(out)


def expand_strides(shape, strides, target, dtype, device_type: str) -> tuple:
    """Strides that expand (shape, strides) to `target`, with expand's errors (which name
    the tensor's type: its `dtype` and `device_type`)."""
    ndim = len(target)
    if ndim < len(shape):
        raise RuntimeError(
            f"expand({type_in_messages(dtype, device_type)}{{{list(shape)}}}, size="
            f"{list(target)}): the number of sizes provided ({ndim}) must be greater or equal "
            f"to the number of dimensions in the tensor ({len(shape)})")
    if not shape:           # a 0-d tensor (a total's gradient): every dim is new, stride 0
        if ndim and min(target) < 0:    # PyTorch fails its element count here, -1 or not
            _raise_negative_size(target, next(i for i in range(ndim) if target[i] < 0))
        return tuple(target), (0,) * ndim
    out_shape, out_strides = [], []
    lead = ndim - len(shape)
    for i, t in enumerate(target):
        j = i - lead
        if j < 0:
            if t < 0:
                _raise_expand_error(shape, target)
            out_shape.append(t)
            out_strides.append(0)
            continue
        size = shape[j]
        if t == -1 or t == size:
            out_shape.append(size)
            out_strides.append(strides[j])
        elif size == 1 and t >= 0:
            out_shape.append(t)
            out_strides.append(0)
        else:
            _raise_expand_error(shape, target)
    return tuple(out_shape), tuple(out_strides)


def _raise_expand_error(shape, target):
    """expand's error for the last dim that cannot expand, as PyTorch checks from the last;
    else for a negative size where the tensor's size is 1."""
    lead = len(target) - len(shape)
    for i in range(len(target) - 1, -1, -1):
        t = target[i]
        if i < lead:
            if t == -1:
                raise RuntimeError(f"The expanded size of the tensor ({t}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
        elif t != -1 and t != shape[i - lead] and shape[i - lead] != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({t}) must match the existing size "
                f"({shape[i - lead]}) at non-singleton dimension {i}.  Target sizes: "
                f"{list(target)}.  Tensor sizes: {list(shape)}")
    # a negative size for a size-1 dim passes PyTorch's checks and fails its element count
    _raise_negative_size(target, next(i for i in range(len(target)) if target[i] < -1))


def _raise_negative_size(target, i: int):
    raise RuntimeError(f"The expanded size of the tensor ({target[i]}) at dimension {i} is "
                       f"negative (numel: integer multiplication overflow)")


def infer_size(shape, numel: int) -> tuple:
    """Resolve a single -1 in a view/reshape target, with PyTorch's errors."""
    shape = tuple(shape)
    infer = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
        else:
            known *= s
    if infer is not None:
        if known == 0 or numel % known != 0:
            if known == 0:
                raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)}"
                                   " because the unspecified dimension size -1 can be any value"
                                   " and is ambiguous")
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:infer] + (numel // known,) + shape[infer + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def view_strides(old_shape, old_strides, new_shape):
    """Strides for viewing (old_shape, old_strides) as new_shape, or None if impossible.

    PyTorch's computeStride: the old dimensions split into chunks that are contiguous among
    themselves, and each chunk must be tiled exactly by a run of new dimensions.
    """
    numel = prod(old_shape)
    if numel == 0:
        return contiguous_strides(new_shape) if old_shape != new_shape else tuple(old_strides)
    if not old_shape:
        return (1,) * len(new_shape) if prod(new_shape) == 1 else None
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def check_in_bounds(shape, strides, offset: int, itemsize: int, storage_nbytes: int) -> None:
    """Refuse metadata that would reach outside the storage (as_strided, set_, views)."""
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    for st in strides:
        if st < 0:
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                               f"got strides: {list(strides)}")
    if 0 in shape:
        return
    needed = (offset + sum((sz - 1) * st for sz, st in zip(shape, strides)) + 1) * itemsize
    if needed > storage_nbytes:
        raise RuntimeError(
            f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage offset "
            f"{offset}, and itemsize {itemsize} requiring a storage size of {needed} are out "
            f"of bounds for storage of size {storage_nbytes}")


def dense_strides_like(shape, strides) -> tuple:
    """Contiguous strides in the same dimension order as `strides` (preserve_format), as
    PyTorch infers them: an insertion sort from the last dim inward that moves a dim only
    past dims with a larger stride (or an equal stride and a smaller size); a stride of 0
    (an expanded dim) tells nothing, so dims are never moved across one."""
    n = len(shape)
    perm = list(range(n - 1, -1, -1))          # perm[0]: the innermost dim
    for i in range(1, n):
        moving = i
        for j in range(i - 1, -1, -1):
            a, b = perm[j], perm[moving]
            if strides[a] == 0 or strides[b] == 0:
                continue
            if strides[a] > strides[b] or (strides[a] == strides[b] and shape[a] > shape[b]):
                perm[j], perm[moving] = b, a
                moving = j
            else:
                break
    out = [0] * n
    acc = 1
    for d in perm:
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


def iterator_strides(shape, operands) -> tuple:
    """The strides TensorIterator gives a new output of `shape` over its inputs.

    `operands` lists each input as (shape, strides), or None for a Python number. When
    every operand has the output's shape: row-major if all are contiguous, channels-last if
    all are that, their common strides if those are dense. Otherwise the inputs' dimension
    order, decided by the first operand whose strides tell two dimensions apart, so
    `x.t() + 1` stays column-major.
    """
    contiguous = contiguous_strides(shape)
    same_shape = all(op is not None and op[0] == shape for op in operands)
    if same_shape and operands:
        strides = [tuple(st) for _, st in operands]
        if all(is_contiguous(shape, st) for st in strides):
            return contiguous
        if len(shape) in (4, 5) and all(is_channels_last(shape, st) for st in strides):
            return channels_last_strides(shape)
        first = strides[0]
        if all(st == first for st in strides) and is_non_overlapping_and_dense(shape, first):
            return first
    perm = _dimension_order(shape, [op for op in operands if op is not None])
    out, acc = [0] * len(shape), 1
    for d in perm:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def _dimension_order(shape, operands) -> list:
    """Dimensions from innermost to outermost, as TensorIterator's reorder_dimensions sorts
    them (`_stride_comparison`)."""
    return _insertion_sorted(len(shape), _stride_comparison(shape, operands))


def _stride_comparison(shape, operands):
    """should_swap(d0, d1): 1 where dimension d0 goes outside d1, -1 where it stays inside,
    0 where the operands cannot tell: a dimension moves inside another when the first
    operand that can tell them apart has a smaller stride there (or an equal stride and a
    smaller size). Broadcast dimensions (stride 0) tell nothing; a size-1 dimension that
    is not broadcast keeps its stride."""
    n = len(shape)
    strides = []
    for s, st in operands:
        lead = n - len(s)
        strides.append([0 if i < lead or (s[i - lead] == 1 and shape[i] != 1)
                        else st[i - lead] for i in range(n)])

    def should_swap(d0, d1):
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0
    return should_swap


def _insertion_sorted(n: int, should_swap) -> list:
    """range(n) from innermost to outermost: an insertion sort that leaves dimensions the
    comparison cannot order where they are."""
    perm = list(range(n - 1, -1, -1))
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def memory_order(shape, strides, check: bool = False) -> tuple:
    """(the dimensions from outermost to innermost in memory, whether that order is
    ambiguous (looked at when `check`: two neighbours the strides cannot order)), as
    PyTorch's Tensor.dim_order: row-major or channels-last when exactly one of those
    holds, else the strides' order."""
    n = len(shape)
    contiguous, channels_last = is_contiguous(shape, strides), is_channels_last(shape, strides)
    if n < 2 or (contiguous and not channels_last):
        return list(range(n)), False
    if channels_last and not contiguous:
        return [0, *range(2, n), 1], False
    should_swap = _stride_comparison(shape, [(shape, strides)])
    perm = _insertion_sorted(n, should_swap)
    ambiguous = check and any(should_swap(a, b) != -1 for a, b in zip(perm, perm[1:]))
    return perm[::-1], ambiguous
