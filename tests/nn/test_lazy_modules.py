"""The lazy modules against PyTorch: placeholders before the first forward, the eager class,
shapes, reprs and state_dict keys after it, and loading a state_dict instead."""
import pytest

import glasstorch as gt
from glasstorch.nn.parameter import UninitializedBuffer, UninitializedParameter

torch = pytest.importorskip("torch")

CASES = [("LazyLinear", (4,), {}, (2, 3)),
         ("LazyLinear", (4,), {"bias": False}, (3,)),
         ("LazyConv1d", (4, 3), {"padding": 1}, (2, 6, 5)),
         ("LazyConv2d", (4, 3), {"groups": 2}, (1, 6, 5, 5)),
         ("LazyConv3d", (2, 1), {}, (3, 4, 4, 4)),
         ("LazyConvTranspose1d", (4, 3), {}, (6, 5)),
         ("LazyConvTranspose2d", (4, 3), {"stride": 2}, (1, 6, 3, 3)),
         ("LazyConvTranspose3d", (2, 1), {}, (1, 3, 2, 2, 2)),
         ("LazyBatchNorm1d", (), {}, (4, 3)),
         ("LazyBatchNorm2d", (), {"affine": False}, (2, 3, 2, 2)),
         ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 2, 2)),
         ("LazyInstanceNorm1d", (), {}, (2, 3, 4)),
         ("LazyInstanceNorm2d", (), {}, (2, 3, 4, 4)),
         ("LazyInstanceNorm3d", (), {"affine": False}, (2, 3, 2, 2, 2))]


def _describe(lib, module, x):
    before = (repr(module), list(module.state_dict()), module.has_uninitialized_params())
    y = module(x)
    return before + (type(module).__name__, repr(module), tuple(y.shape),
                     [(n, tuple(p.shape)) for n, p in module.named_parameters()],
                     [(n, tuple(b.shape)) for n, b in module.named_buffers()],
                     module.has_uninitialized_params() if hasattr(module, "has_uninitialized_params")
                     else None)


@pytest.mark.parametrize("name,args,kwargs,shape", CASES)
def test_lazy_module_matches_pytorch(name, args, kwargs, shape):
    ours = _describe(gt, getattr(gt.nn, name)(*args, **kwargs), gt.ones(*shape))
    theirs = _describe(torch, getattr(torch.nn, name)(*args, **kwargs), torch.ones(*shape))
    assert ours == theirs


def test_load_state_dict_materializes():
    for lib in (gt, torch):
        layer = lib.nn.LazyLinear(3)
        layer.load_state_dict(lib.nn.Linear(5, 3).state_dict())
        assert tuple(layer.weight.shape) == (3, 5) and not layer.has_uninitialized_params()
        assert type(layer).__name__ == "LazyLinear"      # it becomes Linear on forward
        layer(lib.ones(1, 5))
        assert type(layer).__name__ == "Linear"


def test_placeholders_refuse_use():
    p = UninitializedParameter()
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad
    assert isinstance(p, gt.nn.Parameter)
    with pytest.raises(ValueError, match="uninitialized parameter"):
        p + 1
    with pytest.raises(RuntimeError, match="shape of an uninitialized"):
        p.shape
    p.materialize((2, 3))
    assert type(p) is gt.nn.Parameter and p.shape == (2, 3) and p.requires_grad
    b = UninitializedBuffer()
    b.materialize((4,), dtype=gt.float64)
    assert type(b) is gt.Tensor and b.dtype == gt.float64


def test_bad_input_rank_raises_as_pytorch():
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\)"):
            lib.nn.LazyConv2d(4, 3)(lib.ones(5, 5))
