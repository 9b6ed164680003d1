"""(being written)"""
__all__ = []


def tensor_repr(t):
    return f"tensor({t._array() if t.device.type != 'meta' else '...'})"
