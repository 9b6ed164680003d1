"""glibc keeps freed host memory in the process (memory/host_malloc.py): a step's buffers
are the last step's pages, not fresh zero-filled ones."""
import os
import platform
import subprocess
import sys

import pytest

from glasstorch.memory import host_malloc

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")

FAULTS = """
import resource, glasstorch as torch
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = torch.empty(30 << 20, dtype=torch.uint8).fill_(1)
    del t
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(faults)
"""


def _page_faults(**env) -> list:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    result = subprocess.run([sys.executable, "-c", FAULTS], capture_output=True, text=True,
                            env={**environment, **env}, timeout=120)
    assert result.returncode == 0, result.stderr
    return eval(result.stdout)


def test_a_freed_block_is_reused_without_page_faults():
    # 30 MiB: past glibc's default mmap threshold, so untuned the second allocation is a
    # fresh stretch of heap; kept, it is the first one's pages again
    first, second, third = _page_faults()
    assert second <= 5 and third <= 5


def test_the_users_thresholds_and_the_switch_are_respected(monkeypatch):
    monkeypatch.setattr(host_malloc, "_tuned", False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1000000")
    assert host_malloc.keep_freed_memory() is False
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("GLASSTORCH_KEEP_FREED_MEMORY", "0")
    assert host_malloc.keep_freed_memory() is False
    monkeypatch.delenv("GLASSTORCH_KEEP_FREED_MEMORY")
    assert host_malloc.keep_freed_memory() is True
