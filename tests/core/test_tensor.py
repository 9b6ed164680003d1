"""The data model: metadata, contiguity, storage sharing, NumPy interop, conversions."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from glasstorch.core.shape import (is_contiguous, is_non_overlapping_and_dense,
                                   view_strides)
from oracle import assert_same, oracle_torch


def test_metadata_of_a_fresh_tensor():
    t = gt.empty(2, 1, 3)
    assert t.shape == (2, 1, 3) and isinstance(t.shape, gt.Size)
    assert repr(t.shape) == "torch.Size([2, 1, 3])"
    assert t.stride() == (3, 3, 1) and t.stride(-1) == 1 and t.size(0) == 2
    assert t.dim() == t.ndim == 3 and t.numel() == 6 and t.nbytes == 24 and t.itemsize == 4
    assert t.storage_offset() == 0 and t.is_contiguous()


def _error_of(call):
    try:
        call()
    except Exception as e:        # noqa: BLE001  (the type and text are what is compared)
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("query", ["size", "stride"])
@pytest.mark.parametrize("dim", [0, -1, 1, -2])
def test_size_and_stride_of_a_dim_of_a_0_dim_tensor_are_torchs_index_error(query, dim):
    torch = oracle_torch()
    ours = _error_of(lambda: getattr(gt.tensor(3.0), query)(dim))
    assert ours == _error_of(lambda: getattr(torch.tensor(3.0), query)(dim))
    assert ours == ("IndexError", f"Dimension specified as {dim} but tensor has no dimensions")
    assert gt.tensor(3.0).size() == () and gt.tensor(3.0).sum(0).item() == 3.0   # dims wrap


_DTYPES = ["float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int64",
           "int32", "int16", "int8", "uint8", "bool", "uint16"]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("dtype", _DTYPES)
def test_expand_to_fewer_dims_names_the_tensors_type_as_torch(dtype, device):
    """PyTorch names the type in C++ (CPUBoolType, MetaFloatType), and its Python layer
    writes the legacy class's name for the eight scalar types that have one on CPU."""
    torch = oracle_torch()

    def error(T):
        return _error_of(lambda: T.empty(2, 3, dtype=getattr(T, dtype), device=device)
                         .expand(3))
    assert error(gt) == error(torch)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
@pytest.mark.parametrize("self_shape, src_shape, target", [
    ((3,), (2, 3), None), ((3,), (2,), None), ((2, 1), (2, 3), None),
    ((2, 3), None, (4, 3, 2)), ((3,), None, (-1, 4)), ((2, 3), None, (3,))])
def test_broadcast_errors_of_copy_expand_and_addmm_are_torchs(dtype, self_shape, src_shape,
                                                             target):
    """copy_ checks as TensorIterator does; expand reports the last mismatching dim."""
    torch = oracle_torch()

    def error(T):
        d = getattr(T, dtype)
        if src_shape is not None:
            return _error_of(lambda: T.zeros(self_shape, dtype=d).copy_(T.ones(src_shape,
                                                                              dtype=d)))
        return _error_of(lambda: T.zeros(self_shape, dtype=d).expand(target))
    assert error(gt) == error(torch) and error(gt) is not None
    if dtype != "bool":
        def addmm(T):
            d = getattr(T, dtype)
            return _error_of(lambda: T.addmm(T.ones(2, 3, 4, dtype=d), T.ones(2, 2, dtype=d),
                                             T.ones(2, 2, dtype=d)))
        assert addmm(gt) == addmm(torch)


@pytest.mark.parametrize("shape, target", [
    ((1, 3), (-2, 3)), ((1,), (-5,)), ((1, 1), (2, -7)), ((1, 3), (4, -2, 3)),
    ((3,), (-2, 3)), ((3,), (-1, 3)), ((1, 3), (-2, 4)), ((0, 3), (-2, 3)),
    ((), (-1,)), ((), (2, -1)), ((), (3, -5))])
def test_expand_to_a_negative_size_raises_as_torch(shape, target):
    """A size below -1 where the tensor's size is 1 passes PyTorch's dim checks and fails
    its element count (numel: integer multiplication overflow); a mismatch elsewhere and a
    leading -1 are reported first (except on a 0-d tensor, where any negative size fails the
    count). Before, glasstorch made a tensor of negative shape."""
    torch = oracle_torch()
    ours, theirs = (_error_of(lambda T=T: T.ones(shape).expand(*target)) for T in (gt, torch))
    assert ours is not None and ours[0] == theirs[0] == "RuntimeError"
    if "numel" in theirs[1]:
        assert ours[1].endswith("(numel: integer multiplication overflow)")
    else:
        assert ours == theirs


