"""Operator declarations: one per op, from which every variant is generated.

`structured(schema, meta)` declares an op whose outputs a meta function can describe from
input metadata; its kernels only fill a preallocated output, so the functional, in-place
and `out=` variants and the Meta backend all come from the one declaration (PyTorch's
structured kernels). `view(schema, meta)` declares a view op: it returns new metadata over
the same storage on every backend. `kernel_op(schema)` declares an op whose kernels make
their own outputs (data-dependent shapes, factories). `composite(fn)` exports a function
written in other ops, which dispatch themselves.

Each declaration generates a Python function with a real signature (the public
`glasstorch.<name>`, ops/wrappers.py), a Tensor method, and dispatcher `Operator`s with their
kernels; mutating and view variants get the ADInplaceOrView kernels (ops/inplace_or_view.py).
The derivative is declared on the same object (ops/derivative.py).
"""
from __future__ import annotations

import os
import sys
import warnings
from collections import namedtuple
from math import prod

from ..core import dtype as dt
from ..core.device import CPU, META
from ..core.grad_state import inference_anywhere, state as grad_state
from ..core.shape import (_strides_cache as _STRIDES, check_no_partial_overlap,
                          contiguous_strides, has_internal_overlap)
from ..core.tensor import Tensor, make_alias, new_cpu_tensor
from ..dispatch.dispatcher import Operator, define
from ..dispatch.keys import DispatchKey
from ..dispatch.schema import parse_schema
from .inplace_or_view import bump_versions_kernel, view_bookkeeping_kernel
from .wrappers import generate_wrapper, public

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
        self.fills_expanded = False  # in place on an expanded self: a deprecation warning, as
        #                              PyTorch's masked_fill_/index_fill_, not an error
        self.check_out = None        # (spec, out, *args): op-specific out= dtype errors
        self.out_meta = None         # (out, *args) -> spec: meta of the out= variant
        self.on_cuda = None          # "shared" (the array kernel runs on CuPy too), "host"
        #                              (runs on the CPU, copies), None: by kind (ops/gpu_kernels)
        self.overloads = []          # (condition text, OpDeclaration): see `overload`
        self.exported = (False, False)   # (as a method, as a function)
        self.cpu_fast_path = None    # general CPU kernel -> kernel: see `fast_path`
        self.tensor_args = ()        # arguments that take a Tensor only (not a number)

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
                kernel = _functional_kernel(self, fn, backend)
                if backend == "CPU" and self.cpu_fast_path is not None:
                    kernel = self.cpu_fast_path(kernel)
                self.functional.register(key, kernel)
                if self.inplace is not None:
                    self.inplace.register(key, _inplace_kernel(self, fn))
                if self.out is not None:
                    self.out.register(key, _out_kernel(self, fn))
            else:
                self.functional.register(key, fn)
            return fn
        return register

    def fast_path(self, make) -> None:
        """Put a fast path in front of this op's functional CPU kernel: `make(general)`
        returns a kernel that computes the calls it recognises itself (small tensors of
        class Tensor, float32 or float64: where the meta function and the general kernel's
        checks and promotion are most of a call's cost) and hands every other call to
        `general`. Its results must be `general`'s, bit for bit. Dispatch is unchanged: a
        mode, autocast or a kernel registered above CPU still sees every call."""
        if self.kind != "structured":
            raise ValueError(f"{self.name}: a fast path goes in front of a structured op's "
                             "functional kernel")
        self.cpu_fast_path = make
        if "CPU" in self.impls:
            self.impl("CPU")(self.impls["CPU"])

    def plain_float_ufunc(self, ufunc, *defaults, result_dtype=None) -> None:
        """Say that on two float32 (or float64) tensors of one row-major shape, or such a
        tensor and a Python int or float, with the other arguments at `defaults`, this op's
        CPU kernel computes exactly `ufunc(a, b, out=o)` into an output of their dtype, or
        of `result_dtype` (bool, for a comparison) (a `fast_path`)."""
        if self.kind != "structured" or len(self.schema.arguments) != 2 + len(defaults) \
                or len(defaults) > 1:
            raise ValueError(f"{self.name}: a plain ufunc needs a structured op of two "
                             f"operands and at most one other argument, {len(defaults)} given")
        self.fast_path(lambda general: _plain_float_kernel(general, ufunc, defaults,
                                                           result_dtype))

    def __repr__(self):
        return f"<OpDeclaration {self.name} ({self.kind})>"


def operator_of(target) -> Operator:
    """The dispatcher operator a declaration (its functional form) or an operator stands for:
    what facets declared beside an op (a derivative, an autocast policy) attach to."""
    if isinstance(target, Operator):
        return target
    if isinstance(target, OpDeclaration):
        return target.functional
    raise TypeError(f"expected an op declaration or an Operator, not {type(target).__name__}")


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


