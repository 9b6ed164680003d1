"""explain(t) checked against strides and NumPy; GLASSTORCH_DEBUG's levels."""
import numpy as np
import pytest

import glasstorch
from glasstorch.debug import explain, get_debug_level, set_debug_level


def _expected_index_map(t):
    """Storage element of each element, from the strides (NumPy's own view arithmetic)."""
    base = np.arange(t.untyped_storage().nbytes() // t.element_size())
    return np.lib.stride_tricks.as_strided(
        base[t.storage_offset():], t.shape, [s * base.itemsize for s in t.stride()])


@pytest.mark.parametrize("make", [
    lambda a: a,
    lambda a: a.t(),
    lambda a: a[1:, ::2],
    lambda a: a[:, 1],
    lambda a: a.view(2, 6)[1:, 2:5],
    lambda a: a[0].unsqueeze(0).expand(3, 4),
    lambda a: a.flip(0),          # a copy: its own storage
])
def test_index_map_follows_strides(make):
    a = glasstorch.arange(12.0).view(3, 4)
    t = make(a)
    e = explain(t)
    np.testing.assert_array_equal(e.index_map, _expected_index_map(t))
    assert (e.shape, e.stride, e.offset) == (tuple(t.shape), t.stride(), t.storage_offset())
    # the drawn elements hold t's values
    flat = t.untyped_storage()
    values = np.frombuffer(bytes(flat), dtype=np.float32)
    np.testing.assert_array_equal(values[e.index_map], t.numpy())
    assert e.storage_bytes == t.untyped_storage().nbytes()
    assert e.data_ptr == t.untyped_storage().data_ptr()


def test_sharing_and_bytes():
    big = glasstorch.zeros(1000)
    small = big[:3]
    e = explain(small)
    assert [tuple(o.shape) for o in e.sharing] == [(1000,)]
    assert (e.shown_bytes, e.kept_alive_bytes) == (12, 4000)
    assert "no other live tensor" in str(explain(glasstorch.zeros(1000)[:3]))
    lone = explain(glasstorch.zeros(1000)[:3])
    assert lone.sharing == [] and "4000" not in str(lone) and ".clone()" in str(lone)
    assert "shows 12 bytes, keeps alive 3.91 KiB" in str(lone)


def test_expanded_tensor_reports_repeats():
    e = explain(glasstorch.ones(3).expand(2, 3))
    assert e.covered == [0, 1, 2] and e.shown_bytes == 24 and e.kept_alive_bytes == 12
    assert "some share one storage element" in str(e)


def test_explain_drawing():
    a = glasstorch.arange(6.0).view(2, 3)
    text = str(explain(a.t()))
    assert "shape (3, 2), stride (1, 3), storage offset 0" in text
    assert "[[0, 3],\n   [1, 4],\n   [2, 5]]" in text
    assert "shown:   # # # # # #" in text
    with pytest.raises(TypeError, match="expected a Tensor"):
        explain(np.ones(3))


def test_debug_levels(capsys):
    x = glasstorch.ones(2, 3, requires_grad=True)
    opt = glasstorch.optim.SGD([x], lr=0.1)
    try:
        set_debug_level(3)
        assert get_debug_level() == 3
        (x * 2).sum().backward()
        opt.step()
    finally:
        set_debug_level(0)
    err = capsys.readouterr().err
    assert "aten::mul.Tensor  DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU)  " \
           "([2, 3]/[3, 1] float32)" in err
    assert "  AutogradCPU: autograd_kernel" in err
    assert "backward: MulBackward0" in err
    assert "record_function: Optimizer.step#SGD.step" in err
    assert "aten::_fused_sgd_" in err
    glasstorch.ones(2).add(1)
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="from 0 to 4"):
        set_debug_level(5)


def test_debug_level_from_environment(monkeypatch, capsys):
    """What `import glasstorch` does with GLASSTORCH_DEBUG set (it calls _from_environment)."""
    from glasstorch.debug import levels
    monkeypatch.setenv("GLASSTORCH_DEBUG", "4")
    try:
        levels._from_environment()
        glasstorch.ones(3).neg()
    finally:
        set_debug_level(0)
    lines = capsys.readouterr().err.splitlines()
    assert any(ln.startswith("aten::neg  DispatchKeySet(CPU") for ln in lines)
    assert any(ln.startswith("memory: alloc 12 bytes at 0x") for ln in lines)


def test_explain_meta_tensor_holds_no_bytes():
    e = explain(glasstorch.empty(2, 3, device="meta").t())
    np.testing.assert_array_equal(e.index_map, [[0, 3], [1, 4], [2, 5]])
    assert e.kept_alive_bytes == 0 and "no data (meta: sizes only)" in str(e)


def test_bad_debug_level_in_the_environment(monkeypatch):
    from glasstorch.debug import levels
    monkeypatch.setenv("GLASSTORCH_DEBUG", "verbose")
    with pytest.raises(ValueError, match="GLASSTORCH_DEBUG: expected an integer from 0 to 4"):
        levels._from_environment()
    assert get_debug_level() == 0
