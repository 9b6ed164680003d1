"""Operator declarations: one per op, from which every variant is generated.

`structured(schema, meta)` declares an op whose outputs a meta function can describe from
input metadata; its kernels only fill a preallocated output, so the functional, in-place
and `out=` variants and the Meta backend all come from the one declaration (PyTorch's
structured kernels). `view(schema, meta)` declares a view op: it returns new metadata over
the same storage on every backend. `kernel_op(schema)` declares an op whose kernels make
their own outputs (data-dependent shapes, factories). `composite(fn)` exports a function
written in other ops, which dispatch themselves.

Each declaration generates a Python function with a real signature (the public
`glasstorch.<name>`), a Tensor method, and dispatcher `Operator`s with their kernels.
"""
from __future__ import annotations

import inspect
import linecache
import operator
import os
import sys
import warnings
from collections import namedtuple

from .. import overrides
from ..core import dtype as dt
from ..core.device import CPU, META
from ..core.grad_state import state as _grad_state
from ..core.shape import Size, contiguous_strides, has_internal_overlap
from ..core.tensor import Tensor
from ..dispatch.dispatcher import define
from ..dispatch.keys import DispatchKey
from ..dispatch.schema import Schema, parse_schema

TensorSpec = namedtuple("TensorSpec", "shape dtype stride")
TensorSpec.__doc__ = "What a meta function says an output will be: shape, dtype, strides."

functions: dict = {}       # public name -> function, exported as glasstorch.<name>
declarations: dict = {}    # op name -> OpDeclaration


class OpDeclaration:
    """Everything declared about one op: its operators per variant, meta, kernels; the
    derivative is kept on the functional operator (ops/derivative.py)."""

    def __init__(self, name, schema, kind, meta=None, doc=None, promotes=True):
        self.name = name
        self.schema = schema
        self.kind = kind
        self.meta = meta
        self.doc = doc
        self.promotes = promotes     # out/in-place may downcast within a category
        self.functional = None       # Operator
        self.inplace = None          # Operator or None
        self.out = None              # Operator or None
        self.impls: dict = {}        # backend key name -> impl(out, *args)
        self.function = None         # the generated public function
        self.number_self = False     # torch.add(2, t): a Python number may stand for `self`
        self.check_inplace = None    # (spec, self, *args): op-specific in-place shape errors
        self.check_out = None        # (spec, out, *args): op-specific out= dtype errors
        self.out_meta = None         # (out, *args) -> spec: meta of the out= variant
        self.on_cuda = None          # "shared" (the array kernel runs on CuPy too), "host"
        #                              (runs on the CPU, copies), None: by kind (ops/gpu_kernels)
        self.overloads = []          # (condition text, OpDeclaration): see `overload`
        self.exported = (False, False)   # (as a method, as a function)

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def overload(self, name: str) -> "OpDeclaration":
        """The declaration of this op's overload `name` ("Scalar"; "default" for the one
        without a name), for facets declared per overload (a derivative)."""
        for decl in (self, *(other for _, other in self.overloads)):
            if (decl.schema.overload or "default") == name:
                return decl
        raise KeyError(f"{self.name} has no overload '{name}'")

    def impl(self, backend: str):
        """Decorator: register the kernel that fills outputs on `backend` ('CPU', 'CUDA')."""
        def register(fn):
            self.impls[backend] = fn
            key = DispatchKey[backend]
            if self.kind == "structured":
                self.functional.register(key, _functional_kernel(self, fn, backend))
                if self.inplace is not None:
                    self.inplace.register(key, _inplace_kernel(self, fn))
                if self.out is not None:
                    self.out.register(key, _out_kernel(self, fn))
            else:
                self.functional.register(key, fn)
            return fn
        return register

    def __repr__(self):
        return f"<OpDeclaration {self.name} ({self.kind})>"


# ---- structured kernels ----------------------------------------------------------------

def _device_of(args):
    for a in args:
        if isinstance(a, Tensor):
            return a.device
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            return a[0].device
    return None


def _allocate(spec, device):
    if spec.__class__ is TensorSpec:
        return Tensor._empty(spec.shape, spec.dtype, device, spec.stride)
    return tuple(_allocate(s, device) for s in spec)


