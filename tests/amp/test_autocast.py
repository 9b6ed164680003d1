"""autocast against torch.autocast on the CPU: the dtype every policy gives, the cases left
alone (float64, unlisted ops, nested disabled regions), the weight cast cache, gradients,
the decorator form and the warnings."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.amp import autocast_mode
from oracle import oracle_torch

torch = oracle_torch()
rng = np.random.default_rng(0)


def _pair(*shape, dtype=np.float32):
    a = rng.standard_normal(shape).astype(dtype)
    return gt.from_numpy(a.copy()), torch.from_numpy(a.copy())


def _cases():
    """(name, fn(lib, inputs...)) for ops of every CPU policy and a few unlisted ones."""
    F = lambda lib: lib.nn.functional  # noqa: E731
    return {
        "mm": lambda L, a, b: L.mm(a, b.t()),
        "matmul": lambda L, a, b: a @ b.t(),
        "bmm": lambda L, a, b: L.bmm(a.unsqueeze(0), b.t().unsqueeze(0)),
        "addmm": lambda L, a, b: L.addmm(a[:, :1], a, b.t()),
        "linear": lambda L, a, b: F(L).linear(a, b),
        "conv1d": lambda L, a, b: F(L).conv1d(a.unsqueeze(0), b.t().unsqueeze(-1)),
        "mse_loss": lambda L, a, b: F(L).mse_loss(a, b),
        "cross_entropy": lambda L, a, b: F(L).cross_entropy(a, L.zeros(a.shape[0],
                                                                        dtype=L.int64)),
        "baddbmm": lambda L, a, b: L.baddbmm(a[:, :3].unsqueeze(0), a.unsqueeze(0),
                                             b.t().unsqueeze(0)),
        "addbmm": lambda L, a, b: L.addbmm(a[:, :3], a.unsqueeze(0), b.t().unsqueeze(0)),
        "prelu": lambda L, a, b: F(L).prelu(a, L.ones(1) * 0.25),
        "nll_loss": lambda L, a, b: F(L).nll_loss(a, L.zeros(a.shape[0], dtype=L.int64)),
        "huber_loss": lambda L, a, b: F(L).huber_loss(a, b),
        "smooth_l1_loss": lambda L, a, b: F(L).smooth_l1_loss(a, b),
        "soft_margin_loss": lambda L, a, b: F(L).soft_margin_loss(a, b.sign()),
        "multi_margin_loss": lambda L, a, b: F(L).multi_margin_loss(
            a, L.zeros(a.shape[0], dtype=L.int64)),
        "binary_cross_entropy": lambda L, a, b: F(L).binary_cross_entropy(a.sigmoid(),
                                                                         b.sigmoid()),
        "binary_cross_entropy_with_logits": lambda L, a, b:
            F(L).binary_cross_entropy_with_logits(a, b.sigmoid()),
        "prod": lambda L, a, b: (a * 0.1 + 1).prod(1),
        "trace": lambda L, a, b: a[:, :3].trace(),
        "index_copy": lambda L, a, b: a.to(L.bfloat16).index_copy(0, L.tensor([1]), b[:1]),
        "cat": lambda L, a, b: L.cat([a.to(L.bfloat16), b]),
        "stack": lambda L, a, b: L.stack([a.to(L.bfloat16), b]),
        "softmax (unlisted)": lambda L, a, b: L.softmax(a, -1),
        "add (unlisted)": lambda L, a, b: a + b,
        "exp (unlisted)": lambda L, a, b: a.exp(),
        "sum (unlisted)": lambda L, a, b: a.sum(),
    }


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(_cases()))
def test_output_dtypes_match_torch(name, dtype):
    if name in ("cat", "stack", "index_copy") and dtype == "float16":
        pytest.skip("torch refuses a bfloat16 input to a promoting op under float16 autocast")
    fn = _cases()[name]
    (ga, ta), (gb, tb) = _pair(3, 5), _pair(3, 5)
    with gt.autocast("cpu", dtype=getattr(gt, dtype)):
        out = fn(gt, ga, gb)
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        expected = fn(torch, ta, tb)
    assert str(out.dtype) == str(expected.dtype), (name, out.dtype, expected.dtype)
    np.testing.assert_allclose(out.float().detach().numpy(), expected.float().detach().numpy(),
                               rtol=2e-2, atol=2e-2)


def test_float64_and_disabled_regions_are_left_alone():
    a = gt.ones(2, 2, dtype=gt.float64)
    x = gt.ones(2, 2)
    with gt.autocast("cpu"):
        assert gt.mm(a, a).dtype is gt.float64
        assert gt.is_autocast_enabled("cpu")
        with gt.autocast("cpu", enabled=False):
            assert not gt.is_autocast_enabled("cpu")
            assert gt.mm(x, x).dtype is gt.float32
        assert gt.mm(x, x).dtype is gt.bfloat16
    assert not gt.is_autocast_enabled("cpu")
    assert gt.mm(x, x).dtype is gt.float32


def test_weight_casts_are_cached_inside_a_region_and_dropped_after():
    w = gt.randn(4, 4, requires_grad=True)
    x = gt.randn(2, 4)
    with gt.autocast("cpu"):
        y1 = gt.mm(x, w)
        y2 = gt.mm(x, w)
        # both products read the one cached cast of w: the same node feeds them
        assert y1.grad_fn.next_functions[1][0] is y2.grad_fn.next_functions[1][0]
        assert len(autocast_mode._state.cache) == 1
        with gt.autocast("cpu"):
            gt.mm(x, w)
        assert len(autocast_mode._state.cache) == 1      # nested exit keeps it
    assert autocast_mode._state.cache == {}              # the outermost exit clears it
    with gt.autocast("cpu", cache_enabled=False):
        gt.mm(x, w)
        assert autocast_mode._state.cache == {}


def test_gradients_reach_float32_parameters_as_torch():
    (gx, tx), (gw, tw) = _pair(3, 4), _pair(5, 4)
    gw.requires_grad_()
    tw.requires_grad_()
    with gt.autocast("cpu"):
        gt.nn.functional.linear(gx, gw).float().pow(2).sum().backward()
    with torch.autocast("cpu"):
        torch.nn.functional.linear(tx, tw).float().pow(2).sum().backward()
    assert gw.grad.dtype is gt.float32
    np.testing.assert_allclose(gw.grad.numpy(), tw.grad.numpy(), rtol=2e-2, atol=2e-2)


def test_decorator_and_queries():
    @gt.autocast("cpu")
    def product(a, b):
        return a @ b

    assert product(gt.ones(2, 2), gt.ones(2, 2)).dtype is gt.bfloat16
    assert gt.get_autocast_dtype("cpu") is gt.bfloat16
    assert gt.amp.is_autocast_available("cpu") and not gt.amp.is_autocast_available("xpu2")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        gt.autocast("tpu")


def test_unsupported_dtype_and_missing_cuda_warn_and_disable():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with gt.autocast("cpu", dtype=gt.float32):
            assert not gt.is_autocast_enabled("cpu")
        with gt.autocast("cuda"):
            assert not gt.is_autocast_enabled("cuda")
    texts = [str(w.message) for w in caught]
    assert texts[0].startswith("In CPU autocast, but the target dtype is not supported")
    assert texts[1] == "CUDA is not available or torch_xla is imported. Disabling autocast."


def test_every_declared_policy_gives_its_operator_an_autocast_kernel():
    """Without a GPU the CUDA policies are data: each operator declared with a policy
    (ops/autocast.py) carries the Autocast kernel of each device named, and only those."""
    from glasstorch.dispatch import dispatcher
    from glasstorch.dispatch.keys import DispatchKey
    keys = {"cpu": DispatchKey.AutocastCPU, "cuda": DispatchKey.AutocastCUDA}
    declared = {"cpu": set(), "cuda": set()}
    for op in dispatcher.all_operators():
        if not op.name.startswith("aten::"):     # a user's op (docs' torch.library example)
            continue                            # has its own autocast kernel, no policy
        for device, policy in op.info.get("autocast", {}).items():
            declared[device].add(op.name)
            assert op.kernels[keys[device]].__qualname__ == f"autocast_{device}_{policy}"
        for device, key in keys.items():
            assert (op.name in declared[device]) == (key in op.kernels), (device, op.name)
    assert {"aten::mm", "aten::convolution", "aten::cat"} <= declared["cpu"]
    assert {"aten::exp", "aten::mse_loss", "aten::addcmul"} <= declared["cuda"]
    assert "aten::exp" not in declared["cpu"]      # PyTorch's CPU list leaves exp alone


def test_an_unknown_policy_is_refused():
    from glasstorch.ops.autocast import autocast_policy
    with pytest.raises(ValueError, match="unknown autocast policy 'fp64'"):
        autocast_policy(gt.ops.aten.mm.default, cpu="fp64")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["sum", "mean", "matmul", "softmax", "layer_norm", "norm"])
def test_half_precision_kernels_accumulate_in_float32_as_torch(name, dtype):
    """Long reductions in bfloat16/float16: accumulating in the 16-bit type would drift far
    from torch, which accumulates in float32 and rounds once."""
    x = rng.random((8, 4096)).astype(np.float32) + 0.5
    g = gt.from_numpy(x).to(getattr(gt, dtype))
    t = torch.from_numpy(x).to(getattr(torch, dtype))
    fns = {"sum": lambda L, v: v.sum(1), "mean": lambda L, v: v.mean(1),
           "matmul": lambda L, v: v @ v.t(), "softmax": lambda L, v: L.softmax(v, 1),
           "layer_norm": lambda L, v: L.nn.functional.layer_norm(v, (4096,)),
           "norm": lambda L, v: L.linalg.vector_norm(v, dim=1)}
    out, expected = fns[name](gt, g), fns[name](torch, t)
    assert str(out.dtype) == str(expected.dtype)
    np.testing.assert_allclose(out.float().numpy(), expected.float().numpy(), rtol=1e-2,
                               atol=1e-3)


def test_per_device_spellings_warn_as_torch_and_fix_the_device():
    cases = [(gt.cpu.amp.autocast, torch.cpu.amp.autocast, ()),
             (gt.cuda.amp.autocast, torch.cuda.amp.autocast, ()),
             (gt.cpu.amp.GradScaler, torch.cpu.amp.GradScaler, ()),
             (gt.cuda.amp.GradScaler, torch.cuda.amp.GradScaler, ())]
    for ours, theirs, args in cases:
        with warnings.catch_warnings(record=True) as mine:
            warnings.simplefilter("always")
            ours(*args)
        with warnings.catch_warnings(record=True) as reference:
            warnings.simplefilter("always")
            theirs(*args)
        assert [(w.category, str(w.message)) for w in mine] == \
            [(w.category, str(w.message)) for w in reference]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with gt.cpu.amp.autocast():
            assert gt.mm(gt.ones(2, 2), gt.ones(2, 2)).dtype is gt.bfloat16
    assert gt.cuda.is_available() == torch.cuda.is_available() is False
    assert gt.cuda.device_count() == 0


def _product_function(lib, cast_inputs):
    amp = lib.amp

    class Product(lib.autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            ctx.inner_dtype = (a @ b).dtype
            return a @ b

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            ctx.backward_autocast = lib.is_autocast_enabled("cpu")
            return grad @ b.t(), a.t() @ grad
    return Product


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
def test_custom_fwd_and_custom_bwd_match_torch(cast_inputs):
    results = []
    for lib in (gt, torch):
        fn = _product_function(lib, None if cast_inputs is None else lib.float32)
        a = lib.ones(2, 3, requires_grad=True)
        b = lib.ones(3, 2, requires_grad=True)
        with lib.autocast("cpu"):
            out = fn.apply(a, b)
        node = out.grad_fn                    # the ctx: its records of each phase
        out.float().sum().backward()
        results.append((str(out.dtype), str(a.grad.dtype), str(node.inner_dtype),
                        node.backward_autocast))
    assert results[0] == results[1]
