"""DLPack: zero-copy exchange with NumPy and PyTorch, both ways (torch.utils.dlpack)."""
import numpy as np
import pytest

import glasstorch as torch
from glasstorch.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack


def _shares(t, a):
    return t.data_ptr() == a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int8,
                                   torch.uint8, torch.bool, torch.complex64, torch.float16])
def test_numpy_reads_a_tensor_without_copying(dtype):
    t = torch.arange(24).reshape(4, 6).to(dtype)[1:, ::2]
    a = np.from_dlpack(t)
    assert a.dtype == t.numpy().dtype and a.shape == (3, 3)
    assert a.strides == tuple(s * t.element_size() for s in t.stride())
    assert _shares(t, a)
    np.testing.assert_array_equal(a, t.numpy())


def test_writes_are_seen_both_ways():
    t = torch.zeros(2, 3)
    a = np.from_dlpack(t)
    a[1, 2] = 5.0
    assert t[1, 2].item() == 5.0
    back = torch.from_dlpack(a)
    back[0, 0] = -1.0
    assert t[0, 0].item() == -1.0
    alias = torch.from_dlpack(t)            # a glasstorch tensor is a producer too
    alias[0, 1] = 3.0
    assert t[0, 1].item() == 3.0 and alias.data_ptr() == t.data_ptr()


def test_tensor_from_numpy_keeps_strides_offsets_and_memory():
    base = np.arange(20.0).reshape(4, 5)
    a = base[1:, 1::2].T
    t = torch.from_dlpack(a)
    assert t.shape == a.shape and _shares(t, a)
    assert t.stride() == tuple(s // 8 for s in a.strides)
    np.testing.assert_array_equal(t.numpy(), a)
    del a, base                  # the tensor keeps the memory alive
    assert t.sum().item() == pytest.approx(sum([6, 8, 11, 13, 16, 18]))


def test_read_only_array_is_shared_as_in_pytorch():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = torch.from_dlpack(a)
    assert _shares(t, a) and t.tolist() == [0.0, 1.0, 2.0]


def test_capsule_is_consumed_once():
    capsule = to_dlpack(torch.arange(3))
    assert "dltensor" in repr(capsule)
    assert torch.from_dlpack(capsule).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="consumed only once"):
        torch.from_dlpack(capsule)
    with pytest.raises(RuntimeError, match="invalid capsule"):
        from_dlpack([1, 2])


def test_device_and_errors_match_pytorch():
    torch_ = pytest.importorskip("torch")
    assert torch.ones(2).__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    assert torch.ones(2).__dlpack_device__() == torch_.ones(2).__dlpack_device__()
    assert [(m.name, m.value) for m in DLDeviceType] == [
        (m.name, m.value) for m in torch_.utils.dlpack.DLDeviceType]
    for lib in (torch, torch_):
        with pytest.raises(BufferError, match="require gradient"):
            lib.ones(2, requires_grad=True).__dlpack__()
        with pytest.raises(AssertionError, match="stream should be None on cpu"):
            lib.ones(2).__dlpack__(stream=3)
        with pytest.raises(TypeError, match="stream must be"):
            lib.ones(2).__dlpack__(stream="x")
    assert "dltensor_versioned" in repr(torch.ones(2).__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" not in repr(torch.ones(2).__dlpack__())


def test_copy_argument():
    t = torch.arange(4.0)
    a = np.from_dlpack(t, copy=True)
    assert not _shares(t, a)
    c = torch.from_dlpack(np.arange(3.0), copy=True)
    c2 = np.arange(3.0)
    assert not _shares(torch.from_dlpack(c2, copy=True), c2) and c.tolist() == [0, 1, 2]


@pytest.mark.parametrize("name", ["float32", "float64", "int32", "int64", "bool", "bfloat16",
                                  "float16", "complex128", "uint8"])
def test_pytorch_shares_memory_both_ways(name):
    torch_ = pytest.importorskip("torch")
    ours = torch.arange(12).reshape(3, 4).to(getattr(torch, name))[:, 1::2]
    theirs = torch_.from_dlpack(ours)
    assert theirs.dtype == getattr(torch_, name)
    assert theirs.data_ptr() == ours.data_ptr()
    assert theirs.stride() == ours.stride() and tuple(theirs.shape) == tuple(ours.shape)
    assert theirs.tolist() == ours.tolist()

    source = torch_.arange(12).reshape(3, 4).to(getattr(torch_, name))[1:, ::2]
    back = torch.from_dlpack(source)
    assert back.dtype == getattr(torch, name)
    assert back.data_ptr() == source.data_ptr() and back.stride() == source.stride()
    assert back.tolist() == source.tolist()


def test_bfloat16_writes_reach_pytorch():
    torch_ = pytest.importorskip("torch")
    source = torch_.zeros(3, dtype=torch_.bfloat16)
    ours = torch.from_dlpack(source)
    ours[1] = 2.5
    assert source.tolist() == [0.0, 2.5, 0.0]


def test_cuda_array_interface_is_absent_on_cpu():
    assert not hasattr(torch.ones(2), "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="non-CUDA tensor type: torch.FloatTensor"):
        torch.ones(2).__cuda_array_interface__
