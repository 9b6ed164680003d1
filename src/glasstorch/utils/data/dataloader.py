"""DataLoader: batches from a dataset, in this process or in worker processes.

The loader turns a sampler (or, for an IterableDataset, an endless stream of placeholder
keys) into batches of keys, fetches and collates them, and yields them in sampler order.

With `num_workers > 0` the main process keeps `prefetch_factor * num_workers` tasks in
flight: each task `(task_id, keys)` goes round-robin to a worker's own index queue, and all
workers answer on one result pipe. Answers may arrive out of order; they are held until
their turn (unless `in_order=False`). The main process waits on the result pipe and on the
workers' process sentinels together, so a worker that dies is noticed at once. Workers are
stopped (None on each index queue, a bounded join, then terminate) when the epoch ends, the
iterator is deleted or collected, or a worker dies; with `persistent_workers` they live on
and are reset for the next epoch instead. With `pin_memory`, a thread reads the result pipe
instead and hands pinned batches over through a queue, so pinning overlaps with the
training step (`_pin_memory`); without workers, batches are pinned inline.

    >>> import glasstorch as torch
    >>> from glasstorch.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(torch.arange(10.).view(5, 2))
    >>> [b[0].shape for b in DataLoader(ds, batch_size=2)]
    [torch.Size([2, 2]), torch.Size([2, 2]), torch.Size([1, 2])]
"""
from __future__ import annotations

import atexit
import itertools
import math
import multiprocessing
import os
import queue
import secrets
import signal
import time
import warnings
import weakref
from multiprocessing import resource_tracker
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler

from ...core import dtype as dt
from ...ops.creation.factories import empty
from . import _sharing
from ._collate import default_collate, default_convert
from ._pin_memory import PinMemoryThread, WorkerExited, pin_memory
from ._worker import (ExceptionWrapper, IterableDatasetStopIteration, IterableFetcher,
                      MapFetcher, ResumeIteration, worker_loop)
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

# Seconds a stopping worker gets to exit before it is terminated.
_JOIN_TIMEOUT = 5.0


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        fetcher = MapFetcher if kind == _DatasetKind.Map else IterableFetcher
        return fetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    """Endless None keys: an IterableDataset ignores keys, the stream decides when to end."""

    def __iter__(self):
        while True:
            yield None


def _accelerator_available() -> bool:
    try:
        from ... import cuda        # a backend module, present once CUDA support exists
    except ImportError:
        return False
    return bool(cuda.is_available())


