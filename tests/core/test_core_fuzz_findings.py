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


_LAYOUTS = {
    "gapped transpose": lambda T: T.arange(24.).reshape(4, 6).t()[::2],
    "expanded rows": lambda T: T.tensor([3., 1., 2.]).expand(2, 3),
    "expanded columns": lambda T: T.tensor([[3.], [1.]]).expand(2, 3),
    "expanded, transposed": lambda T: T.arange(6.).reshape(1, 2, 3).expand(2, 2, 3)
    .transpose(0, 2),
    "expanded middle": lambda T: T.arange(6.).reshape(2, 3)[:, None].expand(2, 4, 3),
    "expanded, permuted": lambda T: T.zeros(3, 1, 2).expand(3, 4, 2).permute(1, 2, 0),
}


@pytest.mark.parametrize("layout", sorted(_LAYOUTS))
def test_preserved_layout_of_non_dense_inputs(layout):
    """empty_like, clone, sort and argsort of a non-dense input get PyTorch's strides."""
    torch = oracle_torch()
    for T in (gt, torch):
        x = _LAYOUTS[layout](T)
        got = (T.empty_like(x).stride(), x.clone().stride(), T.sort(x)[0].stride(),
               T.argsort(x, 0).stride())
        if T is gt:
            ours = got
    assert ours == got
