"""torch.utils.cpp_extension: your own C++ (and CUDA C) kernels, built at run time.

glasstorch has no ATen library and no pybind11, so the contract is its own, shaped so that
the usual tutorial programs build unchanged when they keep to it:

* `#include <torch/extension.h>` (or `torch/torch.h`, `torch/library.h`, `torch/all.h`,
  `ATen/ATen.h`) resolves to the header glasstorch ships (`include_paths()`): a
  `torch::Tensor` view of a glasstorch tensor (`data_ptr<T>()`, `sizes()`, `size(i)`,
  `stride(i)`, `numel()`, `dim()`, `scalar_type()`, `is_contiguous()`, `accessor<T, N>()`,
  `options()`, `contiguous()`, `clone()`), `TORCH_CHECK`, `AT_DISPATCH_FLOATING_TYPES` (and
  `_INTEGRAL_`, `_ALL_`), and the factories `torch::empty/zeros/ones(sizes, options)` and
  `*_like`, which allocate through a callback into glasstorch, so what an extension returns
  is an ordinary glasstorch tensor. Any other ATen call is simply not declared: the build
  fails with the compiler's error at that line.
* Functions are exposed by `PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f); }`
  (the header implements that much of pybind11), which `load_inline(functions=...)` writes
  for you. Argument types: `torch::Tensor`, integers, `double`/`float`, `bool`,
  `std::vector<torch::Tensor>`, `std::vector<int64_t>`; results: those (not the int list),
  `void`, or a `std::tuple` of them. The signature is read from the C++ types when the
  library loads, so nothing is parsed from the source.
* Operators can also be declared in C++ as in PyTorch's custom-operator tutorial:
  `TORCH_LIBRARY(ns, m) { m.def("f(Tensor a, float c) -> Tensor"); }` (or
  `m.def("f", &f)`), `TORCH_LIBRARY_FRAGMENT`, and `TORCH_LIBRARY_IMPL(ns, CPU, m) {
  m.impl("f", &f); }`; glasstorch defines them with `torch.library` when the library loads
  (`load(..., is_python_module=False)` then `torch.ops.ns.f`). Kernels for keys other than
  CPU (and the composite ones) are not registered, with a warning.
* Each function becomes the operator `torch.ops.<name>.<function>` (`torch.library`), with a
  CPU kernel that calls the C++ through ctypes. Autograd (`torch.library.register_autograd`),
  fake kernels (`register_fake`, needed inside `torch.compile`, which records the op as one
  opaque call), dispatch modes and the profiler see it as any other operator. A function
  returning `void` acts by writing its tensor arguments, so its schema marks them mutated.
* A C++ exception becomes a Python exception with its message: RuntimeError
  (`TORCH_CHECK`, `TORCH_INTERNAL_ASSERT`), ValueError, TypeError, IndexError,
  NotImplementedError for the
  `TORCH_CHECK_VALUE/_TYPE/_INDEX/_NOT_IMPLEMENTED` variants.
* The library is built by the system C++ compiler (`$CXX`, default `c++`) with
  `-std=c++17` and `extra_cflags` (no `-O` unless given, as PyTorch) into the inductor's
  disk cache (`glasstorch.compiler.inductor.build`), keyed by the sources, the header, the
  compiler's identity, the CPU and the flags: editing a source rebuilds; an unchanged one
  loads from the cache, across processes.
* `cuda_sources` hold `__global__` kernels, compiled by NVRTC (there is no nvcc, and so no
  `<<<...>>>` host code): at load time they are compiled to PTX when libnvrtc is present,
  so errors show on any machine; each kernel named in `functions` becomes
  `module.kernel(grid, block, args, shared_mem=0)`, launched through CuPy on a GPU, and a
  clear RuntimeError without one.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import types
import warnings
from pathlib import Path

import numpy as np

from .._ops import ops_namespace
from ..backends.cuda import nvrtc, runtime
from ..compiler.inductor import build
from ..core import dtype as _dt
from ..core.device import device as Device
from ..core.tensor import Tensor
from ..dispatch import library
from ..ops.creation import factories

__all__ = ["load_inline", "load", "include_paths"]

INCLUDE_DIR = Path(__file__).resolve().parents[1] / "include"
HEADER = INCLUDE_DIR / "torch" / "extension.h"
# No optimisation flag, as PyTorch: pass extra_cflags=["-O3"] for an optimised build.
FLAGS = ("-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden")

builds = 0          # how many times this process ran the C++ compiler (tests count hits)

_loaded: dict = {}  # extension name -> (build key, module, Library)
_lock = threading.Lock()


def include_paths(device_type: str = "cpu") -> list:
    """The include directories an extension compiles against (the header glasstorch ships)."""
    return [str(INCLUDE_DIR)]


def _cxx() -> str:
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    if cxx is None:
        raise RuntimeError("torch.utils.cpp_extension needs a C++ compiler: none was found "
                           f"as $CXX or 'c++' ({os.environ.get('CXX', 'c++')!r})")
    return cxx


# ---- building -------------------------------------------------------------------------------

def _build(name, files: dict, flags, ldflags, root, verbose) -> Path:
    """The shared library built from `files` ({file name: text}): from the cache, else
    compiled into it. The key covers every input that changes the binary."""
    global builds
    cxx = _cxx()
    text = "\0".join([HEADER.read_text(), build._identity(cxx), " ".join(flags),
                      " ".join(ldflags)] + [f"{k}\0{v}" for k, v in sorted(files.items())])
    key = hashlib.sha256(text.encode()).hexdigest()
    path = root / key[:2] / f"{name}-{key}.so"
    if path.exists():
        if verbose:
            print(f"Loading extension module {name} from {path}...")
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=path.parent) as work:
        sources = []
        for file_name, source in files.items():
            (Path(work) / file_name).write_text(source)
            sources.append(str(Path(work) / file_name))
        out = Path(work) / f"{name}.so"
        command = [cxx, *flags, *sources, "-o", str(out), *ldflags]
        if verbose:
            print(f"Building extension module {name}...\n{' '.join(command)}")
        result = subprocess.run(command, capture_output=True, text=True,
                                env={**os.environ, "LC_ALL": "C"})   # plain ASCII messages
        builds += 1
        if result.returncode != 0:
            raise RuntimeError(f"Error building extension '{name}':\n{result.stderr}")
        os.replace(out, path)         # atomic: readers see all of the library or none
    return path


# ---- the ABI (see the header) ---------------------------------------------------------------

class _TensorDesc(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("sizes", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("dim", ctypes.c_int64),
                ("dtype", ctypes.c_int32), ("device_type", ctypes.c_int32),
                ("device_index", ctypes.c_int32), ("handle", ctypes.c_int64)]


_INT64_P = ctypes.POINTER(ctypes.c_int64)
_MESSAGE_SIZE = 4096                # room for an exception's message


class _List(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("items", ctypes.c_void_p)]


_ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                          ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_int32,
                          ctypes.POINTER(_TensorDesc))
_METHOD = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_int64,
                           ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(_TensorDesc))
_EMIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64,
                         ctypes.c_double)

_KIND_TENSOR, _KIND_INT, _KIND_DOUBLE, _KIND_BOOL, _KIND_LIST, _KIND_TUPLE, _KIND_NONE = range(7)
_ERRORS = (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError)
_METHODS = ("contiguous", "clone", "zero_")       # what Tensor::method may run


# glasstorch dtype <-> c10::ScalarType's number (the header's at::ScalarType)
_CODE_OF = {_dt.uint8: 0, _dt.int8: 1, _dt.int16: 2, _dt.int32: 3, _dt.int64: 4, _dt.float16: 5,
            _dt.float32: 6, _dt.float64: 7, _dt.bool: 11, _dt.bfloat16: 15}
_DTYPE_OF = {code: dtype for dtype, code in _CODE_OF.items()}


class _Call:
    """The tensors one extension call can name by handle (its arguments and everything it
    allocates), kept alive until the call returns, with the ctypes arrays behind them."""

    def __init__(self):
        self.tensors: list = []
        self.keep: list = []
        self.values: list = []        # the emitted result stream
        self.error: BaseException | None = None

    def describe(self, tensor, desc: _TensorDesc) -> None:
        code = _CODE_OF.get(tensor.dtype)
        if code is None:
            raise TypeError(f"a C++ extension cannot take a {tensor.dtype} tensor")
        shape, dim = tensor._shape, len(tensor._shape)
        geometry = (ctypes.c_int64 * (2 * dim or 1))(*shape, *tensor._stride)
        self.keep.append(geometry)
        address = ctypes.addressof(geometry)
        desc.data = tensor.data_ptr() or None
        desc.sizes = ctypes.cast(address, _INT64_P)
        desc.strides = ctypes.cast(address + 8 * dim, _INT64_P)
        desc.dim, desc.dtype = dim, code
        device = tensor.device
        desc.device_type = 1 if device.type == "cuda" else 0
        desc.device_index = -1 if device.index is None else device.index
        desc.handle = len(self.tensors)
        self.tensors.append(tensor)


class _CallStack(threading.local):
    def __init__(self):
        self.calls: list = []


_stack = _CallStack()


def _guarded(fn):
    """A callback from C++: a Python error is kept for the caller and reported as 1."""
    def callback(*args):
        if not _stack.calls:        # a thread the extension started: no call to serve
            return 1
        call = _stack.calls[-1]
        try:
            fn(call, *args)
            return 0
        except BaseException as error:     # raised by _Function.__call__ once the C++ unwound
            call.error = error
            return 1
    return callback


def _alloc(call, dtype, device_type, device_index, dim, sizes, fill, out):
    shape = [sizes[i] for i in range(dim)]
    dtype_ = _DTYPE_OF[dtype]
    device = Device("cuda", None if device_index < 0 else device_index) if device_type == 1 \
        else Device("cpu")
    factory = (factories.empty, factories.zeros, factories.ones)[fill]
    call.describe(factory(shape, dtype=dtype_, device=device), out.contents)


def _method(call, op, nargs, handles, out):
    name = op.decode()
    if name not in _METHODS:
        raise NotImplementedError(f"torch::Tensor::{name} is not available in extensions")
    tensors = [call.tensors[handles[i]] for i in range(nargs)]
    call.describe(getattr(tensors[0], name)(*tensors[1:]), out.contents)


def _emit(sink, kind, i, d):
    _stack.calls[-1].values.append((kind, i, d))


_CALLBACKS = (_ALLOC(_guarded(_alloc)), _METHOD(_guarded(_method)), _EMIT(_emit))


def _decode(call: _Call):
    values = iter(call.values)

    def one():
        kind, i, d = next(values)
        if kind == _KIND_TENSOR:
            return call.tensors[i]
        if kind in (_KIND_INT, _KIND_BOOL):
            return bool(i) if kind == _KIND_BOOL else i
        if kind == _KIND_DOUBLE:
            return d
        if kind == _KIND_NONE:
            return None
        items = [one() for _ in range(i)]
        return items if kind == _KIND_LIST else tuple(items)
    return one()


# ---- one C++ function -----------------------------------------------------------------------

_MODULE_FUNCTION, _KERNEL_ONLY, _SCHEMA_ONLY, _SCHEMA_AND_KERNEL = range(4)   # entry kinds
_CPU_KEYS = ("CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd", "CatchAll")


class _Function:
    """An entry of the extension's table (see the header): a PYBIND11_MODULE function or a
    TORCH_LIBRARY definition or kernel, with its schema, argument packing and the call."""

    def __init__(self, lib: ctypes.CDLL, index: int, ext_name: str):
        field = lambda k: lib.gt_table_entry(index, k).decode()   # noqa: E731
        self.lib, self.index, self.ext_name = lib, index, ext_name
        self.name, self.doc = field(0), field(2)
        self.ns, self.declared_schema, self.key, self.kind = field(5), field(6), field(7), \
            int(field(8))
        if self.kind == _SCHEMA_ONLY:
            self.arg_types, self.arg_names, self.defaults, self.returns = [], [], [], ""
            return
        arg_text, self.returns = field(1).split("->")
        self.arg_types = arg_text.split(",") if arg_text else []
        names = field(3).split(",") if field(3) else []
        if names and len(names) != len(self.arg_types):
            raise RuntimeError(f"{ext_name}.{self.name}: {len(names)} py::arg names for "
                               f"{len(self.arg_types)} arguments")
        self.arg_names = names or [f"arg{i}" for i in range(len(self.arg_types))]
        self.defaults = field(4).split("\x1f") if names else []

    def schema(self) -> str:
        void = self.returns == ""
        args = []
        for i, (t, n) in enumerate(zip(self.arg_types, self.arg_names)):
            if void and t == "Tensor":
                t = f"Tensor({chr(ord('a') + i)}!)"      # a void function writes its tensors
            d = self.defaults[i] if i < len(self.defaults) else ""
            args.append(f"{t} {n}" + (f"={d}" if d else ""))
        return f"{self.name}({', '.join(args)}) -> {self.returns or '()'}"

    def bind(self, args, kwargs) -> tuple:
        """Positional arguments from a call: keywords by py::arg name, then defaults."""
        if not kwargs and len(args) == len(self.arg_types):
            return args
        given = list(args)
        for i in range(len(args), len(self.arg_types)):
            name, default = self.arg_names[i], self.defaults[i] if self.defaults else ""
            if name in kwargs:
                given.append(kwargs.pop(name))
            elif default:
                kind = self.arg_types[i]
                given.append(default == "True" if kind == "bool" else
                             int(default) if kind == "int" else float(default))
            else:
                break
        if kwargs:
            raise TypeError(f"{self.name}(): unexpected keyword arguments {sorted(kwargs)}")
        return tuple(given)

    def check(self, args) -> None:
        """pybind11's argument check: the same TypeError for a call that cannot bind."""
        ok = {"Tensor": lambda v: isinstance(v, Tensor),
              "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "bool": lambda v: isinstance(v, bool),
              "Tensor[]": lambda v: isinstance(v, (list, tuple)) and
              all(isinstance(t, Tensor) for t in v),
              "int[]": lambda v: isinstance(v, (list, tuple)) and
              all(isinstance(i, int) for i in v)}
        if len(args) == len(self.arg_types) and all(ok[t](a) for t, a in
                                                    zip(self.arg_types, args)):
            return
        py = {"Tensor": "torch.Tensor", "int": "int", "float": "float", "bool": "bool",
              "Tensor[]": "list[torch.Tensor]", "int[]": "list[int]"}
        signature = ", ".join(f"{n}: {py[t]}" for n, t in zip(self.arg_names, self.arg_types))
        got = ", ".join(type(a).__name__ for a in args)
        returns = py.get(self.returns, self.returns) or "None"
        raise TypeError(f"{self.name}(): incompatible function arguments. The following "
                        f"argument types are supported:\n    1. ({signature}) -> {returns}"
                        f"\n\nInvoked with types: {got}")

    def __call__(self, *args):
        call = _Call()
        packed = []
        for t, value in zip(self.arg_types, args):
            if t == "Tensor":
                if value.device.type != "cpu":
                    raise RuntimeError(f"{self.ext_name}.{self.name}: C++ extension functions "
                                       f"run on the CPU; got a tensor on {value.device}")
                item = _TensorDesc()
                call.describe(value, item)
            elif t == "int":
                item = ctypes.c_int64(value)
            elif t == "float":
                item = ctypes.c_double(value)
            elif t == "bool":
                item = ctypes.c_uint8(bool(value))
            elif t == "Tensor[]":
                items = (_TensorDesc * max(len(value), 1))()
                for k, tensor in enumerate(value):
                    call.describe(tensor, items[k])
                call.keep.append(items)
                item = _List(len(value), ctypes.cast(items, ctypes.c_void_p))
            else:                                         # int[]
                items = (ctypes.c_int64 * max(len(value), 1))(*value)
                call.keep.append(items)
                item = _List(len(value), ctypes.cast(items, ctypes.c_void_p))
            packed.append(item)
        argv = (ctypes.c_void_p * (len(packed) or 1))(*map(ctypes.addressof, packed))
        kind, message = ctypes.c_int32(0), ctypes.create_string_buffer(_MESSAGE_SIZE)
        _stack.calls.append(call)
        try:
            failed = self.lib.gt_table_call(self.index, argv, _CALLBACKS[2], None,
                                             ctypes.byref(kind), message, len(message))
        finally:
            _stack.calls.pop()
        if failed:
            if call.error is not None:
                raise call.error
            raise _ERRORS[kind.value if 0 <= kind.value < len(_ERRORS) else 0](
                message.value.decode(errors="replace"))
        return _decode(call)


