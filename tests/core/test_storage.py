import pytest

import glasstorch as gt


def test_untyped_storage_basics():
    s = gt.UntypedStorage(8)
    assert s.nbytes() == len(s) == 8 and s.device == gt.device("cpu")
    s[0] = 7
    assert s[0] == 7 and s[-8] == 7
    with pytest.raises(IndexError):
        s[8]


def test_storage_element_access_sees_tensor_bytes():
    t = gt.tensor([1], dtype=gt.int32)
    assert [t.untyped_storage()[i] for i in range(4)] == [1, 0, 0, 0]


def test_resize_keeps_prefix_and_is_counted(quiet_gc):
    before = gt.memory.memory_allocated("cpu")
    s = gt.UntypedStorage(4)
    s[1] = 5
    s.resize_(16)
    assert s.nbytes() == 16 and s[1] == 5
    assert gt.memory.memory_allocated("cpu") - before == 16
    s.resize_(2)
    assert s[1] == 5 and s.nbytes() == 2
    with pytest.raises(RuntimeError):
        s.resize_(-1)


def test_from_numpy_storage_is_not_resizable():
    import numpy as np
    t = gt.from_numpy(np.zeros(3))
    with pytest.raises(RuntimeError, match="not resizable"):
        t.untyped_storage().resize_(100)


def test_meta_storage_has_no_data():
    s = gt.empty(3, device="meta").untyped_storage()
    assert s.nbytes() == 12 and s.data_ptr() == 0
    with pytest.raises(NotImplementedError):
        s[0]


def test_tensor_resize_grows_storage_and_set_shares_it():
    t = gt.zeros(2, 3)
    t.resize_(4, 4)
    assert t.shape == (4, 4) and t.stride() == (4, 1) and t.untyped_storage().nbytes() == 64
    u = gt.empty(0)
    u.set_(t)
    assert u.shape == t.shape and u.data_ptr() == t.data_ptr()
    s = gt.UntypedStorage(16)
    u.set_(s, 1, (2,), (1,))
    assert u.storage_offset() == 1 and u.shape == (2,)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        u.set_(s, 3, (2,), (1,))
    assert u.storage_offset() == 1    # a refused set_ changes nothing
