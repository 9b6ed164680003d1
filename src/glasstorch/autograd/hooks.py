"""RemovableHandle: what registering a hook returns (also a context manager)."""
from __future__ import annotations

import itertools

_ids = itertools.count()


class RemovableHandle:
    """Removes its hook from the list it was added to; `with handle:` removes it on exit."""

    def __init__(self, hooks: list, fn):
        self.id = next(_ids)
        self._hooks = hooks
        self._fn = fn
        hooks.append(fn)

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
