"""Symbolic numbers (torch.SymInt, SymFloat, SymBool) and the sym_* functions.

Code written for PyTorch's symbolic shapes calls `torch.sym_max(a, b)` instead of `max`,
`torch.sym_int(x)` instead of `int`, so that the same line works on a plain number and on a
traced size. On plain numbers the functions give PyTorch's results (sym_max/sym_min promote
to float when either side is a float; sym_int truncates toward zero). A Sym* object wraps a
node (here, the number it stands for) and answers the same protocol (`__sym_max__`, ...),
so functions written against the protocol run on it too.
"""
from __future__ import annotations

import builtins
import math
import numbers

__all__ = ["SymInt", "SymFloat", "SymBool", "sym_not", "sym_float", "sym_int", "sym_max",
           "sym_min", "sym_sqrt", "sym_sum", "sym_ite", "sym_fresh_size",
           "sym_constrain_range", "sym_constrain_range_for_size"]


class _SymNumber:
    """A number standing for `node`; arithmetic on it gives plain numbers' results, wrapped."""

    __slots__ = ("node",)
    _python_type: type = object

    def __init__(self, node):
        self.node = node

    def _value(self):
        node = self.node
        return self._python_type(node.node if isinstance(node, _SymNumber) else node)

    def __bool__(self):
        return builtins.bool(self._value())

    def __repr__(self):
        return repr(self._value())

    __str__ = __repr__

    def __hash__(self):
        return hash(self._value())

    def __eq__(self, other):
        return SymBool(self._value() == _plain(other))

    def __ne__(self, other):
        return SymBool(self._value() != _plain(other))

    def __lt__(self, other):
        return SymBool(self._value() < _plain(other))

    def __le__(self, other):
        return SymBool(self._value() <= _plain(other))

    def __gt__(self, other):
        return SymBool(self._value() > _plain(other))

    def __ge__(self, other):
        return SymBool(self._value() >= _plain(other))

    def __sym_max__(self, other):
        return _wrap(sym_max(self._value(), _plain(other)))

    def __sym_min__(self, other):
        return _wrap(sym_min(self._value(), _plain(other)))

    def __sym_float__(self):
        return SymFloat(float(self._value()))

    def __sym_int__(self):
        return SymInt(math.trunc(self._value()))

    def __sym_sqrt__(self):
        return SymFloat(math.sqrt(self._value()))


def _plain(x):
    return x._value() if isinstance(x, _SymNumber) else x


def _wrap(value):
    if isinstance(value, builtins.bool):
        return SymBool(value)
    if isinstance(value, numbers.Integral):
        return SymInt(int(value))
    return SymFloat(float(value))


def _binary(name):
    def method(self, other):
        if not isinstance(other, (numbers.Number, _SymNumber)):
            return NotImplemented
        a, b = self._value(), _plain(other)
        result = getattr(a, name)(b)
        if result is NotImplemented:          # an int meeting a float
            result = getattr(float(a), name)(b)
        return _wrap(result)
    method.__name__ = name
    return method


_ARITHMETIC = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
               "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
               "__rmod__", "__pow__", "__rpow__")


class SymInt(_SymNumber):
    """An int that may stand for a symbolic size: int(s), s + 1, s < 3 work as on an int."""

    __slots__ = ()
    _python_type = int

    def __int__(self):
        return self._value()

    def __index__(self):
        return self._value()

    def __float__(self):
        return float(self._value())

    def __neg__(self):
        return SymInt(-self._value())

    def __abs__(self):
        return SymInt(abs(self._value()))

    def __and__(self, other):
        return SymInt(self._value() & _plain(other))

    def __or__(self, other):
        return SymInt(self._value() | _plain(other))


class SymFloat(_SymNumber):
    """A float that may stand for a symbolic value."""

    __slots__ = ()
    _python_type = float

    def __float__(self):
        return self._value()

    def __int__(self):
        return int(self._value())

    def __neg__(self):
        return SymFloat(-self._value())

    def __abs__(self):
        return SymFloat(abs(self._value()))

    def is_integer(self):
        return SymBool(self._value().is_integer())


class SymBool(_SymNumber):
    """A bool that may stand for a symbolic condition."""

    __slots__ = ()
    _python_type = builtins.bool

    def __and__(self, other):
        return SymBool(self._value() and builtins.bool(_plain(other)))

    def __or__(self, other):
        return SymBool(self._value() or builtins.bool(_plain(other)))

    def __sym_not__(self):
        return SymBool(not self._value())

    def __sym_ite__(self, then_value, else_value):
        return then_value if self._value() else else_value


for _name in _ARITHMETIC:
    setattr(SymInt, _name, _binary(_name))
    setattr(SymFloat, _name, _binary(_name))


def _numbers():
    import numpy as np
    return (int, float, np.integer, np.floating), (float, np.floating)


def sym_not(a):
    """`not a` for a bool or SymBool."""
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_float(a):
    """float(a), keeping a symbolic number symbolic."""
    if isinstance(a, SymFloat):
        return a
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return builtins.float(a)


def sym_int(a):
    """int(a), truncating toward zero, keeping a symbolic number symbolic."""
    if isinstance(a, SymInt):
        return a
    if isinstance(a, SymFloat):
        return a.__sym_int__()
    return builtins.int(math.trunc(a))


def _extreme(a, b, pick, dunder):
    if isinstance(a, (SymInt, SymFloat)):
        return getattr(a, dunder)(b)
    if isinstance(b, (SymInt, SymFloat)):
        return getattr(b, dunder)(a)
    every, floats = _numbers()
    for x in (a, b):
        if not isinstance(x, every):
            raise AssertionError(f"expected {every}, got {type(x)}")
    result = pick(a, b)
    return builtins.float(result) if isinstance(a, floats) or isinstance(b, floats) \
        else result


def sym_max(a, b):
    """max(a, b) without branching on a symbolic comparison; a float on either side makes
    the result a float (max(1, 1.0) and max(1.0, 1) are both 1.0)."""
    return _extreme(a, b, builtins.max, "__sym_max__")


def sym_min(a, b):
    return _extreme(a, b, builtins.min, "__sym_min__")


def sym_sqrt(a):
    if hasattr(a, "__sym_sqrt__"):
        return a.__sym_sqrt__()
    return math.sqrt(a)


def sym_sum(*args):
    """The sum of the numbers given (or of one iterable of them), as one symbolic sum
    rather than a chain of additions."""
    if len(args) == 1 and not isinstance(args[0], (numbers.Number, _SymNumber)):
        args = tuple(args[0])
    total = 0
    for x in args:
        total = total + x
    return total


def sym_ite(b, t, f):
    """`t if b else f` for a bool or SymBool condition."""
    if isinstance(b, SymBool):
        return b.__sym_ite__(t, f)
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    return t if b else f


def sym_fresh_size(expr):
    """A size that equals `expr` at run time but is not known to the tracer: plain numbers
    are returned as they are."""
    return expr


def sym_constrain_range(size, min=None, max=None):
    """Assert min <= size <= max (for a traced size, tell the tracer)."""
    low = -math.inf if min is None else min
    high = math.inf if max is None else max
    if not low <= _plain(size) <= high:
        raise RuntimeError(f"Invalid value range for {size} between [{min}, {max}].")


def sym_constrain_range_for_size(size, min=None, max=None):
    """As sym_constrain_range, for a value used as a size: it must be >= 0."""
    low = 0 if min is None else min
    high = 9223372036854775807 if max is None else max
    if not low <= _plain(size) <= high:
        raise RuntimeError(f"Invalid value range for {size} between [{low}, {high}].")
