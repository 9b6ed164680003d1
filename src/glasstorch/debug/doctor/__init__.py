"""`glasstorch doctor`: runs a PyTorch training script on glasstorch, watches it, and says
what is wrong, where, why and how to fix it.

    $ glasstorch doctor train.py --epochs 2       # the script says `import torch`

    with glasstorch.debug.doctor():                # in a notebook: the same, in-process
        train()

    @glasstorch.debug.doctor()
    def train(): ...

The report ends the run: one verdict line `No problems found.`, or each finding with its
evidence, the user's line, the cause and the fix. A crash is explained by its cause.
"""
from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback
import types

from .aliasing import torch_alias
from .crash import explain
from .diagnose import diagnose
from .report import Finding, format_report
from .watch import Watch


class Doctor(contextlib.ContextDecorator):
    """Within the block `import torch` is glasstorch and the run is watched; on exit the
    report is printed (`print_report=False` keeps it in `.report`) and `.findings` holds it.
    An exception raised in the block is explained, then propagates."""

    def __init__(self, *, print_report: bool = True):
        self.print_report = print_report
        self.findings: list = []
        self.report = ""

    def __enter__(self):
        self._alias = torch_alias().__enter__()
        self._watch = Watch().__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._watch.__exit__(None, None, None)
        self._alias.__exit__(None, None, None)
        findings = []
        errors = self._watch.obs.internal_errors
        if exc is not None and not isinstance(exc, (SystemExit, KeyboardInterrupt)):
            try:
                findings.append(explain(exc, tb, self._watch))
            except Exception as e:
                errors.append(f"explain: {type(e).__name__}: {e}")
        findings.extend(diagnose(self._watch))
        self.findings = findings
        self.report = format_report(findings)
        if self.print_report:
            print(self.report, flush=True)
        if errors:
            print(f"glasstorch doctor: {len(errors)} internal error(s), please report: "
                  f"{errors[0]}", file=sys.stderr)
        return False


def run_script(path: str, args=(), *, print_report: bool = True):
    """Runs the script as `__main__` with `args` as its argv under a Doctor; returns
    (exit status, the Doctor). The traceback of a crash goes to stderr, as Python's."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    doctor = Doctor(print_report=False)
    status = 0
    try:
        with doctor:
            runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception:
        traceback.print_exc()
        status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    if print_report:
        sys.stderr.flush()
        print(doctor.report, flush=True)
    return status, doctor


def main(script: str, args=()) -> int:
    """`glasstorch doctor script [args...]`: the script's exit status."""
    if not os.path.isfile(script):
        print(f"glasstorch doctor: no such script: {script}", file=sys.stderr)
        return 2
    return run_script(script, args)[0]


class _CallableModule(types.ModuleType):
    """`glasstorch.debug.doctor()` must be the Doctor although `glasstorch.debug.doctor`
    is this package: importing a submodule binds the package to that name in its parent."""

    def __call__(self, *, print_report: bool = True) -> Doctor:
        return Doctor(print_report=print_report)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["Doctor", "Finding", "main", "run_script"]
