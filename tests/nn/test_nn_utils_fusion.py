"""nn.utils' BatchNorm fusion, memory-format conversion, skip_init and stateless, against
PyTorch (the same weights loaded into both)."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def _twin(make):
    ours, theirs = make(gt), make(torch)
    ours.load_state_dict({k: gt.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


def _randomize_bn(bn_pair):
    for bn in bn_pair:
        lib = gt if isinstance(bn, gt.nn.Module) else torch
        g = np.random.default_rng(0)
        with lib.no_grad():
            bn.running_mean.copy_(lib.tensor(g.normal(size=bn.num_features), dtype=lib.float32))
            bn.running_var.copy_(lib.tensor(g.uniform(0.5, 2, bn.num_features),
                                            dtype=lib.float32))
            bn.weight.copy_(lib.tensor(g.normal(size=bn.num_features), dtype=lib.float32))
            bn.bias.copy_(lib.tensor(g.normal(size=bn.num_features), dtype=lib.float32))
        bn.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(transpose):
    conv_cls = "ConvTranspose2d" if transpose else "Conv2d"
    conv = _twin(lambda lib: getattr(lib.nn, conv_cls)(3, 4, 3).eval())
    bn = _twin(lambda lib: lib.nn.BatchNorm2d(4))
    _randomize_bn(bn)
    x = np.random.default_rng(1).normal(size=(2, 3, 6, 6)).astype(np.float32)
    fused = [lib.nn.utils.fuse_conv_bn_eval(c, b, transpose=transpose)
             for lib, c, b in ((gt, conv[0], bn[0]), (torch, conv[1], bn[1]))]
    ours = fused[0](gt.tensor(x)).detach().numpy()
    theirs = fused[1](torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, bn[0](conv[0](gt.tensor(x))).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    assert isinstance(fused[0].weight, gt.nn.Parameter)


def test_fuse_linear_bn_eval_and_errors():
    lin = _twin(lambda lib: lib.nn.Linear(5, 4).eval())
    bn = _twin(lambda lib: lib.nn.BatchNorm1d(4))
    _randomize_bn(bn)
    x = np.random.default_rng(2).normal(size=(3, 5)).astype(np.float32)
    ours = gt.nn.utils.fuse_linear_bn_eval(lin[0], bn[0])(gt.tensor(x)).detach().numpy()
    theirs = torch.nn.utils.fuse_linear_bn_eval(lin[1], bn[1])(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    for lib in (gt, torch):
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            lib.nn.utils.fuse_linear_bn_eval(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2).eval())


def test_convert_conv2d_weight_memory_format():
    for lib in (gt, torch):
        model = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.ReLU(), lib.nn.Linear(2, 2))
        lib.nn.utils.convert_conv2d_weight_memory_format(model, lib.channels_last)
        assert model[0].weight.is_contiguous(memory_format=lib.channels_last)
        assert model[0].weight.stride() == (27, 1, 9, 3)


def test_skip_init():
    for lib in (gt, torch):
        layer = lib.nn.utils.skip_init(lib.nn.Linear, 3, 4)
        assert layer.weight.shape == (4, 3) and layer.weight.device.type == "cpu"
        with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
            lib.nn.utils.skip_init(lib.nn.ReLU)


def test_stateless_functional_call():
    for lib in (gt, torch):
        layer = lib.nn.Linear(2, 1)
        weight = lib.ones(1, 2, requires_grad=True)
        with pytest.warns(FutureWarning, match="torch.func.functional_call"):
            out = lib.nn.utils.stateless.functional_call(
                layer, {"weight": weight, "bias": lib.zeros(1)}, (lib.tensor([[1.0, 2.0]]),))
        assert out.item() == 3.0
        out.sum().backward()
        assert weight.grad.tolist() == [[1.0, 2.0]]
        assert layer.weight is not weight and isinstance(layer.weight, lib.nn.Parameter)
