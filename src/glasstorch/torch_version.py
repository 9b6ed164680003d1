"""`TorchVersion`: a version string that compares as a version, with strings and tuples.

Libraries gate features on `torch.__version__ >= "2.0"` or `>= (2, 0)`; plain string
comparison gets "2.13.0" < "2.2" wrong, so the comparison reads both sides as PEP 440
versions (release numbers, then a/b/rc, .post, .dev and +local parts). A side that is not a
version ("parrot") falls back to comparing strings, as PyTorch's does; `!=` stays str's, as
in PyTorch (so "2.13.0" != "2.13" although they are ==).

    >>> v = TorchVersion("2.13.0")
    >>> v > "2.2", v >= (2, 13), v == "2.13", v < (3,)
    (True, True, True, True)
"""
from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["TorchVersion"]

_VERSION = re.compile(
    r"v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|rc|alpha|beta|c)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?post[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?", re.IGNORECASE)
_PRE_ORDER = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}
_INF = float("inf")


def _sort_key(text: str):
    """PEP 440's order as a tuple (dev < a < b < rc < final < post), or None if not a version."""
    m = _VERSION.fullmatch(text.strip())
    if m is None:
        return None
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    if m["pre_l"]:
        pre = (_PRE_ORDER[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif m["dev"] is not None and m["post"] is None:
        pre = (-_INF,)
    else:
        pre = (_INF,)
    post = -1 if m["post"] is None else int(m["post"] or 0)
    dev = _INF if m["dev"] is None else int(m["dev"] or 0)
    local = () if m["local"] is None else tuple(
        (int(p), "") if p.isdigit() else (-1, p.lower()) for p in re.split(r"[-_.]", m["local"]))
    return tuple(release), pre, post, dev, local


def _other_key(other):
    if isinstance(other, str):
        return _sort_key(other)
    if isinstance(other, Iterable):
        return _sort_key(".".join(str(part) for part in other))
    return None


class TorchVersion(str):
    """A str that compares with strings ("2.0") and tuples ((2, 0)) as a version does."""

    __slots__ = ()
    __hash__ = str.__hash__

    def _compare(self, other, method: str):
        mine, theirs = _sort_key(self), _other_key(other)
        if mine is None or theirs is None:
            return getattr(str, method)(self, other)
        return getattr(mine, method)(theirs)

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __eq__(self, other):
        return self._compare(other, "__eq__")
