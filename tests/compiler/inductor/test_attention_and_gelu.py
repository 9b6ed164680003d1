"""The transformer pieces of issue 16's compiled GPT step: scaled-dot-product attention
(values and gradients equal eager's, causal and with masks), GELU computed as eager computes
it, and values the graph returns computed and stored once."""
import numpy as np
import pytest

import glasstorch as torch
import glasstorch.nn.functional as F

from inductor_helpers import compiled


def _ulps(a, b):
    a, b = a.numpy(), b.numpy()
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def test_gelu_is_eagers_float32_formula_bit_for_bit_in_the_tails():
    """Eager's float32 erf is PyTorch's polynomial, not libm's: below x = -3 libm's erf
    gives outputs tens of percent away (0.5 (1 + erf) cancels); compiled equals eager."""
    x = torch.from_numpy(np.linspace(-12, 12, 24001, dtype=np.float32))
    gelu = compiled(F.gelu, x)
    got, want = gelu(x), F.gelu(x)
    tails = np.abs(x.numpy()) >= 3
    assert (_ulps(got, want)[tails] == 0).all()
    # near 0 the last bit of exp (libmvec's, NumPy's) moves the cdf by an ulp of 0.5
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=2.0 ** -22)


def test_gelu_backward_matches_eager_within_an_ulp_of_the_slope():
    rng = np.random.default_rng(0)
    x = torch.from_numpy((rng.standard_normal((64, 48)) * 4).astype(np.float32)).t()
    g = torch.from_numpy(rng.standard_normal((48, 64)).astype(np.float32))

    def backward(g, x):
        return torch.ops.aten.gelu_backward.default(g, x)
    got, want = compiled(backward, g, x)(g, x), backward(g, x)
    assert got.stride() == want.stride()
    bound = 2.0 ** -22 * np.abs(g.numpy()) * (1 + np.abs(x.numpy()))
    assert (np.abs(got.numpy() - want.numpy()) <= bound).all()
    assert (_ulps(got, want) == 0).mean() > 0.5


@pytest.mark.parametrize("mask", ["causal", "bool", "float"])
def test_attention_values_and_gradients_match_eager(mask):
    """Attention over heads split from one projection (non-contiguous q, k, v), compiled
    with its backward; dropout_p=0."""
    rng = np.random.default_rng(1)
    b, t, heads, d = 2, 12, 3, 8
    qkv_np = rng.standard_normal((b, t, 3 * heads * d)).astype(np.float32)
    bool_mask = torch.from_numpy(rng.random((t, t)) < 0.7) | torch.eye(t, dtype=torch.bool)
    float_mask = torch.from_numpy(rng.standard_normal((b, 1, t, t)).astype(np.float32))
    kwargs = {"causal": {"is_causal": True}, "bool": {"attn_mask": bool_mask},
              "float": {"attn_mask": float_mask}}[mask]

    def attention(qkv):
        q, k, v = (h.view(b, t, heads, d).transpose(1, 2)
                   for h in qkv.split(heads * d, dim=2))
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, **kwargs)

    results = []
    for fn in (attention, torch.compile(attention)):
        qkv = torch.from_numpy(qkv_np.copy()).requires_grad_()
        out = fn(qkv)
        out.backward(torch.from_numpy(np.cos(np.arange(out.numel(), dtype=np.float32))
                                      .reshape(out.shape)))
        results.append((out.detach().numpy(), qkv.grad.numpy()))
    (out, grad), (ref_out, ref_grad) = results[1], results[0]
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-5, atol=1e-5)


def test_a_returned_value_is_computed_and_stored_once():
    """A forward graph returns what its backward saves (the softmax here): it is stored
    once, the matrix product reading that same buffer."""
    x, v = torch.randn(4, 8, 8), torch.randn(4, 8, 5)

    def attention_tail(x, v):
        p = torch.softmax(x * 0.5, -1)
        return p @ v, p
    graph = compiled(attention_tail, x, v)
    out, p = graph(x, v)
    ref_out, ref_p = attention_tail(x, v)
    np.testing.assert_allclose(p.numpy(), ref_p.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out.numpy(), ref_out.numpy(), rtol=1e-5, atol=1e-6)
    (kernel,) = graph.artefacts.kernels
    assert [n.shape for n in kernel.stored] == [(4, 8, 8)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_masked_softmax_keeps_eagers_values_in_every_row(dtype):
    """exp(masked_fill(s, mask, -inf) - max) is computed without exp(-inf) (libmvec's slow
    lanes): masked lanes give 0, a row masked everywhere or holding a NaN gives NaN, a row
    with +inf gives eager's NaN and 0s."""
    rng = np.random.default_rng(2)
    s = torch.from_numpy(rng.standard_normal((5, 6)) * 10).to(dtype)
    s[1, 2] = float("nan")
    s[3, 1] = float("inf")
    mask = torch.from_numpy(rng.random((5, 6)) < 0.5)
    mask[0] = True                          # every lane masked
    mask[1] = False
    mask[3, 1] = False

    def masked_softmax(s, mask):
        return torch.softmax(s.masked_fill(mask, float("-inf")), -1)
    got, want = compiled(masked_softmax, s, mask)(s, mask), masked_softmax(s, mask)
    assert np.array_equal(np.isnan(got.numpy()), np.isnan(want.numpy()))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=0)
    assert (got.numpy()[mask.numpy() & ~np.isnan(want.numpy())] == 0).all()


def test_an_arange_read_by_kernels_is_made_once_at_compile_time():
    """A causal mask's aranges are constants of the compiled graph (no op per call); an
    arange the graph returns is a fresh tensor on every call, as eager's."""
    x = torch.randn(5)

    def fn(x):
        causal = torch.arange(5).unsqueeze(1) < torch.arange(5)
        return x.masked_fill(causal, 0.0) * 2, torch.arange(3)
    graph = compiled(fn, x)
    (masked, first), (_, second) = graph(x), graph(x)
    ref_masked, ref_range = fn(x)
    assert torch.equal(masked, ref_masked) and torch.equal(first, ref_range)
    assert graph.artefacts.host_source.count("aten.arange") == 1      # the returned one
    assert first._storage is not second._storage
