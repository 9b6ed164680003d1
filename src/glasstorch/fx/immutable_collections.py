"""`torch.fx.immutable_collections`: the list and dict types a Node's arguments are held in.

They refuse in-place changes, because an in-place change would bypass the Node's bookkeeping
of its inputs and their users; assign a new value to `node.args` instead.
"""
from __future__ import annotations


def _no_mutation(self, *args, **kwargs):
    raise TypeError(f"'{type(self).__name__}' object does not support mutation. If you are "
                    "attempting to modify the kwargs or args of a torch.fx.Node object, "
                    "instead create a new copy of it and assign the copy to the node:\n"
                    "    new_args = ... # copy and mutate args\n"
                    "    node.args = new_args\n")


class immutable_list(list):
    """A list that refuses `append`, `x[i] = v` and the other in-place changes."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _no_mutation
    append = clear = extend = insert = pop = remove = reverse = sort = _no_mutation

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (tuple(self),))


class immutable_dict(dict):
    """A dict that refuses item assignment, `update` and the other in-place changes."""

    __setitem__ = __delitem__ = __ior__ = _no_mutation
    clear = pop = popitem = setdefault = update = _no_mutation

    def __hash__(self):
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (tuple(self.items()),))
