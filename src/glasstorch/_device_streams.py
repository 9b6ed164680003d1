"""torch.Stream and torch.Event: device-generic streams and events.

On the CPU, work runs in order as it is issued, so the CPU stream is always idle
(`query()` is True, `synchronize()` returns at once) and has no events to record, as in
PyTorch; on a GPU they wrap glasstorch.cuda's Stream and Event.
"""
from __future__ import annotations

from .core.device import device as Device

__all__ = ["Stream", "Event"]


def _device(device) -> Device:
    if device is None:
        from . import accelerator
        current = accelerator.current_accelerator(True)
        return Device(current.type) if current is not None else Device("cpu")
    return device if isinstance(device, Device) else Device(device)


def _no_events():
    return RuntimeError("cpu backend doesn't support events.")


class Stream:
    """An ordered queue of work on one device."""

    def __init__(self, device=None, *, priority: int = 0, **kwargs):
        self.device = _device(device)
        self.priority = priority
        self._cuda = None
        if self.device.type == "cuda":
            from . import cuda
            self._cuda = cuda.Stream(self.device, priority=priority, **kwargs)
        elif self.device.type != "cpu":
            raise RuntimeError(f"Unsupported device type for stream: {self.device.type}")

    @property
    def device_type(self) -> str:
        return self.device.type

    @property
    def device_index(self) -> int:
        return self._cuda.device_index if self._cuda is not None else -1

    @property
    def stream_id(self) -> int:
        return self._cuda.cuda_stream if self._cuda is not None else 0

    def query(self) -> bool:
        return self._cuda.query() if self._cuda is not None else True

    def synchronize(self) -> None:
        if self._cuda is not None:
            self._cuda.synchronize()

    def wait_event(self, event: "Event") -> None:
        if self._cuda is not None and event._cuda is not None:
            self._cuda.wait_event(event._cuda)

    def wait_stream(self, stream: "Stream") -> None:
        if self._cuda is None:
            raise _no_events()
        self._cuda.wait_stream(stream._cuda)

    def record_event(self, event: "Event | None" = None) -> "Event":
        if self._cuda is None:
            raise _no_events()
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def __enter__(self):
        if self._cuda is not None:
            from . import cuda
            self._cuda_context = cuda.stream(self._cuda)
            self._cuda_context.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cuda is not None:
            self._cuda_context.__exit__(*exc)
        return False

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.device, self.stream_id) == \
            (other.device, other.stream_id)

    def __hash__(self):
        return hash((self.device.type, self.device_index, self.stream_id))

    def __repr__(self):
        return (f"torch.Stream device_type={self.device.type}, "
                f"device_index={self.device_index}, stream_id={self.stream_id}")


class Event:
    """A marker in a stream's queue: record it, wait on it, time between two of them."""

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.device = _device(device)
        self.enable_timing = enable_timing
        self._cuda = None
        if self.device.type == "cuda":
            from . import cuda
            self._cuda = cuda.Event(enable_timing=enable_timing, blocking=blocking,
                                    interprocess=interprocess)

    @property
    def event_id(self) -> int:
        return id(self._cuda) if self._cuda is not None else 0

    def record(self, stream: Stream | None = None) -> None:
        if self._cuda is None:
            raise _no_events()
        self._cuda.record(stream._cuda if stream is not None else None)

    def query(self) -> bool:
        return self._cuda.query() if self._cuda is not None else True

    def synchronize(self) -> None:
        if self._cuda is not None:
            self._cuda.synchronize()

    def wait(self, stream: Stream | None = None) -> None:
        if self._cuda is not None:
            self._cuda.wait(stream._cuda if stream is not None else None)

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and `end_event` (both recorded, both timed)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._cuda is None:
            raise _no_events()
        return self._cuda.elapsed_time(end_event._cuda)

    def __repr__(self):
        index = -1 if self._cuda is None else self.device.index or 0
        return (f"torch.Event device_type={self.device.type}, device_index={index}, "
                f"event_flag={int(self.enable_timing)}, event_id={self.event_id}")
