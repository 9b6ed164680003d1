"""DataLoader(pin_memory=True): batches pinned inline without workers, and by a pinning
thread with workers; the thread keeps the loader's ordering, error re-raising, worker-death
detection, timeouts and shutdown, and ends with its iterator. The unpinned loader's batches
are the reference; the container rules are checked against torch's own pin_memory."""
import collections
import gc
import os
import signal
import threading
import time

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cuda import runtime
from glasstorch.utils import data as gdata
from glasstorch.utils.data._pin_memory import THREAD_NAME, pin_memory
from oracle import oracle_torch

Pair = collections.namedtuple("Pair", "x y")
N = 12


class Items(gdata.Dataset):
    """Item i as a tensor, a tuple, a dict or a namedtuple; raises or kills its worker on
    request at item `bad`."""

    def __init__(self, kind="tensor", bad=None, action=None):
        self.kind, self.bad, self.action = kind, bad, action

    def __len__(self):
        return N

    def __getitem__(self, i):
        if i == self.bad:
            if self.action == "raise":
                raise ValueError(f"bad item {i}")
            if self.action == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.action == "sleep":
                time.sleep(0.5)
        x = gt.arange(3.0) + 10 * i
        y = gt.tensor(i)
        if self.kind == "tensor":
            return x
        if self.kind == "tuple":
            return x, y
        if self.kind == "dict":
            return {"x": x, "y": y, "name": f"item{i}"}
        return Pair(x, y)


class Batch:
    """A custom batch type: pin_memory() pins its tensor and records where it ran."""

    def __init__(self, samples):
        self.data = gt.stack(samples)
        self.pinned_in = None

    def pin_memory(self):
        self.data = self.data.pin_memory()
        self.pinned_in = (threading.current_thread().name, gt.cuda.current_device())
        return self


class FailingPin(Batch):
    def pin_memory(self):
        raise OSError("cannot pin this batch")


def collate_tuple(samples):
    """A tuple batch (default_collate turns tuples into lists; torch keeps a tuple a tuple)."""
    return tuple(gt.stack(column) for column in zip(*samples))


class Shards(gdata.IterableDataset):
    """An iterable dataset split between workers: each worker streams its own items."""

    def __iter__(self):
        info = gdata.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return (gt.full((2,), float(i)) for i in range(start, N, step))


def pin_threads():
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def assert_pinned_copy(actual, expected):
    """`actual` has `expected`'s structure and values, every tensor in it pinned."""
    assert type(actual) is type(expected)
    if isinstance(expected, gt.Tensor):
        assert actual.is_pinned() and not expected.is_pinned()
        assert actual.dtype == expected.dtype and actual.stride() == expected.stride()
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for k in expected:
            assert_pinned_copy(actual[k], expected[k])
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_pinned_copy(a, e)
    else:
        assert actual == expected


@pytest.fixture(autouse=True)
def no_thread_left(monkeypatch):
    """Every test ends with no pinning thread running, and none that ended by crashing."""
    crashes = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)
    yield
    if pin_threads():       # an iterator kept alive by a traceback's reference cycle
        gc.collect()
    assert pin_threads() == []
    assert [(c.thread.name, c.exc_value) for c in crashes] == []


LOADERS = {
    "tensor": dict(dataset=Items("tensor")),
    "tuple": dict(dataset=Items("tuple"), collate_fn=collate_tuple),
    "list": dict(dataset=Items("tuple")),
    "dict": dict(dataset=Items("dict")),
    "namedtuple": dict(dataset=Items("namedtuple")),
}


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("kind", LOADERS)
def test_batches_come_back_pinned_equal_and_in_order(kind, num_workers):
    args = dict(LOADERS[kind], batch_size=3)
    expected = list(gdata.DataLoader(**args))
    actual = list(gdata.DataLoader(**args, pin_memory=True, num_workers=num_workers))
    assert len(actual) == len(expected) == N // 3
    for a, e in zip(actual, expected):
        assert_pinned_copy(a, e)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_custom_batches_are_pinned_by_the_thread_with_workers(num_workers):
    loader = gdata.DataLoader(Items(), batch_size=4, num_workers=num_workers,
                              pin_memory=True, collate_fn=Batch)
    batches = list(loader)
    main = threading.current_thread().name
    where = main if num_workers == 0 else THREAD_NAME
    assert [b.pinned_in for b in batches] == [(where, gt.cuda.current_device())] * 3
    for b, e in zip(batches, gdata.DataLoader(Items(), batch_size=4)):
        assert_pinned_copy(b.data, e)


