"""What the watch records during a run, in plain dataclasses the detectors read."""
from __future__ import annotations

import collections
from dataclasses import dataclass, field


@dataclass
class NonFinite:
    """The first op that made NaN or Inf out of finite inputs."""
    op: str
    what: str                       # "NaN", "inf" or "-inf"
    site: object
    iteration: int                  # backward calls completed before it
    in_backward: bool
    input_ranges: list
    node: str | None = None         # in backward: the node whose backward made it
    forward_site: object = None     # and the user's line that recorded that node


@dataclass
class FailedOp:
    """The op an exception came out of, with its tensor arguments and the module running."""
    op: str
    tensors: list                   # (shape, dtype, device, parameter name or None)
    modules: list                   # the module stack, outermost first
    exception: BaseException


@dataclass
class InplaceWrite:
    """An in-place op on a tensor that requires grad, and the op that had made it."""
    op: str
    site: object
    creator: str | None             # grad_fn name of the written tensor before the write
    shape: tuple


@dataclass
class BackwardCall:
    """One backward() call: where, whether it kept the graph, the ops it ran, the loss,
    whether it left a gradient on a parameter an optimizer holds."""
    site: object
    retain_graph: bool
    ops: int = 0
    reached_parameters: bool = False
    loss: float | None = None
    shape: tuple | None = None


@dataclass
class Cut:
    """The user's code took a tensor out of the graph (detach, .data, .item)."""
    how: str
    site: object
    node: object                    # grad_fn of the tensor cut (first few per site only)
    leaf: int | None = None         # or id() of the leaf cut (a parameter's .data in forward)


@dataclass
class Observations:
    """Everything a run showed; `iteration` counts the backward calls completed."""
    iteration: int = 0
    nonfinite: list = field(default_factory=list)
    nonfinite_seen_in_input: list = field(default_factory=list)
    failed: FailedOp | None = None
    inplace: collections.deque = field(default_factory=lambda: collections.deque(maxlen=64))
    backwards: list = field(default_factory=list)
    cuts: list = field(default_factory=list)
    steps: list = field(default_factory=list)            # (iteration, {id(p): norm})
    got_grad: set = field(default_factory=set)
    stale_steps: list = field(default_factory=list)      # backward sites after stale steps
    fresh_steps: int = 0
    optimizers: list = field(default_factory=list)
    optimizer_sites: dict = field(default_factory=dict)  # id(opt) -> Site
    roots: list = field(default_factory=list)            # root modules called by the user
    root_sites: dict = field(default_factory=dict)       # id(root) -> last call Site
    root_names: dict = field(default_factory=dict)       # id(root) -> the user's name
    called: set = field(default_factory=set)             # ids of modules run
    no_grad_calls: dict = field(default_factory=dict)    # id(module) -> Site
    cut_inside: dict = field(default_factory=dict)       # id(module) -> Site
    unregistered: list = field(default_factory=list)     # (module, attr, kind, objects)
    train_at_eval: list = field(default_factory=list)    # (Site, module name)
    eval_at_train: list = field(default_factory=list)    # (iteration, Site, module)
    was_training: set = field(default_factory=set)
    dropout_off_in_training: list = field(default_factory=list)  # eval dropout under grad
    warned: list = field(default_factory=list)           # (kind, message, Site)
    empty_loads: list = field(default_factory=list)      # (Site, module, missing, unexpected)
    probabilities_as_logits: list = field(default_factory=list)   # (made by, loss op, Site)
    logits_as_log_probabilities: list = field(default_factory=list)  # (op, max, Site)
    logits_as_probabilities: list = field(default_factory=list)  # (made by, loss, range, Site)
    wrong_dimension: list = field(default_factory=list)  # (op, dim, shape, loss op, Site)
    pinned_saves: list = field(default_factory=list)     # (Site, shape, tensor bytes, storage)
    pinned_lists: dict = field(default_factory=dict)     # name -> (Site, length, values, kept, calls)
    root_calls: int = 0                                  # model calls from the user's code
    data_seconds: float = 0.0                            # spent fetching batches
    batches: int = 0
    data_site: object = None                             # the loop that fetched them
    seconds: float = 0.0                                 # the whole watched run
    crash_modules: tuple | None = None                   # (exception, [(module, args)])
    kept_graphs: tuple | None = None   # (what, alive, total, (name, kind) or None, Site)
    loss_nodes: list = field(default_factory=list)       # (iteration, weakref to grad_fn)
    output_nodes: list = field(default_factory=list)     # the same for models' outputs
    internal_errors: list = field(default_factory=list)  # the doctor's own failures
