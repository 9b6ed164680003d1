"""`torch.utils.flop_counter`: count the floating-point operations a program runs.

`FlopCounterMode` is a context manager that puts a TorchDispatchMode on the stack; every
operator call with a registered formula adds its count, computed from the shapes of its
arguments and outputs, to "Global" and to every module whose forward (or backward) is
running, named as PyTorch names them ("Sequential", "Sequential.0", ...). Counts follow
PyTorch's formulas: a multiply-add is two flops, biases and elementwise work are free.
Under a FakeTensorMode nothing is computed, so a model's cost can be counted for any size
and device.

`scaled_dot_product_attention` calls the fused CPU attention operator where PyTorch does
(4-D inputs without dropout; glasstorch also without a mask): it has no formula, in either
library, so counts nothing. Elsewhere glasstorch runs PyTorch's math form, two batched
`matmul` calls (and a softmax), which PyTorch's counts as its math kernel's products:
`aten.matmul` has a formula here, so the totals agree, though the per-op keys differ.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from functools import wraps
from math import prod

from ..core.tensor import Tensor
from ..dispatch.modes import TorchDispatchMode
from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ..ops import aten
from ._pytree import tree_leaves

__all__ = ["FlopCounterMode", "register_flop_formula"]

flop_registry: dict = {}     # OpOverloadPacket -> formula(*args, out_val=..., **kwargs)


def _shapes(value):
    """Tensors replaced by their shapes, through lists and tuples."""
    if isinstance(value, Tensor):
        return value.shape
    if isinstance(value, (list, tuple)):
        return type(value)(_shapes(v) for v in value) if not hasattr(value, "_fields") \
            else tuple(_shapes(v) for v in value)
    if isinstance(value, dict):
        return {k: _shapes(v) for k, v in value.items()}
    return value


def shape_wrapper(f):
    """A formula written on shapes, called with the op's tensors (out_shape: the output's)."""
    @wraps(f)
    def formula(*args, out_val=None, **kwargs):
        return f(*_shapes(args), out_shape=_shapes(out_val), **_shapes(kwargs))
    return formula


def register_flop_formula(targets, get_raw=False):
    """Decorator registering a formula for one op packet (`glasstorch.ops.aten.mm`) or a
    list of them. The formula receives shapes in place of tensors and `out_shape`, unless
    `get_raw=True` (then the tensors themselves and `out_val`)."""
    def register_fun(flop_formula):
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)
        for target in targets if isinstance(targets, (list, tuple)) else (targets,):
            if not hasattr(target, "overloads") or not hasattr(target, "_qualified_op_name"):
                raise ValueError(
                    "register_flop_formula(targets): expected each target to be "
                    f"OpOverloadPacket (i.e. glasstorch.ops.mylib.foo), got {target} which is "
                    f"of type {type(target)}")
            if target in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[target] = flop_formula
        return flop_formula
    return register_fun


# ---- PyTorch's formulas ------------------------------------------------------------------

@register_flop_formula(aten.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """(m, k) @ (k, n): m * n * k multiply-adds."""
    m, k = a_shape
    k2, n = b_shape
    assert k == k2
    return m * n * 2 * k


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """(b, m, k) @ (b, k, n)."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    assert b == b2 and k == k2
    return b * m * n * 2 * k


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    return bmm_flop(a_shape, b_shape)


@register_flop_formula(aten.matmul)
def matmul_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """matmul counted as the mm/bmm PyTorch lowers it to: a matrix-vector or vector-vector
    product (mv, dot in PyTorch) has no formula there, so it counts nothing here either."""
    if len(b_shape) == 1:
        return 0
    k, n = b_shape[-2:]
    rows = 1 if len(a_shape) == 1 else prod(out_shape[:-1])
    return rows * n * 2 * k


def conv_flop_count(x_shape, w_shape, out_shape, transposed: bool = False) -> int:
    """Multiplications of a convolution, times two: every output point (every input point
    of a transposed one) takes a filter's worth of products per pair of channels."""
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@register_flop_formula(aten.convolution)
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args,
              out_shape=None, **kwargs) -> int:
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


def _t(shape):
    return [shape[1], shape[0]] + list(shape[2:])


@register_flop_formula(aten.convolution_backward)
def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                       transposed, _output_padding, _groups, output_mask, out_shape,
                       **kwargs) -> int:
    """The input gradient is a transposed convolution of grad_out with the weight; the
    weight gradient a convolution of the input with grad_out (batch and channels swapped)."""
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        if transposed:
            flops += conv_flop_count(_t(grad_out_shape), _t(x_shape), _t(out_shape[1]))
        else:
            flops += conv_flop_count(_t(x_shape), _t(grad_out_shape), _t(out_shape[1]))
    return flops


# ---- module attribution ------------------------------------------------------------------

