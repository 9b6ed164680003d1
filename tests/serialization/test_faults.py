"""Faults in saving and loading: killed saves, stale temporaries, file modes, size limits,
streaming, and files that fail to load."""
from __future__ import annotations

import io
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.serialization import files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def temporaries(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


# ---- a save killed midway ------------------------------------------------------------------

CHILD = """
import sys, time
import glasstorch as gt
from glasstorch.serialization import pytorch_zip
path, marker = sys.argv[1], sys.argv[2]
real = pytorch_zip._host_bytes
def stall(storage):                 # the pickle is written; stall inside the first storage
    with open(marker, "w"):
        pass
    time.sleep(60)
    return real(storage)
pytorch_zip._host_bytes = stall
gt.save({"step": 2, "w": gt.zeros(100_000)}, path)
"""


def test_killed_save_keeps_the_old_file_and_the_next_save_removes_its_temporary(tmp_path):
    path, marker = tmp_path / "ckpt.pt", tmp_path / "marker"
    gt.save({"step": 1, "w": gt.ones(3)}, path)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(marker)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline, "child never saved"
            time.sleep(0.02)
        left = temporaries(tmp_path)
        assert len(left) == 1 and left[0].startswith(f".ckpt.pt.{child.pid}.")
        assert os.path.getsize(tmp_path / left[0]) > 0
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert gt.load(path)["step"] == 1               # the old file, intact
    assert temporaries(tmp_path) == left            # the dead save's temporary stays ...
    gt.save({"step": 3}, path)
    assert temporaries(tmp_path) == []              # ... until the next save to the target
    assert gt.load(path) == {"step": 3}


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_stale_temporaries_of_the_same_target_are_removed(tmp_path):
    dead, live = dead_pid(), os.getppid()
    names = {
        "dead": f".a.pt.{dead}.0123456789abcdef.tmp",
        "live": f".a.pt.{live}.0123456789abcdef.tmp",
        "mine": f".a.pt.{os.getpid()}.0123456789abcdef.tmp",
        "old": f".a.pt.{live}.fedcba9876543210.tmp",
        "other target": f".b.pt.{dead}.0123456789abcdef.tmp",
        "not ours": f".a.pt.{dead}.tmp",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"partial")
    day_ago = time.time() - files.STALE_AFTER_S - 60
    os.utime(tmp_path / names["old"], (day_ago, day_ago))
    gt.save(gt.ones(2), tmp_path / "a.pt")
    kept = {k for k, n in names.items() if (tmp_path / n).exists()}
    assert kept == {"live", "mine", "other target", "not ours"}


def test_temporary_name_is_the_documented_one():
    name = files.temporary_name("model.pt", pid=4242)
    assert name.startswith(".model.pt.4242.") and name.endswith(".tmp")
    assert len(name) == len(".model.pt.4242..tmp") + 16


# ---- file modes ----------------------------------------------------------------------------

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_saved_file_mode_follows_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        gt.save(gt.ones(2), tmp_path / "m.pt")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "m.pt").st_mode & 0o777 == mode


def test_saved_file_mode_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    old = os.umask(0o027)
    try:
        gt.save(gt.ones(2), tmp_path / "g.pt")
        torch.save(torch.ones(2), tmp_path / "t.pt")
    finally:
        os.umask(old)
    assert (os.stat(tmp_path / "g.pt").st_mode & 0o7777
            == os.stat(tmp_path / "t.pt").st_mode & 0o7777 == 0o640)


def test_overwriting_keeps_the_old_files_mode(tmp_path):
    path = tmp_path / "m.pt"
    gt.save(gt.ones(2), path)
    os.chmod(path, 0o604)
    gt.save(gt.zeros(2), path)
    assert os.stat(path).st_mode & 0o777 == 0o604


# ---- limits on what a load may allocate ----------------------------------------------------

@pytest.fixture
def limits():
    from glasstorch.serialization import get_load_limits, set_load_limits
    previous = get_load_limits()
    yield set_load_limits
    set_load_limits(**previous)


def deflated_checkpoint(obj) -> io.BytesIO:
    """`obj` saved by glasstorch.save, then re-zipped with every entry deflated."""
    plain = io.BytesIO()
    gt.save(obj, plain)
    out = io.BytesIO()
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED,
                                                           compresslevel=1) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    out.seek(0)
    return out


