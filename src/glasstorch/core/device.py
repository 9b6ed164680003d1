"""Device objects: where a storage's bytes live ('cpu', 'cuda:0', 'meta')."""
from __future__ import annotations

_KNOWN_TYPES = ("cpu", "cuda", "meta")


class device:
    """torch.device: a device type and an optional index.

    >>> device('cuda:1')
    device(type='cuda', index=1)
    """

    __slots__ = ("type", "index", "_str")

    def __new__(cls, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): a device object takes no index")
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type.__class__.__name__})")
        text = type.strip()
        if ":" in text:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index "
                                   f"was passed explicitly: {text}")
            text, _, idx = text.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if text not in _KNOWN_TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self = object.__new__(cls)
        self.type = text
        self.index = index
        self._str = text if index is None else f"{text}:{index}"
        return self

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self._str

    def __eq__(self, other):
        # like torch.device, equal only to devices (device('cpu') == 'cpu' is False)
        return isinstance(other, device) and self._str == other._str

    def __hash__(self):
        return hash(self._str)

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        """`with torch.device('meta'):` factories given no device make their tensors on
        this one in the block (torch.set_default_device's, restored after; nests)."""
        global default_device
        _entered.append(default_device)
        default_device = self
        return self

    def __exit__(self, *exc):
        global default_device
        default_device = _entered.pop()


CPU = device("cpu")
META = device("meta")


default_device = CPU  # where factories put tensors given no device (set_default_device)
_entered: list = []   # the default devices that `with device(...)` blocks replaced

# Accelerators plug in here: glasstorch.backends registers one object per device type when it
# is imported, so core/ and memory/ reach a GPU's runtime, allocator and arrays without
# importing the layer above them. An entry answers current_device(), index_of(device),
# resolve(device), allocator(index), array(buf, shape, dtype, offset, stride) and
# copy_between(dst, src).
_device_backends: dict = {}


def register_device_backend(device_type: str, backend) -> None:
    """Make `backend` serve tensors and storages of `device_type` ('cuda')."""
    _device_backends[device_type] = backend


def device_backend(device_type: str):
    """The registered backend of a device type; a clear error if there is none."""
    try:
        return _device_backends[device_type]
    except KeyError:
        raise RuntimeError(f"glasstorch has no backend for device type '{device_type}'") from None


def set_default_device(d) -> None:
    """Where factories put tensors given no device (torch.set_default_device); None: CPU."""
    global default_device
    default_device = CPU if d is None else device(d)


def get_default_device() -> device:
    """The device factories use when given none ('cuda' as the current GPU, 'cuda:N')."""
    if default_device.type == "cuda" and default_device.index is None:
        return device("cuda", device_backend("cuda").current_device())
    return default_device


def as_device(d) -> device:
    """Normalise a device argument (None means default_device, the CPU)."""
    if d is None:
        return default_device
    if d.__class__ is device:
        return d
    if d.__class__ is str and d == "cpu":
        return CPU
    return device(d)
