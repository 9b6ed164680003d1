"""The public Python functions of declared ops: generated source with real signatures.

Each declaration gets a function (`glasstorch.add`) and Tensor methods written as Python
source from its schema: parameters with PyTorch's names and defaults, the call's dispatch key
set computed from its tensor arguments, the __torch_function__ check (one bit and one global
read on the fast path), overload selection by argument types, then one `dispatch` call. The
source is registered with `linecache`, so `inspect.getsource(torch.add)` and tracebacks show it.
"""
from __future__ import annotations

import inspect
import linecache
import operator

from .. import overrides
from ..core.tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch.dispatcher import PLAIN_CPU_GRAD_KEYSET, PLAIN_CPU_KEYSET
from ..dispatch.keys import threads_off_default
from ..dispatch.schema import Schema


def _py_default(arg):
    d = arg.default
    if isinstance(d, str) and d == "contiguous_format":
        return "_contiguous_format"
    return repr(d)


def _params(schema: Schema, first_name: str, skip_first: bool, varargs: bool, out: bool):
    """Python parameter list text and the call-argument list for the dispatcher."""
    params, call = [], []
    seen_kw = False
    args = schema.arguments
    for i, a in enumerate(args):
        name = first_name if i == 0 else a.name
        if name == "self" and i == 0 and not skip_first:
            name = first_name
        call.append(name)
        if i == 0 and skip_first:
            params.append("self")
            continue
        if varargs and i == 1:
            params.append(f"*{name}")
            seen_kw = True
            continue
        text = name if not a.has_default else f"{name}={_py_default(a)}"
        if a.kwarg_only and not seen_kw:
            params.append("*")
            seen_kw = True
        params.append(text)
    if out:
        if not seen_kw:
            params.append("*")
        params.append("out=None")
    return params, call


def _uses_varargs(schema: Schema) -> bool:
    """Methods like view(*shape): an int list that is the only positional after self."""
    pos = [a for a in schema.arguments[1:] if not a.kwarg_only]
    return (len(pos) == 1 and pos[0].type in ("int[]", "SymInt[]") and not pos[0].has_default
            and pos[0].name in ("size", "shape", "dims", "sizes"))


def _normalise_lines(schema: Schema, call_names, varargs: bool):
    lines = []
    for a, name in zip(schema.arguments, call_names):
        if a.type in ("int[]", "SymInt[]", "int[]?"):
            if varargs and name == call_names[1]:
                lines.append(f"    {name} = _as_shape({name})")
            else:
                lines.append(f"    if {name}.__class__ is int: {name} = ({name},)")
    return lines


# Python numbers add no dispatch keys and never override __torch_function__
_PYTHON_NUMBERS = frozenset((int, float, bool, complex))


def _keyset_expr(schema: Schema, names, first_is_tensor: bool, fname: str,
                 tensor_args=(), method=False) -> str:
    """The call's key set: plain attribute reads where the argument is known to be a
    Tensor (checked above), `_ks` (lists, None, Python numbers, other objects) elsewhere.
    An argument named in `tensor_args` gets PyTorch's argument-parsing TypeError for a
    number or None here, before any dispatch key's checks (autograd's on out= and in-place
    calls) could raise another error first; a tensor there costs nothing more."""
    parts = []
    for i in schema.tensor_positions:
        if i == 0 and first_is_tensor:
            parts.append(f"{names[i]}._keyset")
        elif schema.arguments[i].name in tensor_args:
            n = names[i]
            parts.append(f"({n}._keyset if {n}.__class__ is _Tensor else _required_tensor("
                         f"{n}, {fname!r}, {schema.arguments[i].name!r}, "
                         f"{i if method else i + 1}))")
        elif schema.arguments[i].type == "Tensor":
            n = names[i]
            parts.append(f"({n}._keyset if {n}.__class__ is _Tensor else 0 if {n}.__class__ "
                         f"in _NUMBERS else _ks({n}))")
        else:
            parts.append(f"_ks({names[i]})")
    return " | ".join(parts) if parts else "0"


def _dispatch_lines(op: str, args: str, indent: str) -> list:
    """Dispatch `op`: for plain CPU tensors while every thread's include/exclude sets are the
    default (no mode, autocast off: `threads_off_default`) and no dispatch trace is on, call
    the kernel the dispatcher would pick for them (`Operator.plain_cpu`, or `plain_cpu_grad`
    when one requires grad; renewed by every registration) without going through it."""
    return [f"{indent}_kernel = {op}.plain_cpu if _keys == _PLAIN_CPU else "
            f"{op}.plain_cpu_grad if _keys == _PLAIN_CPU_GRAD else None",
            f"{indent}if _kernel is not None and not _off_default[0] and not _tracers:",
            f"{indent}    return _kernel({args})",
            f"{indent}return {op}.dispatch(_keys, {args})"]


def _tuple(items) -> str:
    return "(" + "".join(f"{x}, " for x in items) + ")"


