"""What capture logs, and how to turn it on: PyTorch's TORCH_LOGS idea.

`GLASSTORCH_LOGS=graph,guards,recompiles,graph_breaks` (comma-separated) or
`glasstorch._logging.set_logs(graph=True, ...)` sends each artifact to stderr through the
`logging` logger `glasstorch._dynamo.<artifact>`; the inductor backend's `output_code` and
`fusion` are turned on the same ways (compiler/inductor/debug.py writes them). Reasons a function runs eagerly go to
`glasstorch._dynamo` at WARNING level, so they show without any setting.
"""
from __future__ import annotations

import logging
import os
import sys

ARTIFACTS = ("graph", "guards", "recompiles", "graph_breaks", "aot", "output_code", "fusion")
log = logging.getLogger("glasstorch._dynamo")
_handler = None


def artifact_logger(name: str) -> logging.Logger:
    return logging.getLogger(f"glasstorch._dynamo.{name}")


def set_logs(**artifacts) -> None:
    """Turn artifacts on (True) or off (False); one handler on stderr serves them all."""
    global _handler
    unknown = sorted(set(artifacts) - set(ARTIFACTS))
    if unknown:
        raise ValueError(f"set_logs: unknown artifact(s) {unknown}; known: {list(ARTIFACTS)}")
    for name, enabled in artifacts.items():
        artifact_logger(name).setLevel(logging.DEBUG if enabled else logging.NOTSET)
        artifact_logger(name).disabled = not enabled
    if any(artifacts.values()) and _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        log.addHandler(_handler)
        log.setLevel(logging.DEBUG)


def enabled(name: str) -> bool:
    logger = artifact_logger(name)
    return not logger.disabled and logger.isEnabledFor(logging.DEBUG) and \
        logger.level == logging.DEBUG


def _from_environment() -> None:
    for name in ARTIFACTS:
        artifact_logger(name).disabled = True
    wanted = [w.strip() for w in os.environ.get("GLASSTORCH_LOGS", "").split(",") if w.strip()]
    known = [w.lstrip("+") for w in wanted if w.lstrip("+") in ARTIFACTS]
    if known:
        set_logs(**{name: True for name in known})


_from_environment()
