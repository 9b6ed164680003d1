"""`torch._dynamo.exc`: the errors capture raises."""


class TorchDynamoException(RuntimeError):
    """Base of the compiler's errors."""


class InvalidBackend(TorchDynamoException):
    """`backend=` names no registered backend."""

    def __init__(self, name: str):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")


class Unsupported(TorchDynamoException):
    """Capture met something it cannot put in a graph while `fullgraph=True` forbids a break."""


class BackendCompilerFailed(TorchDynamoException):
    """The backend raised while compiling a graph (see `config.suppress_errors`)."""

    def __init__(self, backend_fn, inner_exception):
        name = getattr(backend_fn, "__name__", repr(backend_fn))
        super().__init__(f"backend={name!r} raised:\n{type(inner_exception).__name__}: "
                         f"{inner_exception}")
        self.backend_name = name
        self.inner_exception = inner_exception
