"""Operator schemas in PyTorch's notation: `add.Tensor(Tensor self, Tensor other, *, Scalar
alpha=1) -> Tensor`, parsed into arguments the wrapper generator and dispatcher use."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_MISSING = object()


@dataclass(frozen=True)
class Argument:
    name: str
    type: str            # 'Tensor', 'Tensor?', 'Tensor[]', 'Scalar', 'int[]', 'bool', ...
    default: object = _MISSING
    kwarg_only: bool = False
    alias: str | None = None   # 'a' in Tensor(a), 'a!' in Tensor(a!)

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    @property
    def is_tensor(self) -> bool:
        return self.type.startswith("Tensor")

    @property
    def is_tensor_list(self) -> bool:
        return self.type.startswith("Tensor") and self.type.endswith("[]")

    @property
    def is_mutated(self) -> bool:
        return self.alias is not None and self.alias.endswith("!")


@dataclass(frozen=True)
class Schema:
    name: str                 # 'add'
    overload: str             # 'Tensor' ('' for the default overload)
    arguments: tuple
    returns: tuple            # Arguments with names like 'result' (or given names)
    namespace: str = "aten"
    text: str = field(default="", compare=False)

    @property
    def qualified_name(self) -> str:
        base = f"{self.namespace}::{self.name}"
        return f"{base}.{self.overload}" if self.overload else base

    @property
    def tensor_positions(self) -> tuple:
        return tuple(i for i, a in enumerate(self.arguments) if a.is_tensor)

    @property
    def is_inplace(self) -> bool:
        return self.name.endswith("_") and not self.name.endswith("__")

    @property
    def is_view(self) -> bool:
        return any(r.alias and not r.alias.endswith("!") for r in self.returns)

    @property
    def overload_name(self) -> str:
        """FunctionSchema's name for the overload ('' for the default)."""
        return self.overload

    @property
    def is_mutable(self) -> bool:
        return any(a.is_mutated for a in self.arguments)

    def __str__(self):
        """As PyTorch prints a FunctionSchema: `aten::add.Tensor(Tensor self, ...) -> Tensor`."""
        text = self.text.strip()
        return text if "::" in text.partition("(")[0] else f"{self.namespace}::{text}"


_ARG_RE = re.compile(
    r"^(?P<type>[A-Za-z]+(?:\((?P<alias>[a-z]\d*!?)\))?\??(?:\[\d*\])?\??)\s+(?P<name>\w+)"
    r"(?:\s*=\s*(?P<default>.+))?$")


def _parse_default(text: str, type_: str):
    text = text.strip()
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith(("'", '"')):
        return text[1:-1]
    if text.startswith("["):
        inner = text[1:-1].strip()
        return tuple(int(x) for x in inner.split(",") if x.strip())
    if text == "contiguous_format":
        return "contiguous_format"
    try:
        value = int(text)
    except ValueError:
        value = float(text)
    if type_.endswith("[]") or type_.startswith(("int[", "SymInt[")):
        return (value,)
    return value


def _split_top(text: str) -> list:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _parse_arg(text: str, kwarg_only: bool) -> Argument:
    m = _ARG_RE.match(text)
    if not m:
        raise ValueError(f"cannot parse schema argument {text!r}")
    raw_type = m.group("type")
    alias = m.group("alias")
    type_ = re.sub(r"\([a-z]\d*!?\)", "", raw_type)
    type_ = re.sub(r"\[\d+\]", "[]", type_)
    default = _MISSING if m.group("default") is None else _parse_default(m.group("default"), type_)
    size = re.search(r"\[(\d+)\]", raw_type)
    if size and isinstance(default, tuple) and not m.group("default").startswith("["):
        default = default * int(size.group(1))     # int[2] padding=0 means [0, 0]
    return Argument(m.group("name"), type_, default, kwarg_only, alias)


def parse_schema(text: str, namespace: str = "aten") -> Schema:
    """Parse `name.overload(args) -> returns` into a Schema."""
    m = re.match(r"^\s*(?:(\w+)::)?([\w]+)(?:\.(\w+))?\s*\((.*)\)\s*->\s*(.+?)\s*$", text)
    if not m:
        raise ValueError(f"cannot parse schema {text!r}")
    ns, name, overload, args_text, ret_text = m.groups()
    arguments, kwarg_only = [], False
    for part in _split_top(args_text):
        if part == "*":
            kwarg_only = True
            continue
        arguments.append(_parse_arg(part, kwarg_only))
    ret_text = ret_text.strip()
    if ret_text.startswith("(") and ret_text.endswith(")"):
        ret_parts = _split_top(ret_text[1:-1])
    elif ret_text == "()":
        ret_parts = []
    else:
        ret_parts = [ret_text]
    returns = []
    for i, part in enumerate(ret_parts):
        if " " not in part:
            part = f"{part} result{i if len(ret_parts) > 1 else ''}"
        returns.append(_parse_arg(part, False))
    return Schema(name, overload or "", tuple(arguments), tuple(returns), ns or namespace, text)
