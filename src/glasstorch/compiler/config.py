"""`torch._dynamo.config`: the settings capture reads (set them as module attributes).

`recompile_limit` (PyTorch's newer name; `cache_size_limit` is the same setting): how many
cache entries one compiled function may hold; a call whose guards match none of them when the
limit is reached warns once, naming the guard that failed, and then runs eagerly.
`automatic_dynamic_shapes`: with `dynamic=None` (the default), a call that fails only on
tensor sizes makes every size dynamic for the function from then on (one more cache entry,
as PyTorch's automatic dynamic shapes), instead of one entry per size.
`suppress_errors`: a backend that fails to compile a graph logs the error and the graph runs
eagerly instead of the error propagating.
`replay_pure_calls`: a call whose Python was shown pure replays the compiled graph without
running that Python (replay.py); False keeps every call on lazy capture.
"""
import sys
import types

recompile_limit = 8
automatic_dynamic_shapes = True
suppress_errors = False
replay_pure_calls = True
verbose = False


class _Config(types.ModuleType):
    """Keeps `cache_size_limit` an alias of `recompile_limit`, as PyTorch's config does."""

    @property
    def cache_size_limit(self) -> int:
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value: int) -> None:
        self.recompile_limit = value


sys.modules[__name__].__class__ = _Config