def generate_wrapper(name: str, schema: Schema, op, out_op=None, *, method=False, doc=None,
                     number_self=False, overloads=(), tensor_args=()):
    """Build a Python function with a real signature that dispatches `op`.

    Before dispatching, it checks for the __torch_function__ protocol (glasstorch.overrides):
    one bit of the key set says an argument overrides, one global read says a
    TorchFunctionMode is on somewhere; then the handlers get the call. `overloads` are
    (condition, operator, out operator) triples tried first, in order: the condition is
    text over the schema's argument names in braces (`"{dim} is None"`), the operator takes
    the arguments its own schema names. `tensor_args`: the arguments that take a Tensor
    only (no overload takes a number there)."""
    first = "self" if method else ("input" if schema.arguments and
                                   schema.arguments[0].name == "self" else
                                   (schema.arguments[0].name if schema.arguments else ""))
    varargs = method and _uses_varargs(schema)
    params, call = _params(schema, first, method, varargs, out_op is not None)
    if method:
        call[0] = "self"
    values = call + (["out"] if out_op is not None else [])
    relevant = [call[i] for i in sorted(set(schema.tensor_positions) | (
        {0} if schema.arguments else set()))] + (["out"] if out_op is not None else [])
    # PyTorch's methods that take only self count a plain self among the handler's types
    plain_types = method and len(schema.arguments) == 1
    protocol = f"{name}, _SPEC, {_tuple(values)}, {_tuple(relevant)}" + (
        ", True, True" if plain_types else "")
    lines = [f"def {name}({', '.join(params)}):"]
    first_is_tensor = bool(schema.arguments) and schema.arguments[0].type == "Tensor"
    if first_is_tensor and not method:
        allowed = "_TensorOrNumber" if number_self else "_Tensor"
        lines.append(f"    if not isinstance({call[0]}, {allowed}): "
                     f"return _foreign_self({protocol}, {name!r})")
    first_is_tensor = first_is_tensor and (method or not number_self)
    lines.append(f"    _keys = "
                 f"{_keyset_expr(schema, call, first_is_tensor, name, tensor_args, method)}")
    if out_op is not None:
        lines.append("    if out is not None: _keys |= _ks(out)")
    lines += [f"    if _keys & {overrides.TORCH_FUNCTION_BIT} or _anywhere.modes:",
              f"        _handled = _protocol({protocol})",
              "        if _handled is not _NOT_HANDLED: return _handled"]
    lines += _normalise_lines(schema, call, varargs)
    env = {}
    names = {a.name: n for a, n in zip(schema.arguments, call)}
    for i, (condition, other_op, other_out) in enumerate(overloads):
        args = ", ".join(names[a.name] for a in other_op.schema.arguments)
        condition = condition.format(**names)
        if out_op is not None and other_out is None:        # out= calls keep `op`'s
            condition = f"out is None and ({condition})"
        lines.append(f"    if {condition}:")
        if out_op is not None and other_out is not None:
            lines.append(f"        if out is not None: return _out_op{i}.dispatch(_keys, {args}, "
                         "out)")
        lines += _dispatch_lines(f"_op{i}", args, "        ")
        env.update({f"_op{i}": other_op, f"_out_op{i}": other_out})
    if out_op is not None:
        lines.append(f"    if out is not None: return _out_op.dispatch(_keys, {', '.join(call)}, "
                     "out)")
    lines += _dispatch_lines("_op", ", ".join(call), "    ")
    source = "\n".join(lines)
    spec = tuple((n, "v" if varargs and i == 1 else "k" if a.kwarg_only else
                  "d" if a.has_default else "p", a.default)
                 for i, (n, a) in enumerate(zip(call, schema.arguments))) + (
        (("out", "k", None),) if out_op is not None else ())
    env.update({"_op": op, "_out_op": out_op, "_ks": overrides.arg_bits, "_Tensor": Tensor,
           "_TensorOrNumber": (Tensor, int, float, complex),
           "_NUMBERS": _PYTHON_NUMBERS, "_as_shape": _as_varargs_shape,
           "_contiguous_format": "contiguous_format", "_SPEC": spec,
           "_anywhere": overrides.anywhere,
           "_protocol": overrides.protocol, "_foreign_self": _foreign_self,
           "_required_tensor": _required_tensor,
           "_NOT_HANDLED": overrides.NOT_HANDLED, "_SCALARS": _SCALAR_TYPES,
           "_PLAIN_CPU": PLAIN_CPU_KEYSET, "_PLAIN_CPU_GRAD": PLAIN_CPU_GRAD_KEYSET,
           "_off_default": threads_off_default,
           "_tracers": dispatcher._tracers})
    qualname = f"Tensor.{name}" if method else name
    filename = f"<glasstorch.ops {qualname} {schema.qualified_name}>"
    exec(compile(source, filename, "exec"), env)
    # registered as a source, so inspect.getsource(torch.add) and tracebacks show the code
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    fn = env[name]
    fn.__doc__ = doc or f"{name}: {schema}"
    fn.__module__ = "glasstorch"
    fn.__qualname__ = qualname
    fn._schema = schema
    return fn


def handlers_see(wrapper, public) -> None:
    """Make __torch_function__ handlers and modes get `public` as the function called, for
    calls that reach them through `wrapper` (a wrapper generated here or by
    `overrides.overridable`), when `public` is a function that picks between wrappers."""
    wrapper.__globals__[wrapper.__code__.co_name] = public


