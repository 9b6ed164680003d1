"""glasstorch.profiler (torch.profiler): where a program's time and memory go.

    from glasstorch.profiler import profile, record_function, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("forward"):
            y = model(x)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
"""
from ._recorder import record_function
from .events import EventList, FunctionEvent, FunctionEventAvg
from .profiler import (ProfilerAction, ProfilerActivity, kineto_available, profile, schedule,
                       supported_activities, tensorboard_trace_handler)

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]