def _functional_kernel(decl, impl, backend):
    meta = decl.meta
    if backend == "CPU":       # one CPU device: no need to look at the arguments
        empty = Tensor._empty

        def kernel(*args):
            spec = meta(*args)
            if spec.__class__ is TensorSpec:      # one output: the common case, inlined
                out = empty(spec.shape, spec.dtype, CPU, spec.stride)
            else:
                out = _allocate(spec, CPU)
            impl(out, *args)
            return out
    else:
        def kernel(*args):
            out = _allocate(meta(*args), _device_of(args))
            impl(out, *args)
            return out
    kernel.__qualname__ = f"{impl.__qualname__} (functional)"
    kernel.__module__ = impl.__module__
    return kernel


def _meta_functional_kernel(decl):
    meta = decl.meta

    def kernel(*args):
        return _allocate(meta(*args), META)
    return kernel


def _check_inplace(decl, self, spec, rest=()):
    if decl.check_inplace is not None:
        decl.check_inplace(spec, self, *rest)
    if has_internal_overlap(self._shape, self._stride):     # checked first, as TensorIterator
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a"
            " single memory location. Please clone() the tensor before performing the "
            "operation.")
    if spec.shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the "
                           f"broadcast shape {list(spec.shape)}")
    _check_cast(decl, spec.dtype, self.dtype)


def _check_cast(decl, result: dt.dtype, out: dt.dtype):
    if result is out:
        return
    if not decl.promotes or not dt.can_cast(result, out):
        raise RuntimeError(f"result type {result.cname} can't be cast to the desired output "
                           f"type {out.cname}")


def _inplace_kernel(decl, impl):
    meta = decl.meta

    def kernel(self, *rest):
        _check_inplace(decl, self, meta(self, *rest), rest)
        impl(self, self, *rest)
        return self
    kernel.__qualname__ = f"{impl.__qualname__} (in-place)"
    kernel.__module__ = impl.__module__
    return kernel


def _meta_inplace_kernel(decl):
    meta = decl.meta

    def kernel(self, *rest):
        _check_inplace(decl, self, meta(self, *rest), rest)
        return self
    return kernel


