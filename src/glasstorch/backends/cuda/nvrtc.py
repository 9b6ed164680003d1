"""NVRTC: glasstorch's own CUDA C, compiled at run time.

Two ways in. `load()` compiles for the GPU in use through CuPy (`cupy.RawModule`, which
runs NVRTC and loads the result) and caches the module per source, options and device.
`compile_check()` calls libnvrtc directly through ctypes and returns PTX: it needs no GPU,
no driver and no CuPy, so CI can check that every generated kernel compiles. The library
comes from the `nvidia-cuda-nvrtc` wheel (CUDA 13: nvidia/cu13/lib) or its `-cu12`
predecessor (nvidia/cuda_nvrtc/lib), else from $CUDA_HOME/$CUDA_PATH, else from the system.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import importlib.util
import os

from . import runtime

DEFAULT_ARCH = "compute_90"     # H200 (Hopper); PTX for it also JIT-compiles on later GPUs

_COMPILATION_FAILED = 6         # NVRTC_ERROR_COMPILATION


class CompileError(RuntimeError):
    """NVRTC rejected a source; the message carries NVRTC's log (file:line: error ...)."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class CompiledModule:
    """A CuPy module compiled for one device, with its kernels already looked up (CuPy
    compiles lazily; looking every kernel up at load time surfaces errors there)."""

    __slots__ = ("raw", "functions")

    def __init__(self, raw, names):
        self.raw = raw
        self.functions = {name: raw.get_function(name) for name in names}

    def __getitem__(self, name: str):
        return self.functions[name]


_modules: dict = {}             # (source, names, options, device id) -> CompiledModule
runtime.on_reset(_modules.clear)


def load(source: str, names, options=()) -> CompiledModule:
    """Compile `source` for the current device through CuPy (cached) and return its kernels
    `names` (extern "C" function names or C++ name expressions such as "f<float>").
    A kernel `k = load(src, ["k"])["k"]` launches on the current CuPy stream:
    `k(grid, block, args, shared_mem=nbytes)`."""
    cp = runtime.cupy()
    names, options = tuple(names), tuple(options)
    key = (source, names, options, cp.cuda.runtime.getDevice())
    module = _modules.get(key)
    if module is None:
        try:
            raw = cp.RawModule(code=source, options=options, name_expressions=names)
            module = CompiledModule(raw, names)
        except Exception as error:          # cupy.cuda.compiler.CompileException
            if type(error).__name__ != "CompileException":
                raise
            raise CompileError(f"NVRTC could not compile {', '.join(names)}:\n{error}",
                               str(error)) from None
        _modules[key] = module
    return module


def wheel_libraries(roots) -> list:
    """libnvrtc files that NVIDIA's wheels put under `roots` (the `nvidia` namespace
    package's directories), newest CUDA major version first."""
    found = []
    for root in roots:
        for pattern in ("cu[0-9]*/lib/libnvrtc.so.*", "cuda_nvrtc/lib/libnvrtc.so.*"):
            found += [p for p in glob.glob(os.path.join(root, pattern)) if ".alt." not in p]
    return sorted(found, key=lambda p: int(p.rsplit(".so.", 1)[1].split(".")[0]), reverse=True)


def _candidates():
    """Possible libnvrtc files, most preferred first (the system search runs last: it
    starts a subprocess)."""
    spec = importlib.util.find_spec("nvidia")
    yield from wheel_libraries(() if spec is None else spec.submodule_search_locations or ())
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            yield from sorted(glob.glob(os.path.join(os.environ[var], "lib64", "libnvrtc.so*")))
    system = ctypes.util.find_library("nvrtc")
    if system:
        yield system


@functools.lru_cache(maxsize=None)
def library_path() -> str | None:
    """Where libnvrtc was found (None: nowhere)."""
    for path in _candidates():
        try:
            ctypes.CDLL(path)
        except OSError:
            continue
        return path
    return None


def nvrtc_available() -> bool:
    """Whether compile_check can run: a loadable libnvrtc was found."""
    return library_path() is not None


@functools.lru_cache(maxsize=None)
def _library():
    path = library_path()
    if path is None:
        raise RuntimeError("libnvrtc was not found: pip install nvidia-cuda-nvrtc (CUDA 13) "
                           "or nvidia-cuda-nvrtc-cu12, or set CUDA_HOME to a CUDA toolkit")
    lib = ctypes.CDLL(path)
    p, size_p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)
    strings = ctypes.POINTER(ctypes.c_char_p)
    for name, args in (
            ("nvrtcCreateProgram", [ctypes.POINTER(p), ctypes.c_char_p, ctypes.c_char_p,
                                    ctypes.c_int, strings, strings]),
            ("nvrtcCompileProgram", [p, ctypes.c_int, strings]),
            ("nvrtcGetProgramLogSize", [p, size_p]),
            ("nvrtcGetProgramLog", [p, ctypes.c_char_p]),
            ("nvrtcGetPTXSize", [p, size_p]),
            ("nvrtcGetPTX", [p, ctypes.c_char_p]),
            ("nvrtcDestroyProgram", [ctypes.POINTER(p)]),
            ("nvrtcVersion", [ctypes.POINTER(ctypes.c_int)] * 2)):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int
    lib.nvrtcGetErrorString.argtypes, lib.nvrtcGetErrorString.restype = [ctypes.c_int], \
        ctypes.c_char_p
    return lib


def nvrtc_version() -> tuple:
    """(major, minor) of the libnvrtc compile_check uses."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(_library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def _check(status: int, call: str) -> None:
    if status != 0:
        text = _library().nvrtcGetErrorString(status).decode()
        raise RuntimeError(f"{call} failed: {text}")


def _text(program, size_fn, get_fn) -> str:
    size = ctypes.c_size_t()
    _check(size_fn(program, ctypes.byref(size)), size_fn.__name__)
    buffer = ctypes.create_string_buffer(size.value)
    _check(get_fn(program, buffer), get_fn.__name__)
    return buffer.value.decode(errors="replace")


def compile_check(source: str, options=(), *, name: str = "glasstorch.cu") -> str:
    """Compile `source` with libnvrtc and return the PTX; raise CompileError with NVRTC's log
    when it does not compile. Targets `-arch=compute_90` unless `options` name an
    architecture. Needs no GPU, driver or CuPy.

    >>> ptx = compile_check('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }')
    >>> ".entry k" in ptx
    True
    """
    options = tuple(options)
    if not all(isinstance(o, str) for o in options):
        raise TypeError(f"compile_check: options must be strings, got {options!r}")
    if not any(o.startswith(("-arch", "--gpu-architecture")) for o in options):
        options = (f"-arch={DEFAULT_ARCH}",) + options
    lib = _library()
    program = ctypes.c_void_p()
    _check(lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(),
                                  0, None, None), "nvrtcCreateProgram")
    try:
        argv = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
        status = lib.nvrtcCompileProgram(program, len(options), argv)
        if status != 0:
            log = _text(program, lib.nvrtcGetProgramLogSize, lib.nvrtcGetProgramLog).strip()
            what = "compilation failed" if status == _COMPILATION_FAILED else \
                lib.nvrtcGetErrorString(status).decode()
            raise CompileError(f"NVRTC: {what} for {name} (options {' '.join(options)}):\n"
                               f"{log}", log)
        return _text(program, lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))