def test_the_thread_pins_on_the_device_current_when_the_iterator_began(cuda_backend):
    if cuda_backend == "real" and gt.cuda.device_count() < 2:
        pytest.skip("needs two GPUs (or the simulation)")
    if cuda_backend == "simulated":
        import simulated_cupy
        simulated_cupy.reset(device_count=2)
        runtime.use_cupy(simulated_cupy)
    try:
        gt.cuda.set_device(1)
        it = iter(gdata.DataLoader(Items(), batch_size=6, num_workers=2, pin_memory=True,
                                   collate_fn=Batch))
        gt.cuda.set_device(0)       # later changes in the main thread do not move the thread
        assert [b.pinned_in for b in it] == [(THREAD_NAME, 1)] * 2
    finally:
        gt.cuda.set_device(0)
        if cuda_backend == "simulated":
            simulated_cupy.reset()
            runtime.use_cupy(simulated_cupy)


def test_out_of_order_results_are_still_yielded_in_sampler_order():
    class Slow(Items):
        def __getitem__(self, i):
            if i < 2:
                time.sleep(0.2)         # worker 0's first batch arrives after worker 1's
            return super().__getitem__(i)

    batches = list(gdata.DataLoader(Slow(), batch_size=2, num_workers=2, pin_memory=True))
    assert [b[:, 0].tolist() for b in batches] == [[0, 10], [20, 30], [40, 50], [60, 70],
                                                    [80, 90], [100, 110]]
    assert all(b.is_pinned() for b in batches)
    unordered = list(gdata.DataLoader(Slow(), batch_size=2, num_workers=2, pin_memory=True,
                                      in_order=False))
    assert sorted(b[0, 0].item() for b in unordered) == [0, 20, 40, 60, 80, 100]


def test_iterable_dataset_workers_ending_their_streams_are_not_deaths():
    batches = list(gdata.DataLoader(Shards(), batch_size=2, num_workers=2, pin_memory=True))
    assert all(b.is_pinned() for b in batches)
    assert sorted(b[:, 0].tolist() for b in batches) == sorted(
        b[:, 0].tolist() for b in gdata.DataLoader(Shards(), batch_size=2, num_workers=2))


def test_worker_errors_reraise_through_the_thread():
    it = iter(gdata.DataLoader(Items(bad=4, action="raise"), batch_size=2, num_workers=2,
                               pin_memory=True))
    assert next(it).is_pinned() and next(it).is_pinned()
    with pytest.raises(ValueError, match=r"(?s)Caught ValueError in DataLoader worker "
                                         r"process \d.*bad item 4"):
        next(it)
    assert next(it)[:, 0].tolist() == [60, 70]      # as in torch: the epoch goes on
    del it


def test_pinning_errors_reraise_naming_the_thread():
    loader = gdata.DataLoader(Items(), batch_size=4, num_workers=2, pin_memory=True,
                              collate_fn=FailingPin)
    with pytest.raises(OSError, match=r"(?s)Caught OSError in pin memory thread for device "
                                      r"\d.*cannot pin this batch"):
        next(iter(loader))


def test_a_killed_worker_is_detected_and_everything_stops():
    it = iter(gdata.DataLoader(Items(bad=7, action="kill"), batch_size=1, num_workers=2,
                               pin_memory=True, timeout=5))    # a miss fails, not hangs
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by "
                                           r"signal: Killed"):
        for _ in it:
            pass
    assert time.monotonic() - start < 4.0       # noticed at once, not by a slow poll
    assert it._shutdown and not any(w.is_alive() for w in it._workers)
    assert pin_threads() == []


