"""torch.cuda.Stream and torch.cuda.Event over CuPy's streams and events.

A stream is a queue of GPU work: kernels launched while a stream is current run in order
on it, and work on different streams may overlap. glasstorch launches through CuPy, so the
current stream is CuPy's current stream; `glasstorch.cuda.stream(s)` makes it current.
"""
from __future__ import annotations

from ..backends.cuda import runtime


def _cupy_cuda():
    runtime.require()
    return runtime.cupy().cuda


class Stream:
    """A CUDA stream on one device (torch.cuda.Stream)."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        cuda = _cupy_cuda()
        stream = kwargs.pop("_cupy_stream", None)
        if kwargs:
            raise TypeError(f"Stream() got an unexpected keyword argument '{next(iter(kwargs))}'")
        self.device_index = runtime.index_of(device)
        if stream is None:
            with runtime.DeviceGuard(self.device_index):
                stream = cuda.Stream(non_blocking=False, priority=priority)
        self._stream = stream
        self.priority = priority

    @property
    def device(self):
        from ..core.device import device
        return device("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        """The raw cudaStream_t (0 for the legacy default stream)."""
        return int(self._stream.ptr)

    def query(self) -> bool:
        """Whether all work queued on the stream has finished."""
        return bool(self._stream.done)

    def synchronize(self) -> None:
        """Wait for all work queued on the stream."""
        self._stream.synchronize()

    def wait_event(self, event: "Event") -> None:
        """Make later work on this stream wait for `event`."""
        self._stream.wait_event(event._event)

    def wait_stream(self, stream: "Stream") -> None:
        """Make later work on this stream wait for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = Event() if event is None else event
        event.record(self)
        return event

    def __enter__(self):
        self._context = stream(self)
        return self._context.__enter__()

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.cuda_stream == other.cuda_stream
                and self.device_index == other.device_index)

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return (f"<glasstorch.cuda.Stream device=cuda:{self.device_index} "
                f"cuda_stream={self.cuda_stream:#x}>")


class Event:
    """A CUDA event: a marker in a stream's work, for waiting and timing (torch.cuda.Event)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        cuda = _cupy_cuda()
        self.enable_timing = enable_timing
        self._event = cuda.Event(block=blocking, disable_timing=not enable_timing,
                                 interprocess=interprocess)
        self._recorded = False

    @property
    def cuda_event(self) -> int:
        return int(self._event.ptr)

    def record(self, stream: Stream | None = None) -> None:
        """Mark the current point of `stream`'s work (the current stream by default)."""
        stream = current_stream() if stream is None else stream
        self._event.record(stream._stream)
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on `stream` wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """Whether the work before the event has finished (True if never recorded)."""
        return bool(self._event.done)

    def synchronize(self) -> None:
        self._event.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and `end_event` (both recorded, with timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        end_event.synchronize()
        return float(runtime.cupy().cuda.get_elapsed_time(self._event, end_event._event))

    def __repr__(self):
        return f"<glasstorch.cuda.Event {self.cuda_event:#x}>"


def current_stream(device=None) -> Stream:
    """The stream work is launched on for `device` (this thread's current one)."""
    index = runtime.index_of(device)
    cuda = _cupy_cuda()
    with runtime.DeviceGuard(index):
        return Stream(index, _cupy_stream=cuda.get_current_stream())


def default_stream(device=None) -> Stream:
    """The device's default (legacy null) stream."""
    return Stream(device, _cupy_stream=_cupy_cuda().Stream.null)


def set_stream(s: Stream) -> None:
    """Make `s` this thread's current stream (on its device)."""
    with runtime.DeviceGuard(s.device_index):
        s._stream.use()


class stream:
    """Context manager: run the block with `s` as the current stream (None: no change)."""

    def __init__(self, s: Stream | None):
        self.s = s

    def __enter__(self):
        if self.s is None:
            return None
        self._previous = current_stream(self.s.device_index)
        self._guard = runtime.DeviceGuard(self.s.device_index)
        self._guard.__enter__()
        self.s._stream.use()
        return self.s

    def __exit__(self, *exc):
        if self.s is None:
            return
        self._previous._stream.use()
        self._guard.__exit__(*exc)


StreamContext = stream


class ExternalStream(Stream):
    """A CUDA stream made elsewhere (another library's cudaStream_t), used as glasstorch's."""

    def __init__(self, stream_ptr: int, device=None, **kwargs):
        runtime.require()
        index = runtime.index_of(device)
        cupy_stream = _cupy_cuda().ExternalStream(int(stream_ptr), index)
        super().__init__(index, _cupy_stream=cupy_stream, **kwargs)


def get_stream_from_external(data_ptr: int, device=None) -> Stream:
    """A Stream over an externally made cudaStream_t."""
    return ExternalStream(data_ptr, device)
