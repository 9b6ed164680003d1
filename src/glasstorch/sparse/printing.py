"""repr of a sparse tensor, as PyTorch prints it: the index and value tensors, then size,
nnz, dtype, layout and autograd suffixes."""
from __future__ import annotations

from ..core import dtype as dt
from ..core.printing import PRINT_OPTS, _contents, _grad_fn_name
from ..core.tensor import sparse_coo
from .tensor import INDEX_NAMES


def _part(prefix: str, t, indent: int) -> str:
    body = _contents(t, indent + len(prefix)) if t.numel() else "[]"
    if t.numel() == 0:
        body += f", size={tuple(t._shape)}"
    return prefix + body + ")"


def _add_suffixes(text: str, suffixes: list, indent: int, force_newline: bool) -> str:
    parts = [text]
    line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_len = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def sparse_repr(t) -> str:
    prefix, indent = "tensor(", 7
    d = t._sparse
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes += [f"size={tuple(t._shape)}", f"nnz={d.nnz}"]
    if t.dtype not in (dt.get_default_dtype(), dt.default_complex_dtype(), dt.int64, dt.bool):
        suffixes.append(f"dtype={t.dtype}")
    if d.layout is sparse_coo:
        parts = [_part("indices=tensor(", d.indices, indent)]
    else:
        cname, pname = INDEX_NAMES[d.layout]
        parts = [_part(f"{cname}=tensor(", d.compressed, indent),
                 _part(f"{pname}=tensor(", d.plain, indent)]
    parts.append(_part("values=tensor(", d.values, indent))
    body = (",\n" + " " * indent).join(parts)
    suffixes.append(f"layout={d.layout}")
    grad_fn = _grad_fn_name(t)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent, d.layout is sparse_coo)
