"""copy_, fill_, clone, contiguous, to() and the dtype shorthands."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch


def test_copy_broadcasts_and_converts():
    T = oracle_torch()
    dst, tdst = gt.zeros(3, 4, dtype=gt.int32), T.zeros(3, 4, dtype=T.int32)
    dst.copy_(gt.tensor([1.7, -2.5, 3.0, 4.9]))
    tdst.copy_(T.tensor([1.7, -2.5, 3.0, 4.9]))
    assert_same(dst, tdst)
    assert dst._version == 1


def test_copy_into_a_view_writes_the_base():
    base = gt.zeros(3, 3)
    base.t().select(0, 1).copy_(gt.tensor([1.0, 2.0, 3.0]))
    assert base.tolist() == [[0, 1, 0], [0, 2, 0], [0, 3, 0]]


def test_copy_errors_leave_destination_unchanged():
    dst = gt.zeros(3)
    with pytest.raises(RuntimeError):
        dst.copy_(gt.ones(4))
    assert dst.tolist() == [0, 0, 0] and dst._version == 0
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        gt.zeros(3, 1).expand(3, 4).copy_(gt.ones(3, 4))


def test_copy_complex_to_real_warns():
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        gt.zeros(2).copy_(gt.tensor([1 + 2j, 3j]))


def test_fill_accepts_numbers_and_zero_dim_tensors():
    t = gt.empty(2, 2)
    t.fill_(gt.tensor(3.0))
    assert t.tolist() == [[3, 3], [3, 3]]
    t.zero_()
    assert t.tolist() == [[0, 0], [0, 0]] and t._version == 2
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        t.fill_(gt.ones(2))


@pytest.mark.parametrize("make", [
    lambda m: m.zeros(2, 3, 4).permute(2, 0, 1),
    lambda m: m.zeros(4, 6).t(),
    lambda m: m.zeros(3, 1).expand(3, 4),
    lambda m: m.zeros(2, 3, 4, 5).contiguous(memory_format=m.channels_last),
])
def test_clone_and_contiguous_strides_match_torch(make):
    T = oracle_torch()
    ours, theirs = make(gt), make(T)
    assert ours.clone().stride() == theirs.clone().stride()
    assert ours.clone(memory_format=gt.contiguous_format).stride() == \
        theirs.clone(memory_format=T.contiguous_format).stride()
    assert ours.contiguous().stride() == theirs.contiguous().stride()
    assert ours.contiguous().is_contiguous()


def test_contiguous_returns_self_when_already_contiguous_and_copies_otherwise():
    a = gt.zeros(2, 3)
    assert a.contiguous() is a
    t = a.t()
    c = t.contiguous()
    assert c is not t and c.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
    assert c._base is None and c._version == 0 and a.clone()._version == 0


def test_to_returns_self_when_nothing_changes():
    a = gt.ones(2)
    assert a.to(gt.float32) is a and a.to("cpu") is a and a.float() is a
    assert a.to(gt.float32, copy=True) is not a
    b = a.to(gt.float64)
    assert b.dtype is gt.float64 and b.tolist() == [1.0, 1.0]
    assert a.to(gt.zeros(1, dtype=gt.int64)).dtype is gt.int64
    assert a.to(gt.device("cpu")) is a and a.type_as(a) is a and a.double().double() is not a
    assert a.to("meta").device.type == "meta" and a.to(gt.device("meta")).device.type == "meta"


def test_shortcut_conversions_still_reach_modes_and_subclasses():
    """x.float(), x.type_as(y) and x.to(dtype or device) skip to()'s parsing, not the
    __torch_function__ protocol."""
    from glasstorch.overrides import TorchFunctionMode
    seen = []

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))
    a = gt.ones(2)
    with Watch():
        assert a.float() is a and a.type_as(a) is a and a.to("cpu") is a
    assert seen == ["float", "type_as", "to"]

    class Sub(gt.Tensor):
        pass
    assert type(a.as_subclass(Sub).float()) is Sub


@pytest.mark.parametrize("method,dtype", [("float", "float32"), ("double", "float64"),
                                          ("half", "float16"), ("bfloat16", "bfloat16"),
                                          ("long", "int64"), ("int", "int32"),
                                          ("short", "int16"), ("char", "int8"),
                                          ("byte", "uint8"), ("bool", "bool")])
def test_dtype_shorthands_convert_like_torch(method, dtype):
    T = oracle_torch()
    values = [-1.7, 0.0, 2.5, 300.0]
    ours = getattr(gt.tensor(values), method)()
    theirs = getattr(T.tensor(values), method)()
    assert str(ours.dtype) == str(theirs.dtype) == f"torch.{dtype}"
    if dtype not in ("uint8", "int8"):   # out-of-range float->int casts are undefined
        assert_same(ours, theirs, rtol=1e-2)


def test_to_meta_and_type_as():
    m = gt.ones(2, 3).to("meta")
    assert m.device.type == "meta" and m.shape == (2, 3)
    assert gt.ones(2).type_as(gt.zeros(1, dtype=gt.int32)).dtype is gt.int32


def test_clone_of_meta_tensor():
    m = gt.empty(2, 3, device="meta").t().clone()
    assert m.device.type == "meta" and m.stride() == (1, 3)


def test_out_of_range_float_to_int_cast_is_not_an_error():
    out = gt.tensor([np.nan, np.inf]).long()
    assert out.dtype is gt.int64 and out.shape == (2,)


LAYOUTS = {
    "permuted with a size-1 dim": lambda L: L.empty(3, 1, 4).permute(2, 1, 0),
    "dense, size-1 dim with a large stride": lambda L: L.empty(2, 3, 4).permute(1, 0, 2)[:, ::2],
    "transposed size-1 dims": lambda L: L.empty(1, 3, 1, 2).transpose(0, 2),
    "expanded": lambda L: L.empty(4, 1).expand(4, 3),
    "sliced then permuted": lambda L: L.empty(2, 3, 4)[:, 1:, :].permute(2, 0, 1),
    "as_strided size-1 dims": lambda L: L.empty(5, 1, 1).as_strided((5, 1, 1), (1, 7, 9)),
    "sliced channels_last": lambda L: L.empty(2, 3, 4, 5).to(
        memory_format=L.channels_last)[:, :, ::2],
    "stepped transposed": lambda L: L.empty(3, 4).t()[::2],
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_preserve_format_strides_match_torch(name):
    """Dense inputs keep their exact strides; others get dense strides in their order."""
    torch = oracle_torch()
    ours, theirs = LAYOUTS[name](gt), LAYOUTS[name](torch)
    assert gt.empty_like(ours).stride() == torch.empty_like(theirs).stride()
    assert ours.clone().stride() == theirs.clone().stride()


def test_functional_copy_fill_and_zero_as_aten_ops():
    """aten.copy / fill / zero, the functional forms graph tools call: a new tensor laid out
    as self (compared with PyTorch), the inputs untouched, gradients through fill and zero."""
    torch = pytest.importorskip("torch")

    def results(lib):
        a = lib.ones(2, 3).t()
        x = lib.zeros(2, 3, requires_grad=True)
        out = [lib.ops.aten.copy(a, lib.tensor([[1.0, 2.0]])),
               lib.ops.aten.fill.Scalar(x, 3.0), lib.ops.aten.fill.Tensor(x, lib.tensor(2.0)),
               lib.ops.aten.zero(x)]
        sum(t.sum() for t in out[1:]).backward()
        return ([(t.tolist(), t.stride(), t.requires_grad) for t in out],
                a.tolist(), x.grad.tolist())
    assert results(gt) == results(torch)


def test_fill_with_a_tensor_value_overwrites_the_history():
    """y.fill_(v) for a tensor v: y's old values get no gradient and v gets the sum
    (FillBackward3), as in PyTorch; before, y kept its old history."""
    torch = pytest.importorskip("torch")

    def grads(lib, x_requires_grad):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=x_requires_grad)
        v = lib.tensor(2.0, requires_grad=True)
        y = x.clone()
        y.fill_(v)
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return (type(y.grad_fn).__name__, y.tolist(), None if x.grad is None else x.grad.tolist(),
                v.grad.item())
    for x_requires_grad in (True, False):       # only the value requiring grad: fill_.Tensor
        assert grads(gt, x_requires_grad) == grads(torch, x_requires_grad)


def test_gradcheck_of_fill_tensor_lift_fresh_copy_and_functional_fill():
    """float64 gradchecks on non-contiguous inputs: fill_ with a tensor value (the value's
    gradient is the sum), lift_fresh_copy (identity), aten.fill.Tensor."""
    from glasstorch.autograd import gradcheck
    x = gt.arange(12, dtype=gt.float64).reshape(3, 4).t().requires_grad_()
    v = gt.tensor(0.5, dtype=gt.float64, requires_grad=True)
    assert not x.is_contiguous()

    def fill_tensor(x, v):
        y = x * 1
        y.fill_(v)
        return y * x                      # x's gradient through the product only
    assert gradcheck(fill_tensor, (x, v))
    assert gradcheck(lambda x: gt.ops.aten.lift_fresh_copy(x) * 2, (x,))
    assert gradcheck(lambda x, v: gt.ops.aten.fill.Tensor(x, v) * x, (x, v))
