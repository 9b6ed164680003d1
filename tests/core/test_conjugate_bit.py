"""conj() as a lazily conjugated view, and the negative bit of its imaginary part, against
PyTorch: views, reads, writes through the bits, ops, autograd, save/load, dispatch modes."""
from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from tests.oracle import dispatch_module, oracle_torch


def _both():
    return (gt, oracle_torch())


def _values(t):
    """A tensor's values as NumPy, read the way a user reads them (through the bits)."""
    return np.array(t.detach().resolve_conj().resolve_neg().tolist(), dtype=complex)


def _same(a, b):
    assert list(a.shape) == list(b.shape)
    assert str(a.dtype).replace("torch.", "") == str(b.dtype).replace("torch.", "")
    np.testing.assert_allclose(_values(a), _values(b), rtol=1e-6, atol=1e-6)


def _complex(T, values=((1 + 2j, 3 - 4j), (-5 + 0.5j, 2j)), dtype="complex64"):
    return T.tensor(values, dtype=getattr(T, dtype))


# ---- conj is a view with the bit -------------------------------------------------------

def test_conj_is_a_view_sharing_storage_with_the_bit():
    for T in _both():
        x = _complex(T)
        c = x.conj()
        assert c.is_conj() and T.is_conj(c) and not x.is_conj()
        assert c._base is x and c.data_ptr() == x.data_ptr()
        assert c._version == x._version
        assert c.tolist() == [[1 - 2j, 3 + 4j], [-5 - 0.5j, -2j]]
        assert not c.conj().is_conj() and c.conj()._base is x
        real = T.tensor([1.0, 2.0])
        assert real.conj() is real and not real.conj().is_conj()


def test_resolve_conj_and_conj_physical_materialise():
    for T in _both():
        x = _complex(T)
        c = x.conj()
        r = c.resolve_conj()
        assert not r.is_conj() and r._base is None and r.data_ptr() != x.data_ptr()
        assert r.tolist() == c.tolist()
        assert x.resolve_conj() is x
        p = x.conj_physical()
        assert not p.is_conj() and p.tolist() == c.tolist()
        assert c.conj_physical().tolist() == x.tolist()


def test_reads_see_conjugated_values():
    gtorch = oracle_torch()
    for T in _both():
        c = _complex(T).conj()
        assert c[0, 1].item() == 3 + 4j
    assert repr(_complex(gt).conj()) == repr(_complex(gtorch).conj())
    assert str(_complex(gt).conj()[1]) == str(_complex(gtorch).conj()[1])


@pytest.mark.parametrize("make", [
    lambda T, c: c.numpy(),
    lambda T, c: c.imag.numpy(),
    lambda T, c: T.view_as_real(c),
    lambda T, c: c.view(T.float32),
    lambda T, c: c.view(T.complex64),
    lambda T, c: c.imag.view(T.int32),
    lambda T, c: c.__dlpack__(),
], ids=["numpy", "numpy-neg", "view_as_real", "view-dtype", "view-same-dtype",
        "view-dtype-neg", "dlpack"])
def test_refusals_match_pytorch(make):
    errors = []
    for T in _both():
        with pytest.raises((RuntimeError, BufferError)) as info:
            make(T, _complex(T).conj())
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


# ---- views keep the bit ----------------------------------------------------------------