def _prepare_out(decl, spec, out):
    if spec.__class__ is TensorSpec:
        if not isinstance(out, Tensor):
            raise TypeError(f"{decl.name}(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        _check_cast(decl, spec.dtype, out.dtype)
        if out._shape != spec.shape:
            resize_output(out, spec.shape)
            if out._stride != spec.stride:   # a resized out takes the result's layout
                out._set_metadata(out._storage, out._offset, spec.shape, spec.stride)
        return
    if not isinstance(out, (tuple, list)) or len(out) != len(spec):
        raise TypeError(f"{decl.name}(): argument 'out' must be a tuple of {len(spec)} "
                        "Tensors")
    for s, o in zip(spec, out):
        _prepare_out(decl, s, o)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warn_user(message: str) -> None:
    """A UserWarning attributed to the first caller outside glasstorch."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE_DIR) or
                                 frame.f_code.co_filename.startswith("<glasstorch")):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def resize_output(out: Tensor, shape) -> None:
    """Resize an `out=` tensor to the result's shape, warning when it held elements."""
    if out.numel() != 0:
        warn_user(
            f"An output with one or more elements was resized since it had shape "
            f"{list(out._shape)}, which does not match the required output shape "
            f"{list(shape)}. This behavior is deprecated, and in a future PyTorch release "
            "outputs will not be resized unless they have zero elements. You can explicitly "
            "reuse an out tensor t by resizing it, inplace, to zero elements with "
            "t.resize_(0).")
    out.resize_(shape)


def _checked_out(decl, inputs, out):
    """Describe the result, run the op's out= checks, and resize `out` to fit it."""
    if decl.out_meta is not None and isinstance(out, Tensor):
        spec = decl.out_meta(out, *inputs)
    else:
        spec = decl.meta(*inputs)
    if decl.check_out is not None and isinstance(out, Tensor):
        decl.check_out(spec, out, *inputs)
    _prepare_out(decl, spec, out)


def _out_kernel(decl, impl):
    def kernel(*args):
        *inputs, out = args
        _checked_out(decl, inputs, out)
        impl(out if not isinstance(out, list) else tuple(out), *inputs)
        return out
    kernel.__qualname__ = f"{impl.__qualname__} (out)"
    kernel.__module__ = impl.__module__
    return kernel


def _meta_out_kernel(decl):
    def kernel(*args):
        *inputs, out = args
        _checked_out(decl, inputs, out)
        return out
    return kernel


def _mutated(op, args) -> list:
    """The tensors a mutating op writes (its `out` may be a list of tensors)."""
    out = []
    for i in op.info["mutated"]:
        arg = args[i]
        if isinstance(arg, (tuple, list)):
            out.extend(arg)
        else:
            out.append(arg)
    return out


def _bump_versions_kernel(op, ks, *args):
    """ADInplaceOrView for mutating ops: run below, then bump the mutated tensors' versions
    (this key is skipped inside inference_mode, so an inference tensor here is an error)."""
    written = _mutated(op, args)
    for t in written:
        if t._view_creation is not None:
            check_view_write(t)
        if t._inference:
            raise RuntimeError(
                "Inplace update to inference tensor outside InferenceMode is not allowed.You "
                "can make a clone to get a normal tensor before doing inplace update.See "
                "https://github.com/pytorch/rfcs/pull/17 for more details.")
    result = op.redispatch(ks, *args)
    for t in written:
        t._vc.version += 1
    return result


# ---- view kernels ----------------------------------------------------------------------

def _make_alias(self, shape, stride, offset, dtype=None):
    # dtype: for views that reinterpret the elements (view_as_real, view_as_complex)
    out = Tensor._make(self._storage, offset, shape, stride,
                       self.dtype if dtype is None else dtype, self._vc)
    out._view_meta = (self, shape, stride, offset)
    return out


def _view_kernel(decl):
    meta = decl.meta

    def kernel(self, *args):
        m = meta(self, *args)
        if isinstance(m, list):
            return [_make_alias(self, *x) for x in m]
        return _make_alias(self, *m)
    kernel.__qualname__ = f"{meta.__qualname__} (view)"
    kernel.__module__ = meta.__module__
    return kernel


def _set_base(view, self, creation):
    view._base = self if self._base is None else self._base
    if creation is not None:
        view._view_creation = creation


def _view_creation(op, self, multi_output: bool):
    """Why an in-place write through the new view must later be refused (PyTorch's
    CreationMeta), or None: made without grad mode or in inference mode, or one of several
    views returned together (their graphs cannot be rewritten one at a time)."""
    if self._view_creation is not None:
        return self._view_creation                      # views of such views inherit it
    if _grad_state.inference:
        return ("inference_mode",)
    if not _grad_state.enabled:
        return ("no_grad",)
    if multi_output:
        d = op.info.get("derivative")
        name = d.node_name if d is not None and isinstance(d.node_name, str) else op.schema.name
        return ("multi_output", name.removesuffix("Backward0"))
    return None


def _view_bookkeeping_kernel(op, ks, self, *args):
    """ADInplaceOrView for view ops: the result records its root base."""
    out = op.redispatch(ks, self, *args)
    if isinstance(out, list):
        creation = _view_creation(op, self, True)
        for nr, v in enumerate(out):
            _set_base(v, self, creation and creation + (nr,))
    elif self._view_creation is None and _grad_state.enabled and not _grad_state.inference:
        out._base = self if self._base is None else self._base      # the common case
    else:
        _set_base(out, self, _view_creation(op, self, False))
    return out


def check_view_write(t: Tensor) -> None:
    """Refuse an in-place write, with grad mode on, through a view whose creation makes the
    write's effect on the graph ambiguous (see `_view_creation`)."""
    creation = t._view_creation
    if creation is None or not _grad_state.enabled or not t._base._requires_grad:
        return
    kind = creation[0]
    if kind == "multi_output":
        raise RuntimeError(
            f"Output {creation[2]} of {creation[1]} is a view and is being modified inplace. "
            "This view is the output of a function that returns multiple views. Such views "
            "cannot be written in place: use an out-of-place op (or clone() the view first).")
    mode = "no_grad" if kind == "no_grad" else "inference"
    raise RuntimeError(
        f"A view was created in {mode} mode and is being modified inplace with grad mode "
        f"enabled. Whether the write should be tracked is ambiguous, so it is refused: make "
        f"both the view and the in-place op inside the {mode} block (untracked), or both "
        "outside it (tracked).")


# ---- Python wrapper generation ---------------------------------------------------------

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


def _keyset_expr(schema: Schema, names, first_is_tensor: bool) -> str:
    """The call's key set: plain attribute reads where the argument is known to be a
    Tensor (checked above), `_ks` (lists, None, Python numbers, other objects) elsewhere."""
    parts = []
    for i in schema.tensor_positions:
        if i == 0 and first_is_tensor:
            parts.append(f"{names[i]}._keyset")
        elif schema.arguments[i].type == "Tensor":
            n = names[i]
            parts.append(f"({n}._keyset if {n}.__class__ is _Tensor else _ks({n}))")
        else:
            parts.append(f"_ks({names[i]})")
    return " | ".join(parts) if parts else "0"


def _tuple(items) -> str:
    return "(" + "".join(f"{x}, " for x in items) + ")"


def generate_wrapper(name: str, schema: Schema, op, out_op=None, *, method=False, doc=None,
                     number_self=False, overloads=()):
    """Build a Python function with a real signature that dispatches `op`.

    Before dispatching, it checks for the __torch_function__ protocol (glasstorch.overrides):
    one bit of the key set says an argument overrides, one global read says a
    TorchFunctionMode is on somewhere; then the handlers get the call. `overloads` are
    (condition, operator, out operator) triples tried first, in order: the condition is
    text over the schema's argument names in braces (`"{dim} is None"`), the operator takes
    the arguments its own schema names."""
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
    lines.append(f"    _keys = {_keyset_expr(schema, call, first_is_tensor)}")
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
        lines.append(f"        return _op{i}.dispatch(_keys, {args})")
        env.update({f"_op{i}": other_op, f"_out_op{i}": other_out})
    if out_op is not None:
        lines.append(f"    if out is not None: return _out_op.dispatch(_keys, {', '.join(call)}, "
                     "out)")
    lines.append(f"    return _op.dispatch(_keys, {', '.join(call)})")
    source = "\n".join(lines)
    spec = tuple((n, "v" if varargs and i == 1 else "k" if a.kwarg_only else
                  "d" if a.has_default else "p", a.default)
                 for i, (n, a) in enumerate(zip(call, schema.arguments))) + (
        (("out", "k", None),) if out_op is not None else ())
    env.update({"_op": op, "_out_op": out_op, "_ks": overrides.arg_bits, "_Tensor": Tensor,
           "_TensorOrNumber": (Tensor, int, float, complex), "_as_shape": _as_varargs_shape,
           "_contiguous_format": "contiguous_format", "_SPEC": spec,
           "_anywhere": overrides.anywhere,
           "_protocol": overrides.protocol, "_foreign_self": _foreign_self,
           "_NOT_HANDLED": overrides.NOT_HANDLED, "_SCALARS": _SCALAR_TYPES})
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


overrides._PROTOCOL_FILES.add(__file__)

# The Python types PyTorch's argument parser binds to a `Scalar` (an overload condition's
# `{other}.__class__ in _SCALARS`).
_SCALAR_TYPES = frozenset((int, float, bool, complex))


def _foreign_self(public, spec, values, relevant, fname):
    """The first argument is not a Tensor: its __torch_function__ (or another argument's)
    handles the call, else the usual TypeError."""
    result = overrides.protocol(public, spec, values, relevant)
    if result is overrides.NOT_HANDLED:
        _bad_self(fname, values[0])
    return result


def _as_varargs_shape(size):
    if len(size) == 1 and not hasattr(size[0], "__index__"):
        size = size[0]
    try:
        return tuple(s if s.__class__ is int else operator.index(s) for s in size)
    except TypeError:
        raise TypeError(f"expected a sequence of integers, but got {size!r}") from None


def _bad_self(fname, value):
    raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                    f"{type(value).__name__}")


