"""glasstorch.utils.data against torch.utils.data: collation, datasets, samplers, DataLoader
batching, and the worker processes (order, seeding, errors, deaths, clean shutdown)."""
import collections
import math
import multiprocessing
import os
import random
import signal
import time
import warnings
from multiprocessing import resource_tracker

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from glasstorch.utils import data as gdata
from glasstorch.utils.data import _sharing
from oracle import assert_same, oracle_torch, to_torch

Point = collections.namedtuple("Point", "x y")


# ---- helpers ----------------------------------------------------------------------------
def to_torch_tree(x):
    """The same sample with every glasstorch tensor replaced by an equal torch tensor."""
    if isinstance(x, gt.Tensor):
        return to_torch(x)
    if isinstance(x, dict):
        return {k: to_torch_tree(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(to_torch_tree(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch_tree(v) for v in x)
    return x


def assert_same_tree(actual, expected):
    """Same container types, keys, lengths, strings/numbers; tensors equal with dtypes."""
    if isinstance(actual, gt.Tensor):
        assert_same(actual, expected, check_stride=False)
        return
    assert type(actual).__name__ == type(expected).__name__, (type(actual), type(expected))
    if isinstance(actual, dict):
        assert list(actual) == list(expected)
        for k in actual:
            assert_same_tree(actual[k], expected[k])
    elif isinstance(actual, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same_tree(a, e)
    elif isinstance(actual, np.ndarray):
        np.testing.assert_array_equal(actual, expected)
    else:
        assert actual == expected


def batches_equal(a, b) -> bool:
    if isinstance(a, gt.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(batches_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(batches_equal(a[k], b[k]) for k in a)
    return a == b


def raises_like(torch_fn, gt_fn):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(expected.type) as actual:
        gt_fn()
    assert str(actual.value) == str(expected.value)


def samples(rng):
    """Batches of samples of every kind default_collate handles (glasstorch versions)."""
    t = [gt.tensor(rng.standard_normal((3, 4)), dtype=gt.float32) for _ in range(3)]
    return [
        t,
        [x.t() for x in t],                                  # non-contiguous
        [x[::2, 1:] for x in t],                             # offset, stepped
        [gt.tensor(7), gt.tensor(8)],                        # 0-dim
        [gt.zeros(0, 2), gt.zeros(0, 2)],                    # empty
        [np.arange(3, dtype=np.float32), np.ones(3, dtype=np.float32)],
        [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
        [np.array([True]), np.array([False])],
        [np.float32(1.5), np.float32(2.5)],
        [np.int16(1), np.int16(2)],
        [np.bool_(True), np.bool_(False)],
        [1.5, 2.0],
        [1, 2, 3],
        [True, False],
        ["a", "b"],
        [b"a", b"b"],
        [{"x": 1, "y": [1.0, 2.0], "s": "u"}, {"x": 2, "y": [3.0, 4.0], "s": "v"}],
        [{"n": {"t": t[0], "i": 1}}, {"n": {"t": t[1], "i": 2}}],
        [Point(1, 2.0), Point(3, 4.0)],
        [(1, "a", t[0]), (2, "b", t[1])],
        [[1, 2], [3, 4]],
        [(np.arange(2), 1.0), (np.arange(2), 2.0)],
    ]


# ---- collation --------------------------------------------------------------------------
def test_default_collate_matches_torch():
    oracle_torch()
    from torch.utils.data import default_collate
    for batch in samples(np.random.default_rng(0)):
        assert_same_tree(gdata.default_collate(batch), default_collate(to_torch_tree(batch)))


def test_default_convert_matches_torch():
    oracle_torch()
    from torch.utils.data import default_convert
    rng = np.random.default_rng(1)
    items = [np.arange(3.0), np.float32(2.0), 3, "s", {"a": np.arange(2)}, Point(np.ones(2), 1),
             (np.arange(2), 1), [np.arange(2), "x"], gt.ones(2), np.array(["a", "b"]),
             rng.standard_normal((2, 2)).astype(np.float32)]
    for item in items:
        assert_same_tree(gdata.default_convert(item), default_convert(to_torch_tree(item)))


def test_default_collate_errors_match_torch():
    torch = oracle_torch()
    from torch.utils.data import default_collate
    raises_like(lambda: default_collate([torch.ones(3), torch.ones(4)]),
                lambda: gdata.default_collate([gt.ones(3), gt.ones(4)]))
    raises_like(lambda: default_collate([[1, 2], [3]]),
                lambda: gdata.default_collate([[1, 2], [3]]))
    raises_like(lambda: default_collate([object(), object()]),
                lambda: gdata.default_collate([object(), object()]))
    raises_like(lambda: default_collate([np.array(["a"]), np.array(["b"])]),
                lambda: gdata.default_collate([np.array(["a"]), np.array(["b"])]))


# ---- datasets ---------------------------------------------------------------------------
class Squares(gdata.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(gdata.IterableDataset):
    """range(start, end), sharded between workers when `shard` is set."""

    def __init__(self, start, end, shard=True, length=None):
        self.start, self.end, self.shard, self.length = start, end, shard, length

    def __iter__(self):
        info = gdata.get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))

    def __len__(self):
        if self.length is None:
            raise TypeError("no len")
        return self.length


def test_tensor_dataset_and_subset():
    x, y = gt.arange(12.).view(6, 2), gt.arange(6)
    ds = gdata.TensorDataset(x, y)
    assert len(ds) == 6
    assert_same(ds[2][0], x[2])
    assert ds[2][1].item() == 2
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        gdata.TensorDataset(x, gt.arange(5))
    sub = gdata.Subset(ds, [4, 0])
    assert len(sub) == 2 and sub[0][1].item() == 4
    assert [s[1].item() for s in sub.__getitems__([1, 0])] == [0, 4]
    with pytest.raises(NotImplementedError):
        gdata.Dataset()[0]


def test_concat_chain_stack_datasets():
    a, b = Squares(3), Squares(2)
    cat = a + b
    assert isinstance(cat, gdata.ConcatDataset)
    assert cat.cumulative_sizes == [3, 5]
    assert [cat[i] for i in range(5)] == [0, 1, 4, 0, 1]
    assert cat[-1] == 1 and cat[-5] == 0
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-6]
    with pytest.raises(AssertionError, match="empty iterable"):
        gdata.ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        gdata.ConcatDataset([Stream(0, 2)])
    chain = Stream(0, 2, length=2) + Stream(5, 7, length=2)
    assert isinstance(chain, gdata.ChainDataset)
    assert list(chain) == [0, 1, 5, 6] and len(chain) == 4
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(gdata.ChainDataset([a]))
    st = gdata.StackDataset(a, Squares(3))
    assert st[2] == (4, 4) and len(st) == 3
    sd = gdata.StackDataset(p=a, q=Squares(3))
    assert sd[1] == {"p": 1, "q": 1}
    assert sd.__getitems__([0, 2]) == [{"p": 0, "q": 0}, {"p": 4, "q": 4}]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        gdata.StackDataset(a, b)
    with pytest.raises(ValueError, match="both types are given"):
        gdata.StackDataset(a, q=a)


@pytest.mark.parametrize("n,lengths", [(10, [3, 7]), (10, [0.3, 0.7]), (11, [0.3, 0.3, 0.4]),
                                       (7, [0.5, 0.5]), (5, [0.1, 0.1, 0.8]), (30, [1.0]),
                                       (3, [0.25, 0.25, 0.25, 0.25])])
def test_random_split_sizes_match_torch(n, lengths):
    torch = oracle_torch()
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        expected = [len(s) for s in torch.utils.data.random_split(range(n), lengths)]
    with warnings.catch_warnings(record=True) as gw:
        warnings.simplefilter("always")
        parts = gdata.random_split(range(n), lengths, generator=gt.Generator().manual_seed(3))
    assert [len(p) for p in parts] == expected
    assert [str(w.message) for w in gw] == [str(w.message) for w in tw]
    assert sorted(i for p in parts for i in p) == list(range(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = gdata.random_split(range(n), lengths, generator=gt.Generator().manual_seed(3))
    assert [list(p) for p in parts] == [list(p) for p in again]


def test_random_split_errors_match_torch():
    torch = oracle_torch()
    for lengths in ([3, 3], [0.5, 0.6], [1.5, -0.5]):
        raises_like(lambda: torch.utils.data.random_split(range(10), lengths),
                    lambda: gdata.random_split(range(10), lengths))


# ---- samplers ---------------------------------------------------------------------------
@pytest.mark.parametrize("n,bs,drop", [(10, 4, False), (10, 4, True), (8, 4, True), (3, 5, False),
                                       (3, 5, True), (0, 2, False), (7, 1, False)])
def test_batch_sampler_matches_torch(n, bs, drop):
    oracle_torch()
    from torch.utils import data as tdata
    expected = tdata.BatchSampler(tdata.SequentialSampler(range(n)), bs, drop)
    actual = gdata.BatchSampler(gdata.SequentialSampler(range(n)), bs, drop)
    assert list(actual) == list(expected) and len(actual) == len(expected)


def test_sampler_argument_errors_match_torch():
    oracle_torch()
    from torch.utils import data as tdata
    for args in ((range(3), 0, False), (range(3), 2.0, False), (range(3), True, False),
                 (range(3), 2, 1)):
        raises_like(lambda: tdata.BatchSampler(*args), lambda: gdata.BatchSampler(*args))
    raises_like(lambda: tdata.RandomSampler(range(3), replacement=1),
                lambda: gdata.RandomSampler(range(3), replacement=1))
    raises_like(lambda: tdata.RandomSampler(range(3), num_samples=0),
                lambda: gdata.RandomSampler(range(3), num_samples=0))
    raises_like(lambda: tdata.WeightedRandomSampler([1.0, 2.0], 0),
                lambda: gdata.WeightedRandomSampler([1.0, 2.0], 0))
    raises_like(lambda: tdata.WeightedRandomSampler([[1.0, 2.0]], 2),
                lambda: gdata.WeightedRandomSampler([[1.0, 2.0]], 2))


def test_random_sampler():
    g = gt.Generator().manual_seed(0)
    s = gdata.RandomSampler(range(10), generator=g)
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(10)) and first != second
    assert len(s) == 10
    long = list(gdata.RandomSampler(range(4), num_samples=10, generator=g))
    assert len(long) == 10 and sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3]
    assert len(set(long[8:])) == 2
    rep = list(gdata.RandomSampler(range(3), replacement=True, num_samples=100, generator=g))
    assert len(rep) == 100 and set(rep) == {0, 1, 2}
    gt.manual_seed(5)
    a = list(gdata.RandomSampler(range(20)))
    gt.manual_seed(5)
    assert list(gdata.RandomSampler(range(20))) == a


def test_subset_random_and_weighted_samplers():
    g = gt.Generator().manual_seed(1)
    sub = list(gdata.SubsetRandomSampler([10, 20, 30, 40], generator=g))
    assert sorted(sub) == [10, 20, 30, 40]
    w = [1.0, 0.0, 3.0, 4.0]
    draws = list(gdata.WeightedRandomSampler(w, 20000, generator=g))
    freq = np.bincount(draws, minlength=4) / 20000
    np.testing.assert_allclose(freq, np.array(w) / 8, atol=0.015)
    assert freq[1] == 0
    unique = list(gdata.WeightedRandomSampler(w, 3, replacement=False, generator=g))
    assert sorted(unique) == [0, 2, 3]
    assert len(gdata.WeightedRandomSampler(w, 7)) == 7


@pytest.mark.parametrize("n,replicas,drop", [(10, 3, False), (10, 3, True), (9, 3, False),
                                              (2, 4, False), (5, 2, True)])
def test_distributed_sampler_matches_torch(n, replicas, drop):
    oracle_torch()
    from torch.utils.data import DistributedSampler
    for rank in range(replicas):
        expected = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop)
        actual = gdata.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                          drop_last=drop)
        assert list(actual) == list(expected) and len(actual) == len(expected)
    shards = [gdata.DistributedSampler(range(n), replicas, r, seed=4, drop_last=drop)
              for r in range(replicas)]
    keys = [k for s in shards for k in s]
    assert len(keys) == sum(len(s) for s in shards)
    if not drop:
        assert set(keys) == set(range(n))
    with pytest.raises(ValueError, match="Invalid rank"):
        gdata.DistributedSampler(range(n), replicas, replicas)


# ---- DataLoader, one process ------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=None), dict(batch_size=4, drop_last=False),
                                    dict(batch_size=20)])
def test_dataloader_batches_match_torch(kwargs):
    torch = oracle_torch()
    x = np.random.default_rng(2).standard_normal((10, 3)).astype(np.float32)
    gds = gdata.TensorDataset(gt.tensor(x), gt.arange(10))
    tds = torch.utils.data.TensorDataset(torch.tensor(x), torch.arange(10))
    expected = list(torch.utils.data.DataLoader(tds, **kwargs))
    loader = gdata.DataLoader(gds, **kwargs)
    actual = list(loader)
    assert len(loader) == len(torch.utils.data.DataLoader(tds, **kwargs)) == len(actual)
    for a, e in zip(actual, expected):
        assert_same_tree(a, e)


def test_dataloader_dict_samples_and_custom_samplers_match_torch():
    oracle_torch()
    from torch.utils import data as tdata

    class D:
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return {"i": i, "f": i / 2, "name": f"s{i}", "arr": np.full(2, i, np.int32)}

    bs = [[6, 0], [1, 2, 3], [5]]
    for kw_gt, kw_t in [
            (dict(batch_sampler=bs), dict(batch_sampler=bs)),
            (dict(sampler=[3, 1, 4], batch_size=2), dict(sampler=[3, 1, 4], batch_size=2)),
            (dict(batch_size=2, collate_fn=lambda b: b), dict(batch_size=2,
                                                               collate_fn=lambda b: b))]:
        expected = list(tdata.DataLoader(D(), **kw_t))
        actual = list(gdata.DataLoader(D(), **kw_gt))
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same_tree(a, e)


def test_dataloader_shuffle_is_a_permutation_and_follows_generator():
    loader = gdata.DataLoader(range(23), batch_size=5, shuffle=True,
                              generator=gt.Generator().manual_seed(0))
    epochs = [[int(v) for b in loader for v in b.tolist()] for _ in range(2)]
    assert all(sorted(e) == list(range(23)) for e in epochs) and epochs[0] != epochs[1]
    assert [len(b) for b in loader] == [5, 5, 5, 5, 3]
    again = gdata.DataLoader(range(23), batch_size=5, shuffle=True,
                             generator=gt.Generator().manual_seed(0))
    assert [int(v) for b in again for v in b.tolist()] == epochs[0]


def test_dataloader_argument_errors_match_torch():
    oracle_torch()
    from torch.utils import data as tdata
    cases = [dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
             dict(persistent_workers=True), dict(sampler=[0], shuffle=True),
             dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], drop_last=True),
             dict(batch_size=None, drop_last=True), dict(num_workers=1, prefetch_factor=-1),
             dict(multiprocessing_context="spawn"),
             dict(num_workers=1, multiprocessing_context="nope"),
             dict(num_workers=1, multiprocessing_context=3)]
    for kw in cases:
        raises_like(lambda: tdata.DataLoader(range(4), **kw),
                    lambda: gdata.DataLoader(range(4), **kw))
    for kw in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected "
                                             "unspecified"):
            gdata.DataLoader(Stream(0, 3), **kw)
    loader = gdata.DataLoader(range(4))
    raises_like(lambda: setattr(tdata.DataLoader(range(4)), "batch_size", 2),
                lambda: setattr(loader, "batch_size", 2))