def _load_library(path: Path, name: str) -> list:
    """The entries of the library's table (its registration blocks ran when it loaded)."""
    lib = ctypes.CDLL(str(path))
    lib.gt_table_init.restype = ctypes.c_int64
    lib.gt_table_init.argtypes = [_ALLOC, _METHOD]
    lib.gt_table_entry.restype = ctypes.c_char_p
    lib.gt_table_entry.argtypes = [ctypes.c_int64, ctypes.c_int32]
    lib.gt_table_call.restype = ctypes.c_int
    lib.gt_table_call.argtypes = [ctypes.c_int64, ctypes.c_void_p, _EMIT, ctypes.c_void_p,
                                  ctypes.POINTER(ctypes.c_int32), ctypes.c_char_p,
                                  ctypes.c_int64]
    count = lib.gt_table_init(_CALLBACKS[0], _CALLBACKS[1])
    return [_Function(lib, i, name) for i in range(count)]


# ---- CUDA kernels through NVRTC -------------------------------------------------------------

_KERNEL = re.compile(r'(extern\s+"C"\s+)?__global__\s+void\s+(\w+)\s*\(([^)]*)\)')
_SCALAR_ARGS = {"int": "int32", "unsigned": "uint32", "unsigned int": "uint32",
                "long": "int64", "long long": "int64", "int64_t": "int64", "size_t": "uint64",
                "float": "float32", "double": "float64", "bool": "bool", "int32_t": "int32",
                "uint32_t": "uint32"}


