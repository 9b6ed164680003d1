"""torch.futures.Future: a value that becomes available later (a collective's result), with
callbacks chained by then()."""
from __future__ import annotations

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A result set once by set_result/set_exception; wait() runs whatever completes it."""

    def __init__(self, *, devices=None, _complete=None):
        self._complete = _complete          # a function that produces the value (lazy work)
        self._done, self._value, self._exception = False, None, None
        self._callbacks: list = []

    def done(self) -> bool:
        return self._done

    def _run(self):
        if not self._done and self._complete is not None:
            complete, self._complete = self._complete, None
            try:
                self.set_result(complete())
            except Exception as e:
                self.set_exception(e)

    def wait(self):
        self._run()
        if not self._done:
            raise RuntimeError("Future.wait() on a future that nothing will complete")
        if self._exception is not None:
            raise self._exception
        return self._value

    def value(self):
        return self.wait()

    def set_result(self, result) -> None:
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._value, self._done = result, True
        for callback in self._callbacks:
            callback(self)

    def set_exception(self, result) -> None:
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._exception, self._done = result, True
        for callback in self._callbacks:
            callback(self)

    def then(self, callback) -> "Future":
        """A future of callback(self), run when this one completes."""
        return Future(_complete=lambda: callback(self._waited()))

    def _waited(self):
        self.wait()
        return self

    def add_done_callback(self, callback) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


def collect_all(futures) -> Future:
    return Future(_complete=lambda: [f._waited() for f in futures])


def wait_all(futures) -> list:
    return [f.wait() for f in futures]
