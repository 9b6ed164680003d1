"""Printing tensors character for character as PyTorch does (torch/_tensor_str.py).

Works on the NumPy array of the elements (`t._array()`), never on glasstorch ops, so printing
is quick and never shows up in dispatch traces. The steps are PyTorch's:

1. When `numel > threshold`, keep only `edgeitems` rows at each end of every long dimension.
2. Format every kept element, then pad all of them to one width. For floating dtypes that
   width and the style (integral `1.`, fixed `1.5000` or scientific `1.5000e+00`) are chosen
   from the finite non-zero values only; complex numbers format their real and imaginary
   parts separately, each part with its own width and style.
3. Lay the elements out with `[`, commas and newlines; rows align under their `[`, a row of a
   d-dim block is followed by d-1 newlines, long 1-d rows wrap at `linewidth`.
4. Append `device=`, `size=`, `dtype=`, `grad_fn=`/`requires_grad=` suffixes, wrapping a
   suffix onto its own line when it would pass `linewidth`.
"""
from __future__ import annotations

import math

import numpy as np

from ..dispatch.keys import MATH_BITS
from . import dtype as dt
from .tensor import Tensor

__all__ = ["set_printoptions", "get_printoptions"]


class _PrintOptions:
    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {  # (precision, threshold, edgeitems, linewidth)
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print (options named after NumPy's).

    precision: digits after the point (4); threshold: element count above which tensors are
    summarised with '...' (1000); edgeitems: items kept at each end of a summarised dimension
    (3); linewidth: characters per line before wrapping (80); profile: 'default', 'short' or
    'full' sets all four, the other arguments then override it; sci_mode: True/False forces
    scientific notation on or off, None (the default, and what every call without it
    restores) lets the values decide.

    >>> import glasstorch as torch
    >>> torch.set_printoptions(precision=2, threshold=5)
    >>> torch.tensor([1.12345]), torch.tensor(range(10))
    (tensor([1.12]), tensor([0, 1, 2,  ..., 7, 8, 9]))
    >>> torch.set_printoptions(profile='default')
    """
    opts = PRINT_OPTS
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be one of 'default', 'short' "
                             f"or 'full', got {profile!r}")
        opts.precision, opts.threshold, opts.edgeitems, opts.linewidth = _PROFILES[profile]
    if precision is not None:
        opts.precision = precision
    if threshold is not None:
        opts.threshold = threshold
    if edgeitems is not None:
        opts.edgeitems = edgeitems
    if linewidth is not None:
        opts.linewidth = linewidth
    opts.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current options, as keyword arguments that `set_printoptions` accepts."""
    return {name: getattr(PRINT_OPTS, name) for name in _PrintOptions.__slots__}


# ---- formatting elements ----------------------------------------------------------------

def _format_floats(values: np.ndarray):
    """(strings padded to a common width, that width) for real floating values (float64).

    Style and width come from the finite non-zero values only, so a nan, an inf or a -0.0
    may be wider than the rest, as in PyTorch.
    """
    flat = values.ravel()
    items = flat.tolist()
    nonzero_finite = np.isfinite(flat) & (flat != 0)
    prec = PRINT_OPTS.precision
    if nonzero_finite.all():
        chosen = flat
    else:
        chosen = flat[nonzero_finite]
    if chosen.size == 0:
        int_mode, sci_mode = True, False
    else:
        mags = np.abs(chosen)
        lo, hi = float(mags.min()), float(mags.max())
        int_mode = bool((chosen == np.ceil(chosen)).all())
        sci_mode = PRINT_OPTS.sci_mode
        if sci_mode is None:
            sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
    if sci_mode:
        strs = list(map(f"{{:.{prec}e}}".format, items))
    elif int_mode:
        strs = [s if s[-1] in "nf" else s + "." for s in map("{:.0f}".format, items)]
    else:
        strs = list(map(f"{{:.{prec}f}}".format, items))
    width = max((len(s) for s, keep in zip(strs, nonzero_finite.tolist()) if keep), default=1)
    return [s.rjust(width) for s in strs], width


def _format_elements(values: np.ndarray, category: int):
    """(padded element strings in row-major order, formatter width(s) for line wrapping)."""
    if category == dt.FLOAT:
        strs, width = _format_floats(values)
        return strs, width + 2
    if category == dt.COMPLEX:
        reals, real_width = _format_floats(values.real)
        imags, imag_width = _format_floats(values.imag)
        strs = []
        for re, im in zip(reals, imags):
            im = im.lstrip()
            strs.append(re + im + "j" if im[0] == "-" else re + "+" + im + "j")
        return strs, real_width + 2 + imag_width + 1
    strs = list(map(str, values.ravel().tolist()))
    width = max(map(len, strs), default=1)
    return [s.rjust(width) for s in strs], width + 2


# ---- layout -----------------------------------------------------------------------------

def _summarised(a: np.ndarray, edge: int) -> tuple[np.ndarray, list]:
    """The kept part of `a` and, per dimension, whether '...' stands in its middle."""
    cut = []
    for axis, n in enumerate(a.shape):
        if n > 2 * edge:
            a = np.take(a, np.r_[0:edge, n - edge:n], axis=axis)
            cut.append(True)
        else:
            cut.append(False)
    return a, cut


def _block(cells: np.ndarray, cut: list, depth: int, indent: int, element_length: int,
           edge: int) -> str:
    """'[...]' for the block `cells` (strings) at nesting `depth`, starting at column indent."""
    if cells.ndim == 1:
        items = cells.tolist()
        if cut[depth]:
            items[edge:edge] = [" ..."]
        per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [_block(row, cut, depth + 1, indent + 1, element_length, edge) for row in cells]
    if cut[depth]:
        rows[edge:edge] = ["..."]
    return "[" + ("," + "\n" * (cells.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _host_array(t) -> np.ndarray:
    if t._keyset & MATH_BITS:           # a conj() view prints its values
        t = t._resolved()
    a = t._array()
    # a device array (CuPy) comes home through a copy, which also turns bfloat16's bit
    # patterns (CuPy has no bfloat16) back into values
    return a if isinstance(a, np.ndarray) else t.detach().cpu()._array()


def _contents(t, indent: int) -> str:
    """The bracketed elements of a non-empty tensor whose data can be read."""
    a = dt.readable_array(_host_array(t))      # complex32 and float8 print their values
    category = t.dtype.category
    if category == dt.FLOAT and a.dtype != np.float64:
        a = a.astype(np.float64)  # float16/bfloat16/float32 values print through doubles
    summarise = a.size > PRINT_OPTS.threshold
    edge = PRINT_OPTS.edgeitems
    if a.ndim and summarise and not edge:
        return "[...]"
    if summarise and a.ndim:
        a, cut = _summarised(a, edge)
    else:
        cut = [False] * a.ndim
    strs, element_length = _format_elements(a, category)
    if a.ndim == 0:
        return strs[0]
    cells = np.array(strs, dtype=object).reshape(a.shape)
    return _block(cells, cut, 0, indent, element_length, edge)


# ---- the whole repr ---------------------------------------------------------------------

def _prefix(t) -> str:
    cls = type(t)
    # Plain tensors and nn.Parameter (which prepends its own header; nn sits above core, so
    # it is known by name) print as `tensor(`; other subclasses print their class name.
    if cls is Tensor or (cls.__name__ == "Parameter" and cls.__module__.startswith("glasstorch.")):
        return "tensor("
    return cls.__name__ + "("


def _grad_fn_name(t):
    try:
        fn = t.grad_fn
    except RuntimeError:
        return "Invalid"
    if fn is None:
        return None
    name = getattr(fn, "name", None)
    return name().rsplit("::", 1)[-1] if callable(name) else type(fn).__name__


def _add_suffixes(text: str, suffixes: list, indent: int) -> str:
    """Append ', suffix' pieces, moving one to a new line when it would pass linewidth."""
    parts = [text]
    line_len = len(text) - text.rfind("\n") + 1  # PyTorch's count, two more than the line
    for suffix in suffixes:
        if line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, tensor_contents=None) -> str:
    """repr(t) as PyTorch prints it; `tensor_contents` replaces the bracketed elements."""
    prefix = _prefix(t)
    indent = len(prefix)
    suffixes = []
    device = t.device
    if device.type != "cpu":
        suffixes.append(f"device='{device}'" if device.type != "cuda" or device.index is not None
                        else "device='cuda:0'")
    default = dt.get_default_dtype()
    shape = t._shape
    if device.type == "meta":
        suffixes.append(f"size={tuple(shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype}")
        body = "..."
    elif 0 in shape:
        if len(shape) != 1:
            suffixes.append(f"size={tuple(shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(shape)}")
        if t.dtype not in (default, dt.default_complex_dtype(), dt.int64, dt.bool):
            suffixes.append(f"dtype={t.dtype}")
        body = None
    if tensor_contents is not None:
        body = tensor_contents
    elif body is None:
        body = _contents(t, indent)
    grad_fn = _grad_fn_name(t)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