def test_timeout_with_the_thread():
    loader = gdata.DataLoader(Items(bad=0, action="sleep"), batch_size=1, num_workers=1,
                              pin_memory=True, timeout=0.1)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.1 seconds"):
        next(iter(loader))


def test_batches_are_pinned_ahead_while_the_loop_runs():
    """The overlap the thread exists for: prefetched batches are pinned while the main
    thread does something else. One worker, so batches arrive in order and the main thread
    holds none back for reordering: every prefetched batch (prefetch_factor = 2) ends up
    pinned in the queue."""
    it = iter(gdata.DataLoader(Items(), batch_size=2, num_workers=1, pin_memory=True))
    next(it)
    waiting = it._pin_thread.queue
    deadline = time.monotonic() + 60.0      # generous: CI shares two cores among processes
    while waiting.qsize() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)                    # the "training step": no call into the loader
    assert waiting.qsize() >= 2
    with waiting.mutex:
        queued = list(waiting.queue)
    assert all(data.is_pinned() for _, data in queued)
    assert [b[:, 0].tolist() for b in it] == [[20, 30], [40, 50], [60, 70], [80, 90],
                                              [100, 110]]


def test_a_dead_pinning_thread_is_reported(monkeypatch):
    from glasstorch.utils.data import _pin_memory
    monkeypatch.setattr(_pin_memory, "pin_memory_loop", lambda *args: None)
    monkeypatch.setattr(_pin_memory, "STATUS_CHECK_INTERVAL", 0.05)
    it = iter(gdata.DataLoader(Items(), batch_size=2, num_workers=1, pin_memory=True))
    with pytest.raises(RuntimeError, match="Pin memory thread exited unexpectedly"):
        next(it)
    del it


def test_the_thread_ends_with_the_epoch_or_the_iterator():
    loader = gdata.DataLoader(Items(), batch_size=2, num_workers=2, pin_memory=True)
    it = iter(loader)
    next(it)
    assert len(pin_threads()) == 1 and pin_threads()[0].daemon
    list(it)                                    # exhausted: stopped and joined
    assert pin_threads() == []
    it = iter(loader)
    next(it)
    assert len(pin_threads()) == 1
    del it                                      # deleted mid-epoch
    assert pin_threads() == []


def test_persistent_workers_keep_one_thread_across_epochs():
    loader = gdata.DataLoader(Items(), batch_size=4, num_workers=2, pin_memory=True,
                              persistent_workers=True)
    expected = list(gdata.DataLoader(Items(), batch_size=4))
    first = iter(loader)
    next(first)                                 # an epoch left unfinished: stale results
    thread = pin_threads()
    for _ in range(2):
        epoch = list(iter(loader))
        assert len(epoch) == len(expected)
        for a, e in zip(epoch, expected):
            assert_pinned_copy(a, e)
        assert pin_threads() == thread and len(thread) == 1
    del loader, first, epoch
    gc.collect()
    assert pin_threads() == []


def test_container_rules_match_torchs_pin_memory():
    """Tensors aside, pin_memory rebuilds containers as torch does: a tuple stays a tuple,
    a namedtuple its type, list and dict subclasses are copied and refilled."""
    oracle_torch()
    from torch.utils.data._utils.pin_memory import pin_memory as torch_pin

    class Leaf:
        def pin_memory(self):
            return "pinned"

    class Tagged(list):
        tag = "kept"

    class Ordered(collections.OrderedDict):
        pass

    data = {"t": (Leaf(), 1), "n": Pair(Leaf(), "s"), "l": Tagged([Leaf(), b"b"]),
            "o": Ordered(a=Leaf()), "r": range(2), "s": "text"}

    def shape(x):
        if isinstance(x, dict):
            return type(x).__name__, {k: shape(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x).__name__, [shape(v) for v in x]
        return x if isinstance(x, (str, bytes, int)) else type(x).__name__

    assert shape(pin_memory(data)) == shape(torch_pin(data))
