"""torch.autograd.profiler: the legacy profiler API over glasstorch.profiler.

`profile(enabled=True, record_shapes=..., profile_memory=...)` records the block as
glasstorch.profiler.profile does and offers the legacy methods: `table()`, `key_averages()`,
`function_events`, `export_chrome_trace()`, `total_average()`.
"""
from __future__ import annotations

from ..profiler import profile as _profile
from ..profiler._recorder import record_function
from ..profiler.events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile:
    """Record the block; `enabled=False` makes it a no-op (its results are then empty)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):
        self.enabled = enabled
        self._prof = _profile(record_shapes=record_shapes, profile_memory=profile_memory,
                              with_stack=with_stack, with_flops=with_flops)
        self.function_events = None
        self.profile_memory = profile_memory

    def __enter__(self):
        if self.enabled:
            self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._prof.__exit__(*exc)
            self.function_events = self._prof.events()
        else:
            self.function_events = EventList(profile_memory=self.profile_memory)
        return False

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header=None, top_level_events_only: bool = False, time_unit=None) -> str:
        return self._events().table(sort_by, row_limit, max_src_column_width,
                                    max_name_column_width, max_shapes_column_width, header,
                                    top_level_events_only, time_unit)

    def export_chrome_trace(self, path: str) -> None:
        self._events()
        self._prof.export_chrome_trace(path)

    def total_average(self):
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._events().self_cpu_time_total

    def __str__(self):
        return self.table()