class _CudaKernel:
    """A `__global__` kernel of cuda_sources: `kernel(grid, block, args, shared_mem=0)`,
    with tensors passed as device pointers and scalars as the parameter's C type."""

    def __init__(self, source: str, name: str, params: str, options):
        self.source, self.__name__, self.options = source, name, tuple(options)
        self.param_types = []
        for param in filter(None, (p.strip() for p in params.split(","))):
            declared = re.sub(r"\b(const|__restrict__|restrict|volatile)\b", "", param)
            if "*" in declared:
                self.param_types.append("pointer")
                continue
            type_name = " ".join(declared.split()[:-1])
            if type_name not in _SCALAR_ARGS:
                raise RuntimeError(f"kernel {name}: parameter '{param}' has a type "
                                   f"glasstorch cannot pass (pointers or {list(_SCALAR_ARGS)})")
            self.param_types.append(_SCALAR_ARGS[type_name])

    def __call__(self, grid, block, args, shared_mem=0):
        if not runtime.is_available():
            raise RuntimeError(f"{self.__name__}: launching a CUDA kernel needs an NVIDIA GPU "
                               "and CuPy, and this machine has neither")
        if len(args) != len(self.param_types):
            raise TypeError(f"{self.__name__} takes {len(self.param_types)} arguments, "
                            f"got {len(args)}")
        values = []
        for kind, value in zip(self.param_types, args):
            if kind == "pointer":
                if not getattr(value, "is_cuda", False):
                    raise ValueError(f"{self.__name__}: a pointer argument must be a CUDA "
                                     f"tensor, got {type(value).__name__}")
                values.append(np.uintp(value.data_ptr()))
            else:
                values.append(np.dtype(kind).type(value))
        kernel = nvrtc.load(self.source, [self.__name__], self.options)[self.__name__]
        kernel(tuple(grid) if isinstance(grid, (tuple, list)) else (grid,),
               tuple(block) if isinstance(block, (tuple, list)) else (block,),
               tuple(values), shared_mem=shared_mem)


