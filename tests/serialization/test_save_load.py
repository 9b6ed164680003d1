"""glasstorch.save / glasstorch.load round trips, safety, atomicity, and safetensors."""
from __future__ import annotations

import collections
import io
import os
import pickle
import re
import struct
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from glasstorch.serialization import safetensors as sft
from tests.oracle import assert_same, oracle_torch, to_numpy


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    gt.save(obj, buf)
    buf.seek(0)
    return gt.load(buf, **load_kwargs)


def assert_same_tensor(a, b):
    """Same values, dtype, shape, strides, offset and storage size (a: loaded, b: original)."""
    assert type(a) is type(b)
    assert a.dtype is b.dtype and a.shape == b.shape
    assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
    assert a.untyped_storage().nbytes() == b.untyped_storage().nbytes()
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def sample(dtype, shape=(3, 4)):
    data = np.arange(int(np.prod(shape))).reshape(shape) % 5 - 2
    if dtype is gt.bool:
        data = data > 0
    return gt.tensor(data.tolist()).to(dtype)


# ---- round trips ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", gt.core.dtype.ALL_DTYPES, ids=str)
def test_roundtrip_every_dtype_and_layout(dtype):
    base = sample(dtype, (4, 6))
    cases = [base, base.t(), base[1:, ::2], base[2], base[1, 3], base[:0],
             base[:, 1:2].expand(4, 5)]
    loaded = roundtrip(cases)
    for got, want in zip(loaded, cases):
        assert_same_tensor(got, want)


def test_roundtrip_zero_dim_and_empty():
    cases = [gt.tensor(3.5), gt.empty(0), gt.empty(2, 0, 3), gt.tensor(7, dtype=gt.int64)]
    for got, want in zip(roundtrip(cases), cases):
        assert_same_tensor(got, want)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       perm_seed=st.integers(0, 100), step=st.integers(1, 2), start=st.integers(0, 1))
def test_roundtrip_strided_views(shape, perm_seed, step, start):
    base = gt.arange(float(np.prod(shape) * 4)).reshape(*shape, 4)
    perm = np.random.default_rng(perm_seed).permutation(base.dim()).tolist()
    view = base.permute(*perm)[start::step]
    assert_same_tensor(roundtrip(view), view)


def test_shared_storage_is_preserved():
    a = gt.arange(12.0).reshape(3, 4)
    views = {"a": a, "t": a.t(), "row": a[1], "tail": a.view(-1)[5:]}
    got = roundtrip(views)
    storages = {id(t.untyped_storage()) for t in got.values()}
    assert len(storages) == 1
    assert got["a"].untyped_storage().nbytes() == 48        # stored once
    got["a"][1, 1] = 100.0
    assert got["row"][1].item() == 100.0 and got["tail"][0].item() == 100.0
    assert got["t"][1, 1].item() == 100.0


def test_meta_tensors_keep_their_metadata():
    t = gt.empty(3, 4, device="meta").t()
    got = roundtrip(t)
    assert got.is_meta and got.shape == (4, 3) and got.stride() == (1, 4)


def test_same_tensor_twice_loads_as_one_object():
    a = gt.ones(3)
    got = roundtrip([a, a, (a,)])
    assert got[0] is got[1] and got[2][0] is got[0]


def test_different_dtype_views_of_one_storage_are_refused():
    a = gt.zeros(4)
    with pytest.raises(RuntimeError, match="different types"):
        gt.save([a, a.view(gt.int32)], io.BytesIO())


def test_requires_grad_and_parameters():
    w = gt.nn.Parameter(gt.randn(2, 3))
    frozen = gt.nn.Parameter(gt.randn(2), requires_grad=False)
    leaf = gt.randn(3, requires_grad=True)
    got = roundtrip({"w": w, "frozen": frozen, "leaf": leaf, "plain": gt.ones(2)})
    assert isinstance(got["w"], gt.nn.Parameter) and got["w"].requires_grad
    assert isinstance(got["frozen"], gt.nn.Parameter) and not got["frozen"].requires_grad
    assert type(got["leaf"]) is gt.Tensor and got["leaf"].requires_grad
    assert got["leaf"].grad_fn is None and not got["plain"].requires_grad
    np.testing.assert_array_equal(to_numpy(got["w"]), to_numpy(w))


