"""scaled_dot_product_attention's fused CPU path (PyTorch's
_scaled_dot_product_flash_attention_for_cpu and its backward): when it is taken, its values,
strides, logsumexp and gradients against PyTorch's, gradcheck on non-contiguous float64
inputs, and the cases that keep the math path."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as GF
from oracle import assert_same, oracle_torch, to_torch

rng = np.random.default_rng(22)
FLASH = "ScaledDotProductFlashAttentionForCpuBackward0"


def heads_second(shape, dtype=gt.float64, requires_grad=False):
    """A (B, H, L, E) tensor viewed from a (B, L, H, E) one, as a GPT's q/k/v are."""
    b, h, n, e = shape
    t = gt.tensor(rng.standard_normal((b, n, h, e))).to(dtype).transpose(1, 2)
    return t.requires_grad_() if requires_grad else t


def both(*shapes, dtype=gt.float64):
    gs = [heads_second(s, dtype, requires_grad=True) for s in shapes]
    ts = [to_torch(g.detach()).requires_grad_() for g in gs]
    return gs, ts


CASES = {   # q shape, k/v shape, keyword arguments
    "causal": ((2, 3, 6, 8), (2, 3, 6, 8), {"is_causal": True}),
    "causal_longer_query": ((1, 2, 7, 4), (1, 2, 3, 4), {"is_causal": True}),
    "causal_longer_key": ((1, 2, 3, 4), (1, 2, 7, 4), {"is_causal": True, "scale": 0.7}),
    "plain": ((2, 2, 5, 4), (2, 2, 9, 4), {}),
    "one_position": ((3, 1, 1, 5), (3, 1, 1, 5), {"is_causal": True}),
    # B*H*L a power of two, as the GPTs' shapes are (the forward's transposed scores are
    # padded): the causal mask repeated over every batch and head
    "causal_gpt_like": ((4, 4, 16, 8), (4, 4, 16, 8), {"is_causal": True}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fused_values_strides_and_gradients_match_torch(case, kernel_path):
    torch = oracle_torch()
    q_shape, kv_shape, kw = CASES[case]
    gs, ts = both(q_shape, kv_shape, kv_shape)
    yg = GF.scaled_dot_product_attention(*gs, **kw)
    yt = torch.nn.functional.scaled_dot_product_attention(*ts, **kw)
    assert yg.grad_fn.name() == yt.grad_fn.name() == FLASH
    assert_same(yg, yt, rtol=1e-12, atol=1e-13)
    w = rng.standard_normal(tuple(yt.shape))
    dg = gt.autograd.grad(yg, gs, gt.tensor(w))
    dt = torch.autograd.grad(yt, ts, torch.tensor(w))
    for a, b in zip(dg, dt):
        assert_same(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layout", ["transposed", "transposed_large", "rows"])
@pytest.mark.parametrize("is_causal", [False, True])
def test_fused_forward_layouts_match_torch(layout, is_causal, monkeypatch, kernel_path):
    """The forward's three ways: the scores transposed with the causal mask from a cached
    copy repeated per (batch, head), or (scores too large to copy) broadcast over them, and
    the scores in rows (long keys): values and logsumexp as torch's."""
    torch = oracle_torch()
    from glasstorch.backends.cpu import attention
    if layout == "transposed_large":
        monkeypatch.setattr(attention, "_BIAS_ROWS_BYTES", 0)
    if layout == "rows":
        monkeypatch.setattr(attention, "_TRANSPOSED_MAX_KEYS", 0)
    q, k, v = (heads_second((3, 2, 8, 4)) for _ in range(3))
    og, lg = gt._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal)
    ot, lt = torch._scaled_dot_product_flash_attention_for_cpu(
        to_torch(q), to_torch(k), to_torch(v), 0.0, is_causal)
    assert_same(og, ot, rtol=1e-12, atol=1e-13)
    assert_same(lg, lt, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("is_causal", [False, True])
def test_fused_op_outputs_match_torch(is_causal, kernel_path):
    torch = oracle_torch()
    q, k, v = (heads_second((2, 3, 5, 4), gt.float32) for _ in range(3))
    og, lg = gt._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal)
    ot, lt = torch._scaled_dot_product_flash_attention_for_cpu(
        to_torch(q), to_torch(k), to_torch(v), 0.0, is_causal)
    assert_same(og, ot, rtol=1e-5, atol=1e-6)
    assert_same(lg, lt, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="Currently do not support dropout > 0"):
        gt._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.5)
    with pytest.raises(RuntimeError, match="Q/K/V should have the same head size"):
        gt._scaled_dot_product_flash_attention_for_cpu(q, k, v[..., :2])


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float16", 2e-3),
                                       ("bfloat16", 2e-2)])