def test_iterable_dataset_batches_len_and_warning():
    oracle_torch()
    from torch.utils import data as tdata

    class TStream(tdata.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    for kw in (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None)):
        expected = list(tdata.DataLoader(TStream(), **kw))
        actual = list(gdata.DataLoader(Stream(0, 7), **kw))
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same_tree(a, e)
    loader = gdata.DataLoader(Stream(0, 12, length=4), batch_size=2)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match=r"was reported to be 4\(when accessing len\S+ but "
                                         r"\d samples have been fetched"):
        list(loader)


def test_pin_memory_without_accelerator_warns():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no "
                                         "accelerator is found"):
        batches = list(gdata.DataLoader(range(4), batch_size=2, pin_memory=True))
    assert [b.tolist() for b in batches] == [[0, 1], [2, 3]]


# ---- DataLoader with workers ------------------------------------------------------------
class Tensors(gdata.Dataset):
    """Item i: a small and a large (shared-memory sized) tensor, a number and a string."""

    def __init__(self, n=12, delay_every=0):
        self.n, self.delay_every = n, delay_every

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay_every and i % self.delay_every == 0:
            time.sleep(0.05)                    # makes answers arrive out of order
        big = gt.arange(float(_sharing.SHM_MIN_BYTES // 8 + 3)) + i
        return {"small": gt.full((2, 3), float(i)), "big": big[1:].view(-1, 2).t(),
                "i": i, "name": f"n{i}"}


class Seeds(gdata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = gdata.get_worker_info()
        return (info.id, info.seed, random.random(), float(np.random.rand()),
                gt.rand(()).item(), os.getpid(), info.num_workers, len(info.dataset),
                os.environ.get("GT_INIT_MARK", ""))


class Failing(gdata.Dataset):
    def __init__(self, mode):
        self.mode = mode

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            if self.mode == "value":
                raise ValueError("bad sample 3")
            if self.mode == "key":
                raise KeyError("missing")
            if self.mode == "exit":
                os._exit(3)
            if self.mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.mode == "sleep":
                time.sleep(0.6)
            if self.mode == "unpicklable":
                return lambda: None
        return i


def mark_init(worker_id):
    os.environ["GT_INIT_MARK"] = f"init{worker_id}"


def our_segments():
    return [n for n in os.listdir("/dev/shm") if n.startswith(f"gtdl{os.getpid()}_")] \
        if os.path.isdir("/dev/shm") else []


@pytest.fixture
def no_leaks():
    yield
    deadline = time.monotonic() + 2
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert multiprocessing.active_children() == []
    assert our_segments() == []


def test_workers_match_single_process(no_leaks):
    ds = Tensors(12, delay_every=4)
    expected = list(gdata.DataLoader(ds, batch_size=3))
    actual = list(gdata.DataLoader(ds, batch_size=3, num_workers=2))
    assert len(actual) == 4 and all(batches_equal(a, e) for a, e in zip(actual, expected))
    assert actual[1]["big"].shape == expected[1]["big"].shape
    actual[1]["big"].add_(1)                    # shared-memory batches are ordinary tensors
    assert batches_equal(actual[1]["big"], expected[1]["big"] + 1)
    unbatched = list(gdata.DataLoader(ds, batch_size=None, num_workers=2, prefetch_factor=1))
    assert all(batches_equal(a, ds[i]) for i, a in enumerate(unbatched))
    loose = list(gdata.DataLoader(ds, batch_size=2, num_workers=2, in_order=False))
    assert sorted(int(b["i"][0]) for b in loose) == list(range(0, 12, 2))


def test_worker_seeds_info_and_init_fn(no_leaks):
    loader = gdata.DataLoader(Seeds(), batch_size=None, num_workers=2,
                              worker_init_fn=mark_init, generator=gt.Generator().manual_seed(7))
    epochs = [list(loader) for _ in range(2)]
    for rows in epochs:
        by_worker = {r[0]: r for r in rows}
        assert set(by_worker) == {0, 1}
        w0, w1 = by_worker[0], by_worker[1]
        assert w1[1] == w0[1] + 1                           # seed = base_seed + worker id
        assert w0[5] != w1[5] and all(r[6] == 2 and r[7] == 8 for r in rows)
        assert all(r[8] == f"init{r[0]}" for r in rows)
        firsts = [next(r for r in rows if r[0] == w) for w in (0, 1)]
        for k in (2, 3, 4):                                 # random, numpy, glasstorch differ
            assert firsts[0][k] != firsts[1][k]
    assert epochs[0][0][1] != epochs[1][0][1]               # a new base seed each epoch
    assert epochs[0][0][2:5] != epochs[1][0][2:5]
    assert gdata.get_worker_info() is None


def test_iterable_dataset_sharded_between_workers(no_leaks):
    loader = gdata.DataLoader(Stream(0, 11), batch_size=2, num_workers=2)
    values = sorted(v for b in loader for v in b.tolist())
    assert values == list(range(11))
    dup = gdata.DataLoader(Stream(0, 3, shard=False), batch_size=None, num_workers=2)
    assert sorted(int(v) for v in dup) == [0, 0, 1, 1, 2, 2]


def test_persistent_workers_survive_epochs(no_leaks):
    loader = gdata.DataLoader(Seeds(), batch_size=2, num_workers=2, persistent_workers=True)
    first = list(loader)
    it = iter(loader)
    next(it)                                               # stop an epoch early
    second = list(iter(loader))
    assert len(first) == len(second) == 4
    pids = {int(p) for b in first + second for p in b[5]}
    assert len(pids) == 2                                  # the same two processes throughout
    assert first[0][1].tolist() == second[0][1].tolist()  # seeded once, as torch
    stream = gdata.DataLoader(Stream(0, 5), batch_size=2, num_workers=2, persistent_workers=True)
    assert [sorted(v for b in stream for v in b.tolist()) for _ in range(2)] == [
        list(range(5))] * 2
    del loader, it, stream


def test_worker_exception_is_reraised_with_traceback(no_leaks):
    with pytest.raises(ValueError) as err:
        list(gdata.DataLoader(Failing("value"), batch_size=2, num_workers=2))
    text = str(err.value)
    assert text.startswith("Caught ValueError in DataLoader worker process 1.\n"
                           "Original Traceback (most recent call last):\n")
    assert "bad sample 3" in text and "__getitem__" in text
    del err     # its traceback holds the iterator (as in torch); dropping it stops the workers
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1"):
        list(gdata.DataLoader(Failing("key"), batch_size=None, num_workers=2))
    with pytest.raises(Exception, match="Caught PicklingError|Caught AttributeError"):
        list(gdata.DataLoader(Failing("unpicklable"), batch_size=None, num_workers=1))


def fail_init(worker_id):
    if worker_id == 1:
        raise OSError("no device")


def test_worker_init_fn_failure_is_reraised(no_leaks):
    with pytest.raises(OSError, match="Caught OSError in DataLoader worker process 1"):
        list(gdata.DataLoader(range(6), num_workers=2, worker_init_fn=fail_init))


def test_loader_continues_after_a_worker_exception(no_leaks):
    it = iter(gdata.DataLoader(Failing("value"), batch_size=None, num_workers=2))
    got = []
    for _ in range(8):
        try:
            got.append(int(next(it)))
        except ValueError:
            got.append(None)
    assert got == [0, 1, 2, None, 4, 5, 6, 7]
    del it


@pytest.mark.parametrize("mode,text", [("exit", r"exited unexpectedly with exit code 3"),
                                       ("kill", r"is killed by signal: Killed")])
def test_dying_worker_raises_quickly(no_leaks, mode, text):
    start = time.monotonic()
    it = iter(gdata.DataLoader(Failing(mode), batch_size=None, num_workers=2))
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) " + text):
        list(it)
    assert time.monotonic() - start < 3
    assert list(it) == []               # its workers are stopped: the iterator is exhausted


def test_timeout(no_leaks):
    loader = gdata.DataLoader(Failing("sleep"), batch_size=None, num_workers=1, timeout=0.3)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.3 seconds$"):
        list(loader)


def test_no_workers_or_segments_left_behind(no_leaks):
    loader = gdata.DataLoader(Tensors(16), batch_size=2, num_workers=2)
    it = iter(loader)
    next(it)
    time.sleep(0.2)                      # prefetched batches (with segments) wait in the pipe
    assert it._send_idx - it._rcvd_idx <= 2 * 2     # prefetch_factor * num_workers in flight
    workers = list(it._workers)
    del it
    assert not any(w.is_alive() for w in workers)
    for batch in loader:
        break
    del batch
    with pytest.raises(ZeroDivisionError):
        for i, batch in enumerate(loader):
            1 / (i - 1)


def test_spawn_context(no_leaks):
    loader = gdata.DataLoader(Tensors(4), batch_size=2, num_workers=1,
                              multiprocessing_context="spawn")
    expected = list(gdata.DataLoader(Tensors(4), batch_size=2))
    assert all(batches_equal(a, e) for a, e in zip(list(loader), expected))


def test_tensors_cross_processes_through_shared_memory():
    resource_tracker.ensure_running()       # shared with the child, as the DataLoader does
    q = multiprocessing.get_context("fork").SimpleQueue()
    big = gt.arange(float(_sharing.SHM_MIN_BYTES // 4)).view(-1, 4)[1:, ::2]
    p = multiprocessing.get_context("fork").Process(target=_send_from_worker, args=(q, big))
    p.start()
    got, small = q.get()
    p.join()
    assert_same(got, big)
    assert_same(small, big[:2])
    assert got.untyped_storage().nbytes() < big.untyped_storage().nbytes()  # only the span
    assert our_segments() == []


def _send_from_worker(q, t):
    _sharing.use_shared_memory(f"gtdl{os.getppid()}_test_")
    q.put((t, t[:2]))


def test_requires_grad_non_leaf_refused():
    from multiprocessing.reduction import ForkingPickler
    x = gt.ones(3, requires_grad=True)
    assert ForkingPickler.loads(ForkingPickler.dumps(x)).requires_grad
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
        ForkingPickler.dumps(x * 2)
    sent = ForkingPickler.loads(ForkingPickler.dumps((x * 2.5).detach()))
    assert math.isclose(sent[0].item(), 2.5) and not sent.requires_grad


def test_keyboard_interrupt_in_the_loop_stops_workers(no_leaks):
    with pytest.raises(KeyboardInterrupt):
        for _ in gdata.DataLoader(Failing("sleep"), batch_size=None, num_workers=2):
            raise KeyboardInterrupt


def test_keyboard_interrupt_while_waiting_stops_workers(no_leaks):
    """Ctrl-C while the iterator waits for a worker. Python delivers SIGINT to the main
    thread only; under pytest-xdist tests may run elsewhere, where this cannot be tested."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("SIGINT reaches only the main thread, and this test runs in another")
    # a test runner may ignore SIGINT in its workers: use Python's own handler meanwhile
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            for _ in gdata.DataLoader(Failing("sleep"), batch_size=None, num_workers=2):
                time.sleep(1.0)
    finally:
        timer.join()
        signal.signal(signal.SIGINT, previous)


def test_pin_memory_with_an_accelerator_pins_custom_batches(monkeypatch):
    from glasstorch.utils.data import dataloader

    class Batch:
        def __init__(self, items):
            self.items, self.pinned = items, False

        def pin_memory(self):
            self.pinned = True
            return self

    monkeypatch.setattr(dataloader, "_accelerator_available", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batches = list(gdata.DataLoader(range(4), batch_size=2, pin_memory=True,
                                        collate_fn=lambda b: {"b": Batch(b), "s": "x"}))
    assert [(b["b"].items, b["b"].pinned, b["s"]) for b in batches] == [
        ([0, 1], True, "x"), ([2, 3], True, "x")]


def test_docstring_examples_run():
    import doctest
    from glasstorch.utils.data import _collate, dataloader, dataset, distributed, sampler
    for module in (_collate, dataloader, dataset, distributed, sampler):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, module.__name__


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 60), weights=st.lists(st.integers(1, 9), min_size=1, max_size=5),
       batch_size=st.integers(1, 7), drop_last=st.booleans())
def test_split_and_batch_sizes_match_torch_hypothesis(n, weights, batch_size, drop_last):
    torch = oracle_torch()
    fractions = [w / sum(weights) for w in weights]

    def lengths(lib):
        """The split sizes, or the error (fractions whose float sum misses 1 are refused)."""
        try:
            return [len(s) for s in lib.random_split(range(n), fractions)]
        except ValueError as e:
            return str(e)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert lengths(gdata) == lengths(torch.utils.data)
    kw = dict(batch_size=batch_size, drop_last=drop_last)
    assert [len(b) for b in gdata.DataLoader(range(n), **kw)] == [
        len(b) for b in torch.utils.data.DataLoader(range(n), **kw)]


def test_extending_default_collate_through_the_collate_fn_map():
    from glasstorch.utils.data._utils.collate import collate, default_collate_fn_map

    class Box:
        def __init__(self, v):
            self.v = v

    custom = {**default_collate_fn_map, Box: lambda batch, *, collate_fn_map: sum(
        b.v for b in batch)}
    out = collate([{"b": Box(1), "t": gt.ones(2)}, {"b": Box(2), "t": gt.zeros(2)}],
                  collate_fn_map=custom)
    assert out["b"] == 3 and out["t"].shape == (2, 2)


def test_worker_collation_goes_straight_to_shared_memory(monkeypatch):
    from multiprocessing.reduction import ForkingPickler
    resource_tracker.ensure_running()
    monkeypatch.setattr(_sharing, "_prefix", f"gtdl{os.getpid()}_self_")
    rows = [gt.arange(float(_sharing.SHM_MIN_BYTES // 4)) + i for i in range(2)]
    batch = gdata.default_collate(rows)
    assert batch.untyped_storage() in _sharing._segment_of and len(our_segments()) == 1
    payload = ForkingPickler.dumps(batch[1])                # a view: sent by name, no copy
    _sharing.created.clear()
    got = ForkingPickler.loads(payload)
    assert our_segments() == []                             # the receiver unlinked it
    assert_same(got, rows[1])
    unsent = gdata.default_collate(rows)
    assert len(our_segments()) == 1
    del unsent                                              # dropped unsent: segment goes too
    assert our_segments() == []
    again = ForkingPickler.loads(ForkingPickler.dumps(batch))   # sent twice: copied anew
    _sharing.created.clear()
    assert_same(again, gt.stack(rows))
    assert our_segments() == []


class _PlainTensorDataset(gt.utils.data.TensorDataset):
    """A subclass: the DataLoader takes the per-sample path for it."""


@pytest.mark.parametrize("workers", [0, 2])
def test_tensor_dataset_batches_are_gathered_exactly_as_collated(workers):
    """The TensorDataset shortcut (one index_select per tensor and batch) gives the batches
    the per-sample path gives: values, dtypes, shapes, strides, batch types."""
    rng = np.random.default_rng(0)
    x = gt.from_numpy(rng.standard_normal((37, 2, 3)).astype(np.float32))
    y = gt.from_numpy(rng.integers(0, 5, 37))
    for cls in (gt.utils.data.TensorDataset, _PlainTensorDataset):
        gt.manual_seed(3)
        loader = gt.utils.data.DataLoader(cls(x, y), batch_size=8, shuffle=True,
                                          num_workers=workers)
        batches = [b for b in loader]
        if cls is gt.utils.data.TensorDataset:
            fast = batches
    assert len(fast) == len(batches) == 5
    from glasstorch.utils.data._worker import MapFetcher
    fetcher = MapFetcher(gt.utils.data.TensorDataset(x, y), True, gdata.default_collate, False)
    assert fetcher.rows_of is not None                          # the shortcut is taken
    for a, b in zip(fast, batches):
        assert type(a) is type(b) is list
        for s, t in zip(a, b):
            assert s.dtype is t.dtype and s.shape == t.shape and s.stride() == t.stride()
            np.testing.assert_array_equal(s.numpy(), t.numpy())


def test_tensor_dataset_shortcut_steps_aside_where_results_would_differ():
    from glasstorch.utils.data._collate import collate_rows
    x = gt.arange(12.).reshape(4, 3)
    assert collate_rows((x,), [-1, 0]) is None                  # negative index
    assert collate_rows((x.t(),), [0, 1]) is None               # a view, not contiguous
    w = gt.ones(4, 3, requires_grad=True)
    assert collate_rows((w,), [0, 1]) is None                   # records gradients
    batch = next(iter(gt.utils.data.DataLoader(gt.utils.data.TensorDataset(w), batch_size=2)))
    assert batch[0].grad_fn.name() == "StackBackward0"          # the per-sample path
