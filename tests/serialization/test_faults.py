"""Faults in saving and loading: killed saves, stale temporaries, file modes, size limits,
streaming, and files that fail to load."""
from __future__ import annotations

import io
import os
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
