"""Whole objects pickled by one library and loaded by the other (torch.save(model)), and
the allow-list that weights_only loading keeps."""
from __future__ import annotations

import io
import pickle
import pickletools
import zipfile

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.serialization import torch_names

torch = pytest.importorskip("torch")


def torch_file(obj) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def glasstorch_file(obj) -> io.BytesIO:
    buf = io.BytesIO()
    gt.save(obj, buf)
    buf.seek(0)
    return buf


def globals_named(buf: io.BytesIO) -> set:
    with zipfile.ZipFile(buf) as zf:
        pkl = zf.read(next(n for n in zf.namelist() if n.endswith("data.pkl")))
    buf.seek(0)
    return {arg for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}


def assert_close(got, want, tol=1e-6):
    got = got.detach().numpy() if hasattr(got, "detach") else got
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=tol, atol=tol)


def torch_cnn(nn):
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 8), nn.LayerNorm(8),
                         nn.GELU(), nn.Dropout(0.1), nn.Linear(8, 3))


@pytest.fixture
def images():
    return np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32)


# ---- PyTorch's whole-model pickles in glasstorch -------------------------------------------

def test_torch_model_pickled_whole_loads_as_a_working_glasstorch_module(images):
    torch.manual_seed(0)
    model = torch_cnn(torch.nn)
    model(torch.randn(8, 1, 4, 4))                   # move the running statistics
    model.eval()
    got = gt.load(torch_file(model), weights_only=False)
    assert type(got) is gt.nn.Sequential
    assert [type(m).__name__ for m in got] == [type(m).__name__ for m in model]
    assert isinstance(got[1], gt.nn.BatchNorm2d) and not got.training
    assert all(type(p) is gt.nn.Parameter and p.requires_grad for p in got.parameters())
    assert list(got.state_dict()) == list(model.state_dict())
    assert_close(got(gt.tensor(images)), model(torch.tensor(images)))
    got.train()                                      # and it trains: gradients flow
    got(gt.tensor(images)).sum().backward()
    assert got[0].weight.grad is not None and got[0].weight.grad.shape == (4, 1, 3, 3)


@pytest.mark.parametrize("make, shape", [
    (lambda nn: nn.LSTM(3, 4, num_layers=2, batch_first=True), (2, 5, 3)),
    (lambda nn: nn.GRU(3, 4), (5, 2, 3)),
    (lambda nn: nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0,
                                           batch_first=True, activation="gelu"), (2, 5, 4)),
    (lambda nn: nn.Embedding(10, 3), None),
])
def test_more_torch_modules_pickled_whole(make, shape):
    torch.manual_seed(1)
    model = make(torch.nn).eval()
    got = gt.load(torch_file(model), weights_only=False)
    if shape is None:
        ids = np.array([[1, 4, 9]])
        assert_close(got(gt.tensor(ids)), model(torch.tensor(ids)))
        return
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want, out = model(torch.tensor(x)), got(gt.tensor(x))
    if isinstance(want, tuple):
        want, out = want[0], out[0]
    assert_close(out, want, 1e-5)


def test_torch_optimizer_pickled_whole_keeps_stepping_like_torch():
    torch.manual_seed(2)
    w = torch.nn.Parameter(torch.randn(4))
    opt = torch.optim.Adam([w], lr=0.1, amsgrad=True)
    for _ in range(2):
        w.grad = torch.randn(4)
        opt.step()
    got = gt.load(torch_file({"w": w, "opt": opt}), weights_only=False)
    gw, gopt = got["w"], got["opt"]
    assert type(gopt) is gt.optim.Adam and gopt.param_groups[0]["params"][0] is gw
    assert gopt.state[gw]["step"].item() == 2
    grad = torch.randn(4)
    w.grad, gw.grad = grad, gt.tensor(grad.numpy())
    opt.step()
    gopt.step()
    assert_close(gw, w)


def test_torch_classes_resolve_through_glasstorch_paths():
    assert torch_names.resolve("torch.nn.modules.batchnorm", "BatchNorm2d") is gt.nn.BatchNorm2d
    assert torch_names.resolve("torch.nn.modules.flatten", "Flatten") is gt.nn.Flatten
    assert torch_names.resolve("torch.optim.adam", "Adam") is gt.optim.Adam
    assert torch_names.resolve("torch.nn.functional", "relu") is gt.nn.functional.relu
    assert torch_names.resolve("torch._C._nn", "gelu") is gt.nn.functional.gelu
    assert torch_names.resolve("torch.nn.modules.conv", "NoSuchConv") is None
    assert torch_names.resolve("torch.__main__", "x") is None        # never a script
    assert torch_names.resolve("torch.utils.cpp_extension", "load") is None


# ---- the weights_only path stays an allow-list ---------------------------------------------

