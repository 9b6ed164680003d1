"""glasstorch.load of files written by real torch.save (torch is only the test oracle)."""
from __future__ import annotations

import collections
import io
import pickle
import sys

import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as F
from tests.oracle import assert_same, oracle_torch, to_numpy

torch = oracle_torch()


def torch_saved(obj, tmp_path, name="t.pt", **kwargs):
    path = tmp_path / name
    torch.save(obj, path, **kwargs)
    return path


def test_glasstorch_never_imports_torch_to_load(tmp_path):
    path = torch_saved({"w": torch.ones(2)}, tmp_path)
    saved = sys.modules.pop("torch")
    try:
        sys.modules["torch"] = None          # any `import torch` now fails
        got = gt.load(path)
    finally:
        sys.modules["torch"] = saved
    assert_same(got["w"], torch.ones(2))


def test_linear_state_dict_gives_the_same_outputs(tmp_path):
    lin = torch.nn.Linear(5, 3)
    got = gt.load(torch_saved(lin.state_dict(), tmp_path))
    assert type(got) is collections.OrderedDict and list(got) == ["weight", "bias"]
    assert got._metadata == lin.state_dict()._metadata
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    out = F.linear(gt.tensor(x), got["weight"], got["bias"])
    assert_same(out, lin(torch.from_numpy(x)).detach(), atol=1e-6)
    if hasattr(gt.nn, "Linear"):
        model = gt.nn.Linear(5, 3)
        model.load_state_dict(got)
        assert_same(model(gt.tensor(x)).detach(), lin(torch.from_numpy(x)).detach(), atol=1e-6)


def test_conv2d_state_dict_gives_the_same_outputs(tmp_path):
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    got = gt.load(torch_saved(conv.state_dict(), tmp_path))
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32)
    out = F.conv2d(gt.tensor(x), got["weight"], got["bias"], padding=1)
    assert_same(out, conv(torch.from_numpy(x)).detach(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                  "int16", "int8", "uint8", "bool", "complex64", "complex128"])
def test_every_dtype_and_layout(tmp_path, name):
    base = (torch.arange(24) % 7 - 3).to(getattr(torch, name)).reshape(4, 6)
    cases = [base, base.t(), base[1:, ::2], base[2, 3], base[:0]]
    got = gt.load(torch_saved(cases, tmp_path))
    for g, t in zip(got, cases):
        assert_same(g, t)
        assert g.storage_offset() == t.storage_offset()


def test_shared_views_load_as_one_storage(tmp_path):
    a = torch.arange(12.0).reshape(3, 4)
    got = gt.load(torch_saved({"a": a, "t": a.t(), "row": a[2], "flat": a.view(-1)[3:]},
                              tmp_path))
    assert len({id(t.untyped_storage()) for t in got.values()}) == 1
    got["a"][2, 0] = -1.0
    assert got["row"][0].item() == -1.0
    for key in ("t", "row", "flat"):
        assert got[key].storage_offset() == {"t": 0, "row": 8, "flat": 3}[key]


def test_parameters_and_requires_grad(tmp_path):
    obj = {"p": torch.nn.Parameter(torch.randn(2, 2)),
           "frozen": torch.nn.Parameter(torch.randn(2), requires_grad=False),
           "leaf": torch.randn(3, requires_grad=True), "bf": torch.ones(2, dtype=torch.bfloat16)}
    got = gt.load(torch_saved(obj, tmp_path))
    assert isinstance(got["p"], gt.nn.Parameter) and got["p"].requires_grad
    assert isinstance(got["frozen"], gt.nn.Parameter) and not got["frozen"].requires_grad
    assert type(got["leaf"]) is gt.Tensor and got["leaf"].requires_grad
    for key in obj:
        assert_same(got[key].detach(), obj[key].detach())


def adam_state_dict(w):
    """An Adam state_dict as torch.optim.Adam lays it out after one step (built by hand:
    torch's first optimizer step imports torch._dynamo, which takes seconds)."""
    g = 2 * w.detach()
    group = {"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0,
             "amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
             "differentiable": False, "fused": None, "decoupled_weight_decay": False,
             "params": [0]}
    return {"state": {0: {"step": torch.tensor(1.0), "exp_avg": 0.1 * g,
                          "exp_avg_sq": 0.001 * g * g}},
            "param_groups": [group]}


def test_python_attributes_of_tensors_and_parameters(tmp_path):
    t = torch.ones(2)
    t.note = "hi"
    p = torch.nn.Parameter(torch.zeros(3))
    p.tag = 7
    got = gt.load(torch_saved({"t": t, "p": p}, tmp_path))
    assert got["t"].note == "hi" and type(got["t"]) is gt.Tensor
    assert got["p"].tag == 7 and isinstance(got["p"], gt.nn.Parameter)
    assert_same(got["p"].detach(), p.detach())