def test_fused_reduced_precision_matches_torch(dtype, tol, kernel_path):
    torch = oracle_torch()
    gs, ts = both((2, 2, 8, 4), (2, 2, 8, 4), (2, 2, 8, 4), dtype=getattr(gt, dtype))
    yg = GF.scaled_dot_product_attention(*gs, is_causal=True)
    yt = torch.nn.functional.scaled_dot_product_attention(*ts, is_causal=True)
    assert yg.grad_fn.name() == FLASH
    assert_same(yg, yt, rtol=tol, atol=tol)
    _, lg = gt._scaled_dot_product_flash_attention_for_cpu(*gs, is_causal=True)
    assert lg.dtype is (gt.float32 if dtype != "float64" else gt.float64)
    w = rng.standard_normal((2, 2, 8, 4))
    dg = gt.autograd.grad(yg, gs, gt.tensor(w).to(yg.dtype))
    dt = torch.autograd.grad(yt, ts, torch.tensor(w).to(yt.dtype))
    for a, b in zip(dg, dt):
        assert_same(a, b, rtol=4 * tol, atol=4 * tol)


def test_fused_gradcheck_noncontiguous(kernel_path):
    for kw in ({"is_causal": True}, {}, {"is_causal": True, "scale": 0.4}):
        q = heads_second((1, 2, 4, 3), requires_grad=True)
        k, v = (heads_second((1, 2, 5, 3), requires_grad=True) for _ in range(2))
        assert not q.is_contiguous()
        assert GF.scaled_dot_product_attention(q, k, v, **kw).grad_fn.name() == FLASH
        assert gt.autograd.gradcheck(
            lambda a, b, c: GF.scaled_dot_product_attention(a, b, c, **kw), (q, k, v))


def test_fused_double_backward_is_not_implemented_as_in_torch():
    """(glasstorch's message quotes the op's name, as PyTorch's does for the ops its
    derivatives.yaml marks not_implemented; PyTorch's here does not.)"""
    torch = oracle_torch()
    gs, ts = both((1, 1, 3, 2), (1, 1, 3, 2), (1, 1, 3, 2))
    for lib, xs in ((gt, gs), (torch, ts)):
        y = lib.nn.functional.scaled_dot_product_attention(*xs, is_causal=True)
        (g,) = lib.autograd.grad(y.sum(), xs[0], create_graph=True)
        with pytest.raises(RuntimeError, match="derivative for '?aten::_scaled_dot_product_"
                                               "flash_attention_for_cpu_backward'? is not "
                                               "implemented"):
            g.sum().backward()


def test_math_path_where_torch_takes_it():
    """Masks, dropout, 3-D inputs, unequal head sizes, a strided last dim and
    sdpa_kernel(MATH) keep the composite (math) form, as PyTorch's choice does for all but
    the mask."""
    from glasstorch.nn.attention import SDPBackend, sdpa_kernel
    q = heads_second((1, 2, 3, 4), requires_grad=True)
    names = {
        "mask": GF.scaled_dot_product_attention(q, q, q, attn_mask=gt.ones(3, 3, dtype=gt.bool)),
        "dropout": GF.scaled_dot_product_attention(q, q, q, dropout_p=0.5),
        "3d": GF.scaled_dot_product_attention(q[0], q[0], q[0]),
        "head_sizes": GF.scaled_dot_product_attention(q, q, q[..., :2]),
        "strided": GF.scaled_dot_product_attention(q[..., ::2], q[..., ::2], q[..., ::2]),
    }
    with sdpa_kernel(SDPBackend.MATH):
        names["math"] = GF.scaled_dot_product_attention(q, q, q, is_causal=True)
    for case, y in names.items():
        assert y.grad_fn.name() != FLASH, case


@pytest.mark.parametrize("is_causal", [False, True])
def test_fused_forward_mode_matches_the_math_form(is_causal):
    """PyTorch's fused kernel has no forward-mode rule; glasstorch's keeps jvp (and jacfwd)
    working as through the math form, against which it is checked, on non-contiguous
    inputs and with one tangent missing."""
    from glasstorch.nn.attention import SDPBackend, sdpa_kernel
    q = heads_second((2, 2, 4, 3))
    k, v = heads_second((2, 2, 5, 3)), heads_second((2, 2, 5, 3))
    ts = (gt.randn(2, 2, 4, 3, dtype=gt.float64), None, gt.randn(2, 2, 5, 3, dtype=gt.float64))

    def f(*xs):
        return GF.scaled_dot_product_attention(*xs, is_causal=is_causal)

    def jvp():
        primals = tuple(x for x, t in zip((q, k, v), ts) if t is not None)
        def g(*ys):
            it = iter(ys)
            return f(*(next(it) if t is not None else x for x, t in zip((q, k, v), ts)))
        return gt.func.jvp(g, primals, tuple(t for t in ts if t is not None))[1]

    fused = jvp()
    with sdpa_kernel(SDPBackend.MATH):
        math_form = jvp()
    assert_same(fused, math_form, rtol=1e-10, atol=1e-12, check_stride=False)
    ts = (None, gt.randn(2, 2, 5, 3, dtype=gt.float64), None)
    fused = jvp()
    with sdpa_kernel(SDPBackend.MATH):
        math_form = jvp()
    assert_same(fused, math_form, rtol=1e-10, atol=1e-12, check_stride=False)