# Python operators whose __torch_function__ handlers see the method they call, as in
# PyTorch (`t + 1` reaches them as Tensor.add); the other operators reach them as
# themselves, some under PyTorch's other name for them.
_OPERATORS_SEEN_AS_METHOD = {
    "__add__", "__radd__", "__iadd__", "__sub__", "__isub__", "__mul__", "__rmul__",
    "__imul__", "__truediv__", "__itruediv__", "__ifloordiv__", "__mod__", "__imod__",
    "__pow__", "__ipow__", "__rand__", "__ror__", "__rxor__", "__iand__", "__ior__",
    "__ixor__", "__ilshift__", "__irshift__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__neg__", "__abs__"}
_OPERATOR_NAMES = {"__pos__": "positive", "__matmul__": "matmul", "__rtruediv__": "__rdiv__"}
# Tensor methods PyTorch writes in Python: their handlers count a plain self among the types
# and get keywords as a dict.
_PYTHON_TENSOR_METHODS = {"__floordiv__", "__rsub__", "__rpow__", "__rmod__", "__rfloordiv__",
                          "__rlshift__", "__rrshift__", "__rdiv__", "__rmatmul__"}


def _public(fn, name: str, method: bool):
    """`fn` honouring __torch_function__ (glasstorch.overrides), unless it is a generated
    wrapper or an operator that calls one, which honour it already."""
    if hasattr(fn, "_schema") or (method and name in _OPERATORS_SEEN_AS_METHOD) or (
            not callable(fn) or isinstance(fn, type)):
        return fn
    name = _OPERATOR_NAMES.get(name, name) if method else name
    python_method = method and name in _PYTHON_TENSOR_METHODS
    try:
        unary = method and len(inspect.signature(fn).parameters) == 1
        return overrides.overridable(fn, name=name, builtin=True,
                                     qualname=f"Tensor.{name}" if method else name,
                                     plain_types=python_method or unary,
                                     kwargs_dict=python_method)
    except ValueError:          # no signature to copy (a builtin): not ours to wrap
        return fn


