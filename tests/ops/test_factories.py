import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

DATA = [[1, 2], [1.0, 2], [True, 2], [1, 2j], [[1, 2], [3, 4]], [], [[]], 3, 2.5, True,
        [True, False], [[1.5], [2.5]]]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_infers_dtype_and_shape_like_torch(data):
    T = oracle_torch()
    assert_same(gt.tensor(data), T.tensor(data))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float16", "bfloat16",
                                   "float64", "bool", "complex128"])
def test_tensor_with_explicit_dtype_matches_torch(dtype):
    T = oracle_torch()
    data = [[1.7, -1.2], [0.0, 3.0]] if dtype != "uint8" else [[1.7, 200.0], [0.0, 3.0]]
    assert_same(gt.tensor(data, dtype=getattr(gt, dtype)),
                T.tensor(data, dtype=getattr(T, dtype)), rtol=1e-2)


def test_tensor_from_numpy_keeps_dtype_and_copies():
    n = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = gt.tensor(n)
    n[0, 0] = 100
    assert t.dtype is gt.int32 and t.tolist()[0][0] == 0


def test_tensor_from_tensor_warns_and_copies():
    a = gt.ones(2)
    with pytest.warns(UserWarning, match="detach\\(\\).clone\\(\\)"):
        b = gt.tensor(a)
    assert b.data_ptr() != a.data_ptr()


def test_ragged_and_invalid_data_errors():
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 1\\)"):
        gt.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        gt.tensor([1, "a"])


def test_as_tensor_shares_numpy_memory_and_returns_self_for_tensors():
    n = np.zeros(3, dtype=np.float32)
    t = gt.as_tensor(n)
    n[1] = 5
    assert t.tolist() == [0, 5, 0]
    assert gt.as_tensor(t) is t
    assert gt.as_tensor([1, 2]).dtype is gt.int64


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty"])
def test_size_factories_match_torch(factory):
    T = oracle_torch()
    with pytest.raises(TypeError, match="missing 1 required positional"):
        getattr(gt, factory)()
    for args in [(2, 3), ((2, 3),), ([4],), (0,), ((),)]:
        ours = getattr(gt, factory)(*args)
        theirs = getattr(T, factory)(*args)
        assert ours.shape == tuple(theirs.shape) and ours.stride() == theirs.stride()
        assert ours.dtype is gt.float32 and ours._version == 0
        if factory != "empty":
            assert_same(ours, theirs)
    assert getattr(gt, factory)(2, dtype=gt.int32).dtype is gt.int32


def test_full_infers_dtype_from_the_value():
    T = oracle_torch()
    for value in (1, True, 1.5, 2j):
        assert_same(gt.full((2, 2), value), T.full((2, 2), value))


def test_like_factories_preserve_dense_strides_like_torch():
    T = oracle_torch()
    ours, theirs = gt.empty(2, 3, 4).permute(2, 0, 1), T.empty(2, 3, 4).permute(2, 0, 1)
    for f in ("empty_like", "zeros_like", "ones_like"):
        assert getattr(gt, f)(ours).stride() == getattr(T, f)(theirs).stride()
    assert gt.zeros_like(ours, memory_format=gt.contiguous_format).stride() == (6, 3, 1)
    sliced, tsliced = gt.empty(4, 6)[:, ::2] if hasattr(gt.Tensor, "__getitem__") else None, \
        T.empty(4, 6)[:, ::2]
    if sliced is not None:
        assert gt.empty_like(sliced).stride() == T.empty_like(tsliced).stride()
    assert_same(gt.full_like(ours, 7), T.full_like(theirs, 7))


def test_new_factories_take_dtype_and_device_from_self():
    base = gt.zeros(2, dtype=gt.int32)
    assert base.new_ones(3).dtype is gt.int32 and base.new_ones(3).tolist() == [1, 1, 1]
    assert base.new_zeros((2, 2)).shape == (2, 2)
    assert base.new_full((2,), 5).tolist() == [5, 5]
    assert base.new_tensor([1.5], dtype=gt.float64).dtype is gt.float64
    assert base.new_empty(4).shape == (4,)


def test_negative_sizes_are_refused():
    with pytest.raises(RuntimeError, match="negative dimension"):
        gt.zeros(2, -1)


def test_empty_strided_and_meta_factories():
    t = gt.empty_strided((2, 3), (1, 2))
    assert t.stride() == (1, 2) and t.untyped_storage().nbytes() == 24
    m = gt.zeros(2, 3, device="meta")
    assert m.device.type == "meta" and m.shape == (2, 3)


def test_legacy_tensor_constructor():
    assert gt.Tensor(2, 3).shape == (2, 3) and gt.Tensor(2, 3).dtype is gt.float32
    assert gt.Tensor([1, 2]).dtype is gt.float32 and gt.Tensor([1, 2]).tolist() == [1.0, 2.0]


def test_requires_grad_flag_on_factories():
    assert gt.zeros(2, requires_grad=True).requires_grad
    assert gt.tensor([1.0], requires_grad=True).requires_grad


def test_legacy_constructor_tells_data_from_sizes_like_torch():
    T = oracle_torch()
    for args in [((2, 3),), ([2, 3],), (gt.Size([2, 3]),), (2, 3)]:
        targs = tuple(T.Size(a) if isinstance(a, gt.Size) else a for a in args)
        ours, theirs = gt.Tensor(*args), T.Tensor(*targs)
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype is gt.float32


def test_cpu_factories_called_directly_are_still_seen_and_follow_the_default_device():
    """zeros, ones, empty, full, arange and the *_like / new_* factories call their CPU
    kernel directly on a plain thread; a dispatch mode still sees the ATen op, a default device
    elsewhere still decides, and every dtype still gets exact zeros and ones."""
    from oracle import op_log
    x = gt.ones(2, 3)
    with op_log() as log:
        gt.zeros(2), gt.ones(2), gt.empty(2), gt.full((2,), 3.0), gt.ones_like(x)
        x.new_zeros(4), gt.arange(3), gt.arange(1, 3)
    assert log.seen == ["aten.zeros.default", "aten.ones.default",
                        "aten.empty.memory_format", "aten.full.default",
                        "aten.ones_like.default", "aten.new_zeros.default",
                        "aten.arange.default", "aten.arange.start"]
    gt.set_default_device("meta")
    try:
        assert gt.zeros(2).device.type == "meta" and gt.ones(2).is_meta
        assert gt.zeros(2, device="cpu").device.type == "cpu"
    finally:
        gt.set_default_device(None)
    for d in (gt.bool, gt.int8, gt.uint8, gt.float16, gt.bfloat16, gt.complex64, gt.float64):
        assert gt.ones(3, dtype=d).tolist() == [1, 1, 1] and gt.zeros(2, dtype=d).tolist() == [0, 0]
        assert gt.ones_like(x, dtype=d).tolist() == [[1] * 3] * 2
    assert gt.ones_like(x.t()).stride() == x.t().stride()
    assert not gt.zeros_like(gt.ones(2, requires_grad=True)).requires_grad
