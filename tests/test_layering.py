"""The arrows point down (DESIGN.md, "Layers"): a module imports, at module level, only from
its own layer or the layers below it. Imports inside functions point down too, except the few
in ALLOWED_UPWARD, each a call that flows back up at run time, with the reason written down."""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "glasstorch"

# Lowest first. A module takes the rank of its longest matching prefix.
RANKS = {
    "core": 0, "memory": 0, "version": 0, "torch_version": 0, "dispatch.keys": 0, "return_types": 0, "overrides": 0, "_C": 0,
    "dispatch": 1, "random": 1, "_ops": 1,
    "profiler": 1,                 # torch.profiler: reads the dispatch trace and the allocator
    "backends": 2,
    "ops": 3, "_prims": 3,          # primitives: operators declared beside the ATen ones
    "autograd": 4,
    "_tensor_classes": 5, "_tensor_functions": 6, "_settings": 5,   # torch's top-level names
    "sparse": 5,                   # torch.sparse: sparse layouts, their kernels and operators
    "nn": 6, "amp": 6, "cpu": 6, "cuda": 6, "linalg": 6, "special": 6, "fft": 6, "debug": 6, "serialization": 6,
    "_subclasses": 6,
    "optim": 7, "utils": 7, "fx": 7, "testing": 7, "accelerator": 7, "hub": 7,
    "signal": 7,
    "func": 7,                     # torch.func: transforms over autograd, nn and ops
    "_decomp": 7,                  # decompositions: written in ATen ops and primitives
    "debug.coverage": 8,           # reads every layer's declarations, as `glasstorch ops`
    "compiler": 8, "_dynamo": 8, "_logging": 8,   # torch.compile: above nn, fx, _decomp
    "utils.cpp_extension": 8,      # C++ extensions: built by the compiler's build-and-cache
    "debug.doctor": 8,             # watches nn, optim and autograd, as `glasstorch doctor`
    "export": 9, "onnx": 9, "jit": 9,   # deployment: above the compiler, fx and nn
    "cli": 8, "demo": 8, "examples": 8, "__main__": 8, "__init__": 9,
    "distributions": 9,            # written on the public API (`import glasstorch`), as PyTorch's
    "masked": 9,                   # torch.masked: written on the public API, as PyTorch's
    "distributed": 9,              # likewise: collectives on tensors, the launcher
    "futures": 0,                  # torch.futures.Future: plain Python
    "multiprocessing": 0,          # Python's multiprocessing and spawn(); tensors travel by
                                   # utils.data's reductions, registered at import
    "_sym": 0, "_aggregation": 0, "_accelerator_error": 0, "_runtime_info": 0,
    "_schema_names": 1,            # torch.FunctionSchema/parse_schema: the dispatcher's
    "_from_file": 4, "_higher_order_ops": 4,
    "_device_streams": 7,          # torch.Stream/Event: CPU, or glasstorch.cuda's
}


def _rank(module: str) -> int:
    best = None
    for prefix, rank in RANKS.items():
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, rank)
    assert best is not None, f"no layer for glasstorch.{module}: add it to RANKS"
    return best[1]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


