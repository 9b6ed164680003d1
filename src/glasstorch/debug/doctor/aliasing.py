"""`import torch` inside a doctored run gives glasstorch, whatever else is installed.

A meta-path finder placed first answers for `torch` and every `torch.*` name with the
glasstorch module of the same path, so `import torch.nn as nn` and
`from torch.utils.data import DataLoader` bind glasstorch's objects. Entries a real PyTorch
left in sys.modules are set aside for the run and put back afterwards.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

_ALIAS, _TARGET = "torch", "glasstorch"


def _target_name(name: str) -> str:
    return _TARGET + name[len(_ALIAS):]


def _is_alias(name: str) -> bool:
    return name == _ALIAS or name.startswith(_ALIAS + ".")


class _AliasLoader(importlib.abc.Loader):
    """Loads `torch.x` as the already-built module `glasstorch.x`."""

    def create_module(self, spec):
        module = importlib.import_module(_target_name(spec.name))
        spec.loader_state = module.__spec__        # the import system overwrites __spec__
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if not _is_alias(name):
            return None
        try:
            real = importlib.util.find_spec(_target_name(name))
        except ModuleNotFoundError:
            real = None
        if real is None:
            raise ModuleNotFoundError(f"No module named {name!r} (glasstorch, standing in for "
                                      f"torch in this run, has no {_target_name(name)!r})",
                                      name=name)
        return importlib.machinery.ModuleSpec(name, _AliasLoader(),
                                              is_package=real.submodule_search_locations
                                              is not None)


class torch_alias:
    """Within the block, `torch` and `torch.*` import as glasstorch; sys.modules and
    sys.meta_path are as before afterwards."""

    def __enter__(self):
        self._saved = {n: m for n, m in sys.modules.items() if _is_alias(n)}
        for n in self._saved:
            del sys.modules[n]
        self._finder = _AliasFinder()
        sys.meta_path.insert(0, self._finder)
        return self

    def __exit__(self, *exc):
        sys.meta_path.remove(self._finder)
        for n in [n for n in sys.modules if _is_alias(n)]:
            del sys.modules[n]
        sys.modules.update(self._saved)
        return False
