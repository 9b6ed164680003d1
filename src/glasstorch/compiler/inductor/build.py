"""Building generated C: the system compiler, a disk cache, and ctypes.

A library is keyed by a hash of its source, the compiler's identity (`cc --version`), the
flags and the CPU (the code is built for `-march=native`), and stored as
`<cache>/<key[:2]>/<key>.so` under `$GLASSTORCH_CACHE_DIR` (default
`~/.cache/glasstorch/inductor`). A build writes to a temporary file in the same directory
and renames it into place, so concurrent processes and an interrupted build never leave a
partial library behind; a cached file that does not load is rebuilt.

Flags: `-O3 -march=native -fopenmp -ffp-contract=off -fwrapv -fno-math-errno` (no
`-ffast-math`: the float results must be eager's; integers wrap as eager's do). With the math
functions declared `omp declare simd` the library links libmvec. `-fno-math-errno` changes no
value (kernels never read errno); it lets GCC treat `expf`, `sqrtf`, ... as pure functions, so
a loop that selects before calling one (a masked softmax's `exp`) is still vectorised, and
`sqrtf` is one instruction.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ("-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-fwrapv",
         "-fno-math-errno", "-shared",
         "-fPIC", "-Wl,-z,defs")
LIBS = ("-lm",)

builds = 0          # how many times this process ran the compiler (tests count cache hits)


class BuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    root = os.environ.get("GLASSTORCH_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "glasstorch"
    return base / "inductor"


def compiler() -> str | None:
    """The C compiler's path, or None (no compiler, or GLASSTORCH_INDUCTOR_CPP=0)."""
    if os.environ.get("GLASSTORCH_INDUCTOR_CPP", "1") == "0":
        return None
    return shutil.which(os.environ.get("CC", "cc"))


@functools.lru_cache(maxsize=None)
def _identity(cc: str) -> str:
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    return version + platform.machine() + _cpu_model()


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    return line
    except OSError:
        pass
    return platform.processor()


@functools.lru_cache(maxsize=None)
def vector_math_available() -> bool:
    """Whether libmvec links: a probe library declaring the vector variants builds."""
    from .codegen import PRELUDE, vector_math_declarations
    if os.environ.get("GLASSTORCH_INDUCTOR_VECTOR_MATH", "1") == "0":
        return False
    probe = PRELUDE + vector_math_declarations() + (
        "void probe(const float* restrict a, float* restrict o, long n) {\n"
        "#pragma omp simd\n for (long i = 0; i < n; i++) o[i] = expf(a[i]) + tanhf(a[i]) "
        "+ erff(a[i]) + logf(a[i]);\n}\n")
    try:
        load(probe, extra_libs=("-lmvec",))
        return True
    except BuildError:
        return False


def libs(vector_math: bool) -> tuple:
    return (("-lmvec",) if vector_math else ()) + LIBS


def key_of(source: str, extra_libs=()) -> str:
    cc = compiler()
    text = "\0".join([source, _identity(cc), " ".join(FLAGS + tuple(extra_libs) + LIBS)])
    return hashlib.sha256(text.encode()).hexdigest()


def load(source: str, extra_libs=()) -> ctypes.CDLL:
    """The library built from `source`: from the cache, else compiled into it."""
    global builds
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler")
    key = key_of(source, extra_libs)
    path = cache_dir() / key[:2] / f"{key}.so"
    if path.exists():
        try:
            return ctypes.CDLL(str(path))
        except OSError:               # corrupt or truncated: build it again
            path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as work:
        c_file = Path(work) / "kernels.c"
        c_file.write_text(source)
        out = Path(work) / "kernels.so"
        result = subprocess.run([cc, *FLAGS, str(c_file), "-o", str(out), *extra_libs, *LIBS],
                                capture_output=True, text=True)
        builds += 1
        if result.returncode != 0:
            raise BuildError(f"{cc} failed:\n{result.stderr}")
        os.replace(out, path)         # atomic: readers see all of the library or none
    return ctypes.CDLL(str(path))
