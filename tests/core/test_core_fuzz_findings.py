"""Storage behaviour the differential campaign (tests/fuzz) found different from PyTorch."""
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch


@pytest.mark.parametrize("T_name", ["glasstorch", "torch"])
def test_storage_resize_keeps_its_tensors_in_sync(T_name):
    T = gt if T_name == "glasstorch" else oracle_torch()
    x = T.arange(4.)
    view = x[1:]
    s = x.untyped_storage()
    s.resize_(64)
    x[0] = 9
    view[0] = 7
    assert x.tolist() == [9., 7., 2., 3.]
    assert x.untyped_storage().data_ptr() == s.data_ptr() == view.untyped_storage().data_ptr()
    assert s.nbytes() == 64


def test_negative_storage_size_is_refused():
    torch = oracle_torch()
    with pytest.raises(RuntimeError):
        torch.UntypedStorage(-1)
    with pytest.raises(RuntimeError, match="negative size"):
        gt.UntypedStorage(-1)
