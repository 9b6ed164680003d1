"""Every operator family: its ops declared, then given their derivatives.

Each family package (`pointwise`, `nn`, ...) holds declaration modules, which declare ops
with their meta functions and kernels when imported, and `*derivatives.py` modules, which
attach formulas to those declaration objects. Formulas are written in ops of any family, so
every declaration module is imported first and the derivative modules after; neither step
depends on the order of the modules in it.
"""
from __future__ import annotations

import importlib
import pkgutil

from . import (copying, creation, fft, indexing, linalg, nn, pointwise, random, reduction,
               shape, sorting)

FAMILIES = (copying, creation, fft, indexing, linalg, nn, pointwise, random, reduction, shape,
            sorting)


def _modules(derivatives: bool) -> list:
    return [f"{family.__name__}.{m.name}" for family in FAMILIES
            for m in pkgutil.iter_modules(family.__path__)
            if m.name.endswith("derivatives") == derivatives]


for _name in _modules(derivatives=False) + _modules(derivatives=True):
    importlib.import_module(_name)
