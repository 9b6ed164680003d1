"""DataPipes (torch.utils.data's IterDataPipe and MapDataPipe): datasets built by chaining
small steps, `source.map(f).filter(p).batch(32)`.

Each step is a class; `@functional_datapipe("name")` makes it callable as a method on every
pipe of its kind, with the pipe as the first argument. map, filter and batch come built in
(iterable pipes), and map for map-style pipes. `non_deterministic` marks a pipe whose order
is not reproducible, refused inside `guaranteed_datapipes_determinism()`.
`argument_validation` and `runtime_validation` check, against a pipe's declared item type
(`IterDataPipe[int]`), the pipes passed to `__init__` and the items `__iter__` yields.
"""
from __future__ import annotations

import functools
import inspect
from contextlib import contextmanager

from .dataset import Dataset, IterableDataset

__all__ = ["IterDataPipe", "MapDataPipe", "DFIterDataPipe", "DataChunk",
           "functional_datapipe", "non_deterministic", "guaranteed_datapipes_determinism",
           "argument_validation", "runtime_validation", "runtime_validation_disabled"]


class _DataPipeMeta(type):
    """Lets `IterDataPipe[int]` name a pipe of ints: a subclass whose `type` is int."""

    def __getitem__(cls, item_type):
        return type(cls.__name__, (cls,), {"type": item_type, "__module__": cls.__module__,
                                           "__qualname__": f"{cls.__qualname__}[{item_type}]"})


class _FunctionalMixin:
    _functions: dict = {}
    type = object

    def __getattr__(self, name):
        fn = type(self)._functions.get(name)
        if fn is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}")
        return functools.partial(fn, self)

    @classmethod
    def register_datapipe_as_function(cls, name, pipe_class) -> None:
        if name in cls._functions:
            raise Exception(f"Unable to add DataPipe function name {name} as it is "
                            "already taken")
        cls._functions[name] = pipe_class

    def __repr__(self):
        return type(self).__qualname__


class IterDataPipe(_FunctionalMixin, IterableDataset, metaclass=_DataPipeMeta):
    """An iterable step of a pipeline."""
    _functions: dict = {}


class MapDataPipe(_FunctionalMixin, Dataset, metaclass=_DataPipeMeta):
    """A map-style step of a pipeline: `__getitem__` and `__len__`."""
    _functions: dict = {}

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


class DFIterDataPipe(IterDataPipe):
    """An iterable pipe whose items are data frames."""

    def _is_dfpipe(self) -> bool:
        return True


class DataChunk(list):
    """A batch made by `batch()`: a list that prints as one."""

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def raw_iterator(self):
        yield from list.__iter__(self)


def functional_datapipe(name: str, enable_df_api_tracing: bool = False):
    """Class decorator: make the pipe class callable as `.name(...)` on pipes of its kind."""
    def register(cls):
        kind = MapDataPipe if issubclass(cls, MapDataPipe) else IterDataPipe
        kind.register_datapipe_as_function(name, cls)
        return cls
    return register


_determinism = {"guaranteed": False, "validation": True}


class guaranteed_datapipes_determinism:
    """Inside the block, making a pipe marked `non_deterministic` raises TypeError."""

    def __enter__(self):
        self._previous = _determinism["guaranteed"]
        _determinism["guaranteed"] = True

    def __exit__(self, *exc):
        _determinism["guaranteed"] = self._previous


def non_deterministic(arg):
    """Mark a pipe class as not reproducible (or, given a function of the constructor's
    arguments, as not reproducible when it returns True)."""
    if isinstance(arg, type):
        cls, decides = arg, None
    else:
        decides, cls = arg, None

    def check(pipe_cls, args, kwargs):
        if _determinism["guaranteed"] and (decides is None or decides(*args, **kwargs)):
            raise TypeError(f"{pipe_cls.__name__} is non-deterministic, but you set "
                            "'guaranteed_datapipes_determinism'. You can turn off "
                            "determinism for this DataPipe if that is acceptable for your "
                            "application")

    def mark(pipe_cls):
        original = pipe_cls.__new__

        def __new__(klass, *args, **kwargs):
            check(pipe_cls, args, kwargs)
            return original(klass) if original is object.__new__ else \
                original(klass, *args, **kwargs)
        pipe_cls.__new__ = __new__
        return pipe_cls
    return mark(cls) if cls is not None else mark


def _item_type_fits(item, item_type) -> bool:
    return item_type is object or not isinstance(item_type, type) or \
        isinstance(item, item_type)


def argument_validation(f):
    """Decorate a pipe's `__init__`: arguments annotated `IterDataPipe[T]` must be pipes of
    that kind whose item type is T (or a subclass of it)."""
    signature = inspect.signature(f)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            hint = f.__annotations__.get(name)
            if isinstance(hint, type) and issubclass(hint, (IterDataPipe, MapDataPipe)):
                if not isinstance(value, hint.__mro__[1] if "type" in vars(hint) else hint):
                    raise TypeError(f"Expected argument '{name}' as a {hint.__qualname__}, "
                                    f"but found {type(value).__name__}")
                wanted, given = hint.type, getattr(value, "type", object)
                if isinstance(wanted, type) and wanted is not object and not (
                        isinstance(given, type) and issubclass(given, wanted)):
                    raise TypeError(f"Expected type of argument '{name}' as a subtype of "
                                    f"hint {wanted}, but found {given}")
        return f(*args, **kwargs)
    return wrapper


@contextmanager
def runtime_validation_disabled():
    """Inside the block, `runtime_validation` checks nothing."""
    previous, _determinism["validation"] = _determinism["validation"], False
    try:
        yield
    finally:
        _determinism["validation"] = previous


def runtime_validation(f):
    """Decorate a pipe's `__iter__`: every item must be of the pipe's declared type."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self):
        for item in f(self):
            if _determinism["validation"] and not _item_type_fits(item, self.type):
                raise RuntimeError(f"Expected an instance as subtype of {self.type}, but "
                                   f"found {item}({type(item)})")
            yield item
    return wrapper


# ---- the built-in steps ------------------------------------------------------------------
@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    """fn(item) for every item."""

    def __init__(self, datapipe, fn):
        self.datapipe, self.fn = datapipe, fn

    def __iter__(self):
        for item in self.datapipe:
            yield self.fn(item)


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """The items for which filter_fn is true."""

    def __init__(self, datapipe, filter_fn):
        self.datapipe, self.filter_fn = datapipe, filter_fn

    def __iter__(self):
        for item in self.datapipe:
            if self.filter_fn(item):
                yield item


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    """Consecutive items in DataChunks of batch_size (the last one shorter unless
    drop_last)."""

    def __init__(self, datapipe, batch_size: int, drop_last: bool = False,
                 wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size, self.drop_last = datapipe, batch_size, drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self):
        batch = []
        for item in self.datapipe:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    """fn(self.datapipe[i]) for every index."""

    def __init__(self, datapipe, fn):
        self.datapipe, self.fn = datapipe, fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])

    def __len__(self):
        return len(self.datapipe)
