"""The machine and software a run measured: CPU, cores, load, versions, thread counts."""
from __future__ import annotations

import datetime
import os
import platform

import numpy as np

from glasstorch import cli


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
    """A warning when other jobs already keep every core busy: then a library whose threads
    meet at barriers (PyTorch's OpenMP kernels, multithreaded BLAS) waits for descheduled
    threads, and its times, and so the ratios, can be off by several times."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return ""
    cores = os.cpu_count() or 1
    if load < cores:
        return ""
    return (f"warning: load average {load:.1f} on {cores} cores: other jobs hold the cores, "
            "so multithreaded kernels wait for their threads; treat the ratios as unreliable")


def threads(torch, glasstorch) -> str:
    ours = (str(glasstorch.get_num_threads()) if hasattr(glasstorch, "get_num_threads")
            else "no set_num_threads yet")
    return (f"torch {torch.get_num_threads()} (interop {torch.get_num_interop_threads()}), "
            f"glasstorch {ours}, BLAS {cli._blas_threads()}")


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
    }