def export(name: str, fn, *, method: bool | str = False, function: bool = True) -> None:
    """Make `fn` public as glasstorch.<name> and/or as a Tensor method."""
    if function:
        functions[name] = _public(fn, name, False)
    if method:
        method_name = name if method is True else method
        setattr(Tensor, method_name, _public(fn, method_name, True))


# ---- declaring ops ---------------------------------------------------------------------

def _variant_schema(schema_text: str, new_name: str, mutates_self: bool, out: bool):
    schema = parse_schema(schema_text)
    head, _, rest = schema_text.partition("(")
    overload = schema.overload
    text = f"{new_name}.{overload}(" if overload else f"{new_name}("
    args, _, rets = rest.rpartition(") ->")
    if mutates_self:
        args = args.replace("Tensor self", "Tensor(a!) self", 1)
        return f"{text}{args}) -> Tensor(a!)"
    if out:
        n_out = max(len(schema.returns), 1)
        outs = ", ".join(f"Tensor(a!) out{i if n_out > 1 else ''}" for i in range(n_out))
        sep = ", " if "*" in args else ", *, "
        overload = f"{overload}_out" if overload else "out"
        return f"{new_name}.{overload}({args}{sep}{outs if n_out == 1 else 'Tensor[] out'}) ->{rets}"
    return schema_text


def structured(schema_text: str, meta, *, method=True, function=True, inplace=True, out=True,
               promotes=True, doc=None, tags=(), number_self=False, check_inplace=None,
               check_out=None, out_meta=None):
    """Declare a structured op (see the module docstring). Returns its OpDeclaration.

    Op-specific checks: `check_inplace(spec, self, *args)` runs before the in-place shape
    check, `check_out(spec, out, *args)` before an out= tensor is resized, and
    `out_meta(out, *args)` replaces `meta` for out= calls whose checks involve `out`.
    """
    schema = parse_schema(schema_text)
    name = schema.name
    decl = OpDeclaration(name, schema, "structured", meta, doc, promotes)
    decl.number_self = number_self
    decl.check_inplace, decl.check_out, decl.out_meta = check_inplace, check_out, out_meta
    _define_variants(decl, schema_text, inplace, out, tags)
    _export_declaration(decl, method, function)
    return decl


def _define_variants(decl, schema_text, inplace, out, tags):
    """The functional, in-place and out= operators of a structured declaration."""
    name = decl.name
    decl.functional = define(schema_text, tags=tags)
    decl.functional.info["decl"] = decl
    decl.functional.register(DispatchKey.Meta, _meta_functional_kernel(decl))
    if inplace:
        decl.inplace = define(_variant_schema(schema_text, name + "_", True, False), tags=tags)
        decl.inplace.info.update(decl=decl, mutated=(0,))
        decl.inplace.register(DispatchKey.Meta, _meta_inplace_kernel(decl))
        decl.inplace.register(DispatchKey.ADInplaceOrView, _bump_versions_kernel)
    if out:
        decl.out = define(_variant_schema(schema_text, name, False, True), tags=tags)
        decl.out.info.update(decl=decl, mutated=(len(decl.schema.arguments),), out=True)
        decl.out.register(DispatchKey.Meta, _meta_out_kernel(decl))
        decl.out.register(DispatchKey.ADInplaceOrView, _bump_versions_kernel)


