"""torch.nn.factory_kwargs: a module's **kwargs checked and reduced to what tensor factories
take (device, dtype, memory_format), with a `factory_kwargs` dict for when one of those
names is taken by the module's own signature."""
from __future__ import annotations

__all__ = ["factory_kwargs"]

_SIMPLE = {"device", "dtype", "memory_format"}


def factory_kwargs(kwargs) -> dict:
    """{device, dtype, memory_format} from `kwargs` (and its "factory_kwargs" entry);
    TypeError for any other key or for one given in both places."""
    if kwargs is None:
        return {}
    unexpected = kwargs.keys() - (_SIMPLE | {"factory_kwargs"})
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    result = dict(kwargs.get("factory_kwargs", {}))
    for key in _SIMPLE & kwargs.keys():
        if key in result:
            raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
        result[key] = kwargs[key]
    return result