def test_python_attributes_survive():
    t = gt.ones(2)
    t.note = "hi"
    p = gt.nn.Parameter(gt.zeros(3))
    p.tag = 7
    leaf = gt.ones(2, requires_grad=True)
    (leaf * 2).sum().backward()       # sets .grad: an internal field, not a user attribute
    assert "_grad" in leaf.__dict__
    got = roundtrip({"t": t, "p": p, "leaf": leaf})
    assert got["t"].note == "hi" and type(got["t"]) is gt.Tensor
    assert got["p"].tag == 7 and isinstance(got["p"], gt.nn.Parameter)
    assert got["leaf"].grad is None and got["leaf"].__dict__ == {}


def test_nested_values_and_state_dict():
    sd = collections.OrderedDict([("layer.weight", gt.randn(2, 2)), ("layer.bias", gt.zeros(2))])
    sd._metadata = collections.OrderedDict([("", {"version": 1})])
    obj = {"sd": sd, "list": [1, 2.5, -3, "text", None, True, False, b"raw", 1 + 2j],
           "tuple": (gt.ones(1), (None, [gt.zeros(2)])), "size": gt.Size([2, 3]),
           "dtype": gt.bfloat16, "device": gt.device("cpu"), "set": {1, 2}, 3: "int key"}
    got = roundtrip(obj)
    assert type(got["sd"]) is collections.OrderedDict
    assert list(got["sd"]) == list(sd) and got["sd"]._metadata == sd._metadata
    assert got["list"] == obj["list"] and got[3] == "int key" and got["set"] == {1, 2}
    assert got["size"] == gt.Size([2, 3]) and type(got["size"]) is gt.Size
    assert got["dtype"] is gt.bfloat16 and got["device"] == gt.device("cpu")
    assert_same_tensor(got["tuple"][1][1][0], obj["tuple"][1][1][0])


def test_optimizer_state_dict_roundtrip(tmp_path):
    w = gt.nn.Parameter(gt.randn(3, 2))
    opt = gt.optim.Adam([w], lr=0.01)
    (w * w).sum().backward()
    opt.step()
    path = tmp_path / "opt.pt"
    gt.save(opt.state_dict(), path)
    got = gt.load(path)
    want = opt.state_dict()
    assert got["param_groups"] == want["param_groups"]
    for key, value in want["state"][0].items():
        assert_same_tensor(got["state"][0][key], value)
    opt2 = gt.optim.Adam([gt.nn.Parameter(w.detach().clone())], lr=0.01)
    opt2.load_state_dict(got)


def test_paths_and_file_objects(tmp_path):
    a = gt.arange(5)
    for target in (str(tmp_path / "a.pt"), tmp_path / "b.pt"):
        gt.save(a, target)
        assert_same_tensor(gt.load(target), a)
    with open(tmp_path / "c.pt", "wb") as fh:
        gt.save(a, fh)
    with open(tmp_path / "c.pt", "rb") as fh:
        assert_same_tensor(gt.load(fh), a)

    class Stream(io.RawIOBase):          # a pipe-like reader that cannot seek
        def __init__(self, data):
            self._data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._data.readinto(b)
    assert_same_tensor(gt.load(Stream((tmp_path / "c.pt").read_bytes())), a)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_pickle_protocols(protocol):
    buf = io.BytesIO()
    obj = {"a": gt.arange(6).reshape(2, 3).t(), "d": gt.float64, "s": gt.Size([1])}
    gt.save(obj, buf, pickle_protocol=protocol)
    buf.seek(0)
    got = gt.load(buf)
    assert_same_tensor(got["a"], obj["a"])
    assert got["d"] is gt.float64 and got["s"] == gt.Size([1])


