"""The machine and software a run measured: CPU, cores, load, versions, thread counts."""
from __future__ import annotations

import datetime
import os
import platform

import numpy as np

from glasstorch import cli
from glasstorch.backends.cpu import linalg, split_gemm


def load_average() -> str:
    try:
        return "/".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:                   # not available on this platform
        return "unknown"


def set_threads(torch, glasstorch, count=None) -> None:
    """Both libraries use `count` threads, by default one per core: the issue's rule for a
    fair comparison."""
    count = count or os.cpu_count() or 1
    torch.set_num_threads(count)
    if hasattr(glasstorch, "set_num_threads"):
        glasstorch.set_num_threads(count)


def busy_warning() -> str:
    """A warning when other jobs hold a core or more: then a library whose threads meet at
    barriers (PyTorch's OpenMP kernels, multithreaded BLAS) waits for descheduled threads,
    and its times, and so the ratios, can be off by several times. On 2 cores a load of
    1.5 is already enough: the likeliest reason why an MLP step measured 0.91x at load 1.5
    (BENCHMARKS.md) and 1.54x on a quiet machine."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return ""
    cores = os.cpu_count() or 1
    if load < max(1.0, cores / 2):
        return ""
    return (f"warning: load average {load:.1f} on {cores} cores: other jobs hold the cores, "
            "so multithreaded kernels wait for their threads; treat the ratios as unreliable "
            "(PyTorch's, with its OpenMP threads, suffer most: glasstorch looks better than "
            "on a quiet machine)")


def threads(torch, glasstorch) -> str:
    ours = (str(glasstorch.get_num_threads()) if hasattr(glasstorch, "get_num_threads")
            else "no set_num_threads yet")
    blas = numpy_blas()
    blas_threads = blas["threads"] if blas["threads"] is not None else cli._blas_threads()
    return (f"torch {torch.get_num_threads()} (interop {torch.get_num_interop_threads()}), "
            f"glasstorch {ours}, NumPy's BLAS {blas_threads}")


def numpy_blas() -> dict:
    """NumPy's OpenBLAS as loaded in this process: the kernel it chose for this CPU (the
    OPENBLAS_CORETYPE variable overrides that choice, and an older kernel on a newer CPU
    can halve glasstorch's matrix products) and its thread count; None where unknown."""
    import ctypes
    info = {"core": None, "threads": None, "coretype_env": os.environ.get("OPENBLAS_CORETYPE")}
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return info
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", "_64_", ""):
                core = getattr(lib, f"{prefix}_get_corename{suffix}", None)
                count = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if core is not None and count is not None:
                    core.restype = ctypes.c_char_p
                    info["core"], info["threads"] = core().decode(), count()
                    return info
    return info


def blas_summary(torch) -> str:
    """Both libraries' BLAS: NumPy's OpenBLAS kernel (and OPENBLAS_CORETYPE if set),
    whether glasstorch's own AVX-512 kernel takes its products, and the BLAS PyTorch was
    built with."""
    blas = numpy_blas()
    ours = cli._blas()
    if blas["core"]:
        ours += f", kernel {blas['core']}"
    if blas["coretype_env"]:
        ours += f" (OPENBLAS_CORETYPE={blas['coretype_env']})"
    config = torch.__config__.show()
    theirs = next((part.split("=", 1)[1] for part in config.replace(",", "\n").split()
                   if part.startswith("BLAS_INFO=")), "unknown")
    capability = next((line.split(":", 1)[1].strip() for line in config.splitlines()
                       if "CPU capability usage" in line), "unknown")
    if split_gemm.own_kernel_available():
        ours += (f"; glasstorch's products from {linalg.OWN_KERNEL_MNK:,} multiply-adds: "
                 "its own AVX-512 kernel")
    return f"NumPy: {ours}; torch: {theirs} (CPU capability {capability})"


def describe(torch, glasstorch) -> dict:
    """Facts about this run known at its start (load at the end is added by the caller)."""
    return {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "cpu": f"{cli._cpu_model()}, {os.cpu_count()} cores",
        "load_start": load_average(),
        "python": platform.python_version(),
        "numpy": f"{np.__version__} (BLAS: {cli._blas()})",
        "torch": torch.__version__,
        "glasstorch": glasstorch.__version__,
        "threads": threads(torch, glasstorch),
        "blas": blas_summary(torch),
    }