def overload(decl: OpDeclaration, schema_text: str, meta, kernel, *, when: str,
             inplace=None, out=None) -> OpDeclaration:
    """Declare another overload of `decl`'s op, which `decl`'s public function and methods
    dispatch to when the condition `when` holds (text over `decl`'s argument names in
    braces: `"{other}.__class__ in _SCALARS"`), as PyTorch's argument parser picks an
    overload by the arguments' types. `meta` and the CPU `kernel` take the overload's own
    arguments; in-place and out= variants follow `decl`'s unless told, and so do `decl`'s
    op-specific checks (`check_inplace`, `check_out`), which get the overload's arguments.
    Re-exports `decl`."""
    schema = parse_schema(schema_text)
    other = OpDeclaration(schema.name, schema, "structured", meta, decl.doc, decl.promotes)
    other.check_inplace, other.check_out = decl.check_inplace, decl.check_out
    _define_variants(other, schema_text, decl.inplace is not None if inplace is None else inplace,
                     decl.out is not None if out is None else out, decl.functional.tags)
    other.impl("CPU")(kernel)
    decl.overloads.append((when, other))
    _export_declaration(decl, *decl.exported)
    return other


def view(schema_text: str, meta, *, method=True, function=True, doc=None, tags=()):
    """Declare a view op: `meta(self, *args)` gives (shape, stride, offset) or a list of them."""
    schema = parse_schema(schema_text)
    decl = OpDeclaration(schema.name, schema, "view", meta, doc)
    decl.functional = define(schema_text, tags=tags)
    decl.functional.info["decl"] = decl
    decl.functional.register("CompositeExplicitAutograd", _view_kernel(decl))
    decl.functional.register(DispatchKey.ADInplaceOrView, _view_bookkeeping_kernel)
    _export_declaration(decl, method, function)
    return decl


def kernel_op(schema_text: str, *, method=True, function=True, doc=None,
              tags=(), mutates=()):
    """Declare an op whose kernels build their own outputs; register them with `.impl`."""
    schema = parse_schema(schema_text)
    decl = OpDeclaration(schema.name, schema, "kernel", None, doc)
    decl.functional = define(schema_text, tags=tags)
    decl.functional.info.update(decl=decl, mutated=tuple(mutates))
    if mutates:
        decl.functional.register(DispatchKey.ADInplaceOrView, _bump_versions_kernel)
    _export_declaration(decl, method, function)
    return decl


def composite(name=None, *, method=False, function=True):
    """Decorator exporting a function written in other ops (CompositeImplicitAutograd)."""
    def register(fn):
        export(name or fn.__name__, fn, method=method, function=function)
        return fn
    return register


def _export_declaration(decl: OpDeclaration, method, function) -> None:
    schema = decl.schema
    declarations[decl.name] = decl
    decl.exported = (method, function)
    functional = [(c, o.functional, o.out) for c, o in decl.overloads]
    decl.function = generate_wrapper(decl.name, schema, decl.functional, decl.out, doc=decl.doc,
                                     number_self=decl.number_self, overloads=functional)
    if function:
        functions[decl.name] = decl.function
    if method:
        m = generate_wrapper(decl.name, schema, decl.functional, method=True, doc=decl.doc,
                             overloads=functional)
        setattr(Tensor, decl.name, m)
    if decl.inplace is not None and method:
        inplace = [(c, o.inplace, None) for c, o in decl.overloads if o.inplace is not None]
        m = generate_wrapper(decl.name + "_", decl.inplace.schema, decl.inplace, method=True,
                             doc=decl.doc, overloads=inplace)
        setattr(Tensor, decl.name + "_", m)


def spec(shape, dtype, stride=None) -> TensorSpec:
    """A TensorSpec with row-major strides unless given."""
    shape = tuple(shape)
    return TensorSpec(shape, dtype, contiguous_strides(shape) if stride is None else stride)