def test_bad_targets(tmp_path):
    with pytest.raises(RuntimeError, match="Parent directory .*missing does not exist"):
        gt.save(gt.ones(1), tmp_path / "missing" / "x.pt")
    with pytest.raises(AttributeError, match="expected 'f' to be string, path, or a file-like"):
        gt.save(gt.ones(1), 5)
    with pytest.raises(FileNotFoundError):
        gt.load(tmp_path / "absent.pt")


def test_file_layout_is_torch_zip_with_aligned_storages(tmp_path):
    gt.save({"a": gt.ones(3), "b": gt.zeros(5, dtype=gt.float64)}, tmp_path / "x.pt")
    with zipfile.ZipFile(tmp_path / "x.pt") as zf:
        names = zf.namelist()
        assert {"archive/data.pkl", "archive/byteorder", "archive/version",
                "archive/data/0", "archive/data/1"} <= set(names)
        assert zf.read("archive/byteorder") == b"little"
        for info in zf.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            if "/data/" in info.filename:
                start = info.header_offset + 30 + len(info.filename) + len(info.extra)
                assert start % 64 == 0


# ---- torch reads what glasstorch writes -----------------------------------------------------

def test_torch_loads_glasstorch_files(tmp_path):
    torch = oracle_torch()
    a = gt.arange(12.0).reshape(3, 4)
    noted = gt.ones(2)
    noted.note = "hi"
    obj = {"a": a, "t": a.t(), "slice": a[1:, ::2], "bf16": sample(gt.bfloat16),
           "p": gt.nn.Parameter(gt.randn(2)), "n": [1, "x", None],
           "z": gt.tensor(2, dtype=gt.int8), "noted": noted,
           "dtype": gt.float16, "size": gt.Size([4])}
    gt.save(obj, tmp_path / "g.pt")
    got = torch.load(tmp_path / "g.pt")             # weights_only=True in torch 2.13
    for key in ("a", "t", "slice", "bf16", "z"):
        assert_same(obj[key], got[key])
        assert got[key].storage_offset() == obj[key].storage_offset()
    assert got["t"].untyped_storage().data_ptr() == got["a"].untyped_storage().data_ptr()
    assert isinstance(got["p"], torch.nn.Parameter) and got["p"].requires_grad
    assert got["n"] == [1, "x", None] and got["dtype"] == torch.float16
    assert got["noted"].note == "hi" and torch.equal(got["noted"], torch.ones(2))
    assert got["size"] == torch.Size([4])
    mapped = torch.load(tmp_path / "g.pt", mmap=True)   # the storages are aligned for mmap
    assert_same(obj["bf16"], mapped["bf16"])


def test_torch_loads_every_dtype_and_state_dict_metadata(tmp_path):
    torch = oracle_torch()
    tensors = {str(d): sample(d, (3, 4))[:, 1::2] for d in gt.core.dtype.ALL_DTYPES}
    sd = collections.OrderedDict(tensors)
    sd._metadata = collections.OrderedDict([("", {"version": 2})])
    gt.save(sd, tmp_path / "sd.pt")
    got = torch.load(tmp_path / "sd.pt")
    assert type(got) is collections.OrderedDict and got._metadata == sd._metadata
    for name, t in tensors.items():
        assert_same(t, got[name])
        assert got[name].storage_offset() == t.storage_offset()


# ---- restricted unpickling -----------------------------------------------------------------

def zip_with_pickle(pkl: bytes, storages: dict | None = None) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/byteorder", "little")
        for key, data in (storages or {}).items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    return buf