def test_weights_only_refuses_a_whole_model_and_says_what_works():
    buf = torch_file(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    with pytest.raises(pickle.UnpicklingError) as info:
        gt.load(buf)
    text = str(info.value)
    assert "GLOBAL torch.nn.modules.container.Sequential" in text
    assert "glasstorch.nn.modules.container.Sequential" in text
    assert "weights_only=False" in text and "safe_globals(" in text


def test_safe_globals_allow_torch_names_of_glasstorch_classes():
    buf = torch_file(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    classes = [gt.nn.Sequential, gt.nn.Linear, gt.nn.ReLU]
    with gt.serialization.safe_globals(classes):
        assert gt.serialization.get_safe_globals() == classes
        got = gt.load(buf)
    assert gt.serialization.get_safe_globals() == []
    assert type(got) is gt.nn.Sequential and type(got[0]) is gt.nn.Linear
    with pytest.raises(pickle.UnpicklingError, match="Sequential"):
        gt.load(buf)


def test_safe_globals_context_keeps_what_was_allowed_before():
    import collections
    gt.serialization.add_safe_globals([collections.Counter])
    try:
        with gt.serialization.safe_globals([collections.Counter, gt.nn.Linear]):
            assert gt.serialization.get_safe_globals() == [collections.Counter, gt.nn.Linear]
        assert gt.serialization.get_safe_globals() == [collections.Counter]
        with pytest.raises(ValueError, match="tuple of length 2"):
            gt.serialization.add_safe_globals([(gt.nn.Linear,)])
        assert gt.serialization.get_safe_globals() == [collections.Counter]
    finally:
        gt.serialization.clear_safe_globals()
    assert gt.serialization.get_safe_globals() == []


def test_a_torch_name_glasstorch_lacks_is_explained_both_ways():
    from tests.serialization.test_save_load import global_call, zip_with_pickle
    payload = global_call("torch.nn.modules.conv", "NoSuchConv")
    with pytest.raises(pickle.UnpicklingError) as info:
        gt.load(zip_with_pickle(payload))
    assert "neither weights_only=False nor add_safe_globals" in str(info.value)
    with pytest.raises(gt.serialization.MissingTorchGlobalError, match="NoSuchConv"):
        gt.load(zip_with_pickle(payload), weights_only=False)


def test_advice_for_a_module_that_cannot_be_imported():
    from tests.serialization.test_save_load import global_call, zip_with_pickle
    with pytest.raises(pickle.UnpicklingError) as info:
        gt.load(zip_with_pickle(global_call("no_such_package_xyz.models", "Net")))
    assert "weights_only=False would not help" in str(info.value)
    with pytest.raises(pickle.UnpicklingError) as info:
        gt.load(zip_with_pickle(global_call("collections", "Counter")))
    text = str(info.value)
    assert "weights_only=False" in text and "would not help" not in text
    assert "add_safe_globals([collections.Counter])" in text


def test_a_whole_model_never_runs_code_under_weights_only(tmp_path):
    from tests.serialization.test_save_load import global_call, zip_with_pickle
    marker = tmp_path / "pwned"
    for module, name in [("os", "system"), ("torch.nn.modules.module", "os"),
                         ("torch.nn.functional", "_no_grad"), ("torch", "load")]:
        payload = global_call(module, name, f"touch {marker}")
        with pytest.raises(pickle.UnpicklingError, match=name):
            gt.load(zip_with_pickle(payload))
    assert not marker.exists()


# ---- glasstorch's whole-model pickles in PyTorch -------------------------------------------

def test_glasstorch_model_pickled_whole_loads_in_torch_as_torch_objects(images):
    gt.manual_seed(3)
    model = torch_cnn(gt.nn)
    model(gt.randn(8, 1, 4, 4))
    model.eval()
    buf = glasstorch_file(model)
    names = globals_named(buf)
    assert "torch.nn.modules.batchnorm BatchNorm2d" in names
    assert "torch.nn.modules.container Sequential" in names
    assert not any(n.startswith("glasstorch") for n in names)
    got = torch.load(buf, weights_only=False)
    assert type(got) is torch.nn.Sequential and type(got[1]) is torch.nn.BatchNorm2d
    assert all(type(p) is torch.nn.Parameter for p in got.parameters())
    assert_close(model(gt.tensor(images)), got(torch.tensor(images)))
    assert gt.load(glasstorch_file(model), weights_only=False)[1].__class__ is gt.nn.BatchNorm2d


@pytest.mark.parametrize("make, shape", [
    (lambda nn: nn.LSTM(3, 4, num_layers=2, batch_first=True), (2, 5, 3)),
    (lambda nn: nn.MultiheadAttention(4, 2), None),
    (lambda nn: nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0,
                                           batch_first=True, activation="gelu"), (2, 5, 4)),
])
def test_more_glasstorch_modules_load_in_torch(make, shape):
    gt.manual_seed(4)
    model = make(gt.nn).eval()
    got = torch.load(glasstorch_file(model), weights_only=False)
    assert type(got).__module__.startswith("torch.nn.modules.")
    x = np.random.default_rng(2).standard_normal(shape or (5, 2, 4)).astype(np.float32)
    if shape is None:
        want = model(gt.tensor(x), gt.tensor(x), gt.tensor(x))[0]
        out = got(torch.tensor(x), torch.tensor(x), torch.tensor(x))[0]
    else:
        want, out = model(gt.tensor(x)), got(torch.tensor(x))
        want, out = (want[0], out[0]) if isinstance(want, tuple) else (want, out)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def test_glasstorch_optimizer_pickled_whole_loads_in_torch():
    w = gt.nn.Parameter(gt.tensor([1.0, -2.0, 3.0]))
    opt = gt.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = gt.ones(3)
    opt.step()
    got = torch.load(glasstorch_file({"w": w, "opt": opt}), weights_only=False)
    tw, topt = got["w"], got["opt"]
    assert type(topt) is torch.optim.SGD and topt.param_groups[0]["params"][0] is tw
    tw.grad, w.grad = torch.ones(3), gt.ones(3)
    topt.step()
    opt.step()
    np.testing.assert_allclose(tw.detach().numpy(), w.detach().numpy(), rtol=1e-6)


class OnlyInGlasstorch(gt.nn.Module):
    def forward(self, x):
        return x


def test_classes_torch_lacks_keep_their_glasstorch_names():
    names = globals_named(glasstorch_file(gt.nn.Sequential(OnlyInGlasstorch())))
    assert f"{__name__} OnlyInGlasstorch" in names
    assert "torch.nn.modules.container Sequential" in names


def test_loading_a_torch_model_never_imports_torch():
    import sys
    buf = torch_file(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh()))
    saved = sys.modules.pop("torch")
    try:
        sys.modules["torch"] = None                  # any `import torch` now fails
        got = gt.load(buf, weights_only=False)
    finally:
        sys.modules["torch"] = saved
    assert type(got[1]) is gt.nn.Tanh


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_get_unsafe_globals_in_checkpoint_lists_what_to_allow(protocol):
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2))
    buf = io.BytesIO()
    torch.save(model, buf, pickle_protocol=protocol)
    want = sorted(torch.serialization.get_unsafe_globals_in_checkpoint(
        io.BytesIO(buf.getvalue()))) if protocol == 2 else None
    buf.seek(0)
    got = gt.serialization.get_unsafe_globals_in_checkpoint(buf)
    assert got == ["torch.nn.modules.activation.ReLU", "torch.nn.modules.container.Sequential",
                   "torch.nn.modules.linear.Linear"]
    assert want is None or got == want
    buf.seek(0)
    assert gt.serialization.get_unsafe_globals_in_checkpoint(torch_file({"w": torch.ones(2)})) \
        == []
    with gt.serialization.safe_globals([gt.nn.ReLU, gt.nn.Linear]):
        assert gt.serialization.get_unsafe_globals_in_checkpoint(buf) == [
            "torch.nn.modules.container.Sequential"]
        with gt.serialization.safe_globals([gt.nn.Sequential]):
            assert isinstance(gt.load(buf), gt.nn.Sequential)
    with pytest.raises(ValueError, match="checkpoint returned by torch.save"):
        gt.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(b"not a zip"))


def test_schedulers_pickled_whole_in_both_directions():
    w = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([w], lr=1.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    gw = gt.nn.Parameter(gt.ones(2))
    gopt = gt.optim.SGD([gw], lr=1.0)
    gsched = gt.optim.lr_scheduler.StepLR(gopt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step(), sched.step(), gopt.step(), gsched.step()
    mine = gt.load(torch_file({"opt": opt, "sched": sched}), weights_only=False)
    theirs = torch.load(glasstorch_file({"opt": gopt, "sched": gsched}), weights_only=False)
    assert type(mine["sched"]) is gt.optim.lr_scheduler.StepLR
    assert type(theirs["sched"]) is torch.optim.lr_scheduler.StepLR
    assert mine["sched"].optimizer is mine["opt"] and theirs["sched"].optimizer is theirs["opt"]
    for pair in ((opt, sched), (gopt, gsched), (mine["opt"], mine["sched"]),
                 (theirs["opt"], theirs["sched"])):
        pair[0].step()
        pair[1].step()
    assert (sched.get_last_lr() == gsched.get_last_lr() == mine["sched"].get_last_lr()
            == theirs["sched"].get_last_lr() == [0.25])