def _cuda_kernels(name, cuda_source: str, functions, options) -> dict:
    """Compile cuda_sources with NVRTC where it is present (so errors show here) and return
    the kernels named in `functions`."""
    found = {m.group(2): m.group(3) for m in _KERNEL.finditer(cuda_source)}
    for m in _KERNEL.finditer(cuda_source):
        if m.group(2) in functions and not m.group(1):
            raise RuntimeError(f"extension {name}: declare the kernel {m.group(2)} "
                               'extern "C" __global__, so that it can be found by its name')
    if nvrtc.nvrtc_available():
        try:
            nvrtc.compile_check(cuda_source, options, name=f"{name}.cu")
        except nvrtc.CompileError as error:
            raise RuntimeError(f"Error building extension '{name}':\n{error}") from None
    return {f: _CudaKernel(cuda_source, f, found[f], options) for f in functions if f in found}


# ---- the public functions -------------------------------------------------------------------

def _function_table(functions) -> str:
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, dict):
        items = functions.items()
    else:
        items = ((f, f) for f in functions)
    defs = "".join(f'  m.def("{f}", torch::wrap_pybind_function({f}), "{doc}");\n'
                   for f, doc in items)
    return f"\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n{defs}}}\n"


def _check_name(name) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"an extension's name must be a Python identifier (it names the "
                         f"module and the operator namespace), got {name!r}")


