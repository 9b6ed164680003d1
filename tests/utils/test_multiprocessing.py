"""torch.multiprocessing: spawn runs fn(i, *args) in each process, tensors come back through
a queue, and a failure is raised in the parent with the child's traceback."""
import sys
from pathlib import Path

import pytest

import glasstorch as torch
import glasstorch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).parent))
import mp_workers  # noqa: E402


def test_spawn_runs_each_index_and_tensors_come_back():
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(mp_workers.put_square, args=(queue,), nprocs=2)
    got = dict(queue.get() for _ in range(2))
    assert sorted(got) == [0, 1]
    assert got[1].tolist() == [1.0, 1.0, 1.0] and isinstance(got[1], torch.Tensor)


def test_a_failing_process_raises_with_its_traceback():
    with pytest.raises(mp.ProcessRaisedException, match="worker one is unhappy") as info:
        mp.spawn(mp_workers.fail_on_one, nprocs=2)
    assert info.value.error_index == 1


def test_sharing_strategies():
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    with pytest.raises(ValueError):
        mp.set_sharing_strategy("carrier pigeon")
    assert mp.get_start_method(allow_none=True) in (None, "fork", "spawn", "forkserver")