class DataLoader:
    """Iterate over `dataset` in batches, optionally in `num_workers` worker processes.

    Arguments, defaults and their rules are torch's: `shuffle` picks a RandomSampler,
    `batch_size=None` turns auto-batching off, `batch_sampler` excludes batch_size, shuffle,
    sampler and drop_last, an IterableDataset takes no sampler, and `prefetch_factor` /
    `persistent_workers` need workers. Workers start with 'fork' where Python's default
    start method is fork (Linux); pass `multiprocessing_context='spawn'` to change it.
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got num_workers=0")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler",
                                           "drop_last", "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if not (self.persistent_workers and self.num_workers > 0):
            return self._get_iterator()
        if self._iterator is None or self._iterator._shutdown:
            self._iterator = self._get_iterator()
        else:
            self._iterator._reset(self)
        return self._iterator

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = (length // self.batch_size if self.drop_last
                          else math.ceil(length / self.batch_size))
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn, as torch does, when asking for more workers than usable CPUs."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            advice = ("DataLoader is not able to compute a suggested max number of worker in "
                      "current system.")
        else:
            checked = "" if cpuset_checked else " (`cpuset` is not taken into account)"
            advice = (f"Our suggested max number of worker in current system is "
                      f"{suggest}{checked}, which is smaller than what this DataLoader is "
                      "going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {advice} Please be aware that excessive worker creation might "
                      "get DataLoader running slow or even freeze, lower the worker number to "
                      "avoid potential slowness/freeze if necessary.", stacklevel=2)


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be "
                          f"used as the device,ignore pin_memory_device="
                          f"'{loader.pin_memory_device}'.", stacklevel=3)
        self._pin_memory = loader.pin_memory and _accelerator_available()
        if loader.pin_memory and not self._pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        seed = empty((), dtype=dt.int64).random_(generator=loader.generator)
        self._base_seed = int(seed.item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable
                and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not "
                        "properly configuring the IterableDataset replica at each worker. "
                        "Please see https://pytorch.org/docs/stable/data.html#torch.utils."
                        "data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)

    def _next_data(self):
        index = self._next_index()
        data = self._dataset_fetcher.fetch(index)
        return pin_memory(data) if self._pin_memory else data


def _death_message(pid: int, exitcode) -> str:
    if exitcode is not None and exitcode < 0:
        msg = f"DataLoader worker (pid {pid}) is killed by signal: {signal.strsignal(-exitcode)}."
        if -exitcode == signal.SIGBUS:
            msg += (" It is possible that dataloader's workers are out of shared memory. "
                    "Please try to raise your shared memory limit.")
        return msg
    return (f"DataLoader worker (pid {pid}) exited unexpectedly with exit code {exitcode}. "
            "Details are lost due to multiprocessing. Rerunning with num_workers=0 may give "
            "better error trace.")


_live_iterators: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _shutdown_live_iterators():
    """At exit, stop persistent (or otherwise still referenced) workers cleanly."""
    for it in list(_live_iterators):
        it._shutdown_workers()


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    _shutdown = True        # until workers exist, there is nothing to shut down
    _pin_thread = None      # a PinMemoryThread while pinning

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._owner_pid = os.getpid()
        self._segment_prefix = f"gtdl{os.getpid()}_{secrets.token_hex(3)}_"
        if _sharing._posixshmem is not None:
            resource_tracker.ensure_running()       # one tracker, shared with the workers
        self._reader, self._writer = ctx.Pipe(duplex=False)
        self._done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        self._shutdown = False
        _live_iterators.add(self)
        is_iterable = self._dataset_kind == _DatasetKind.Iterable
        # Held here: Process.start() drops its arguments, and a 'spawn' child that starts
        # after the parent freed the lock would find its semaphore gone.
        self._write_lock = lock = ctx.Lock()
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()
                w = ctx.Process(target=worker_loop, daemon=True, args=(
                    is_iterable, self._dataset, index_queue, self._writer, lock,
                    self._done_event, self._auto_collation, self._collate_fn,
                    self._drop_last, self._base_seed, loader.worker_init_fn, i,
                    self._num_workers, self._segment_prefix))
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
            if self._pin_memory:
                from ... import cuda
                self._pin_thread = PinMemoryThread(
                    self._reader, [w.sentinel for w in self._workers], cuda.current_device())
            self._reset(loader, first_iter=True)
        except BaseException:
            self._shutdown_workers()
            raise

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        n = self._num_workers
        self._send_idx = 0          # the next task id to send
        self._rcvd_idx = 0          # the next task id to yield
        self._task_info = {}        # task id -> (worker,) while pending, (worker, data) once in
        self._workers_status = [True] * n
        self._workers_num_tasks = [0] * n
        self._worker_queue_idx_cycle = itertools.cycle(range(n))
        if not first_iter:          # persistent workers: reset them, drop stale results
            for q in self._index_queues:
                q.put(ResumeIteration())
            waiting = n
            while waiting:
                task_id, _ = self._get_data()
                if isinstance(task_id, ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * n):
            self._try_put_index()

    def _receive(self):
        return ForkingPickler.loads(self._reader.recv_bytes())

    def _get_data(self):
        """The next (task_id, data) from any worker; raises if a worker died or on timeout."""
        timeout = self._timeout if self._timeout > 0 else None
        if self._pin_thread is not None:
            return self._get_pinned_data(timeout)
        while True:
            alive = [w for w, up in zip(self._workers, self._workers_status) if up]
            ready = wait([self._reader] + [w.sentinel for w in alive], timeout)
            if self._reader in ready:
                return self._receive()
            if not ready:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            for w in alive:
                if w.sentinel in ready:
                    w.join(0.1)
                    if w.exitcode is not None:
                        self._shutdown_workers()
                        raise RuntimeError(_death_message(w.pid, w.exitcode))

    def _get_pinned_data(self, timeout):
        """`_get_data` when the pinning thread reads the pipe and watches the workers."""
        while True:
            try:
                item = self._pin_thread.get(timeout)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") \
                    from None
            if type(item) is tuple:
                return item
            if type(item) is not WorkerExited:      # a message that could not be received
                item.reraise()
            if self._workers_status[item.worker_id]:    # else it was stopped: no news
                w = self._workers[item.worker_id]
                w.join()
                self._shutdown_workers()
                raise RuntimeError(_death_message(w.pid, w.exitcode))

    def _next_data(self):
        if self._shutdown:          # stopped after a worker died: nothing more will come
            raise StopIteration
        while True:
            # Skip tasks that will never be answered (their worker's stream has ended).
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            task_id, data = self._get_data()
            if isinstance(data, IterableDatasetStopIteration):
                self._stop_worker(data.worker_id)
                self._try_put_index()
                continue
            if task_id != self._rcvd_idx:
                if not self._in_order:
                    return self._process_data(data, self._task_info.pop(task_id)[0])
                self._task_info[task_id] += (data,)
                continue
            worker_id = self._task_info.pop(task_id)[0]
            self._rcvd_idx += 1
            return self._process_data(data, worker_id)

    def _stop_worker(self, worker_id: int) -> None:
        """A worker's stream ended: send it nothing more (and let it exit, unless persistent)."""
        if not self._persistent_workers:
            self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker] and (
                    self._in_order or self._workers_num_tasks[worker]
                    < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._workers_num_tasks[worker] += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _drain_while_joining(self, deadline: float, read: bool) -> None:
        """Discard results (so no worker blocks writing one) until every worker has exited;
        `read=False` only waits (the pipe still has another reader)."""
        reader = []
        if read:
            try:
                os.set_blocking(self._reader.fileno(), False)
                reader = [self._reader]
            except OSError:         # already closed by the garbage collector
                pass
        while True:
            alive = [w for w in self._workers if w.is_alive()]
            left = deadline - time.monotonic()
            if not alive or left <= 0:
                return
            ready = wait(reader + [w.sentinel for w in alive], left)
            if self._reader in ready:
                try:
                    self._reader.recv_bytes()
                except (OSError, EOFError):     # a message cut short: stop reading
                    reader = []

    def _shutdown_workers(self):
        # A forked worker holds a copy of every iterator alive at the fork; if its garbage
        # collector finalizes one, it must not stop the real owner's workers.
        if self._shutdown or os.getpid() != self._owner_pid:
            return
        self._shutdown = True
        try:
            # The pinning thread first: then this thread alone reads the pipe.
            read = self._pin_thread is None or self._pin_thread.stop(_JOIN_TIMEOUT)
            self._done_event.set()
            for q in self._index_queues:
                q.put(None)
            self._drain_while_joining(time.monotonic() + _JOIN_TIMEOUT, read)
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(1.0)
                if w.is_alive():
                    w.kill()
                w.join()
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._reader.close()
            self._writer.close()
            _sharing.unlink_segments(self._segment_prefix)
            _live_iterators.discard(self)

    def __del__(self):
        self._shutdown_workers()