def _make_module(name, key: str, entries, kernels: dict, verbose):
    """Register the table's operators and return the module (the same module again for the
    same build key; a new build replaces the previous one's operators)."""
    with _lock:
        if name in _loaded:
            previous_key, module, libraries = _loaded[name]
            if previous_key == key:
                return module
            for lib in libraries:
                lib._destroy()
            del _loaded[name]
        module = types.ModuleType(name, f"glasstorch C++ extension {name} ({key})")
        module.__file__ = key
        libraries: dict = {}
        try:
            _register(name, entries, module, libraries)
        except BaseException:
            for lib in libraries.values():
                lib._destroy()
            raise
        for kernel_name, kernel in kernels.items():
            setattr(module, kernel_name, kernel)
        _loaded[name] = (key, module, list(libraries.values()))
        if verbose:
            print(f"Loaded extension module {name}: {[f.name for f in entries if f.name]}")
        return module


def _register(name, entries, module, libraries: dict) -> None:
    """TORCH_LIBRARY definitions, then their kernels, then the PYBIND11_MODULE functions as
    operators `name::f` and attributes of the module."""
    def library_for(ns, kind):
        if (ns, kind) not in libraries:
            libraries[ns, kind] = library.Library(ns, kind)
        return libraries[ns, kind]

    for fn in entries:
        if fn.kind in (_SCHEMA_ONLY, _SCHEMA_AND_KERNEL):
            lib = library_for(fn.ns, "DEF" if fn.key == "DEF" else "FRAGMENT")
            lib.define(fn.declared_schema or fn.schema())
            if fn.kind == _SCHEMA_AND_KERNEL:
                lib.impl(fn.name, fn, "CPU")
    for fn in entries:
        if fn.kind != _KERNEL_ONLY:
            continue
        if fn.key not in _CPU_KEYS:
            warnings.warn(f"extension {name}: glasstorch runs C++ kernels on CPU tensors only; "
                          f"the {fn.key} kernel of {fn.ns}::{fn.name} is not registered")
            continue
        library_for(fn.ns, "IMPL").impl(fn.name, fn, "CPU")
    functions = [fn for fn in entries if fn.kind == _MODULE_FUNCTION]
    if functions:
        lib = libraries.get((name, "DEF")) or library_for(name, "DEF")
        for fn in functions:
            lib.define(fn.schema())
            lib.impl(fn.name, fn, "CPU")
            setattr(module, fn.name, _entry_point(name, fn))