class _ModuleTracker:
    """Which modules are running: `parents` holds "Global" and the name of every module
    whose forward is on the stack or whose backward is under way. A module's backward
    starts when a gradient reaches one of its outputs and ends when every input and
    parameter of it that requires grad has received its gradient."""

    def __init__(self):
        self.parents = {"Global"}
        self._names: dict = {}          # id(module) -> (module, display name)
        self._hooks: list = []

    def _name(self, mod) -> str:
        known = self._names.get(id(mod))
        if known is None or known[0] is not mod:
            known = self._names[id(mod)] = (mod, type(mod).__name__)
        name = known[1]
        for child_name, child in mod.named_children():
            if id(child) not in self._names or self._names[id(child)][0] is not child:
                self._names[id(child)] = (child, f"{name}.{child_name}")
        return name

    def _pre_hook(self, mod, args):
        self.parents.add(self._name(mod))

    def _post_hook(self, mod, args, output):
        name = self._name(mod)
        self.parents.discard(name)
        outputs = [t for t in _tensors(output) if t.requires_grad]
        if not outputs:
            return
        sources = [t for t in _tensors(args) if t.requires_grad] + [
            p for p in mod.parameters() if p.requires_grad]
        pending = {id(t) for t in sources}
        state = {"entered": False, "left": set(), "done": False}   # this call's backward

        def enter(grad):
            if not state["entered"]:
                state["entered"] = True
                self.parents.add(name)

        def leave_after(key):
            def leave(grad):
                if state["done"]:       # a later backward through the same parameters
                    return
                state["left"].add(key)
                if state["entered"] and state["left"] >= pending:
                    state["done"] = True
                    self.parents.discard(name)
            return leave

        for t in outputs:
            self._hooks.append(t.register_hook(enter))
        for t in sources:
            self._hooks.append(t.register_hook(leave_after(id(t))))

    def __enter__(self):
        self._handles = (register_module_forward_pre_hook(self._pre_hook),
                         register_module_forward_hook(self._post_hook))
        return self

    def __exit__(self, *exc):
        for handle in self._handles + tuple(self._hooks):
            handle.remove()
        self._hooks.clear()
        self.parents = {"Global"}


def _tensors(tree):
    return [leaf for leaf in tree_leaves(tree) if isinstance(leaf, Tensor)]


# ---- the counter -------------------------------------------------------------------------

suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number) -> str:
    """The suffix for a count: one more digit than a suffix's range keeps the smaller one
    (1001M rather than 1.001B)."""
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number, suffix) -> str:
    index = suffixes.index(suffix)
    return f"{number / 1000 ** index:.3f}" + suffixes[index]


def convert_to_percent_str(num, denom) -> str:
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _table(rows, headers, aligns) -> str:
    """A plain-text table laid out as tabulate's "simple" format, which PyTorch prints with:
    a column of numbers is shown in the shortest form ('672.000' as '672'), and every column
    is at least two wider than its header."""
    columns = [list(column) for column in zip(*rows)]
    for i, column in enumerate(columns):
        if all(_is_number(c) for c in column):
            columns[i] = [format(float(c), "g") for c in column]
    rows = list(zip(*columns))
    widths = [max(len(h) + 2, *(len(c) for c in column))
              for h, column in zip(headers, columns)]

    def line(cells):
        return "  ".join(c.ljust(w) if a == "left" else c.rjust(w)
                         for c, w, a in zip(cells, widths, aligns)).rstrip()
    return "\n".join([line(headers), "  ".join("-" * w for w in widths)]
                     + [line(r) for r in rows])


class FlopCounterMode:
    """Count flops inside a `with` block: `get_total_flops()`, `get_flop_counts()`
    ({"Global": {op packet: flops}, "Sequential.0": {...}}), `get_table(depth)`; the table
    is printed on exit when `display` is true. `custom_mapping` adds or replaces formulas
    ({op packet: formula}); `mods` is accepted for compatibility and not needed."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True,
                 custom_mapping: dict | None = None):
        self.flop_counts: dict = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode = None
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        self.flop_registry = {
            **flop_registry,
            **{k: v if getattr(v, "_get_raw", False) else shape_wrapper(v)
               for k, v in (custom_mapping or {}).items()}}
        self.mod_tracker = _ModuleTracker()

    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict:
        """{module name: {op packet: flops}}, "Global" holding every count."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None) -> str:
        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999
        global_flops = self.get_total_flops()
        global_suffix = get_suffix_str(global_flops)
        is_global_subsumed = False

        def process_mod(mod_name, indent):
            nonlocal is_global_subsumed
            total = sum(self.flop_counts[mod_name].values())
            is_global_subsumed |= total >= global_flops
            padding = " " * indent
            rows = [[padding + mod_name, convert_num_with_suffix(total, global_suffix),
                     convert_to_percent_str(total, global_flops)]]
            for op, count in self.flop_counts[mod_name].items():
                rows.append([padding + " - " + str(op),
                             convert_num_with_suffix(count, global_suffix),
                             convert_to_percent_str(count, global_flops)])
            return rows

        values = []
        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))
        # "Global" is shown only when some flops ran outside every module shown
        if "Global" in self.flop_counts and not is_global_subsumed:
            for row in values:
                row[0] = " " + row[0]
            values = process_mod("Global", 0) + values
        if not values:
            values = [["Global", "0", "0%"]]
        return _table(values, ["Module", "FLOP", "% Total"], ("left", "right", "right"))

    def __enter__(self):
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterMode(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *args):
        result = self.mode.__exit__(*args)
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return result

    def _count_flops(self, func_packet, out, args, kwargs):
        formula = self.flop_registry.get(func_packet)
        if formula is not None:
            flops = formula(*args, **kwargs, out_val=out)
            for parent in set(self.mod_tracker.parents):
                self.flop_counts[parent][func_packet] += flops
        return out


class _FlopCounterMode(TorchDispatchMode):
    def __init__(self, counter: FlopCounterMode):
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        return self.counter._count_flops(func.overloadpacket, out, args, kwargs)