def test_size_slicing_and_arithmetic_stay_sizes():
    s = gt.Size([2, 3, 4])
    assert isinstance(s[1:], gt.Size) and s[1:] == (3, 4)
    assert isinstance(s + (5,), gt.Size) and s.numel() == 24


def test_data_ptr_is_storage_address_plus_offset():
    base = gt.zeros(10)
    view = base[3:7] if hasattr(gt.Tensor, "__getitem__") else base.narrow(0, 3, 4)
    assert view.storage_offset() == 3
    assert view.data_ptr() - base.data_ptr() == 12
    assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert view.untyped_storage().nbytes() == 40 and view.nbytes == 16


def test_cpu_storage_is_64_byte_aligned_and_empty_is_null():
    for n in (1, 3, 17, 1000):
        assert gt.empty(n).data_ptr() % 64 == 0
    assert gt.empty(0).data_ptr() == 0 and gt.empty(0).untyped_storage().nbytes() == 0


@pytest.mark.parametrize("shape,stride,expected", [
    ((0, 5), (7, 3), True), ((2, 1, 3), (3, 100, 1), True), ((3, 4), (0, 1), False),
    ((3, 1), (1, 0), True), ((1, 4), (1, 1), True), ((2, 3), (1, 2), False)])
def test_contiguity_rules(shape, stride, expected):
    assert is_contiguous(shape, stride) is expected
    t = gt.empty_strided(shape, stride)
    assert t.is_contiguous() is expected
    T = oracle_torch()
    assert T.empty_strided(shape, stride).is_contiguous() is expected


