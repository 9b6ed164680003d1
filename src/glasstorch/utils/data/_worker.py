"""What runs inside a DataLoader worker process, and the fetchers both paths share.

A worker seeds its RNGs (glasstorch's, Python's `random`, NumPy's global one) from
`base_seed + worker_id`, publishes `get_worker_info()`, runs `worker_init_fn`, then serves
`(task_id, index)` messages from its index queue until it receives None (or finds the
loader's done event set, or its parent gone, when the queue stays empty). Each result is
pickled in the worker's own thread, so a batch that cannot be pickled comes back to the
main process as that error instead of being lost, and is written to the shared result
pipe under a lock. Exceptions travel as `ExceptionWrapper`s that re-raise in the main
process with the worker's traceback text.
"""
from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ...random import manual_seed
from . import _sharing
from ._collate import collate_rows, default_collate
from .dataset import TensorDataset

__all__ = ["get_worker_info", "WorkerInfo", "ExceptionWrapper"]

# How long a worker waits on its index queue before checking that the loader has not shut
# down and that its parent still lives. Shutdown also sends None on the queue, but a queue
# finalized by the garbage collector before the iterator may never deliver it.
STATUS_CHECK_INTERVAL = 0.1

_worker_info = None


class WorkerInfo:
    """`id`, `num_workers`, `seed` and `dataset` (this worker's copy); read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info():
    """This worker's `WorkerInfo`, or None in the main process.

    Use it in `IterableDataset.__iter__` or `worker_init_fn` to shard work between workers.
    """
    return _worker_info


class KeyErrorMessage(str):
    """A KeyError's message printed as is (KeyError would show the repr, quoting newlines)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in one process, carried (as text) to be re-raised in another."""

    def __init__(self, exc_info=None, where: str = "in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        # No local holds the new exception: that would make a frame <-> traceback cycle
        # keeping the DataLoader iterator (and its workers) alive until the next gc.
        raise self._exception()

    def _exception(self) -> BaseException:
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            return self.exc_type(message=msg)
        try:
            return self.exc_type(msg)
        except Exception:       # the type needs other constructor arguments
            return RuntimeError(msg)


class IterableDatasetStopIteration:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at a new epoch; they echo it back once reset."""


class MapFetcher:
    """Reads one key, or a batch of keys (through `__getitems__` when the dataset has it).
    A TensorDataset batched by the default collate is gathered one index_select per tensor
    (`collate_rows`): the same batch without a select per sample."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        getitems = getattr(dataset, "__getitems__", None)
        self.getitems = getitems if callable(getitems) else None
        self.rows_of = (dataset.tensors if type(dataset) is TensorDataset
                        and collate_fn is default_collate else None)

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.getitems is not None:
            return self.collate_fn(self.getitems(index))
        if self.rows_of is not None:
            batch = collate_rows(self.rows_of, index)
            if batch is not None:
                return batch
        return self.collate_fn([self.dataset[i] for i in index])


class IterableFetcher:
    """Pulls from one iterator over the dataset; raises StopIteration once it is exhausted."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed every RNG a dataset may use, differently per worker and per base seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def _send(writer, lock, message) -> None:
    try:
        payload = ForkingPickler.dumps(message)
    except Exception:       # the batch cannot be pickled: report that instead
        _sharing.discard_created()
        where = f"in DataLoader worker process {_worker_info.id}"
        payload = ForkingPickler.dumps((message[0], ExceptionWrapper(where=where)))
    _sharing.created.clear()
    with lock:
        writer.send_bytes(payload)


def worker_loop(is_iterable, dataset, index_queue, writer, lock, done_event, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers,
                segment_prefix):
    """The body of a worker process (see the module docstring)."""
    global _worker_info
    # Our parent is the loader's process, or a forkserver that exits with it; a new parent
    # means the loader's process is gone.
    parent_pid = os.getppid()
    try:
        seed = seed_worker(base_seed, worker_id)
        _sharing.use_shared_memory(f"{segment_prefix}{worker_id}_")
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        fetcher_type = IterableFetcher if is_iterable else MapFetcher
        where = f"in DataLoader worker process {worker_id}"
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = fetcher_type(dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=where)
        iteration_end = False
        while True:
            try:
                task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if done_event.is_set() or os.getppid() != parent_pid:
                    break
                continue
            if task is None:
                break
            if isinstance(task, ResumeIteration):
                iteration_end = False
                if init_error is None:
                    try:
                        fetcher = fetcher_type(dataset, auto_collation, collate_fn, drop_last)
                    except Exception:
                        init_error = ExceptionWrapper(where=where)
                _send(writer, lock, (task, None))
                continue
            if done_event.is_set() or iteration_end:
                continue
            task_id, index = task
            if init_error is not None:      # every task reports the failed start
                data = init_error
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not is_iterable:
                        data = ExceptionWrapper(where=where)
                    else:
                        data = IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    data = ExceptionWrapper(where=where)
            _send(writer, lock, (task_id, data))
            del data, index, task
    except KeyboardInterrupt:       # the main process handles Ctrl-C and shuts us down
        pass