# Imports made inside functions that point up a layer: a call that flows back up at run time.
# Each says why it cannot be a module-level import of a lower layer. Anything else found
# inside a function must point down, as at module level.
ALLOWED_UPWARD = {
    ("backends.cpu.native", "compiler.inductor"):
        "the eager C kernels are built as generated code is (build.py, process.py: system "
        "compiler, disk cache, ctypes, OpenMP's wait policy), declare libmvec's functions "
        "and go parallel as generated kernels do (codegen.py)",
    ("dispatch.library", "autograd.custom_op_autograd"):
        "register_autograd makes the formula the operator's Autograd kernel",
    ("utils.data.distributed", "distributed"):
        "DistributedSampler takes its world size and rank from the default process group",
    ("nn.parallel.distributed", "distributed"):
        "DistributedDataParallel communicates through torch.distributed's process group",
    ("nn.parallel.distributed", "distributed.algorithms.ddp_comm_hooks"):
        "without a hook of the user's, DDP averages each bucket with PyTorch's allreduce_hook",
    ("core.tensor", "ops.creation.factories"):
        "Tensor(2, 3), the legacy constructor, is a factory call",
    ("core.tensor", "sparse.printing"):
        "repr of a sparse tensor prints its index and value tensors",
    ("core.tensor", "sparse.tensor"):
        "pickling a sparse tensor pickles its index and value tensors",
    ("memory.planning", "__init__"):
        "estimate() builds the model and its inputs with the public factories",
    ("memory.planning", "dispatch.modes"):
        "estimate() counts the step's storages with a dispatch mode",
    ("memory.planning", "nn.parameter"):
        "estimate() turns a model's parameters into meta tensors",
    ("memory.planning", "nn.modules.module"):
        "estimate() accepts a Module and runs its forward",
    ("ops.random.samplers", "cuda.random"):
        "a CUDA tensor draws from its GPU's default generator, which glasstorch.cuda owns",
    ("ops.gpu_kernels", "cuda.random"):
        "samplers run on the host draw from the GPU generator's stream",
    ("core.tensor", "dispatch.dispatcher"):
        "Tensor.as_subclass aliases through the aten::alias operator",
    ("overrides", "__init__"):
        "get_overridable_functions/get_ignored_functions enumerate the public namespace",
    ("overrides", "nn"): "get_overridable_functions enumerates nn.functional",
    ("overrides", "ops.registry"): "get_overridable_functions enumerates the declared ops",
    ("overrides", "dispatch.modes"):
        "enable_reentrant_dispatch is the Python key's, which overrides (used by core) sits below",
    ("dispatch.library", "_subclasses.fake_tensor"):
        "get_ctx() finds the FakeTensorMode running a fake impl, whose exception it raises",
    ("fx.graph", "__init__"): "generated code calls `torch.<name>`: the public namespace",
    ("nn.modules.module", "compiler.eval_frame"):
        "Module.compile() compiles the module in place with torch.compile",
    ("fx.node", "__init__"):
        "a type annotation prints as torch.<name> when the public namespace holds it",
    ("ops.nn.recurrent_derivatives", "autograd"):
        "a recurrent layer's double backward differentiates its recomputation with the engine",
    ("nn.modules.batchnorm", "distributed"):
        "SyncBatchNorm all-reduces its statistics over torch.distributed's process group",
    ("random", "utils.data"):
        "thread_safe_generator() returns the generator of the DataLoader worker it runs in",
}
PROGRAMS = ("cli", "demo", "examples")   # written against the public API, as a user's script


def _is_module(parts) -> bool:
    path = SRC.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path, module: str, *, nested: bool = False):
    """(target module, line) of each glasstorch import: those at module level, or (nested)
    those inside functions and classes. A name taken from the package itself
    (`from .. import empty`) is an import of glasstorch/__init__."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if (id(node) in top) == nested:
            continue
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package[:len(package) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "glasstorch":
            target = node.module.split(".")[1:]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "glasstorch":
                    yield ".".join(alias.name.split(".")[1:]) or "__init__", node.lineno
            continue
        else:
            continue
        if target == ["__init__"]:
            continue
        names = [target] if node.module and target else [target + [a.name] for a in node.names]
        for t in names:
            if not t or not _is_module(t):
                t = t[:-1] if t and _is_module(t[:-1]) else ["__init__"]
            yield ".".join(t) or "__init__", node.lineno


def _upward(nested: bool) -> list:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        if module == "__init__":
            continue
        for target, line in _imports(path, module, nested=nested):
            if _rank(target) > _rank(module):
                found.append((module, target, line))
    return found


def test_module_level_imports_point_down():
    upward = [f"glasstorch.{m}:{line} imports glasstorch.{t}"
              for m, t, line in _upward(nested=False) if not m.startswith(PROGRAMS)]
    assert not upward, "imports pointing up a layer:\n" + "\n".join(upward)


def test_imports_inside_functions_point_down_or_say_why():
    upward = [f"glasstorch.{m}:{line} imports glasstorch.{t} inside a function"
              for m, t, line in _upward(nested=True)
              if (m, t) not in ALLOWED_UPWARD and not m.startswith(PROGRAMS)]
    assert not upward, ("imports pointing up a layer (import from a lower layer, or add an "
                        "entry saying why to ALLOWED_UPWARD):\n" + "\n".join(upward))


def test_every_allowed_upward_import_is_still_made():
    made = {(m, t) for m, t, _ in _upward(nested=True)}
    stale = sorted(set(ALLOWED_UPWARD) - made)
    assert not stale, f"ALLOWED_UPWARD entries no import needs any more: {stale}"