def operator_method(method, name: str):
    """A generated method as the Python operator `name` (`__add__` from `Tensor.add`): an
    operand that is no tensor or number (a TypeError) gives NotImplemented, so that Python
    tries the reflected operation and then raises its usual TypeError; a tensor of the real
    PyTorch gets the error that says how to convert it. Made from the
    method's own source inside a `try`, so the operator costs no extra call; handlers of
    __torch_function__ still see the method (`t + 1` reaches them as Tensor.add)."""
    filename = method.__code__.co_filename
    head, *body = linecache.cache[filename][2]
    source = (f"def {name}{head[head.index('('):]}    try:\n"
              + "".join(f"    {line.rstrip()}\n" for line in body)
              + "    except _ForeignTensorError:\n        raise\n"
              + "    except TypeError:\n        return NotImplemented\n")
    env = dict(method.__globals__)        # the method's name there still means the method
    env["_ForeignTensorError"] = overrides.ForeignTensorError
    filename = filename.replace(f"Tensor.{method.__name__} ", f"Tensor.{name} ", 1)
    exec(compile(source, filename, "exec"), env)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    fn = env[name]
    fn.__doc__ = method.__doc__
    fn.__module__ = "glasstorch"
    fn.__qualname__ = f"Tensor.{name}"
    fn._schema = method._schema
    return fn


overrides._PROTOCOL_FILES.add(__file__)


# The Python types PyTorch's argument parser binds to a `Scalar` (an overload condition's
# `{other}.__class__ in _SCALARS`).
_SCALAR_TYPES = frozenset((int, float, bool, complex))


def _foreign_self(public, spec, values, relevant, fname):
    """The first argument is not a Tensor: its __torch_function__ (or another argument's)
    handles the call, else the usual TypeError."""
    result = overrides.protocol(public, spec, values, relevant)
    if result is overrides.NOT_HANDLED:
        bad_self(fname, values[0])
    return result


def _required_tensor(value, fname, argname, position):
    """The key bits of a non-Tensor argument where only a Tensor is accepted: a number or
    None is PyTorch's argument-parsing TypeError; other objects may be tensor-likes (their
    __torch_function__ decides), left to the op's own checks."""
    if value is None or value.__class__ in _PYTHON_NUMBERS:
        raise TypeError(f"{fname}(): argument '{argname}' (position {position}) must be "
                        f"Tensor, not {type(value).__name__}")
    return overrides.arg_bits(value)


def _as_varargs_shape(size):
    if len(size) == 1:
        if size[0].__class__ is int:      # x.view(16), x.view(-1): already a shape
            return size
        if not hasattr(size[0], "__index__"):
            size = size[0]
    try:
        return tuple(map(operator.index, size))      # an int is its own index
    except TypeError:
        raise TypeError(f"expected a sequence of integers, but got {size!r}") from None


def bad_self(fname, value):
    raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                    f"{type(value).__name__}")


# Python operators whose __torch_function__ handlers see the method they call, as in
# PyTorch (`t + 1` reaches them as Tensor.add); the other operators reach them as
# themselves, some under PyTorch's other name for them.
OPERATORS_SEEN_AS_METHOD = {
    "__add__", "__radd__", "__iadd__", "__sub__", "__isub__", "__mul__", "__rmul__",
    "__imul__", "__truediv__", "__itruediv__", "__ifloordiv__", "__mod__", "__imod__",
    "__pow__", "__ipow__", "__rand__", "__ror__", "__rxor__", "__iand__", "__ior__",
    "__ixor__", "__ilshift__", "__irshift__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__neg__", "__abs__", "__matmul__"}


_OPERATOR_NAMES = {"__pos__": "positive", "__rtruediv__": "__rdiv__"}


# Tensor methods PyTorch writes in Python: their handlers count a plain self among the types
# and get keywords as a dict; a TypeError, theirs or a handler's, becomes NotImplemented.
_PYTHON_TENSOR_METHODS = {"__floordiv__", "__rsub__", "__rpow__", "__rmod__", "__rfloordiv__",
                          "__rlshift__", "__rrshift__", "__rdiv__", "__rmatmul__"}


def public(fn, name: str, method: bool):
    """`fn` honouring __torch_function__ (glasstorch.overrides), unless it is a generated
    wrapper or an operator that calls one, which honour it already."""
    if hasattr(fn, "_schema") or (method and name in OPERATORS_SEEN_AS_METHOD) or (
            not callable(fn) or isinstance(fn, type)):
        return fn
    name = _OPERATOR_NAMES.get(name, name) if method else name
    python_method = method and name in _PYTHON_TENSOR_METHODS
    try:
        unary = method and len(inspect.signature(fn).parameters) == 1
        return overrides.overridable(fn, name=name, builtin=True,
                                     qualname=f"Tensor.{name}" if method else name,
                                     plain_types=python_method or unary,
                                     kwargs_dict=python_method, operator=python_method)
    except ValueError:          # no signature to copy (a builtin): not ours to wrap
        return fn