def _entry_point(ns, fn: _Function):
    op = getattr(ops_namespace(ns), fn.name)
    takes_tensors = any(t.startswith("Tensor") for t in fn.arg_types)

    def entry(*args, **kwargs):
        args = fn.bind(args, kwargs)
        fn.check(args)
        if not takes_tensors:             # the dispatcher picks a kernel by its tensors
            return fn(*args)
        return op(*args)         # a gradient from register_autograd is the op's own kernel
    entry.__name__ = entry.__qualname__ = fn.name
    entry.__doc__ = f"{fn.name}{fn.schema()[len(fn.name):]}\n\n{fn.doc}".rstrip()
    return entry


def _flags(name, extra_cflags, extra_include_paths):
    includes = [f"-I{p}" for p in include_paths() + list(extra_include_paths or ())]
    return (*FLAGS, f"-DTORCH_EXTENSION_NAME={name}", *includes, *(extra_cflags or ()))


def _extension(name, files: dict, cuda_source: str, kernels: dict, flags, ldflags,
               build_directory, verbose):
    """Build the C++ files (none: a module of CUDA kernels only) and make the module."""
    if not files:
        key = "cuda:" + hashlib.sha256(cuda_source.encode()).hexdigest()
        return _make_module(name, key, [], kernels, verbose)
    root = Path(build_directory) if build_directory else build.cache_dir()
    path = _build(name, files, flags, tuple(ldflags or ()), root, verbose)
    return _make_module(name, str(path), _load_library(path, name), kernels, verbose)