def test_channels_last_strides_and_checks_match_torch():
    T = oracle_torch()
    for shape in [(2, 3, 4, 5), (2, 3, 1, 1), (2, 1, 4, 5)]:
        ours = gt.empty(*shape, memory_format=gt.channels_last)
        theirs = T.empty(*shape, memory_format=T.channels_last)
        assert ours.stride() == theirs.stride()
        assert ours.is_contiguous() == theirs.is_contiguous()
        assert ours.is_contiguous(memory_format=gt.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        gt.empty(2, 3, memory_format=gt.channels_last)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_view_strides_agree_with_torch(shape, data):
    T = oracle_torch()
    base = T.empty(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    src = base.permute(*perm)
    numel = src.numel()
    divisors = [d for d in range(1, numel + 1) if numel % d == 0]
    first = data.draw(st.sampled_from(divisors))
    target = (first, numel // first)
    expected = view_strides(tuple(src.shape), src.stride(), target)
    try:
        theirs = src.view(target).stride()
    except RuntimeError:
        theirs = None
    assert expected == theirs


def test_non_overlapping_and_dense():
    assert is_non_overlapping_and_dense((2, 3), (1, 2))
    assert not is_non_overlapping_and_dense((2, 3), (0, 1))
    assert not is_non_overlapping_and_dense((2, 3), (6, 2))


def test_numpy_shares_memory_both_ways():
    t = gt.tensor([1.0, 2.0, 3.0])
    a = t.numpy()
    a[0] = 9
    assert t.tolist() == [9.0, 2.0, 3.0]
    n = np.arange(6.0).reshape(2, 3)
    f = gt.from_numpy(n)
    assert f.dtype is gt.float64 and f.stride() == (3, 1)
    n[1, 2] = -1
    assert f.tolist()[1][2] == -1
    f.fill_(7)
    assert (n == 7).all()


def test_from_numpy_keeps_strides_and_rejects_negative_strides():
    n = np.arange(6.0).reshape(2, 3)[:, ::2]
    assert gt.from_numpy(n).stride() == (3, 2)
    assert gt.from_numpy(n).tolist() == n.tolist()
    with pytest.raises(ValueError, match="negative"):
        gt.from_numpy(np.arange(6.0)[::-1])
    with pytest.raises(TypeError):
        gt.from_numpy(np.array(["a"]))


def test_bfloat16_roundtrips_through_numpy():
    import ml_dtypes
    n = np.array([1.5, -2.25], dtype=ml_dtypes.bfloat16)
    t = gt.from_numpy(n)
    assert t.dtype is gt.bfloat16 and t.tolist() == [1.5, -2.25]
    assert t.numpy().dtype == ml_dtypes.bfloat16


def test_numpy_array_outlives_the_tensor():
    a = gt.tensor([1.0, 2.0]).numpy()
    import gc
    gc.collect()
    assert a.tolist() == [1.0, 2.0]


def test_numpy_refuses_tensors_that_require_grad():
    t = gt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Use tensor.detach\\(\\).numpy\\(\\)"):
        t.numpy()


def test_item_tolist_and_python_conversions():
    assert gt.tensor(2.5).item() == 2.5 and type(gt.tensor(3).item()) is int
    assert gt.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert float(gt.tensor([1.5])) == 1.5 and int(gt.tensor(7)) == 7
    assert bool(gt.tensor([1])) and not bool(gt.tensor(0.0))
    assert [0, 1, 2][gt.tensor(1)] == 1
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
        gt.ones(2).item()
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(gt.ones(2))
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(gt.tensor(1.0))
    assert len(gt.ones(4, 2)) == 4


def test_version_counter_is_shared_by_views_and_detach_but_not_data():
    a = gt.zeros(4)
    v = a.view(2, 2)
    d = a.detach()
    data = a.data
    assert a._version == 0
    a.add_(1)
    assert v._version == d._version == 1
    assert data._version == 0
    d.mul_(2)
    assert a._version == 2


def test_views_record_root_base_and_detach_is_not_a_view():
    a = gt.zeros(12)
    v = a.view(3, 4).transpose(0, 1)
    assert v._base is a and v._is_view()
    assert a.view(12)._base is a
    assert a.detach()._base is None and not a.detach()._is_view()


def test_requires_grad_rules():
    t = gt.ones(2, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating point and complex dtype"):
        gt.ones(2, dtype=gt.int64).requires_grad_()


def test_grad_assignment_checks_shape_and_dtype():
    t = gt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="assign a gradient of size '\\[3\\]'"):
        t.grad = gt.ones(3)
    with pytest.raises(RuntimeError, match="dtype"):
        t.grad = gt.ones(2, dtype=gt.float64)
    t.grad = gt.zeros(2)
    assert t.grad.tolist() == [0.0, 0.0]


def test_deprecated_storage_warns_and_untyped_storage_does_not():
    t = gt.ones(3)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        t.storage()
    assert t.untyped_storage().nbytes() == 12


def test_transpose_properties_match_torch():
    T = oracle_torch()
    x, y = gt.ones(2, 3), T.ones(2, 3)
    assert_same(x.T, y.T)
    assert_same(x.mT, y.mT)
    b, c = gt.ones(4, 2, 3), T.ones(4, 2, 3)
    assert_same(b.mT, c.mT)
    with pytest.raises(RuntimeError, match="tensor.mT is only supported on matrices"):
        gt.ones(3).mT


def test_type_names_like_torch():
    assert gt.ones(1).type() == "torch.FloatTensor"
    assert gt.ones(1).long().type() == "torch.LongTensor"
    assert gt.ones(1).type(gt.float64).dtype is gt.float64


def test_pickle_and_copy_keep_values_dtype_strides_and_flags():
    import copy
    import pickle
    t = gt.tensor([[1.5, 2.0], [3.0, 4.0]], dtype=gt.bfloat16).t()
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is gt.bfloat16 and u.tolist() == t.tolist() and u.stride() == t.stride()
    assert u.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
    g = gt.ones(2, requires_grad=True)
    assert copy.copy(g).requires_grad and copy.deepcopy(g).requires_grad
    with pytest.raises(RuntimeError, match="meta"):
        pickle.dumps(gt.empty(2, device="meta"))


@pytest.mark.parametrize("lib", ["glasstorch", "torch"])
def test_deepcopy_shares_copied_storages_and_refuses_non_leaves_as_torch(lib):
    """Tensors over one storage deep-copy onto one new storage (at their offsets, not as
    views), a plain tensor's version becomes 1 (PyTorch's set_), a Parameter's stays 0, a
    conj() view's copy holds the conjugated values, the user's attributes are copied deeply,
    and a non-leaf is refused."""
    import copy
    T = gt if lib == "glasstorch" else oracle_torch()
    t = T.arange(6.0).reshape(2, 3)
    t.note = [1]
    a, b = copy.deepcopy([t, t[1]])
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert a.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
    assert b._base is None and b.storage_offset() == 3 and b.tolist() == [3.0, 4.0, 5.0]
    assert (a._version, b._version) == (1, 1) and a.note == [1] and a.note is not t.note
    assert copy.deepcopy(T.nn.Parameter(T.ones(2)))._version == 0
    z = copy.deepcopy(T.tensor([1 + 2j, 3j]).conj())
    assert not z.is_conj() and z.tolist() == [1 - 2j, -3j]
    x = T.ones(2, requires_grad=True)
    assert copy.deepcopy(x).requires_grad
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


@pytest.mark.parametrize("element", [2, 5, 2.0, True, "t2", "t12", "a", "list", "np"])
def test_in_a_tensor_is_torchs(element):
    """`x in t` compares elementwise (numbers and tensors, broadcast) and refuses the rest
    with PyTorch's error."""
    torch = oracle_torch()

    def result(T):
        made = {"t2": lambda: T.tensor(2), "t12": lambda: T.tensor([1, 2]),
                "list": lambda: [1], "np": lambda: np.int64(1)}
        e = made[element]() if element in made else element
        try:
            return e in T.tensor([1, 2])
        except Exception as ex:       # noqa: BLE001  (compared by type and text)
            return type(ex).__name__, str(ex)
    assert result(gt) == result(torch)


def _layouts(T):
    cl = T.channels_last
    return {"contiguous": T.ones(2, 3, 4), "channels_last": T.ones(2, 3, 4, 5).to(memory_format=cl),
            "transposed": T.ones(2, 3).t(), "permuted": T.ones(2, 3, 4).permute(2, 0, 1),
            "size_1": T.ones(2, 1, 4), "size_1_transposed": T.ones(1, 3).t(),
            "expanded": T.ones(3, 1).expand(3, 4), "scalar": T.tensor(1.0),
            "equal_strides": T.empty_strided((2, 2), (1, 1)),
            "size_1_channels": T.ones(2, 1, 4, 5).to(memory_format=cl), "vector": T.ones(5),
            "stepped": T.ones(4, 6)[:, ::2], "permuted_4d": T.ones(2, 3, 4, 5).permute(3, 1, 0, 2),
            "empty_channels_last": T.ones(0, 3, 2, 2).to(memory_format=cl)}


@pytest.mark.parametrize("name", sorted(_layouts(gt)))
def test_dim_order_and_its_ambiguity_checks_are_torchs(name):
    """dim_order sorts dims by stride as PyTorch's elementwise ops order an output's, and
    its ambiguity checks (True, or memory formats of which exactly one must hold) refuse
    with PyTorch's two errors."""
    torch = oracle_torch()

    def orders(T):
        t = _layouts(T)[name]
        checks = (False, True, [T.contiguous_format], [T.channels_last],
                  [T.contiguous_format, T.channels_last])
        return [_error_of(lambda c=c: t.dim_order(ambiguity_check=c)) or
                t.dim_order(ambiguity_check=c) for c in checks]
    assert orders(gt) == orders(torch)


@pytest.mark.parametrize("shape, fmt, transpose", [
    ((2, 3), "contiguous_format", (0, 1)), ((2, 3, 4, 5), "contiguous_format", (2, 3)),
    ((2, 1, 4, 5), "channels_last", None), ((0, 3, 2, 2), "channels_last", None),
    ((2, 0, 2, 2), "channels_last", None), ((2, 3, 4, 5), "channels_last", None),
    ((2, 1, 4, 5, 6), "channels_last_3d", None), ((2, 3, 4, 1), "channels_last", None)])
def test_to_and_contiguous_with_a_memory_format_are_torchs(shape, fmt, transpose):
    """to(memory_format=) returns the tensor itself where PyTorch's suggest_memory_format
    names that format (a transposed matrix under contiguous_format), else a copy in it;
    channels-last strides multiply sizes as they are (0 too), and an empty tensor is
    channels-last contiguous only with such strides, as in PyTorch."""
    torch = oracle_torch()

    def layout(T):
        x = T.ones(*shape)
        if transpose:
            x = x.transpose(*transpose)
        f = getattr(T, fmt)
        y, z = x.to(memory_format=f), x.contiguous(memory_format=f)
        e = T.empty(shape, memory_format=f) if fmt != "contiguous_format" else x
        return (y is x, y.stride(), z is x, z.stride(), x.is_contiguous(memory_format=f),
                e.stride(), e.is_contiguous(memory_format=f))
    assert layout(gt) == layout(torch)