VIEWS = {
    "view": lambda c: c.view(4), "t": lambda c: c.t(), "getitem": lambda c: c[0],
    "slice": lambda c: c[:, 1:], "reshape": lambda c: c.reshape(4),
    "expand": lambda c: c[0].expand(3, 2), "unsqueeze": lambda c: c.unsqueeze(0),
    "transpose": lambda c: c.transpose(0, 1), "narrow": lambda c: c.narrow(1, 0, 1),
    "diagonal": lambda c: c.diagonal(), "detach": lambda c: c.detach(),
    "data": lambda c: c.data, "permute": lambda c: c.permute(1, 0),
    "select": lambda c: c.select(1, 1), "unbind": lambda c: c.unbind(0)[1],
    "as_strided": lambda c: c.as_strided((2,), (3,), 0), "alias": lambda c: c[...],
    "flatten": lambda c: c.flatten(), "squeeze": lambda c: c.unsqueeze(1).squeeze(1),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_of_a_conj_view_keep_the_bit(name):
    results = []
    for T in _both():
        x = _complex(T)
        v = VIEWS[name](x.conj())
        assert v.is_conj() and v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        results.append(v)
    _same(*results)


def test_mH_adjoint_and_H_are_conj_views():
    for T in _both():
        x = _complex(T)
        for v in (x.mH, x.adjoint(), x.H):
            assert v.is_conj() and v.data_ptr() == x.data_ptr()
            assert v.tolist() == x.t().conj_physical().tolist()


@pytest.mark.parametrize("name", ["clone", "contiguous", "to", "to-copy", "empty_like",
                                  "sum", "cat", "add", "mul", "neg", "exp", "abs"])
def test_new_tensors_from_a_conj_view(name):
    make = {
        "clone": lambda T, c: c.clone(), "contiguous": lambda T, c: c.t().contiguous(),
        "to": lambda T, c: c.to(T.complex128), "to-copy": lambda T, c: c.to(T.complex64,
                                                                             copy=True),
        "empty_like": lambda T, c: T.zeros_like(c), "sum": lambda T, c: c.sum(0),
        "cat": lambda T, c: T.cat([c, c]), "add": lambda T, c: c + 1,
        "mul": lambda T, c: c * c.t(), "neg": lambda T, c: -c, "exp": lambda T, c: c.exp(),
        "abs": lambda T, c: c.abs(),
    }[name]
    results = []
    for T in _both():
        out = make(T, _complex(T).conj())
        assert not out.is_conj() and not out.is_neg()
        results.append(out)
    _same(*results)


def test_contiguous_of_a_contiguous_conj_view_is_itself():
    for T in _both():
        c = _complex(T).conj()
        assert c.contiguous() is c and c.to(T.complex64) is c


# ---- writes go through the bit ---------------------------------------------------------

WRITES = {
    "add_": lambda T, x, v: v.add_(1 + 1j),
    "mul_": lambda T, x, v: v.mul_(2j),
    "mul_-self": lambda T, x, v: x.mul_(v),
    "add_-base": lambda T, x, v: v.add_(x),
    "out=": lambda T, x, v: T.mul(x, 2, out=v),
    "out=-reads-itself": lambda T, x, v: T.add(x, v, out=x),
    "copy_": lambda T, x, v: v.copy_(x),
    "copy_-from-conj": lambda T, x, v: x.copy_(v),
    "copy_-real": lambda T, x, v: v.copy_(T.tensor([1.0, -2.0])),
    "setitem": lambda T, x, v: v.__setitem__(0, 5j),
    "setitem-slice": lambda T, x, v: v.__setitem__(slice(None), T.tensor([1j, 2 + 1j])),
    "fill_": lambda T, x, v: v.fill_(3 - 1j),
    "zero_": lambda T, x, v: v.zero_(),
    "conj_physical_": lambda T, x, v: v.conj_physical_(),
    "real-set": lambda T, x, v: setattr(v, "real", T.tensor([7.0, 8.0])),
    "imag-add_": lambda T, x, v: v.imag.add_(1),
    "imag-set": lambda T, x, v: setattr(v, "imag", T.tensor([7.0, 8.0])),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_writes_into_a_conj_view_store_the_conjugate(name):
    results = []
    for T in _both():
        x = T.tensor([1 + 2j, 3 - 4j], dtype=T.complex64)
        v = x.conj()
        version = x._version
        out = WRITES[name](T, x, v)
        assert x._version > version
        if name in ("add_", "mul_", "out=", "copy_", "fill_", "zero_"):
            assert out is v and out.is_conj()
        results.append((x, v))
    _same(results[0][0], results[1][0])
    _same(results[0][1], results[1][1])


def test_copy_between_tensors_with_different_bits():
    for T in _both():
        src = T.tensor([1 + 2j, 3 - 4j])
        for dst_bits in ("", "conj", "neg", "conj+neg"):
            for src_bits in ("", "conj", "neg"):
                dst = T.zeros(2, dtype=T.complex64)
                d = dst.conj() if "conj" in dst_bits else dst
                d = T._neg_view(d) if "neg" in dst_bits else d
                s = src.conj() if src_bits == "conj" else (
                    T._neg_view(src) if src_bits == "neg" else src)
                d.copy_(s)
                assert d.tolist() == s.tolist(), (dst_bits, src_bits)


# ---- the negative bit ------------------------------------------------------------------

def test_imag_of_a_conj_view_is_a_negative_view():
    for T in _both():
        x = _complex(T)
        im = x.conj().imag
        assert im.is_neg() and T.is_neg(im) and not im.is_conj()
        assert im._base is x and im.tolist() == [[-2.0, 4.0], [-0.5, -2.0]]
        assert not x.conj().real.is_neg() and x.conj().real.tolist() == x.real.tolist()
        r = im.resolve_neg()
        assert not r.is_neg() and r.tolist() == im.tolist() and im.resolve_conj() is im


def test_neg_view_of_a_real_tensor():
    gtorch = oracle_torch()
    for T in _both():
        x = T.tensor([1.0, -2.0, 3.0])
        n = T._neg_view(x)
        assert n.is_neg() and n.data_ptr() == x.data_ptr() and n.tolist() == [-1.0, 2.0, -3.0]
        assert not n._neg_view().is_neg() and n.neg().tolist() == x.tolist()
        n.add_(1)
        assert x.tolist() == [0.0, -3.0, 2.0]
    assert repr(gt._neg_view(gt.tensor([1.0, 2.0]))) == repr(
        gtorch._neg_view(gtorch.tensor([1.0, 2.0])))


# ---- the fuzzing campaign's reproducers --------------------------------------------------

def test_campaign_alias_of_conj():
    # `alias: conj`: PyTorch's conj() result aliases its input; glasstorch's copied
    for T in _both():
        v0 = T.tensor([(-0.08 + 1.06j)], dtype=T.complex64).reshape((1,))
        v1 = v0.conj()
        assert v1.untyped_storage().data_ptr() == v0.untyped_storage().data_ptr()


def test_campaign_conj_then_inplace_on_the_base():
    results = []
    for T in _both():
        v0 = T.tensor([1 + 2j, 3j, -1 - 1j], dtype=T.complex64)
        v1 = v0.conj()
        v0.mul_(v1)                   # v1 reads v0's new values afterwards
        results.append((v0, v1))
    _same(results[0][0], results[1][0])
    _same(results[0][1], results[1][1])


# ---- linear algebra --------------------------------------------------------------------

@pytest.mark.parametrize("form", ["conj@", "@conj", "mH@", "@mH", "both"])
def test_matmul_with_conj_operands(form):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    b = rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
    results = []
    for T in _both():
        x, y = T.tensor(a), T.tensor(b)
        results.append({"conj@": lambda: x.conj() @ y, "@conj": lambda: x @ y.conj(),
                        "mH@": lambda: x.mH @ x, "@mH": lambda: y @ y.mH,
                        "both": lambda: y.mH @ x.mH}[form]())
    _same(*results)


# ---- autograd --------------------------------------------------------------------------

def test_gradients_through_conj_views_match_pytorch():
    grads = []
    for T in _both():
        x = T.tensor([1 + 2j, 3j, -1 + 0.5j], dtype=T.complex128, requires_grad=True)
        w = T.tensor([1 + 1j, 2, -1j], dtype=T.complex128)
        c = x.conj()
        assert type(c.grad_fn).__name__ == "ConjBackward0"
        im = c.imag
        assert [type(n).__name__ for n, _ in im.grad_fn.next_functions] == ["NegViewBackward0"]
        ((c * w).real.sum() + (im * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum()
         + (c @ x).abs()).backward()
        grads.append(x.grad)
    _same(*grads)


def test_inplace_on_a_conj_view_records_copyslices():
    grads = []
    for T in _both():
        y = T.tensor([1 + 2j, 3j], dtype=T.complex128, requires_grad=True)
        z = y * 1
        v = z.conj()
        v.mul_(2j)
        assert type(v.grad_fn).__name__ == "ConjBackward0"
        assert type(z.grad_fn).__name__ == "CopySlices"
        (z * T.tensor([1 - 1j, 2 + 1j], dtype=T.complex128)).real.sum().backward()
        grads.append(y.grad)
    _same(*grads)


def test_gradcheck_on_complex128_through_conj_and_neg_views():
    x = gt.tensor([[1 + 2j, 3j], [-1 + 0.5j, 2 - 1j]], dtype=gt.complex128,
                  requires_grad=True)
    assert gt.autograd.gradcheck(
        lambda t: (t.conj() * t.t()).sum().abs() + t.conj().imag.sum() + (t.mH @ t).real.sum(),
        (x,))
    assert gt.autograd.gradgradcheck(lambda t: (t.conj() * t).real.sum(), (x,))


# ---- save / load -----------------------------------------------------------------------

def test_save_writes_pytorchs_metadata_and_load_restores_the_bits():
    torch = oracle_torch()
    buf = io.BytesIO()
    x = gt.tensor([1 + 2j, 3 - 4j])
    gt.save({"c": x.conj(), "x": x}, buf)
    loaded = torch.load(io.BytesIO(buf.getvalue()))
    assert loaded["c"].is_conj() and loaded["c"].tolist() == [1 - 2j, 3 + 4j]
    assert loaded["c"].untyped_storage().data_ptr() == loaded["x"].untyped_storage().data_ptr()
    buf = io.BytesIO()
    torch.save([torch.tensor([1 + 2j]).conj(), torch.tensor([1 + 2j]).conj().imag], buf)
    c, im = gt.load(io.BytesIO(buf.getvalue()))
    assert c.is_conj() and c.tolist() == [1 - 2j]
    assert im.is_neg() and im.tolist() == [-2.0]
    buf = io.BytesIO()
    gt.save(gt.tensor([1 + 2j]).conj().imag, buf)
    back = torch.load(io.BytesIO(buf.getvalue()))
    assert back.is_neg() and back.tolist() == [-2.0]


# ---- dispatch modes --------------------------------------------------------------------

def test_a_dispatch_mode_sees_pytorchs_ops():
    seen = {}
    for T in _both():
        names = seen[T.__name__] = []

        class Recorder(dispatch_module(T).TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                names.append(str(func))
                return func(*args, **(kwargs or {}))

        x = T.tensor([1 + 2j, 3j])
        with Recorder():
            c = x.conj()
            c.imag
            c + 1
            c.resolve_conj()
            c.mul_(2)
    assert seen["glasstorch"] == seen["torch"]


# ---- hypothesis: shapes, strides, views ------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       transpose=st.booleans(), step=st.integers(1, 2), inplace=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_conj_views_over_strided_layouts(shape, transpose, step, inplace, seed):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    results = []
    for T in _both():
        x = T.tensor(data, dtype=T.complex128)
        v = x.t() if transpose and x.dim() == 2 else x
        v = v[..., ::step].conj()
        assert v.is_conj()
        if inplace:
            v.mul_(1 - 2j).add_(1)
        out = (v * 2 + v.sum()).exp()
        results.append((x, v, out, v.imag))
    for a, b in zip(*results):
        _same(a, b)