def global_call(module: str, name: str, *args) -> bytes:
    """A protocol-2 pickle calling module.name(*args) (string args)."""
    body = pickle.GLOBAL + f"{module}\n{name}\n".encode() + pickle.MARK
    for a in args:
        body += pickle.BINUNICODE + struct.pack("<I", len(a.encode())) + a.encode()
    return b"\x80\x02" + body + pickle.TUPLE + pickle.REDUCE + pickle.STOP


@pytest.mark.parametrize("module,name", [("os", "system"), ("builtins", "eval"),
                                         ("subprocess", "Popen"), ("posix", "system"),
                                         ("builtins", "getattr"), ("torch", "load")])
def test_malicious_pickles_are_rejected(tmp_path, module, name):
    marker = tmp_path / "pwned"
    payload = global_call(module, name, f"touch {marker}")
    with pytest.raises(pickle.UnpicklingError, match=f"{module}.{name}"):
        gt.load(zip_with_pickle(payload))
    assert not marker.exists()


def test_malicious_global_nested_inside_a_state_dict(tmp_path):
    inner = global_call("os", "system", "true")[2:-1]
    payload = b"\x80\x02}(X\x01\x00\x00\x00k" + inner + b"u."
    with pytest.raises(pickle.UnpicklingError, match="os.system"):
        gt.load(zip_with_pickle(payload))


def test_weights_only_false_and_safe_globals():
    payload = global_call("collections", "Counter", "aab")
    with pytest.raises(pickle.UnpicklingError, match="collections.Counter"):
        gt.load(zip_with_pickle(payload))
    assert gt.load(zip_with_pickle(payload), weights_only=False) == collections.Counter("aab")
    gt.serialization.add_safe_globals([collections.Counter])
    try:
        assert gt.load(zip_with_pickle(payload)) == collections.Counter("aab")
    finally:
        gt.serialization.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError, match="torch._C._foo"):   # never imports torch
        gt.load(zip_with_pickle(global_call("torch._C", "_foo")), weights_only=False)


