"""The arrows point down (DESIGN.md, "Layers"): a module imports, at module level, only from
its own layer or the layers below it. Imports inside functions (deferred, for a call that
flows back up, such as a kernel building a tensor through a factory) are not counted."""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "glasstorch"

# Lowest first. A module takes the rank of its longest matching prefix.
RANKS = {
    "core": 0, "memory": 0, "dispatch.keys": 0, "return_types": 0,
    "dispatch": 1, "random": 1, "_ops": 1,
    "backends": 2, "library": 2,
    "ops": 3,
    "autograd": 4,
    "ops.derivatives": 5,          # derivative declarations: op formulas registered with autograd
    "nn": 6, "amp": 6, "cpu": 6, "cuda": 6, "linalg": 6, "special": 6, "fft": 6, "debug": 6, "serialization": 6,
    "_subclasses": 6,
    "optim": 7, "utils": 7,
    "cli": 8, "demo": 8, "examples": 8, "__main__": 8, "__init__": 9,
}


def _rank(module: str) -> int:
    best = None
    for prefix, rank in RANKS.items():
        if module == prefix or module.startswith(prefix + ".") or (
                prefix == "ops.derivatives" and module.startswith("ops.derivatives")):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, rank)
    assert best is not None, f"no layer for glasstorch.{module}: add it to RANKS"
    return best[1]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, module: str):
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.parse(path.read_text()).body:           # module level only
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package[:len(package) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
            if target and target != ["__init__"]:
                names = [target] if node.module else [target + [a.name] for a in node.names]
                for t in names:
                    yield ".".join(t), node.lineno


def test_module_level_imports_point_down():
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        if module == "__init__":
            continue
        for target, line in _imports(path, module):
            if target and _rank(target) > _rank(module):
                upward.append(f"glasstorch.{module}:{line} imports glasstorch.{target}")
    assert not upward, "imports pointing up a layer:\n" + "\n".join(upward)
