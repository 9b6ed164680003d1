"""share_memory_ / is_shared: a tensor put on a multiprocessing queue after share_memory_()
arrives in the other process over the same memory, as in PyTorch."""
import multiprocessing

import pytest

import glasstorch as gt
import glasstorch.multiprocessing as mp
from tests.utils import shm_workers

torch = pytest.importorskip("torch")


def test_share_memory_and_is_shared_as_torch():
    for lib in (gt, torch):
        t = lib.arange(6.0)
        view = t[2:]
        assert not t.is_shared() and not t.untyped_storage().is_shared()
        assert t.share_memory_() is t and t.is_shared() and view.is_shared()
        assert t.untyped_storage().is_shared() and t.tolist() == [0, 1, 2, 3, 4, 5]
        view.add_(1)                          # views still write the (moved) storage
        assert t.tolist() == [0, 1, 3, 4, 5, 6]
        assert t.share_memory_() is t         # sharing twice changes nothing
        with pytest.raises(RuntimeError, match="only available on CPU"):
            lib.ones(2, device="meta").share_memory_()
    model = gt.nn.Linear(2, 2)
    assert model.share_memory() is model and all(p.is_shared() for p in model.parameters())


@pytest.mark.skipif("spawn" not in multiprocessing.get_all_start_methods(),
                    reason="needs the spawn start method")
def test_shared_tensors_sent_to_another_process_are_the_same_memory():
    """One child: a view of a shared tensor and a shared model (Hogwild) travel through a
    queue; the child's writes and its SGD step are seen here."""
    ctx = mp.get_context("spawn")
    t = gt.arange(6.0).reshape(2, 3).share_memory_()
    model = gt.nn.Linear(2, 1)
    with gt.no_grad():
        model.weight.fill_(1.0)
        model.bias.fill_(0.0)
    model.share_memory()
    queue, done = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=shm_workers.add_ten_and_train, args=(queue, done))
    child.start()
    try:
        queue.put((t[1], model))
        assert done.get(timeout=120) is True          # shared on the other side too
        assert done.get(timeout=120) == 42.0
    finally:
        child.join(timeout=120)
    assert child.exitcode == 0
    assert t.tolist() == [[0, 1, 2], [13, 14, 15]]
    assert model.weight.tolist() == [[0.0, 0.0]] and model.bias.tolist() == [-1.0]
