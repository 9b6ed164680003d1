"""spawn(fn, args, nprocs): run fn(i, *args) in nprocs processes; wait for all of them, and
if one fails, stop the others and raise its error with its traceback."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"]


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero status (or was killed by a signal)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return (type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                             self.signal_name))


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes of one spawn() call; join() waits and raises the first failure."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list:
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        """True when all exited cleanly; False on timeout; raises when one failed (after
        terminating the others)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            process = self.processes[i]
            process.join()
            if process.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        process = self.processes[failed]
        if self.error_queues[failed].empty():
            code = process.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(f"process {failed} terminated with signal {name}",
                                             failed, process.pid, code, name)
            raise ProcessExitedException(f"process {failed} terminated with exit code {code}",
                                         failed, process.pid, code)
        original = self.error_queues[failed].get()
        raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following "
                                     f"error:\n{original}", failed, process.pid)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start fn(i, *args) for i in range(nprocs) with `start_method`."""
    context = multiprocessing.get_context(start_method)
    error_queues, processes = [], []
    for i in range(nprocs):
        error_queue = context.SimpleQueue()
        process = context.Process(target=_wrap, args=(fn, i, args, error_queue),
                                  daemon=daemon)
        process.start()
        error_queues.append(error_queue)
        processes.append(process)
    process_context = ProcessContext(processes, error_queues)
    if not join:
        return process_context
    while not process_context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """torch.multiprocessing.spawn."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