def saved_pickle(obj) -> tuple[bytes, dict]:
    buf = io.BytesIO()
    gt.save(obj, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        return zf.read("archive/data.pkl"), {"0": zf.read("archive/data/0")}


def test_state_cannot_rewrite_tensor_fields():
    pkl, storages = saved_pickle(gt.ones(4))
    assert pkl.endswith(b".")
    # BUILD with (None, {'_shape': (1000000,)}) on the rebuilt tensor
    attack = (b"N}X\x06\x00\x00\x00_shape" + pickle.BININT + struct.pack("<i", 10 ** 6)
              + pickle.TUPLE1 + pickle.SETITEM + pickle.TUPLE2 + pickle.BUILD + pickle.STOP)
    with pytest.raises(pickle.UnpicklingError, match="BUILD"):
        gt.load(zip_with_pickle(pkl[:-1] + attack, storages))


def test_rebuild_from_type_state_cannot_rewrite_tensor_fields():
    pkl, storages = saved_pickle(gt.ones(4))
    # _rebuild_from_type_v2(_rebuild_tensor_v2, torch.Tensor, (args...), {'_offset': 99})
    body = pkl[2:-1]
    assert body.startswith(b"ctorch._utils\n_rebuild_tensor_v2\n")
    func, rest = body.split(b"\n_rebuild_tensor_v2\n", 1)
    head = func + b"\n_rebuild_tensor_v2\n"
    args_then_reduce = rest[rest.index(pickle.MARK):]
    args = args_then_reduce[:args_then_reduce.rindex(pickle.REDUCE)]
    crafted = (b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\n" + pickle.MARK + head
               + b"ctorch\nTensor\n" + args + b"}X\x07\x00\x00\x00_offset" + pickle.BININT
               + struct.pack("<i", 99) + pickle.SETITEM + pickle.TUPLE + pickle.REDUCE
               + pickle.STOP)
    with pytest.raises(RuntimeError, match="refusing to set attribute '_offset'"):
        gt.load(zip_with_pickle(crafted, storages))
    harmless = crafted.replace(b"\x07\x00\x00\x00_offset", b"\x04\x00\x00\x00note")
    got = gt.load(zip_with_pickle(harmless, storages))
    assert got.note == 99 and got.storage_offset() == 0


def test_bare_pickle_is_not_unpickled(tmp_path):
    path = tmp_path / "evil.pt"
    path.write_bytes(global_call("os", "system", "true"))
    with pytest.raises(RuntimeError, match="evil.pt.*not a checkpoint"):
        gt.load(path)


# ---- damaged files -------------------------------------------------------------------------

def test_truncated_and_corrupt_files(tmp_path):
    path = tmp_path / "model.pt"
    gt.save({"w": gt.randn(64, 64), "b": gt.ones(8)}, path)
    data = path.read_bytes()
    for cut in (len(data) - 10, len(data) // 2, 100, 4):
        bad = tmp_path / f"cut{cut}.pt"
        bad.write_bytes(data[:cut])
        with pytest.raises(RuntimeError, match=f"cut{cut}.pt.*(truncated|corrupt)"):
            gt.load(bad)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(RuntimeError, match="empty.pt.*empty"):
        gt.load(empty)
    flipped = bytearray(data)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("archive/data/0")
    flipped[info.header_offset + 30 + len(info.filename) + len(info.extra) + 5] ^= 0xFF
    (tmp_path / "crc.pt").write_bytes(bytes(flipped))
    with pytest.raises(RuntimeError, match="crc.pt"):
        gt.load(tmp_path / "crc.pt")


def test_missing_or_short_storage_record():
    buf = io.BytesIO()
    gt.save(gt.ones(4), buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        pkl = zf.read("archive/data.pkl")
    with pytest.raises(RuntimeError, match="archive/data/0.*missing"):
        gt.load(zip_with_pickle(pkl))
    with pytest.raises(RuntimeError, match="holds 8 bytes, expected 4 elements"):
        gt.load(zip_with_pickle(pkl, {"0": b"\0" * 8}))


def test_tensor_out_of_its_storage_is_refused():
    buf = io.BytesIO()
    gt.save(gt.ones(4)[2:], buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        pkl = zf.read("archive/data.pkl")
    # numel 4 -> 1: the tensor (offset 2, 2 elements) no longer fits
    pkl, count = re.subn(rb"(cpuq.K)\x04", lambda m: m.group(1) + b"\x01", pkl)
    assert count == 1
    with pytest.raises(RuntimeError, match="does not fit its storage"):
        gt.load(zip_with_pickle(pkl, {"0": b"\0" * 4}))


def test_legacy_torch_format_gets_advice(tmp_path):
    from glasstorch.serialization.pytorch_zip import LEGACY_MAGIC
    path = tmp_path / "old.pth"
    path.write_bytes(LEGACY_MAGIC + b"\x2e")
    with pytest.raises(RuntimeError, match="old.pth.*legacy.*Re-save it with a newer PyTorch"):
        gt.load(path)


# ---- atomic saves --------------------------------------------------------------------------

class FailsToPickle:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


def test_failing_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "ckpt.pt"
    gt.save({"step": 1, "w": gt.ones(3)}, path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="cannot pickle this"):
        gt.save({"w": gt.zeros(1000), "bad": FailsToPickle()}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.pt"]
    assert gt.load(path)["step"] == 1


def test_crash_while_writing_storages_keeps_the_old_file(tmp_path, monkeypatch):
    from glasstorch.serialization import pytorch_zip
    path = tmp_path / "ckpt.pt"
    gt.save(gt.ones(3), path)
    before = path.read_bytes()
    calls = []
    real = pytorch_zip._host_bytes

    def flaky(storage):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(storage)
    monkeypatch.setattr(pytorch_zip, "_host_bytes", flaky)
    with pytest.raises(OSError, match="disk full"):
        gt.save([gt.zeros(10), gt.zeros(20)], path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]


def test_failing_save_to_a_file_object_writes_nothing():
    buf = io.BytesIO()
    with pytest.raises(RuntimeError):
        gt.save([gt.ones(2), FailsToPickle()], buf)
    assert buf.getvalue() == b""


# ---- map_location --------------------------------------------------------------------------

def saved_at(location: str) -> io.BytesIO:
    """A checkpoint of [a, a[1:]] whose storage record claims `location`."""
    buf = io.BytesIO()
    a = gt.arange(4.0)
    gt.save([a, a[1:]], buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        pkl, data = zf.read("archive/data.pkl"), zf.read("archive/data/0")
    old = pickle.BINUNICODE + struct.pack("<I", 3) + b"cpu"
    new = pickle.BINUNICODE + struct.pack("<I", len(location)) + location.encode()
    assert old in pkl
    return zip_with_pickle(pkl.replace(old, new), {"0": data})


def cuda_available() -> bool:
    try:
        gt.UntypedStorage(1, device="cuda")
    except Exception:
        return False
    return True


@pytest.mark.parametrize("map_location", ["cpu", gt.device("cpu"), {"cuda:0": "cpu"},
                                          lambda storage, loc: storage,
                                          lambda storage, loc: None if loc == "cpu" else storage])
def test_map_location_to_cpu(map_location):
    got = gt.load(saved_at("cuda:0"), map_location=map_location)
    assert got[0].device == gt.device("cpu")
    assert got[0].untyped_storage() is got[1].untyped_storage()
    np.testing.assert_array_equal(to_numpy(got[1]), [1.0, 2.0, 3.0])


def test_map_location_callable_sees_location_and_meta():
    seen = []
    gt.load(saved_at("cpu"), map_location=lambda s, loc: seen.append((s.nbytes(), loc)))
    assert seen == [(16, "cpu")]
    got = gt.load(saved_at("cpu"), map_location="meta")
    assert got[0].is_meta and got[1].shape == (3,) and got[1].storage_offset() == 1


def test_cuda_location_without_cuda_explains_map_location():
    if cuda_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(RuntimeError, match="map_location"):
        gt.load(saved_at("cuda:0"))
    got = gt.load(saved_at("cuda:1"), map_location={"cuda:0": "cuda:0", "cuda:1": "cpu"})
    assert got[0].device == gt.device("cpu")


def test_bad_map_location_type():
    with pytest.raises(TypeError, match="map_location"):
        gt.load(saved_at("cpu"), map_location=3)


# ---- safetensors ---------------------------------------------------------------------------

def test_safetensors_roundtrip_every_dtype(tmp_path):
    tensors = {str(d): sample(d) for d in sft._CODES}
    tensors["scalar"] = gt.tensor(1.5)
    tensors["empty"] = gt.empty(0, 3)
    path = tmp_path / "m.safetensors"
    sft.save_file(tensors, path, metadata={"format": "pt"})
    for got in (sft.load_file(path), sft.load(sft.save(tensors))):
        assert set(got) == set(tensors)
        for name, t in tensors.items():
            assert got[name].dtype is t.dtype and got[name].shape == t.shape
            assert got[name].is_contiguous()
            np.testing.assert_array_equal(to_numpy(got[name]), to_numpy(t))


def test_safetensors_layout_by_hand():
    data = sft.save({"b": gt.ones(2, dtype=gt.int8), "a": gt.tensor([1.0, 2.0])},
                    metadata={"k": "v"})
    n = int.from_bytes(data[:8], "little")
    assert n % 8 == 0
    import json
    header = json.loads(data[8:8 + n])
    assert header["__metadata__"] == {"k": "v"}
    assert header["a"] == {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    assert header["b"] == {"dtype": "I8", "shape": [2], "data_offsets": [8, 10]}
    assert data[8 + n:] == np.array([1, 2], np.float32).tobytes() + b"\x01\x01"


def build(header: dict, payload: bytes) -> bytes:
    import json
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + payload


@pytest.mark.parametrize("header,payload,match", [
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8, "overlaps"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, "Incomplete"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8, "gap"),
    ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, "InvalidInfo"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, b"\0" * 8, "data_offsets"),
    ({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8, "shape"),
    ({"a": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, "dtype"),
    ({"a": {"dtype": "F32", "shape": [2]}}, b"\0" * 8, "exactly"),
    ({"__metadata__": {"k": 1}}, b"", "__metadata__"),
])
def test_safetensors_header_validation(header, payload, match):
    with pytest.raises(sft.SafetensorError, match=match):
        sft.load(build(header, payload))


def test_safetensors_bad_buffers(tmp_path):
    with pytest.raises(sft.SafetensorError, match="HeaderTooSmall"):
        sft.load(b"\1\0")
    with pytest.raises(sft.SafetensorError, match="InvalidHeaderLength"):
        sft.load((100).to_bytes(8, "little") + b"{}")
    with pytest.raises(sft.SafetensorError, match="HeaderTooLarge"):
        sft.load((1 << 40).to_bytes(8, "little"))
    with pytest.raises(sft.SafetensorError, match="Deserialization"):
        sft.load((4).to_bytes(8, "little") + b"{no}")
    path = tmp_path / "cut.safetensors"
    path.write_bytes(sft.save({"a": gt.ones(4)})[:-3])
    with pytest.raises(sft.SafetensorError, match="cut.safetensors.*Incomplete"):
        sft.load_file(path)


def test_safetensors_safe_open_reads_single_tensors(tmp_path):
    path = tmp_path / "m.safetensors"
    tensors = {"a": gt.arange(6.0).reshape(2, 3), "b": gt.ones(4, dtype=gt.bfloat16)}
    sft.save_file(tensors, path, metadata={"step": "3"})
    with sft.safe_open(path, framework="pt") as f:
        assert f.keys() == ["a", "b"] and f.metadata() == {"step": "3"}
        assert_same_tensor(f.get_tensor("b"), tensors["b"])
        assert_same_tensor(f.get_tensor("a"), tensors["a"])
        with pytest.raises(sft.SafetensorError, match="does not contain tensor c"):
            f.get_tensor("c")
    with pytest.raises(ValueError, match="framework"):
        sft.safe_open(path, framework="tf")


def test_safetensors_refuses_views_and_shared_memory():
    a = gt.ones(4, 4)
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        sft.save({"t": a.t()})
    with pytest.raises(RuntimeError, match="share memory"):
        sft.save({"a": a, "row": a[1]})
    sft.save({"r0": a[0], "r1": a[1]})       # disjoint parts of one storage are fine
    with pytest.raises(ValueError, match="metadata"):
        sft.save({"a": a}, metadata={"k": 1})


def test_safetensors_interop_with_the_real_package(tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    torch = oracle_torch()
    t = {"w": torch.randn(3, 4), "h": torch.ones(2, dtype=torch.bfloat16)}
    st_torch.save_file(t, tmp_path / "t.safetensors", metadata={"m": "1"})
    got = sft.load_file(tmp_path / "t.safetensors")
    for name in t:
        assert_same(got[name], t[name])
    sft.save_file({"x": gt.arange(6.0).reshape(2, 3)}, tmp_path / "g.safetensors")
    back = st_torch.load_file(tmp_path / "g.safetensors")
    np.testing.assert_array_equal(back["x"].numpy(),
                                  np.arange(6.0, dtype=np.float32).reshape(2, 3))


def test_safetensors_file_written_atomically(tmp_path):
    path = tmp_path / "m.safetensors"
    sft.save_file({"a": gt.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises(ValueError):
        sft.save_file({"a": gt.ones(2, 2).t()}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["m.safetensors"]