def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
                build_directory=None, verbose=False, with_cuda=None, is_python_module=True,
                with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False,
                no_implicit_headers=False):
    """Build an extension from C++ source strings (and CUDA kernels in cuda_sources) and
    return it as a module whose attributes are `functions` (a list of names, or a dict of
    name -> docstring). See this module's docstring for the contract."""
    _check_name(name)
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    if isinstance(cuda_sources, str):
        cuda_sources = [cuda_sources]
    cuda_source = "\n".join(cuda_sources or ())
    functions = [] if functions is None else \
        [functions] if isinstance(functions, str) else list(functions)
    kernels = _cuda_kernels(name, cuda_source, functions, extra_cuda_cflags or ()) \
        if cuda_source else {}
    cpp_functions = [f for f in functions if f not in kernels]
    files = {}
    if cpp_functions or "".join(cpp_sources).strip() or not cuda_source:
        header = "" if no_implicit_headers else "#include <torch/extension.h>\n"
        main = header + "\n".join(cpp_sources)
        if cpp_functions:
            main += _function_table(cpp_functions)
        files["main.cpp"] = main
    module = _extension(name, files, cuda_source, kernels,
                        _flags(name, extra_cflags, extra_include_paths), extra_ldflags,
                        build_directory, verbose)
    return module if is_python_module else None


def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
         extra_include_paths=None, build_directory=None, verbose=False, with_cuda=None,
         is_python_module=True, is_standalone=False, keep_intermediates=True):
    """Build an extension from source files (C++ files, and `.cu` files of CUDA kernels) and
    return it as a module. One C++ file must hold the `PYBIND11_MODULE` block."""
    _check_name(name)
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    files, cuda = {}, []
    for i, source in enumerate(map(Path, sources)):
        if not source.is_file():
            raise FileNotFoundError(f"extension {name}: no source file {source}")
        if source.suffix == ".cu":
            cuda.append(source.read_text())
        else:
            files[f"{i}_{source.name}"] = source.read_text()
    cuda_source = "\n".join(cuda)
    exported = [m.group(2) for m in _KERNEL.finditer(cuda_source) if m.group(1)]
    kernels = _cuda_kernels(name, cuda_source, exported, extra_cuda_cflags or ()) \
        if cuda_source else {}
    module = _extension(name, files, cuda_source, kernels,
                        _flags(name, extra_cflags, extra_include_paths), extra_ldflags,
                        build_directory, verbose)
    return module if is_python_module else None