def test_a_pickle_bomb_is_refused_before_it_is_inflated():
    import tracemalloc
    bomb = deflated_checkpoint({"junk": bytes(64 * 2**20)})    # 64 MiB pickle, ~64 KiB file
    size = len(bomb.getvalue())
    assert size < 2**20
    tracemalloc.start()
    try:
        with pytest.raises(gt.serialization.LoadLimitExceeded) as info:
            gt.load(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20
    text = str(info.value)
    assert f"{size} bytes" in text and "limit is 100 times the file size" in text
    assert "set_load_limits(max_inflation_ratio=...)" in text
    assert "GLASSTORCH_LOAD_MAX_INFLATION_RATIO" in text


def test_raising_the_inflation_limit_loads_the_file(limits):
    ckpt = deflated_checkpoint({"w": gt.zeros(8 * 2**20), "step": 4})   # 32 MiB of zeros
    with pytest.raises(gt.serialization.LoadLimitExceeded, match="max_inflation_ratio"):
        gt.load(ckpt)
    limits(max_inflation_ratio=10_000)
    got = gt.load(ckpt)
    assert got["step"] == 4 and got["w"].shape == (8 * 2**20,)
    assert not got["w"].any().item()
    limits(max_inflation_ratio=None)                 # None: no limit
    assert gt.load(ckpt)["step"] == 4


def test_pickle_size_limit(limits):
    buf = io.BytesIO()
    gt.save(list(range(1000)), buf)
    with zipfile.ZipFile(buf) as zf:
        declared = zf.getinfo("archive/data.pkl").file_size
    limits(max_pickle_bytes=1000)
    buf.seek(0)
    with pytest.raises(gt.serialization.LoadLimitExceeded) as info:
        gt.load(buf)
    text = str(info.value)
    assert f"declares {declared} bytes" in text and "limit of 1000 bytes" in text
    assert "set_load_limits(max_pickle_bytes=...)" in text
    assert "GLASSTORCH_LOAD_MAX_PICKLE_BYTES" in text
    assert buf.tell() == 0                           # a failed load leaves the file as it was
    limits(max_pickle_bytes=declared)
    assert gt.load(buf) == list(range(1000))


def test_limits_from_the_environment_and_bad_values(monkeypatch, limits):
    from glasstorch.serialization import limits as module
    monkeypatch.setenv("GLASSTORCH_LOAD_MAX_PICKLE_BYTES", "2048")
    assert module._from_env("GLASSTORCH_LOAD_MAX_PICKLE_BYTES", 1, int) == 2048
    monkeypatch.setenv("GLASSTORCH_LOAD_MAX_PICKLE_BYTES", "0")
    assert module._from_env("GLASSTORCH_LOAD_MAX_PICKLE_BYTES", 1, int) is None
    monkeypatch.setenv("GLASSTORCH_LOAD_MAX_PICKLE_BYTES", "lots")
    with pytest.raises(ValueError, match="GLASSTORCH_LOAD_MAX_PICKLE_BYTES='lots'"):
        module._from_env("GLASSTORCH_LOAD_MAX_PICKLE_BYTES", 1, int)
    with pytest.raises(ValueError, match="max_pickle_bytes must be a non-negative number"):
        limits(max_pickle_bytes=-1)
    previous = limits(max_pickle_bytes=5)
    assert limits(**previous)["max_pickle_bytes"] == 5


# ---- streaming: the storages are the only full-size buffers --------------------------------

@pytest.mark.parametrize("deflate", [False, True])
def test_loading_does_not_double_buffer_storages(deflate, limits):
    import tracemalloc
    n = 2 * 2**20                                    # two 8 MiB storages
    obj = {"a": gt.arange(n, dtype=gt.float32), "b": gt.ones(n)}
    if deflate:
        ckpt = deflated_checkpoint(obj)
        limits(max_inflation_ratio=None)
    else:
        ckpt = io.BytesIO()
        gt.save(obj, ckpt)
        ckpt.seek(0)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        got = gt.load(ckpt)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20 + 5 * 2**20            # was 24 MiB stored, 32 MiB deflated
    assert got["a"][-1].item() == n - 1 and got["b"].sum().item() == n


# ---- damaged files never load wrong data ---------------------------------------------------

def test_random_corruption_never_loads_wrong_data():
    rng = np.random.default_rng(0)
    w, ids = gt.randn(16, 16), gt.arange(40)
    buf = io.BytesIO()
    gt.save({"w": w, "ids": ids, "step": 7, "name": "run"}, buf)
    data = buf.getvalue()
    loaded = 0
    for _ in range(400):
        bad = bytearray(data)
        for pos in rng.integers(0, len(bad), size=int(rng.integers(1, 4))):
            bad[pos] ^= int(rng.integers(1, 256))
        try:
            got = gt.load(io.BytesIO(bytes(bad)))
        except Exception as exc:
            assert isinstance(exc, (RuntimeError, pickle.UnpicklingError)), repr(exc)
            continue
        loaded += 1                      # only bytes no reader looks at (zip comments...) changed
        assert got["step"] == 7 and got["name"] == "run"
        assert gt.equal(got["w"], w) and gt.equal(got["ids"], ids)
    assert loaded < 400


def test_a_failed_load_changes_nothing(tmp_path):
    from glasstorch.serialization import get_safe_globals
    path = tmp_path / "bad.pt"
    gt.save({"w": gt.ones(3)}, path)
    path.write_bytes(path.read_bytes()[:-100])
    before = (get_safe_globals(), gt.get_default_dtype(), gt.is_grad_enabled())
    with open(path, "rb") as f:
        f.seek(2)
        with pytest.raises(RuntimeError, match="not a checkpoint"):
            gt.load(f)
        assert f.tell() == 2
        f.seek(0)
        with pytest.raises(RuntimeError, match="bad.pt"):
            gt.load(f)
        assert f.tell() == 0
    assert (get_safe_globals(), gt.get_default_dtype(), gt.is_grad_enabled()) == before


# ---- malicious pickles never run code, whatever opcode names the callable ------------------

def _attacks(marker) -> dict:
    cmd = f"touch {marker}".encode()
    arg = pickle.SHORT_BINUNICODE + bytes([len(cmd)]) + cmd if len(cmd) < 256 else None
    assert arg is not None

    def short(text):
        return pickle.SHORT_BINUNICODE + bytes([len(text)]) + text.encode()
    return {
        "GLOBAL+REDUCE": b"\x80\x02cos\nsystem\n" + arg + pickle.TUPLE1 + pickle.REDUCE
                         + pickle.STOP,
        "STACK_GLOBAL (protocol 4)": b"\x80\x04" + short("os") + short("system")
                                     + pickle.STACK_GLOBAL + arg + pickle.TUPLE1
                                     + pickle.REDUCE + pickle.STOP,
        "INST (protocol 0)": b"(" + f"S'touch {marker}'\n".encode() + b"ios\nsystem\n."
                             if "'" not in str(marker) else None,
        "OBJ": b"\x80\x02(cos\nsystem\n" + arg + pickle.OBJ + pickle.STOP,
        "NEWOBJ": b"\x80\x02csubprocess\nPopen\n" + arg + pickle.TUPLE1 + pickle.NEWOBJ
                  + pickle.STOP,
        "EXT1 (copyreg registry)": b"\x80\x02" + pickle.EXT1 + bytes([240]) + arg
                                   + pickle.TUPLE1 + pickle.REDUCE + pickle.STOP,
        "BUILD with __setstate__": b"\x80\x02ccollections\nOrderedDict\n)R}"
                                   + short("__setstate__") + b"cos\nsystem\nsb" + pickle.STOP,
        "allowed callable, evil args": b"\x80\x02c_codecs\nencode\n" + arg + short("rot13")
                                       + pickle.TUPLE2 + pickle.REDUCE + pickle.STOP,
    }


def test_no_opcode_makes_a_load_run_code(tmp_path):
    import copyreg
    from tests.serialization.test_save_load import zip_with_pickle
    marker = tmp_path / "pwned"
    copyreg.add_extension("os", "system", 240)
    try:
        for name, payload in _attacks(marker).items():
            if payload is None:
                continue
            with pytest.raises((pickle.UnpicklingError, RuntimeError)) as info:
                gt.load(zip_with_pickle(payload))
            assert not marker.exists(), name
            if name.startswith("allowed callable"):
                assert "latin1 text only" in str(info.value)
            else:                       # refused when the callable is named, never called
                assert isinstance(info.value, gt.serialization.WeightsOnlyUnpicklingError)
                assert re.search(r"GLOBAL (os\.system|subprocess\.Popen)", str(info.value))
    finally:
        copyreg.remove_extension("os", "system", 240)
