"""Seeing what the compiler did.

`GLASSTORCH_LOGS` is a comma-separated list of topics, as PyTorch's `TORCH_LOGS` (or
`torch._logging.set_logs(output_code=True, fusion=True)`); this backend logs `output_code` (the generated kernels and host code) and `fusion` (the kernels'
nodes, and why a node did not join a kernel) to the `glasstorch.compiler.inductor` logger,
on stderr. `GLASSTORCH_COMPILE_DEBUG=1` writes every artefact of each compile (the graph
before and after decomposition, the IR, the fusion groups, the kernels, the host code) under
`./glasstorch_compile_debug/`.
"""
from __future__ import annotations

import itertools
import logging
import os
import sys
from pathlib import Path

from .. import logs

log = logging.getLogger("glasstorch.compiler.inductor")
_counter = itertools.count()


def enabled(topic: str) -> bool:
    """Whether `topic` is on: in GLASSTORCH_LOGS now, or through torch._logging.set_logs."""
    topics = {t.strip().lstrip("+") for t in os.environ.get("GLASSTORCH_LOGS", "").split(",")}
    return topic in topics or logs.enabled(topic)


def emit(topic: str, text: str) -> None:
    if not enabled(topic):
        return
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    log.info("%s:\n%s", topic, text)


def debug_dir() -> Path | None:
    """A fresh directory for this compile's artefacts, when GLASSTORCH_COMPILE_DEBUG=1."""
    if os.environ.get("GLASSTORCH_COMPILE_DEBUG", "0") in ("", "0"):
        return None
    path = Path.cwd() / "glasstorch_compile_debug" / f"pid{os.getpid()}_graph{next(_counter)}"
    path.mkdir(parents=True, exist_ok=True)
    return path
