"""How much of PyTorch's public API glasstorch has, counted by name, namespace by namespace.

A namespace's public names are its `__all__` when it has one, otherwise the names `dir()`
shows that do not start with "_" and are PyTorch's own (not `typing`'s, `math`'s or another
package's objects imported into it). In `torch` itself, backend-specific kernels (quantized,
mkldnn, cudnn, miopen, fbgemm, ...) and TorchScript's compiler classes bound from torch._C
(Graph, Node, ScriptModule, ...) are left out: they are not what a program written for any
device reaches for.

    PYTHONPATH=src python tests/test_api_coverage.py     # the table, and the names missing

The test prints the table (run pytest with -s to see it) and fails only when a namespace's
coverage drops below its floor: a name that disappears is a regression. Raise the floors as
names are added.
"""
import importlib
import sys
import types

import pytest

torch = pytest.importorskip("torch")
import glasstorch  # noqa: E402

# Coverage (percent of PyTorch's public names) that must not be lost.
FLOORS = {
    "torch": 98, "torch.nn": 96, "torch.nn.functional": 96, "torch.nn.init": 100,
    "torch.nn.utils": 100, "torch.linalg": 100, "torch.fft": 100, "torch.special": 100,
    "torch.optim": 100, "torch.optim.lr_scheduler": 100, "torch.autograd": 94,
    "torch.utils.data": 100, "torch.testing": 75, "torch.func": 100, "torch.distributions": 100,
    "torch.sparse": 58, "torch.signal.windows": 100, "torch.masked": 100, "torch.cuda": 90,
    "torch.amp": 100, "torch.random": 100, "torch.accelerator": 95, "torch.hub": 100,
    "torch.nn.attention": 100, "torch.utils.checkpoint": 100, "torch.optim.swa_utils": 100,
    "torch.utils._pytree": 100, "torch.version": 100, "torch.nn.modules": 98,
}

# Backend-specific kernels and internals in the top-level namespace (prefixes).
TORCH_LEFT_OUT = ("quantize", "quantized_", "q_", "fbgemm_", "mkldnn", "miopen", "cudnn_",
                  "xpu", "mps", "mtia", "is_vulkan", "vulkan", "native_", "batch_norm_",
                  "_", "fake_quantize", "choose_qparams", "int_repr", "dequantize")

# Classes torch binds from torch._C that programs do use; its other _C classes are TorchScript's.
C_CLASSES_KEPT = {"Generator", "Size", "Stream", "Event", "device", "dtype", "finfo", "iinfo",
                  "layout", "memory_format", "DisableTorchFunction", "DisableTorchFunctionSubclass",
                  "OutOfMemoryError", "AcceleratorError", "DispatchKey", "DispatchKeySet", "Tag",
                  "Future", "FunctionSchema"}


def _own(value, package: str) -> bool:
    """Whether a namespace's attribute belongs to PyTorch (or to the standard torch types)."""
    if isinstance(value, types.ModuleType):
        return value.__name__.startswith(package + ".")
    module = getattr(value, "__module__", None)
    if module is None or not isinstance(module, str):
        return True                  # constants, dtypes, instances
    return module.split(".")[0] == package


def public_names(namespace: str) -> list:
    module = importlib.import_module(namespace)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")
                 and _own(getattr(module, n), "torch")
                 and not isinstance(getattr(module, n), (bool, str, dict))]   # notes, flags
    if namespace == "torch":
        bound = set(dir(torch._C))
        names = [n for n in names if not n.startswith(TORCH_LEFT_OUT)
                 and not (isinstance(getattr(torch, n), type) and n in bound
                          and n not in C_CLASSES_KEPT)]
    return sorted(set(names))


def _ours(namespace: str):
    try:
        return importlib.import_module("glasstorch" + namespace[len("torch"):])
    except ImportError:
        return None


def coverage(namespace: str):
    """(names glasstorch has, PyTorch's names, the missing ones)."""
    names = public_names(namespace)
    ours = _ours(namespace)
    missing = [n for n in names if ours is None or not hasattr(ours, n)]
    return len(names) - len(missing), len(names), missing


def table() -> list:
    return [(ns, *coverage(ns)) for ns in FLOORS]


def _percent(have: int, total: int) -> float:
    return 100.0 * have / total if total else 100.0


def test_name_coverage_does_not_drop():
    rows = table()
    print()
    for ns, have, total, _ in rows:
        print(f"{ns:28s} {have:5d}/{total:<5d} {_percent(have, total):6.1f}%")
    dropped = [f"{ns}: {_percent(have, total):.1f}% < {FLOORS[ns]}%"
               for ns, have, total, _ in rows if _percent(have, total) < FLOORS[ns]]
    assert not dropped, "name coverage dropped: " + "; ".join(dropped)


def test_public_names_are_pytorch_names():
    """The counting itself: known public names are counted, imports into a module are not."""
    assert "relu" in public_names("torch.nn.functional")
    assert "math" not in public_names("torch.nn.functional")
    assert "Linear" in public_names("torch.nn")
    assert "quantize_per_tensor" not in public_names("torch")
    assert "add" in public_names("torch")
    assert "Generator" in public_names("torch") and "AliasDb" not in public_names("torch")


if __name__ == "__main__":
    total_have = total_all = 0
    for ns, have, total, missing in table():
        total_have, total_all = total_have + have, total_all + total
        print(f"{ns:28s} {have:5d}/{total:<5d} {_percent(have, total):6.1f}%")
        if "-v" in sys.argv and missing:
            print("    missing:", " ".join(missing))
    print(f"{'all':28s} {total_have:5d}/{total_all:<5d} {_percent(total_have, total_all):6.1f}%")