def test_optimizer_state_and_nested_values(tmp_path):
    w = torch.nn.Parameter(torch.randn(3, 2))
    state = adam_state_dict(w)
    ckpt = {"optimizer": state, "epoch": 3, "name": "run", "loss": 0.25,
            "flags": (True, None), "sizes": torch.Size([2, 3]), "dtype": torch.bfloat16}
    got = gt.load(torch_saved(ckpt, tmp_path))
    assert got["optimizer"]["param_groups"] == state["param_groups"]
    for key, value in state["state"][0].items():
        assert_same(got["optimizer"]["state"][0][key], value)
    assert (got["epoch"], got["name"], got["loss"], got["flags"]) == (3, "run", 0.25, (True, None))
    assert got["sizes"] == gt.Size([2, 3]) and got["dtype"] is gt.bfloat16
    param = gt.nn.Parameter(gt.tensor(w.detach().numpy()))
    opt2 = gt.optim.Adam([param], lr=0.1)
    opt2.load_state_dict(got["optimizer"])
    assert_same(opt2.state[param]["exp_avg"], state["state"][0]["exp_avg"])


def test_file_objects_and_untyped_storage(tmp_path):
    buf = io.BytesIO()
    t = torch.arange(4, dtype=torch.int16)
    raw = torch.tensor([1.0, -2.0]).untyped_storage()
    torch.save({"t": t, "s": raw}, buf)
    buf.seek(0)
    got = gt.load(buf)
    assert_same(got["t"], t)
    assert isinstance(got["s"], gt.UntypedStorage) and got["s"].nbytes() == 8
    assert got["s"].tolist() == list(bytes(raw))


def test_map_location_on_torch_files(tmp_path):
    path = torch_saved([torch.ones(3)], tmp_path)
    seen = []
    got = gt.load(path, map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cpu"] and to_numpy(got[0]).tolist() == [1.0, 1.0, 1.0]
    assert gt.load(path, map_location="meta")[0].is_meta


def test_newer_dtypes_load(tmp_path):
    path = torch_saved({"u": torch.tensor([1, 2, 2 ** 16 - 1], dtype=torch.uint16)}, tmp_path)
    loaded = gt.load(path)["u"]
    assert loaded.dtype is gt.uint16 and loaded.tolist() == [1, 2, 2 ** 16 - 1]


def test_rebuild_tensor_v3_records(tmp_path):
    # torch writes _rebuild_tensor_v3 (untyped storage + dtype) for its newer dtypes; the
    # same record shape with a dtype glasstorch has must load
    path = torch_saved(torch.tensor([1, 2, 3], dtype=torch.uint16), tmp_path)
    import zipfile
    with zipfile.ZipFile(path) as zf:
        prefix = zf.namelist()[0].split("/")[0]
        pkl = zf.read(f"{prefix}/data.pkl")
        data = zf.read(f"{prefix}/data/0")
    assert b"_rebuild_tensor_v3" in pkl and b"ctorch\nuint16\n" in pkl
    pkl = pkl.replace(b"ctorch\nuint16\n", b"ctorch\nint16\n")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/data/0", data)
    buf.seek(0)
    assert_same(gt.load(buf), torch.tensor([1, 2, 3], dtype=torch.int16))


def test_meta_tensors(tmp_path):
    got = gt.load(torch_saved(torch.empty(2, 3, device="meta").t(), tmp_path))
    assert got.is_meta and got.shape == (3, 2) and got.stride() == (1, 3)


def test_legacy_torch_file_gets_advice(tmp_path):
    path = torch_saved(torch.ones(2), tmp_path, "legacy.pth", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="legacy.pth.*legacy.*newer PyTorch"):
        gt.load(path)


def test_whole_module_pickle_needs_weights_only_false(tmp_path):
    path = torch_saved(torch.nn.Linear(2, 2), tmp_path)
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.linear.Linear"):
        gt.load(path)
    assert type(gt.load(path, weights_only=False)) is gt.nn.Linear   # never imports torch


def test_truncated_torch_file(tmp_path):
    path = torch_saved({"w": torch.randn(100)}, tmp_path, "big.pt")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="big.pt.*truncated"):
        gt.load(path)


def test_roundtrip_through_both_libraries(tmp_path):
    sd = torch.nn.Conv2d(2, 3, 3).state_dict()
    got = gt.load(torch_saved(sd, tmp_path))
    gt.save(got, tmp_path / "again.pt")
    back = torch.load(tmp_path / "again.pt")
    assert list(back) == list(sd) and back._metadata == sd._metadata
    for key in sd:
        assert torch.equal(back[key], sd[key])
