"""Pinning DataLoader batches: inline, or in a thread that overlaps with the training step.

With workers, one daemon thread of the main process reads the workers' result pipe, copies
each batch into page-locked memory and queues it for the loader, which only reorders and
yields; torch's pin-memory thread does the same job. The thread also watches the workers'
process sentinels and queues a `WorkerExited` once a worker's process has ended and nothing
is left to read on the pipe, so the loader notices a dead worker at once, without polling.
It holds no reference to the iterator, so dropping the iterator still stops it.
"""
from __future__ import annotations

import collections.abc
import multiprocessing
import queue
import threading
import time
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler

from ._collate import _rebuild_mapping, _rebuild_sequence
from ._worker import ExceptionWrapper

__all__ = ["pin_memory"]

THREAD_NAME = "glasstorch_data_pin"
# Seconds between checks, while the loader waits for a batch, that the thread still runs.
STATUS_CHECK_INTERVAL = 5.0


def pin_memory(data):
    """`data` with its tensors (and custom batches defining `pin_memory()`) copied to pinned
    memory, containers rebuilt in their own types where possible (torch's rules: a tuple
    stays a tuple, a list or dict subclass is copied and refilled)."""
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: pin_memory(v) for k, v in data.items()})
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):        # namedtuple
            return type(data)(*(pin_memory(d) for d in data))
        return type(data)(pin_memory(d) for d in data)
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [pin_memory(d) for d in data])
    return data


class WorkerExited:
    """Queued by the pinning thread: worker `worker_id`'s process has ended."""

    __slots__ = ("worker_id",)

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


def pin_memory_loop(reader, sentinels, out_queue, device_id, done_event, wake) -> None:
    """The pinning thread's body: until `done_event` is set (and `wake` made readable),
    receive `(task_id, data)` from `reader`, pin `data` on GPU `device_id` and put the pair
    on `out_queue`; worker i's sentinel ending becomes `WorkerExited(i)`. A message that
    cannot be received is queued as a bare ExceptionWrapper, for the loader to raise."""
    from ... import cuda
    cuda.set_device(device_id)      # the current device is per thread
    watched = dict(zip(sentinels, range(len(sentinels))))
    where = f"in pin memory thread for device {device_id}"
    while not done_event.is_set():
        ready = wait([reader, wake, *watched])
        if done_event.is_set():
            return
        if reader in ready:             # the pipe first: a worker's last results precede its exit
            try:
                task_id, data = ForkingPickler.loads(reader.recv_bytes())
            except (EOFError, OSError):     # every writer closed: the loader is gone
                return
            except Exception:
                out_queue.put(ExceptionWrapper(where=where))
                continue
            if not isinstance(data, ExceptionWrapper):
                try:
                    data = pin_memory(data)
                except Exception:
                    data = ExceptionWrapper(where=where)
            out_queue.put((task_id, data))
            del data        # hold no batch while waiting: the loader's consumer owns it now
            continue
        for sentinel in ready:
            worker_id = watched.pop(sentinel, None)
            if worker_id is not None:
                out_queue.put(WorkerExited(worker_id))


class PinMemoryThread:
    """The running pinning thread of one loader iterator, and the queue it fills."""

    def __init__(self, reader, sentinels, device_id: int):
        self.queue = queue.Queue()
        self._done = threading.Event()
        self._wake, self._waker = multiprocessing.Pipe(duplex=False)
        self.thread = threading.Thread(
            target=pin_memory_loop, name=THREAD_NAME, daemon=True,
            args=(reader, sentinels, self.queue, device_id, self._done, self._wake))
        self.thread.start()

    def get(self, timeout: float | None):
        """The next queued item; queue.Empty after `timeout` seconds (None: no limit), and
        RuntimeError if the thread has died."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait_s = STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait_s = min(wait_s, max(deadline - time.monotonic(), 0.0))
            try:
                return self.queue.get(timeout=wait_s)
            except queue.Empty:
                if not self.thread.is_alive():
                    raise RuntimeError("Pin memory thread exited unexpectedly") from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    def stop(self, timeout: float) -> bool:
        """Stop the thread and join it for up to `timeout` seconds; whether it has ended (it
        may not, if it is stuck receiving a message a killed worker left half-written)."""
        self._done.set()
        try:
            self._waker.send_bytes(b"")
        except OSError:         # already closed by the garbage collector
            pass
        self.thread.join(timeout)
        if self.thread.is_alive():
            return False
        self._waker.close()
        self._wake.close()
        return True