PLAIN_FLOATS = (dt.float32, dt.float64)   # the dtypes fast paths take (`OpDeclaration.fast_path`)


def _trailing_row_major(t: Tensor, shape: tuple) -> bool:
    """Whether `t` is row-major with fewer dims than `shape`, its shape the trailing ones:
    broadcast against a row-major tensor of `shape`, an output row-major too."""
    k = len(t._shape)
    return k < len(shape) and shape[len(shape) - k:] == t._shape and \
        t._stride == contiguous_strides(t._shape)


def _plain_float_kernel(general, ufunc, defaults, result_dtype):
    """A functional CPU kernel that runs `ufunc` directly on the calls
    `OpDeclaration.plain_float_ufunc` describes, and `general` on every other call."""
    from ..backends.cpu.parallel import GRAIN      # larger outputs are split across threads
    empty = Tensor._empty
    (default,) = defaults or (None,)      # at most one (plain_float_ufunc checks)
    default_type = type(default)

    def kernel(self, other, *rest):
        if rest and (rest[0].__class__ is not default_type or rest[0] != default):
            return general(self, other, *rest)
        if self.__class__ is Tensor and self.dtype in PLAIN_FLOATS:
            d = self.dtype
            shape, stride = self._shape, self._stride
            row_major = _STRIDES.get(shape)       # None: a shape no output has had yet
            # self row-major, or one value expanded (a sum's or mean's gradient); other
            # row-major or a number, of self's shape or (self row-major) of its trailing
            # dims (a position embedding added to a batch); the output row-major
            if row_major is not None and (stride == row_major or (shape and not any(stride))) \
                    and (n := prod(shape)) < GRAIN:
                if other.__class__ is Tensor:
                    if other.dtype is not d or (
                            (other._shape != shape or other._stride != row_major)
                            and not (stride == row_major and _trailing_row_major(other, shape))):
                        return general(self, other, *rest)
                    b = other._np if other._np is not None else other._array()
                elif other.__class__ is float or other.__class__ is int:
                    b = d.np.type(other)
                else:
                    return general(self, other, *rest)
                rd = result_dtype or d
                out = (empty(shape, rd, CPU, row_major)
                       if inference_anywhere.blocks and grad_state.inference else
                       new_cpu_tensor(shape, rd, row_major, n * rd.itemsize, True))
                ufunc(self._np if self._np is not None else self._array(), b,
                      out=out._np if out._np is not None else out._array())
                return out
        return general(self, other, *rest)
    kernel.__qualname__ = general.__qualname__
    kernel.__module__ = general.__module__
    return kernel


def _meta_functional_kernel(decl):
    meta = decl.meta

    def kernel(*args):
        return _allocate(meta(*args), META)
    return kernel


def check_inplace_write(decl, self, spec, rest=()):
    """Refuse writing a result described by `spec` into `self` in place: a shape or dtype it
    cannot hold, overlapping memory, or an op-specific condition."""
    if decl.check_inplace is not None:
        decl.check_inplace(spec, self, *rest)
    if has_internal_overlap(self._shape, self._stride):     # checked first, as TensorIterator
        if decl.fills_expanded:
            warn_user(f"Use of {decl.name}_ on expanded tensors is deprecated. Please clone() "
                      "the tensor before performing this operation. This also applies to "
                      "advanced indexing e.g. tensor[mask] = scalar")
        else:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.")
    check_no_partial_overlap(self, rest)   # then shapes and dtypes, as TensorIterator
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
        check_inplace_write(decl, self, meta(self, *rest), rest)
        impl(self, self, *rest)
        return self
    kernel.__qualname__ = f"{impl.__qualname__} (in-place)"
    kernel.__module__ = impl.__module__
    return kernel


def _meta_inplace_kernel(decl):
    meta = decl.meta

    def kernel(self, *rest):
        check_inplace_write(decl, self, meta(self, *rest), rest)
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
    pointwise = "pointwise" in decl.functional.tags and isinstance(out, Tensor)
    if pointwise and out._shape != spec.shape and any(x is out for x in inputs):
        # an out= that is also read is never resized (TensorIterator's read-write operand)
        raise RuntimeError(f"output with shape {list(out._shape)} doesn't match the "
                           f"broadcast shape {list(spec.shape)}")
    if pointwise:                   # before the resize, as TensorIterator: a refusal keeps out
        if has_internal_overlap(out._shape, out._stride):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before "
                "performing the operation.")
        check_no_partial_overlap(out, inputs)
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


# ---- view kernels ----------------------------------------------------------------------

def _view_kernel(decl):
    meta = decl.meta

    def kernel(self, *args):
        m = meta(self, *args)
        if isinstance(m, list):
            return [make_alias(self, *x) for x in m]
        return make_alias(self, *m)
    kernel.__qualname__ = f"{meta.__qualname__} (view)"
    kernel.__module__ = meta.__module__
    kernel.view_meta = meta      # what it runs: autograd's fused view path runs it itself
    return kernel


def export(name: str, fn, *, method: bool | str = False, function: bool = True) -> None:
    """Make `fn` public as glasstorch.<name> and/or as a Tensor method."""
    if function:
        functions[name] = public(fn, name, False)
    if method:
        method_name = name if method is True else method
        setattr(Tensor, method_name, public(fn, method_name, True))


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
               check_out=None, out_meta=None, tensor_args=()):
    """Declare a structured op (see the module docstring). Returns its OpDeclaration.

    Op-specific checks: `check_inplace(spec, self, *args)` runs before the in-place shape
    check, `check_out(spec, out, *args)` before an out= tensor is resized, and
    `out_meta(out, *args)` replaces `meta` for out= calls whose checks involve `out`.
    `tensor_args`: Tensor arguments no overload lets a number stand for (PyTorch's argument
    parser refuses one before anything else runs).
    """
    schema = parse_schema(schema_text)
    name = schema.name
    decl = OpDeclaration(name, schema, "structured", meta, doc, promotes)
    decl.number_self = number_self
    decl.check_inplace, decl.check_out, decl.out_meta = check_inplace, check_out, out_meta
    decl.tensor_args = tuple(tensor_args)
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
        decl.inplace.register(DispatchKey.ADInplaceOrView, bump_versions_kernel)
    if out:
        decl.out = define(_variant_schema(schema_text, name, False, True), tags=tags)
        decl.out.info.update(decl=decl, mutated=(len(decl.schema.arguments),), out=True)
        decl.out.register(DispatchKey.Meta, _meta_out_kernel(decl))
        decl.out.register(DispatchKey.ADInplaceOrView, bump_versions_kernel)


def overload(decl: OpDeclaration, schema_text: str, meta, kernel, *, when: str | None,
             inplace=None, out=None) -> OpDeclaration:
    """Declare another overload of `decl`'s op, which `decl`'s public function and methods
    dispatch to when the condition `when` holds (text over `decl`'s argument names in
    braces: `"{other}.__class__ in _SCALARS"`), as PyTorch's argument parser picks an
    overload by the arguments' types; with `when=None` the public function never picks it
    (it is there for code that names it, `torch.ops.aten.add.Scalar`, as PyTorch's C++ does). `meta` and the CPU `kernel` take the overload's own
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
    decl.functional.register(DispatchKey.ADInplaceOrView, view_bookkeeping_kernel)
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
        decl.functional.register(DispatchKey.ADInplaceOrView, bump_versions_kernel)
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
    functional = [(c, o.functional, o.out) for c, o in decl.overloads if c is not None]
    tensor_args = decl.tensor_args
    decl.function = generate_wrapper(decl.name, schema, decl.functional, decl.out, doc=decl.doc,
                                     number_self=decl.number_self, overloads=functional,
                                     tensor_args=tensor_args)
    if function:
        functions[decl.name] = decl.function
    if method:
        m = generate_wrapper(decl.name, schema, decl.functional, method=True, doc=decl.doc,
                             overloads=functional, tensor_args=tensor_args)
        setattr(Tensor, decl.name, m)
    if decl.inplace is not None and method:
        inplace = [(c, o.inplace, None) for c, o in decl.overloads
                   if c is not None and o.inplace is not None]
        m = generate_wrapper(decl.name + "_", decl.inplace.schema, decl.inplace, method=True,
                             doc=decl.doc, overloads=inplace, tensor_args=tensor_args)
        setattr(Tensor, decl.name + "_", m)


def require_tensor(fname, argname, position, value):
    """PyTorch's TypeError for an argument that must be a Tensor."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {position}) must be Tensor, "
                        f"not {type(value).__name__}")


def into_out(out, result: Tensor) -> Tensor:
    """The out= form of a composite: resize `out` to the result and copy it in."""
    if out is None:
        return result
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got "
                           f"{out.dtype} instead")
    if out._shape != result._shape:
        resize_output(out, result._shape)
    return out.copy_(result)


def spec(shape, dtype, stride=None) -> TensorSpec:
    """A TensorSpec with row-major strides unless given."""
    shape = tuple(shape)
    return TensorSpec(shape, dtype, contiguous_strides(shape) if stride is None else stride)
