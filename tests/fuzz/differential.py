"""Differential testing against PyTorch: random small programs run in both libraries.

A program is data: a list of steps, each one line of Python over numbered variables
(`v3 = v1.transpose(0, 1)`, `v4 = v3.add_(2)`, `v6, v7 = torch.sort(v5, 0)`), made by the
generator below from a seed. `run_pair` executes the same lines in glasstorch and in
PyTorch side by side and compares after every step: whether an error was raised (and its
class), then each new value's shape, dtype, strides, requires_grad, values, and whether it
shares storage with the step's inputs; at the end of the forward part every variable again
(in-place writes through views reach their bases), and, for programs with a backward pass,
the leaves' gradients. A difference is minimised (steps dropped, input shapes shrunk) and
printed as a standalone reproducer that runs in either library.

Running the lines themselves, rather than a description of them, keeps the reproducer and
what was tested the same thing.
"""
from __future__ import annotations

import math
import random
import re
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

import glasstorch

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32", "int16", "uint8")
INPUT_DTYPES = FLOATS + INTS + ("bool", "complex64")
_CAST_TARGETS = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "bool",
                 "complex64")


# ---- programs ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One line of a program: `src` reads the variables `reads` and defines `writes`.
    An input step also carries the data it builds (so that minimising can shrink it)."""
    src: str
    op: str
    reads: tuple = ()
    writes: tuple = ()
    data: tuple | None = None          # (shape, dtype, flat values, requires_grad)


@dataclass
class Program:
    steps: list
    backward: bool = False
    seed: int = 0

    def source(self, library: str = "torch") -> str:
        """The program as a standalone script for `library` ('torch' or 'glasstorch')."""
        head = "import torch" if library == "torch" else "import glasstorch as torch"
        lines = [head] + [s.src for s in self.steps]
        if self.backward:
            lines += _backward_lines(self)
        return "\n".join(lines)


def _input_src(var: str, shape, dtype, values, requires_grad) -> str:
    text = f"{var} = torch.tensor({list(values)!r}, dtype=torch.{dtype}).reshape({tuple(shape)!r})"
    return text + (".requires_grad_()" if requires_grad else "")


def input_step(var: int, shape, dtype, values, requires_grad=False) -> Step:
    name = f"v{var}"
    return Step(_input_src(name, shape, dtype, values, requires_grad), "input", (), (var,),
                (tuple(shape), dtype, tuple(values), requires_grad))


def _backward_lines(program: Program) -> list:
    """The loss: the last real floating variable that requires grad, weighted so that every
    element's gradient differs, summed; then backward."""
    return ["_loss = [v for v in list(globals().values()) if isinstance(v, torch.Tensor) and "
            "v.requires_grad and v.dtype.is_floating_point][-1]",
            "(_loss * torch.linspace(-1, 1, _loss.numel(), dtype=_loss.dtype)"
            ".reshape(_loss.shape)).sum().backward()"]


# ---- values and their comparison -----------------------------------------------------------

def _is_tensor(x) -> bool:
    return isinstance(x, glasstorch.Tensor) or type(x).__module__.startswith("torch")


def _numpy(t) -> np.ndarray:
    t = t.detach()
    if hasattr(t, "resolve_conj"):
        t = t.resolve_conj()
    if hasattr(t, "resolve_neg"):
        t = t.resolve_neg()
    if str(t.dtype).endswith(("bfloat16", "float16")):
        t = t.float()
    if str(t.dtype) == "torch.complex32":          # NumPy has no complex32
        t = t.to(glasstorch.complex64 if isinstance(t, glasstorch.Tensor) else
                 _torch().complex64)
    if isinstance(t, glasstorch.Tensor):
        return np.array(t._array(), copy=True)
    # on a clone: numpy() marks a storage as not resizable, which would change what a
    # later out= into this tensor does; force: a ZeroTensor gradient converts too
    return t.clone().numpy(force=True)


def _tolerance(dtype: str):
    if dtype.endswith(("float16", "bfloat16")):
        return 2e-2, 2e-2
    if dtype.endswith(("float32", "complex64")):
        return 1e-4, 1e-5
    return 1e-9, 1e-12


def _shown_strides(t) -> tuple:
    """Strides of the dims that have more than one element (those of size 0 or 1 carry no
    meaning, and PyTorch is free to choose them)."""
    if t.numel() <= 1:
        return ()
    return tuple(st for s, st in zip(t.shape, t.stride()) if s > 1)


def describe(t) -> dict:
    """What is compared of a value: a tensor's metadata and values, else its repr."""
    if not _is_tensor(t):
        if isinstance(t, (tuple, list)) and all(_is_tensor(x) for x in t):
            return {"list": [describe(x) for x in t]}
        return {"repr": repr(t)}
    return {"shape": tuple(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "stride": _shown_strides(t), "requires_grad": bool(t.requires_grad),
            "values": _numpy(t)}


def difference(ours: dict, theirs: dict, loose: str | None = None) -> str | None:
    """The first way two descriptions differ (a kind: 'shape', 'dtype', ...), or None.
    `loose`: the least precise float dtype that took part ('float16', 'float32'), so values
    compare at no finer a precision whatever the dtype they end in (a float32 sum cast to
    float64 may differ in its last float32 bits, one rounding step is no difference)."""
    if "list" in ours or "list" in theirs:
        if len(ours.get("list", ())) != len(theirs.get("list", ())):
            return "value"
        for a, b in zip(ours["list"], theirs["list"]):
            kind = difference(a, b, loose)
            if kind:
                return kind
        return None
    if "repr" in ours or "repr" in theirs:
        return None if ours.get("repr") == theirs.get("repr") else "value"
    for key in ("shape", "dtype", "requires_grad", "stride"):
        if ours[key] != theirs[key]:
            return key
    a, b = ours["values"], theirs["values"]
    if a is None or b is None:
        return None
    if a.shape != b.shape:
        return "value"
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        return None if np.array_equal(a, b) else "value"
    rtol, atol = max(_tolerance(loose or ours["dtype"]), _tolerance(ours["dtype"]))
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(a.astype(np.complex128), b.astype(np.complex128), rtol=rtol,
                           atol=atol, equal_nan=True)
    return None if close.all() else "value"


def _least_precise(program: Program) -> str | None:
    """The least precise float dtype a program names (see `_computed_at` for the rest)."""
    text = "\n".join(step.src for step in program.steps)
    if "float16" in text:                                   # bfloat16 too
        return "float16"
    return "float32" if "float32" in text or "complex64" in text else None


_PRECISION = {"float16": "float16", "bfloat16": "float16", "complex32": "float16",
              "float32": "float32", "complex64": "float32"}


def _computed_at(loose: str | None, values) -> str | None:
    """`loose` made as coarse as the least precise of `values` (a step's results): a value
    computed in a dtype the program never names (sigmoid of an int16 is float32) keeps that
    precision when a later step writes it into a float64 out=, whose dtype raises nothing."""
    for v in values:
        level = _PRECISION.get(str(v.dtype).replace("torch.", "")) if _is_tensor(v) else None
        if level == "float16" or (level == "float32" and loose is None):
            loose = level
    return loose


def _storage_ptr(t):
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return None


def _aliasing(outputs, inputs) -> tuple:
    """For each output tensor, which of the step's input tensors share its storage."""
    result = []
    for out in outputs:
        if not _is_tensor(out) or out.numel() == 0:
            result.append(None)
            continue
        p = _storage_ptr(out)
        result.append(tuple(_is_tensor(i) and i.numel() > 0 and p == _storage_ptr(i)
                            for i in inputs))
    return tuple(result)


# ---- running a program in both libraries ---------------------------------------------------

@dataclass
class Difference:
    kind: str                    # 'error', 'error-class', 'shape', ..., 'alias', 'grad', ...
    step: int                    # index of the step, len(steps) for the backward pass
    op: str
    detail: str = ""

    def key(self) -> tuple:
        return (self.kind, self.op)


class _Side:
    """One library's namespace while a program runs."""

    def __init__(self, module):
        self.ns = {"torch": module}

    def run(self, code):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(code, self.ns)
            except Exception as e:       # the library raised: compared, not a failure here
                return e
        return None


_CODE_CACHE: dict = {}


def _compiled(src: str):
    code = _CODE_CACHE.get(src)
    if code is None:
        if len(_CODE_CACHE) > 100_000:
            _CODE_CACHE.clear()
        code = _CODE_CACHE[src] = compile(src, "<fuzz>", "exec")
    return code


def _torch():
    import torch
    return torch


def run_pair(program: Program, first_only: bool = True) -> list:
    """Run `program` in glasstorch and in PyTorch; the differences found (the first only,
    by default: later steps build on a state that already differs)."""
    ours, theirs = _Side(glasstorch), _Side(_torch())
    diffs = []
    tied = set()                 # variables whose values are not compared (indices among ties)
    loose = _least_precise(program)

    def found(kind, i, op, detail=""):
        diffs.append(Difference(kind, i, op, detail))
        return first_only

    for i, step in enumerate(program.steps):
        if any(f"v{r}" not in ours.ns or f"v{r}" not in theirs.ns for r in step.reads):
            continue                                   # an input failed in both: skipped
        code = _compiled(step.src)
        e1, e2 = ours.run(code), theirs.run(code)
        if (e1 is None) != (e2 is None):
            bad = e1 if e1 is not None else e2
            who = "glasstorch" if e1 is not None else "torch"
            if found("error", i, step.op, f"only {who} raised {type(bad).__name__}: "
                                          f"{str(bad)[:200]}"):
                return diffs
            continue
        if e1 is not None:
            if type(e1).__name__ != type(e2).__name__:
                if found("error-class", i, step.op, f"glasstorch {type(e1).__name__}: "
                         f"{str(e1)[:150]} | torch {type(e2).__name__}: {str(e2)[:150]}"):
                    return diffs
            if step.op.endswith("_") and "ZeroDivisionError" in str(e2):
                # PyTorch bug: an in-place integer division by zero raises after its kernel
                # has written into self; glasstorch raises first and leaves self as it was.
                # What PyTorch's write reached is not compared.
                target = step.src.split("= ", 1)[-1].split(".", 1)[0]     # `vN` of vN.op_(...)
                tied.update(_sharing_storage(theirs.ns, [theirs.ns.get(target)]))
            for w in step.writes:                      # keep the two namespaces alike
                ours.ns.pop(f"v{w}", None)
                theirs.ns.pop(f"v{w}", None)
            _forget_failed_writes(step, ours.ns, theirs.ns, loose)
            continue
        loose = _computed_at(loose, [theirs.ns.get(f"v{w}") for w in step.writes])
        ties = _index_outputs(step, theirs.ns) or _unspecified_or_vectorised(step, theirs.ns)
        if any(f"v{r}" in tied for r in step.reads):   # computed from tied indices
            ties = step.writes
            tied.update(_sharing_storage(theirs.ns, [theirs.ns.get(f"v{w}") for w in ties]))
        tied.update(f"v{w}" for w in ties)
        for w in step.writes:
            a, b = ours.ns.get(f"v{w}"), theirs.ns.get(f"v{w}")
            da, db = describe(a), describe(b)
            if w in ties and "values" in da and "values" in db:
                da["values"] = db["values"] = None    # which tied element: unspecified
            kind = difference(da, db, loose)
            if kind and found(kind, i, step.op, f"v{w}"):
                return diffs
        ins1 = [ours.ns[f"v{r}"] for r in step.reads]
        ins2 = [theirs.ns[f"v{r}"] for r in step.reads]
        outs1 = [ours.ns.get(f"v{w}") for w in step.writes]
        outs2 = [theirs.ns.get(f"v{w}") for w in step.writes]
        if step.op != "input" and _aliasing(outs1, ins1) != _aliasing(outs2, ins2):
            if found("alias", i, step.op, str((_aliasing(outs1, ins1), _aliasing(outs2, ins2)))):
                return diffs
    n = len(program.steps)
    for name in sorted(set(ours.ns) & set(theirs.ns)):
        if name.startswith("v") and name not in tied:
            kind = difference(describe(ours.ns[name]), describe(theirs.ns[name]), loose)
            if kind and found("final-" + kind, n, _writer(program, name), name):
                return diffs
    if program.backward:
        diffs += _compare_backward(program, ours, theirs, first_only, loose, bool(tied))
    return diffs


def _written(step: Step) -> list:
    """The variables a step writes into: self of an in-place method, out=, x[...] = ..."""
    import re
    return re.findall(r"\b(v\d+)\.\w+_\(|out=(v\d+)\b|^(v\d+)\[", step.src)


def _forget_failed_writes(step: Step, ours: dict, theirs: dict, loose) -> None:
    """A write that raised in both libraries: PyTorch's integer kernels raise from inside
    their loop (remainder_ by zero), leaving the elements before the zero divisor written;
    glasstorch checks first and writes nothing. What PyTorch leaves is unspecified: when
    the written tensor differs, every variable on its storage is dropped from both sides."""
    for groups in _written(step):
        name = next(g for g in groups if g)
        a, b = ours.get(name), theirs.get(name)
        if _is_tensor(a) and _is_tensor(b) and difference(describe(a), describe(b), loose):
            for gone in _sharing_storage(theirs, [b]) | {name}:
                ours.pop(gone, None)
                theirs.pop(gone, None)


# Ops returning indices of chosen elements (the last of their outputs)
_INDEX_OPS = ("sort", "topk", "kthvalue", "max", "min", "median", "mode", "cummax", "argsort",
              "argmax", "argmin")


def _index_outputs(step: Step, ns: dict) -> tuple:
    """The outputs of `step` that hold indices among tied elements: neither library is
    bound to pick the same one (PyTorch's CPU and CUDA kernels differ too)."""
    if step.op not in _INDEX_OPS or not step.reads:
        return ()
    x = ns.get(f"v{step.reads[0]}")
    if not _is_tensor(x):
        return ()
    values = _numpy(x).reshape(-1)
    if step.op == "mode" and np.isnan(values).any():
        # PyTorch's mode sorts with a comparison NaN breaks (std::sort needs a strict weak
        # order): which value it then reports depends on the input's order. Unspecified.
        return step.writes
    if len(np.unique(values)) == values.size:
        return ()
    if values.dtype.kind == "f" and (values == 0).any() and \
            len(set(np.signbit(values[values == 0]))) == 2:
        # -0.0 and 0.0 tie, yet copysign or 1/x tell them apart: the chosen value too
        return step.writes
    return step.writes[-1:]


def _unspecified_or_vectorised(step: Step, ns: dict) -> tuple:
    """Outputs not compared, as their answer is IEEE's choice or PyTorch's vector path's
    (docs/04-operators.md, "Where PyTorch is wrong"):
    - copysign reading a NaN (as its sign operand: which operand is which is not worked out
      from the line). IEEE 754 leaves the sign of a NaN an operation makes unspecified
      (PyTorch's sqrt(-1) is +nan, NumPy's -nan), and PyTorch's vectorised bfloat16-to-float
      conversion sets it on NaNs its scalar path leaves positive;
    - a float16/bfloat16 remainder whose dividend is over 2**12 times a divisor: PyTorch's
      vector path computes a - b * floor(a / b) in float32 (its scalar path and glasstorch
      the exact remainder), which loses the remainder there and is NaN where a / b
      overflows (a subnormal divisor)."""
    reads = [ns.get(f"v{r}") for r in step.reads]
    values = [_numpy(x) for x in reads if _is_tensor(x) and not x.dtype.is_complex]
    if step.op.startswith("copysign"):
        return step.writes if any(np.isnan(v).any() for v in values) else ()
    if step.op in ("remainder", "remainder_", "op%") and values and any(
            str(ns.get(f"v{w}").dtype).endswith("float16") for w in step.writes
            if _is_tensor(ns.get(f"v{w}"))):
        numbers = np.abs(np.concatenate([v.reshape(-1) for v in values] + [np.array(
            [float(t) for t in _NUMBER.findall(step.src)])]).astype(np.float64))
        finite = numbers[np.isfinite(numbers) & (numbers > 0)]
        if finite.size and finite.max() > 2.0 ** 12 * finite.min():
            return step.writes
    return ()


_NUMBER = re.compile(r"(?<![\w.])-?\d+\.?\d*(?:e-?\d+)?")


def _sharing_storage(ns: dict, tensors) -> set:
    """The variables of `ns` that share storage with one of `tensors` (written in place)."""
    ptrs = {_storage_ptr(t) for t in tensors if _is_tensor(t) and t.numel()}
    return {name for name, v in ns.items() if name.startswith("v") and _is_tensor(v)
            and v.numel() and _storage_ptr(v) in ptrs}


def _writer(program: Program, name: str) -> str:
    """The op of the last step that wrote to variable `name`'s storage (for grouping)."""
    var = int(name[1:])
    op = "input"
    for step in program.steps:
        if var in step.writes or (step.op.endswith("_") and step.reads[:1] == (var,)):
            op = step.op
    return op


def _compare_backward(program, ours, theirs, first_only, loose, tied=False) -> list:
    """The backward pass's outcome and the leaves' gradients. `tied`: an op chose among
    equal elements (which one gets the gradient is then as unspecified as its index), so
    only whether each gradient exists is compared. A program with integer tensors compares
    gradients at no finer than float32 precision: PyTorch's formulas compute what they
    derive from an integer operand (pow's log of an integer base) in float32."""
    n = len(program.steps)
    if loose is None and any(s.data is not None and s.data[1] in INTS + ("bool",)
                             for s in program.steps):
        loose = "float32"
    leaves = [f"v{s.writes[0]}" for s in program.steps if s.data is not None and s.data[3]]
    if not any(_is_tensor(ours.ns.get(v)) and ours.ns[v].requires_grad for v in ours.ns
               if v.startswith("v")):
        return []
    code = _compiled("\n".join(_backward_lines(program)))
    e1, e2 = ours.run(code), theirs.run(code)
    ops = tuple(s.op for s in program.steps if s.op != "input")
    last = ops[-1] if ops else "input"
    if (e1 is None) != (e2 is None):
        bad = e1 if e1 is not None else e2
        who = "glasstorch" if e1 is not None else "torch"
        return [Difference("backward-error", n, last,
                           f"only {who} raised {type(bad).__name__}: {str(bad)[:200]}")]
    if e1 is not None:
        if type(e1).__name__ != type(e2).__name__:
            return [Difference("backward-error-class", n, last,
                               f"{type(e1).__name__} vs {type(e2).__name__}")]
        return []
    diffs = []
    for v in leaves:
        if v not in ours.ns or v not in theirs.ns:
            continue
        g1, g2 = ours.ns[v].grad, theirs.ns[v].grad
        if (g1 is None) != (g2 is None):
            diffs.append(Difference("grad-presence", n, last, v))
        elif g1 is not None and not tied and difference(describe(g1), describe(g2), loose):
            diffs.append(Difference("grad", n, last, v))
        if diffs and first_only:
            break
    return diffs


# ---- the generator --------------------------------------------------------------------------

@dataclass
class _Var:
    """What the generator knows of a variable: glasstorch's view of it."""
    index: int
    shape: tuple
    dtype: str
    requires_grad: bool
    expanded: bool = False          # has a zero stride over a dim of size > 1


@dataclass
class _State:
    rng: random.Random
    vars: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    ns: dict = field(default_factory=lambda: {"torch": glasstorch})
    next_var: int = 0
    backward: bool = False
    born: dict = field(default_factory=dict)       # id of a tensor -> requires_grad at birth
    direct: set = field(default_factory=set)       # ids of tensors given history in place

    def new_var(self) -> int:
        self.next_var += 1
        return self.next_var - 1


def _values(rng: random.Random, n: int, dtype: str) -> list:
    if dtype == "bool":
        return [rng.random() < 0.5 for _ in range(n)]
    if dtype == "uint8":
        return [rng.randint(0, 9) for _ in range(n)]
    if dtype in INTS:
        return [rng.randint(-6, 6) for _ in range(n)]
    if dtype.startswith("complex"):
        return [complex(round(rng.uniform(-2, 2), 2), round(rng.uniform(-2, 2), 2))
                for _ in range(n)]
    return [round(rng.uniform(-3, 3), 2) for _ in range(n)]


def _shape(rng: random.Random, ndim: int | None = None) -> tuple:
    ndim = rng.choice((0, 1, 1, 2, 2, 2, 3, 3)) if ndim is None else ndim
    return tuple(rng.choice((1, 2, 2, 3, 3, 4, 0) if rng.random() < 0.1 else (1, 2, 3, 4))
                 for _ in range(ndim))


def _add_input(st: _State, shape=None, dtype=None, requires_grad=None) -> _Var:
    rng = st.rng
    shape = _shape(rng) if shape is None else tuple(shape)
    if dtype is None:
        dtype = rng.choice(("float32",) * 6 + ("float64",) * 2 + INPUT_DTYPES) if \
            not st.backward else rng.choice(("float32", "float32", "float64") + INPUT_DTYPES)
    if requires_grad is None:
        requires_grad = st.backward and rng.random() < 0.8
    requires_grad = requires_grad and dtype in ("float32", "float64")
    var = st.new_var()
    step = input_step(var, shape, dtype, _values(rng, math.prod(shape), dtype), requires_grad)
    _execute(st, step)
    return st.vars[-1]


def _execute(st: _State, step: Step) -> bool:
    """Run a generated step in glasstorch to learn its results' shapes and dtypes."""
    st.steps.append(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(_compiled(step.src), st.ns)
        except Exception:
            return False
    for w in step.writes:
        t = st.ns.get(f"v{w}")
        if isinstance(t, glasstorch.Tensor):
            st.born.setdefault(id(t), t.requires_grad)
            expanded = any(s > 1 and d == 0 for s, d in zip(t.shape, t.stride()))
            st.vars.append(_Var(w, tuple(t.shape), str(t.dtype).replace("torch.", ""),
                                t.requires_grad, expanded))
    return True


def _dim(rng, ndim: int):
    return rng.randint(-ndim, ndim - 1) if ndim else rng.choice((0, -1))


def _broadcastable(a: tuple, b: tuple) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(reversed(a), reversed(b)))


def _scalar(rng, kinds=("int", "float", "bool", "complex")):
    kind = rng.choice(kinds)
    return {"int": lambda: rng.randint(-3, 3), "float": lambda: round(rng.uniform(-2, 2), 2),
            "bool": lambda: rng.random() < 0.5,
            "complex": lambda: complex(round(rng.uniform(-1, 1), 1), 1.0)}[kind]()


def _partner(st: _State, x: _Var, same_shape=False) -> str:
    """A second operand for x: another variable that broadcasts with it, a Python number,
    a 0-d tensor of some dtype, or a new tensor of a broadcastable shape."""
    rng = st.rng
    r = rng.random()
    if r < 0.25:
        return repr(_scalar(rng))
    if r < 0.35 and not same_shape:
        return f"torch.tensor({_scalar(rng, ('int', 'float', 'bool'))!r}, dtype=torch." \
               f"{rng.choice(_CAST_TARGETS)})"
    others = [v for v in st.vars if v.index != x.index and (
        v.shape == x.shape if same_shape else _broadcastable(v.shape, x.shape))]
    if others and r < 0.7:
        return f"v{rng.choice(others).index}"
    shape = list(x.shape)
    if not same_shape:
        shape = shape[rng.randint(0, len(shape)):] if shape else shape
        shape = [1 if rng.random() < 0.3 else s for s in shape]
    return f"v{_add_input(st, shape).index}"


def _reads(*texts) -> tuple:
    return tuple(int(t[1:]) for t in texts if isinstance(t, str) and t[:1] == "v"
                 and t[1:].isdigit())


# Each generator takes the state and the chosen variable x; it returns (op label, source
# text of the right-hand side or a full statement, number of outputs) or None.

def _g_slice(st, x):
    rng = st.rng
    if not x.shape:
        return None
    d = rng.randrange(len(x.shape))
    s = x.shape[d]
    start = rng.randint(-s, s) if rng.random() < 0.7 else ""
    stop = rng.randint(-s, s) if rng.random() < 0.5 else ""
    step = rng.choice((1, 2, 2, 3))
    return "slice", f"v{x.index}[{':, ' * d}{start}:{stop}:{step}]"


def _g_transpose(st, x):
    n = len(x.shape)
    return "transpose", f"v{x.index}.transpose({_dim(st.rng, n)}, {_dim(st.rng, n)})"


def _g_permute(st, x):
    perm = list(range(len(x.shape)))
    st.rng.shuffle(perm)
    return "permute", f"v{x.index}.permute({tuple(perm)!r})"


def _g_diagonal(st, x):
    n = len(x.shape)
    if n < 2:
        return None
    d1 = _dim(st.rng, n)
    d2 = st.rng.choice([d for d in range(n) if d % n != d1 % n])
    return "diagonal", f"v{x.index}.diagonal({st.rng.randint(-1, 1)}, {d1}, {d2})"


def _g_narrow(st, x):
    if not x.shape:
        return None
    d = _dim(st.rng, len(x.shape))
    s = x.shape[d]
    start = st.rng.randint(-s, s)
    begin = start + s if start < 0 else start
    return "narrow", f"v{x.index}.narrow({d}, {start}, {st.rng.randint(0, max(s - begin, 0))})"


def _g_squeeze(st, x):
    if st.rng.random() < 0.3:
        return "squeeze", f"v{x.index}.squeeze()"
    return "squeeze", f"v{x.index}.squeeze({_dim(st.rng, len(x.shape))})"


def _g_unsqueeze(st, x):
    return "unsqueeze", f"v{x.index}.unsqueeze({st.rng.randint(-len(x.shape) - 1, len(x.shape))})"


def _g_expand(st, x):
    shape = [st.rng.choice((2, 3)) if s == 1 else s for s in x.shape]
    if st.rng.random() < 0.5:
        shape = [2] + shape
    return "expand", f"v{x.index}.expand({tuple(shape)!r})"


def _g_reshape(st, x):
    how = st.rng.choice(("reshape(-1)", "view(-1)", "flatten()", "t()", "contiguous()",
                         "clone()", "detach()", "conj()"))
    return how.split("(")[0], f"v{x.index}.{how}"


def _g_select(st, x):
    if not x.shape or x.shape[0] == 0:
        return None
    d = _dim(st.rng, len(x.shape))
    s = x.shape[d]
    if s == 0:
        return None
    return "select", f"v{x.index}.select({d}, {st.rng.randint(-s, s - 1)})"


def _g_cast(st, x):
    return "to", f"v{x.index}.to(torch.{st.rng.choice(_CAST_TARGETS)})"


_INPLACE_UNARY = ("neg_", "abs_", "floor_", "zero_", "sigmoid_", "exp_", "sqrt_", "tanh_",
                  "relu_", "sign_", "reciprocal_", "square_", "round_", "trunc_",
                  "logical_not_")
_INPLACE_BINARY = ("add_", "sub_", "mul_", "div_", "pow_", "copy_", "clamp_min_",
                   "maximum", "remainder_", "logical_and_", "fmod_", "atan2_")


def _order_dependent(st, x: _Var, other: str) -> bool:
    """An in-place write into x reading `other`, a view of other elements of x's memory
    that PyTorch cannot judge (either not dense: its overlap check gives up and allows it):
    PyTorch's result then depends on the order its loop writes elements in, glasstorch reads
    every input first. Undefined in PyTorch: not generated."""
    from glasstorch.core.shape import is_non_overlapping_and_dense
    a, b = st.ns.get(f"v{x.index}"), st.ns.get(other)
    if not isinstance(a, glasstorch.Tensor) or not isinstance(b, glasstorch.Tensor) or \
            a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    if (a.shape, a.stride(), a.storage_offset()) == (b.shape, b.stride(), b.storage_offset()):
        return False
    return not (is_non_overlapping_and_dense(tuple(a.shape), a.stride()) and
                is_non_overlapping_and_dense(tuple(b.shape), b.stride()))


def _g_inplace(st, x):
    rng = st.rng
    r = rng.random()
    v = f"v{x.index}"
    if r < 0.25:
        op = rng.choice(_INPLACE_UNARY)
        return op, f"{v}.{op}()"
    if r < 0.6:
        op = rng.choice(_INPLACE_BINARY)
        other = _partner(st, x)
        if _order_dependent(st, x, other):
            return None
        if op == "maximum":
            return "maximum(out=self)", f"torch.maximum({v}, {other}, out={v})"
        return op, f"{v}.{op}({other})"
    if r < 0.68:
        return "pow_", f"{v}.__ipow__({rng.choice((2, -1.75, 0.5, 3, -1))})"
    if r < 0.74:
        return "fill_", f"{v}.fill_({_scalar(rng)!r})"
    if r < 0.8:
        lo, hi = sorted((_scalar(rng, ("int", "float")), _scalar(rng, ("int", "float"))))
        return "clamp_", f"{v}.clamp_({lo!r}, {hi!r})"
    if r < 0.86:
        if not x.shape:
            return None
        d = _dim(rng, len(x.shape))
        s = max(x.shape[d], 1)
        return "index_fill_", (f"{v}.index_fill_({d}, torch.tensor([{rng.randint(-s, s - 1)}]), "
                               f"{_scalar(rng, ('int', 'float'))!r})")
    if r < 0.92:
        src = _add_input(st, (max(math.prod(x.shape), 1),), x.dtype,
                         st.backward and rng.random() < 0.5)
        return "masked_scatter_", (f"{v}.masked_scatter_(torch.tensor({_values(rng, math.prod(x.shape), 'bool')!r}).reshape({x.shape!r}), "
                                   f"v{src.index}.reshape(-1))")
    return "masked_fill_", (f"{v}.masked_fill_(torch.tensor({_values(rng, math.prod(x.shape), 'bool')!r})"
                            f".reshape({x.shape!r}), {_scalar(rng)!r})")


def _g_setitem(st, x):
    """x[index] = value: a basic or advanced index, a number or a tensor."""
    rng = st.rng
    if not x.shape or x.shape[0] == 0:
        return None
    s = x.shape[0]
    index = rng.choice((f"torch.tensor({[rng.randint(-s, s - 1) for _ in range(rng.randint(1, 3))]})",
                        f"torch.tensor({_values(rng, s, 'bool')!r})", f"{rng.randint(-s, s - 1)}",
                        "::2", f"..., {rng.randint(-x.shape[-1], x.shape[-1] - 1)}" if x.shape[-1] else "0"))
    value = _scalar(rng) if rng.random() < 0.6 else None
    if value is None:
        # PyTorch bug: a value that requires grad written into an integer tensor makes that
        # tensor require grad, and its next op fails ("Autograd not support dtype: Long");
        # glasstorch leaves it an ordinary integer tensor. Not generated.
        src = _add_input(st, (), x.dtype if rng.random() < 0.7 else None,
                         st.backward and x.dtype in FLOATS and rng.random() < 0.5)
        value = f"v{src.index}"
    return "setitem", f"v{x.index}[{index}] = {value}\nv{{out}} = v{x.index}"


_BINARY = ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum",
           "minimum", "eq", "lt", "ge", "logical_and", "logical_or", "bitwise_and", "atan2",
           "true_divide", "fmod", "hypot", "copysign")


def _g_binary(st, x):
    rng = st.rng
    op = rng.choice(_BINARY)
    other = _partner(st, x)
    if rng.random() < 0.2:
        return _binary_call(st, op, other, f"v{x.index}")
    if rng.random() < 0.1:
        if st.backward and _complex(st, f"v{x.index}") != _complex(st, other):
            # PyTorch bug: where() of a real tensor that requires grad and a complex one
            # (in either place) hands the real input a complex gradient, which its engine
            # then rejects ("Expected isFloatingType(grad.scalar_type()) || ...");
            # glasstorch's gradient is the real part. Not generated.
            return None
        return "where", f"torch.where(v{x.index} != 0, v{x.index}, {other})"
    if rng.random() < 0.15:
        sym = rng.choice(("+", "-", "*", "/", "**", "%", "//"))
        number = rng.choice((2, 1.5, -1, True))
        if sym == "**" and number is True and st.backward:
            # PyTorch bug: the backward of `True ** t` fails an internal assert (a bool
            # Scalar base); glasstorch's gradient is 0 (log 1). Not generated.
            return None
        return f"op{sym}", f"{number!r} {sym} v{x.index}"
    return _binary_call(st, op, f"v{x.index}", other)


def _binary_call(st, op, first, second):
    if op == "atan2" and st.backward and not _floating(st, first):
        # PyTorch bug: atan2's gradient for its second operand negates the first operand in
        # that operand's dtype: an integer one wraps around (uint8 5 becomes 251) and a bool
        # one raises; glasstorch's gradient is the right one. Not generated.
        return None
    if op == "pow" and first in ("True", "False") and st.backward:
        return None              # PyTorch bug: as `True ** t` in _g_binary
    return op, f"torch.{op}({first}, {second})"


def _floating(st, text: str) -> bool:
    """Whether the operand `text` (a variable, a tensor literal) is a floating or complex
    tensor; a Python number counts as floating (atan2 refuses it anyway)."""
    value = eval(text, st.ns)
    return not isinstance(value, glasstorch.Tensor) or value.dtype.is_floating_point or \
        value.dtype.is_complex


def _complex(st, text: str) -> bool:
    """Whether the operand `text` (a variable, a tensor literal, a number) is complex."""
    value = eval(text, st.ns)
    return value.dtype.is_complex if isinstance(value, glasstorch.Tensor) else \
        isinstance(value, complex)


_UNARY = ("exp", "log", "sqrt", "sin", "tanh", "sigmoid", "abs", "neg", "floor", "round",
          "sign", "reciprocal", "relu", "square", "rsqrt", "erf", "log1p", "expm1", "sgn",
          "isnan", "logical_not", "bitwise_not", "frac", "angle", "real", "imag")


def _g_unary(st, x):
    op = st.rng.choice(_UNARY)
    return op, f"torch.{op}(v{x.index})"


def _g_clamp(st, x):
    rng = st.rng
    lo = rng.choice((None, _scalar(rng, ("int", "float")), f"torch.tensor({_scalar(rng, ('float',))!r}, dtype=torch.{rng.choice(FLOATS)})"))
    hi = rng.choice((None, _scalar(rng, ("int", "float"))))
    return "clamp", f"torch.clamp(v{x.index}, min={lo if isinstance(lo, str) else repr(lo)}, max={hi!r})"


_REDUCTIONS = ("sum", "mean", "prod", "amax", "amin", "std", "var", "norm", "logsumexp",
               "all", "any", "argmax", "argmin", "nansum", "count_nonzero")


def _g_reduce(st, x):
    rng = st.rng
    op = rng.choice(_REDUCTIONS)
    n = len(x.shape)
    dim = rng.choice((None, _dim(rng, n), ()) if n else (None, 0, -1))
    if op in ("std", "var") and dim == () and st.backward:
        # PyTorch bug: std/var over dim=() give a wrong gradient (they reduce over every
        # dim, but the backward treats () as no dim); glasstorch keeps the right one.
        dim = None
    if op in ("argmax", "argmin", "count_nonzero", "logsumexp") and dim == ():
        dim = None
    if op == "logsumexp" and dim is None:
        dim = 0
    dtype = f", dtype=torch.{rng.choice(_CAST_TARGETS)}" if op in (
        "sum", "prod", "mean", "nansum") and rng.random() < 0.2 else ""
    if dim is None:
        return op, f"torch.{op}(v{x.index}{dtype})"
    keep = rng.random() < 0.5 and op != "count_nonzero"
    return op, f"torch.{op}(v{x.index}, dim={dim!r}{', keepdim=True' if keep else ''}{dtype})"


def _g_reduce_pair(st, x):
    rng = st.rng
    op = rng.choice(("max", "min", "median", "sort", "cummax", "kthvalue", "mode", "topk"))
    n = len(x.shape)
    d = _dim(rng, n)
    if op == "median" and x.expanded:
        # PyTorch bug: median(dim) of an expanded tensor (a zero stride) returns wrong
        # values/indices; glasstorch keeps the right answer.
        return None
    extra = ""
    if op in ("kthvalue", "topk"):
        size = x.shape[d] if n else 1
        extra = f", {rng.randint(1, max(size, 1))}"
        if op == "topk":
            return op, f"torch.topk(v{x.index}{extra}, {d})", 2
        return op, f"torch.kthvalue(v{x.index}{extra}, {d})", 2
    if op == "sort":
        return op, f"torch.sort(v{x.index}, {d}, descending={rng.random() < 0.5})", 2
    return op, f"torch.{op}(v{x.index}, {d})", 2


def _g_scan(st, x):
    op = st.rng.choice(("cumsum", "cumprod", "softmax", "log_softmax", "argsort"))
    dtype = f", dtype=torch.{st.rng.choice(_CAST_TARGETS)}" if op != "argsort" and \
        st.rng.random() < 0.2 else ""
    return op, f"torch.{op}(v{x.index}, {_dim(st.rng, len(x.shape))}{dtype})"


def _g_cat(st, x):
    rng = st.rng
    n = len(x.shape)
    if rng.random() < 0.3 or n == 0:
        return "stack", f"torch.stack([v{x.index}, v{x.index}], {rng.randint(-n - 1, n)})"
    d = rng.randrange(n)
    others = [v for v in st.vars if len(v.shape) == n and all(
        a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != d)]
    y = rng.choice(others)
    return "cat", f"torch.cat([v{x.index}, v{y.index}], {d - n if rng.random() < 0.5 else d})"


def _g_matmul(st, x):
    rng = st.rng
    if not x.shape:
        return None
    k = x.shape[-1]
    shape = (k,) if rng.random() < 0.3 else (k, rng.randint(1, 3))
    if rng.random() < 0.25:                       # batched: a batch dim broadcasting with x's
        batch = x.shape[-3] if len(x.shape) >= 3 else rng.randint(1, 3)
        shape = (rng.choice((1, batch)), k, rng.randint(1, 3))
    dtype = x.dtype if rng.random() < 0.8 else None
    y = _add_input(st, shape, dtype)
    if rng.random() < 0.3:
        return "matmul", f"v{x.index} @ v{y.index}"
    return "matmul", f"torch.matmul(v{x.index}, v{y.index})"


def _g_index_read(st, x):
    rng = st.rng
    if not x.shape:
        return None
    if len(x.shape) >= 2 and 0 not in x.shape and rng.random() < 0.2:
        # two index tensors that broadcast together; apart (a slice between them), the
        # indexed dims go first in the result
        last = rng.randint(1, len(x.shape) - 1)
        k = rng.randint(1, 3)
        first = [rng.randint(-x.shape[0], x.shape[0] - 1) for _ in range(k)]
        second = [rng.randint(-x.shape[last], x.shape[last] - 1)
                  for _ in range(rng.choice((1, k)))]
        return "getitem(2 tensors)", (f"v{x.index}[torch.tensor({first}), {':, ' * (last - 1)}"
                                      f"torch.tensor({second})]")
    d = _dim(rng, len(x.shape))
    s = x.shape[d]
    r = rng.random()
    if r < 0.3:
        idx = [rng.randint(-s, s - 1) if s else 0 for _ in range(rng.randint(0, 3))]
        return "index_select", f"torch.index_select(v{x.index}, {d}, torch.tensor({idx}, dtype=torch.int64))"
    if r < 0.55:
        idx = [rng.randint(-s, s - 1) if s else 0 for _ in range(rng.randint(1, 3))]
        return "getitem", f"v{x.index}[{':, ' * (d % len(x.shape))}torch.tensor({idx})]"
    if r < 0.7:
        return "getitem(mask)", f"v{x.index}[torch.tensor({_values(rng, math.prod(x.shape), 'bool')!r}).reshape({x.shape!r})]"
    shape = list(x.shape)
    shape[d] = rng.randint(1, 3)
    if s == 0:
        return None
    # take_along_dim/gather with in-bounds indices only: PyTorch bug, take_along_dim does
    # not check its indices' range (it reads out of bounds); glasstorch raises IndexError.
    idx = [rng.randint(0, s - 1) for _ in range(math.prod(shape))]
    fn = rng.choice(("gather", "take_along_dim"))
    return fn, f"torch.{fn}(v{x.index}, {d}, torch.tensor({idx}, dtype=torch.int64).reshape({tuple(shape)!r}))" \
        if fn == "gather" else \
        f"torch.take_along_dim(v{x.index}, torch.tensor({idx}, dtype=torch.int64).reshape({tuple(shape)!r}), {d})"


def _distinct(rng, size: int, k: int) -> list:
    """k distinct positions in range(size), some written as negative indices."""
    return [p - size if rng.random() < 0.3 else p for p in rng.sample(range(size), k)]


def _source(st, shape, x: _Var) -> str:
    """A tensor to write into x: mostly of x's dtype (others are refused by both), one that
    requires grad in some backward programs."""
    dtype = x.dtype if st.rng.random() < 0.85 else None
    return f"v{_add_input(st, shape, dtype, st.backward and st.rng.random() < 0.6).index}"


def _g_index_write(st, x):
    """Advanced-indexing writes: index_put_ (with accumulate), x[:, idx] = tensor,
    index_add_/index_copy_, scatter_/scatter_add_/scatter_reduce_. A position written twice
    without accumulating is undefined in PyTorch (which write wins): not generated."""
    rng = st.rng
    if not x.shape or 0 in x.shape:
        return None
    v, n = f"v{x.index}", len(x.shape)
    r = rng.random()
    if r < 0.3:
        k = rng.randint(1, 3)
        accumulate = rng.random() < 0.5
        lead = x.shape[:rng.randint(1, min(n, 2))]
        cells = [divmod(c, lead[-1]) if len(lead) == 2 else (c,)
                 for c in (rng.choices(range(math.prod(lead)), k=k) if accumulate else
                           rng.sample(range(math.prod(lead)), min(k, math.prod(lead))))]
        index = ", ".join(f"torch.tensor({[c[i] for c in cells]})" for i in range(len(lead)))
        rest = x.shape[len(lead):]
        shape = rng.choice(((len(cells),) + rest, rest, ()))
        return "index_put_", (f"{v}.index_put_(({index},), {_source(st, shape, x)}, "
                              f"accumulate={accumulate})")
    d = _dim(rng, n)
    s = x.shape[d]
    if r < 0.45:
        idx = _distinct(rng, s, rng.randint(1, s))
        shape = x.shape[:d % n] + (len(idx),) + x.shape[d % n + 1:]
        value = _source(st, shape[rng.randint(0, d % n + 1):], x)
        return "setitem(tensor)", f"{v}[{':, ' * (d % n)}torch.tensor({idx})] = {value}\nv{{out}} = {v}"
    if r < 0.7:
        # no negative indices here: both ops refuse them. Nor a refused index in programs
        # with a backward pass: PyTorch's loop writes the indices before the bad one, then
        # raises before it counts the write; a gradient reading the written tensor (indices
        # from max or sort) would then read what PyTorch left, unspecified.
        op = rng.choice(("index_add_", "index_copy_"))
        idx = rng.sample(range(s), rng.randint(1, s)) if op == "index_copy_" else \
            rng.choices(range(s), k=rng.randint(1, 3))
        if not st.backward and rng.random() < 0.1:
            idx[rng.randrange(len(idx))] = rng.choice((-1, s))
        src = _source(st, x.shape[:d % n] + (len(idx),) + x.shape[d % n + 1:], x)
        alpha = f", alpha={rng.choice((2, -1, 0.5))!r}" if op == "index_add_" and rng.random() < 0.3 else ""
        return op, f"{v}.{op}({d}, torch.tensor({idx}), {src}{alpha})"
    op = rng.choice(("scatter_", "scatter_add_", "scatter_reduce_"))
    shape = list(x.shape)
    shape[d] = rng.randint(1, s)
    columns = np.empty(shape, dtype=np.int64)
    moved = np.moveaxis(columns, d, -1)           # a view: one row per position off dim d
    for row in np.ndindex(moved.shape[:-1]):
        moved[row] = rng.sample(range(s), shape[d]) if op == "scatter_" else \
            rng.choices(range(s), k=shape[d])
    index = f"torch.tensor({columns.reshape(-1).tolist()}).reshape({tuple(shape)!r})"
    if op == "scatter_" and rng.random() < 0.3:
        return op, f"{v}.scatter_({d}, {index}, {_scalar(rng, ('int', 'float'))!r})"
    src = _source(st, tuple(shape), x)
    if op == "scatter_reduce_":
        reduce = rng.choice(("sum", "prod", "mean", "amax", "amin"))
        return op, (f"{v}.scatter_reduce_({d}, {index}, {src}, {reduce!r}, "
                    f"include_self={rng.random() < 0.5})")
    return op, f"{v}.{op}({d}, {index}, {src})"


def _shares_memory(st, a: _Var, b: _Var) -> bool:
    ta, tb = st.ns.get(f"v{a.index}"), st.ns.get(f"v{b.index}")
    return isinstance(ta, glasstorch.Tensor) and isinstance(tb, glasstorch.Tensor) and \
        ta.untyped_storage().data_ptr() == tb.untyped_storage().data_ptr()


def _g_out(st, x):
    """An op writing into out=: a fresh empty tensor, or an existing variable (which may
    overlap an input or have another dtype: both are part of what is compared)."""
    rng = st.rng
    form = rng.choice(("add", "mul", "neg", "sum", "cat", "clamp", "matmul"))
    partner = _partner(st, x) if form in ("add", "mul") else None
    read = [x] + [v for v in st.vars if partner == f"v{v.index}"]
    # An out= sharing memory with an input that the op resizes: PyTorch checks the overlap
    # before the resize (pointwise ops: the result then depends on the order elements are
    # written in) or after it (cat: it raises and leaves out resized over uninitialised
    # memory); both are PyTorch bugs glasstorch does not copy (it refuses). Not generated.
    kept = form != "cat" and all(_broadcastable(v.shape, x.shape) and len(v.shape) <= len(
        x.shape) and all(a <= b for a, b in zip(v.shape[::-1], x.shape[::-1])) for v in read)
    existing = [v for v in st.vars if v.index != x.index and (
        not any(_shares_memory(st, v, r) for r in read) or (v.shape == x.shape and kept))]
    out = (f"v{rng.choice(existing).index}" if existing and rng.random() < 0.4 else
           f"torch.empty({rng.choice((0, 1, 3))}, dtype=torch.{rng.choice((x.dtype,) * 3 + _CAST_TARGETS)})")
    if rng.random() < 0.1 and kept:
        out = f"v{x.index}"
    if form in ("add", "mul"):
        return f"{form}(out=)", f"torch.{form}(v{x.index}, {partner}, out={out})"
    if form == "neg":
        return "neg(out=)", f"torch.neg(v{x.index}, out={out})"
    if form in ("sum", "matmul") and not out.startswith("torch.empty"):
        # a reduction or matmul into memory it reads: PyTorch does not check the overlap
        # and its result is undefined (it resizes, zeroes, then reads the zeroes)
        out = f"torch.empty(0, dtype=torch.{x.dtype})"
    if form == "sum":
        return "sum(out=)", f"torch.sum(v{x.index}, {_dim(rng, len(x.shape))}, out={out})"
    if form == "cat":
        return "cat(out=)", f"torch.cat([v{x.index}, v{x.index}], out={out})"
    if form == "clamp":
        return "clamp(out=)", f"torch.clamp(v{x.index}, min=0, out={out})"
    return "matmul(out=)", f"torch.matmul(v{x.index}, v{x.index}.transpose(0, -1), out={out})"


_GENERATORS = (
    (_g_slice, 8), (_g_transpose, 4), (_g_permute, 3), (_g_diagonal, 3), (_g_narrow, 3),
    (_g_squeeze, 2), (_g_unsqueeze, 2), (_g_expand, 3), (_g_reshape, 4), (_g_select, 2),
    (_g_cast, 3), (_g_inplace, 14), (_g_setitem, 4), (_g_binary, 12), (_g_unary, 6),
    (_g_clamp, 2), (_g_reduce, 6), (_g_reduce_pair, 3), (_g_scan, 3), (_g_cat, 3),
    (_g_matmul, 3), (_g_index_read, 5), (_g_out, 4), (_g_index_write, 4),
)
_GEN_FNS = [g for g, _ in _GENERATORS]
_GEN_WEIGHTS = [w for _, w in _GENERATORS]


def generate(seed: int, backward: bool | None = None) -> Program:
    """A random program of 3-8 ops over one to three inputs; a backward pass in about a
    quarter of them."""
    rng = random.Random(seed)
    st = _State(rng)
    st.backward = rng.random() < 0.25 if backward is None else backward
    for _ in range(rng.choice((1, 1, 2, 3))):
        _add_input(st)
    n_ops = rng.randint(3, 8)
    tries = 0
    while sum(s.op != "input" for s in st.steps) < n_ops and tries < 50:
        tries += 1
        live = [v for v in st.vars if f"v{v.index}" in st.ns]
        recent = live[-3:]
        x = rng.choice(recent if rng.random() < 0.7 else live)
        gen = rng.choices(_GEN_FNS, _GEN_WEIGHTS)[0]
        made = gen(st, x)
        if made is None:
            continue
        op, text = made[0], made[1]
        writes_x = op.endswith("_") or op.startswith("setitem") or op == "maximum(out=self)"
        if writes_x and _stale_view(st, x):
            continue
        n_out = made[2] if len(made) > 2 else 1
        outs = tuple(st.new_var() for _ in range(n_out))
        if "\n" in text:                                # a statement, then its result
            src = text.replace("{out}", str(outs[0]))
        else:
            src = f"{', '.join(f'v{o}' for o in outs)} = {text}"
        reads = tuple(sorted(set(_reads(*_tokens(text)))))
        _execute(st, Step(src, op, reads, outs))
        t = st.ns.get(f"v{x.index}")
        # x[int or slice] = v writes through a view of x; other in-place ops write x itself
        if writes_x and getattr(t, "requires_grad", False) and (
                not op.startswith("setitem") or "torch.tensor(" in text.split("] = ")[0]):
            st.direct.add(id(t))
    return Program(st.steps, st.backward, seed)


def _stale_view(st, x: _Var) -> bool:
    """PyTorch bug: a view made while its base did not require grad, whose memory has since
    been written with values that require grad through another tensor (its base, another
    view, or `view[0] = v`, which writes through a view of it), passes PyTorch's in-place
    check as a leaf that requires grad ("a leaf Variable that requires grad is being used
    in an in-place operation") until its grad_fn is read, after which the same op runs;
    glasstorch treats it as the non-leaf it is. An in-place op on such a view: not
    generated."""
    t = st.ns.get(f"v{x.index}")
    return isinstance(t, glasstorch.Tensor) and t._base is not None and t.requires_grad \
        and not st.born.get(id(t), True) and id(t) not in st.direct


def _tokens(text: str) -> list:
    import re
    return re.findall(r"\bv\d+\b", text)


# ---- minimising -----------------------------------------------------------------------------

def _still(program: Program, key: tuple) -> bool:
    try:
        diffs = run_pair(program)
    except Exception:
        return False
    return bool(diffs) and diffs[0].key() == key


def _shrunk_inputs(step: Step):
    """Variants of an input step with one dimension one smaller (values cut to fit)."""
    shape, dtype, values, rg = step.data
    for d, s in enumerate(shape):
        if s > 1:
            new_shape = shape[:d] + (s - 1,) + shape[d + 1:]
            arr = np.array(values, dtype=object).reshape(shape)
            cut = arr[(slice(None),) * d + (slice(0, s - 1),)]
            yield input_step(step.writes[0], new_shape, dtype, cut.reshape(-1).tolist(), rg)
    if rg:
        yield input_step(step.writes[0], shape, dtype, values, False)


def minimise(program: Program, key: tuple, budget: int = 200) -> Program:
    """The smallest program (fewest steps, then smallest inputs) with the same first
    difference (kind and op) as `program`, found greedily."""
    current = program
    changed = True
    while changed and budget > 0:
        changed = False
        for i in range(len(current.steps) - 1, -1, -1):
            if i >= len(current.steps):
                continue
            budget -= 1
            trial = replace(current, steps=current.steps[:i] + current.steps[i + 1:])
            if _still(trial, key):
                current, changed = trial, True
        if current.backward:
            budget -= 1
            trial = replace(current, backward=False)
            if _still(trial, key):
                current, changed = trial, True
        for i, step in enumerate(current.steps):
            if step.data is None:
                continue
            for smaller in _shrunk_inputs(step):
                budget -= 1
                trial = replace(current, steps=current.steps[:i] + [smaller] +
                                current.steps[i + 1:])
                if budget > 0 and _still(trial, key):
                    current, changed = trial, True
                    break
    return current


def reproducer(program: Program, diff: Difference) -> str:
    """A report of one difference: the minimised program for both libraries."""
    return (f"# {diff.kind} at {diff.op}: {diff.detail}\n"
            f"# PyTorch:\n{program.source('torch')}\n"
            f"# glasstorch: the same lines after `import glasstorch as torch`")


# ---- a campaign ------------------------------------------------------------------------------

@dataclass
class Report:
    programs: int = 0
    differing: int = 0
    crashes: int = 0
    patterns: dict = field(default_factory=dict)     # (kind, ops) -> [count, example]

    @property
    def rate(self) -> float:
        return self.differing / self.programs if self.programs else 0.0


def campaign(programs: int, seed: int = 0, minimise_per_key: int = 1, progress=None) -> Report:
    """Generate and run `programs` programs from seeds seed, seed+1, ...; group the
    differences by kind and the op sequence of their minimised program."""
    report = Report()
    minimised: dict = {}          # first-difference key -> pattern of its minimised program
    try:
        _run_campaign(report, minimised, programs, seed, progress)
    except KeyboardInterrupt:     # stopped early: the report covers the programs run so far
        pass
    return report


def _run_campaign(report, minimised, programs, seed, progress):
    for k in range(programs):
        s = seed + k
        report.programs += 1
        try:
            program = generate(s)
            diffs = run_pair(program)
        except Exception as e:                          # the harness itself failed
            report.crashes += 1
            key = ("harness-crash", type(e).__name__)
            report.patterns.setdefault(key, [0, f"seed {s}: {e!r}"])[0] += 1
            continue
        if progress is not None:
            progress(k, report)
        if not diffs:
            continue
        report.differing += 1
        d = diffs[0]
        raw = d.key()
        if raw not in minimised:
            small = minimise(program, raw)
            ops = tuple(st.op for st in small.steps if st.op != "input")
            minimised[raw] = (d.kind, ops)
            report.patterns.setdefault(minimised[raw], [0, reproducer(small, run_pair(small)[0]
                                                                      if run_pair(small) else d)])
        report.patterns[minimised[raw]][0] += 1


def format_report(report: Report, show: int = 20) -> str:
    lines = [f"programs: {report.programs}  differing: {report.differing} "
             f"({100 * report.rate:.2f}%)  harness crashes: {report.crashes}  "
             f"distinct patterns: {len(report.patterns)}"]
    ranked = sorted(report.patterns.items(), key=lambda kv: -kv[1][0])
    for (kind, ops), (count, example) in ranked[:show]:
        lines.append(f"\n== {count} x {kind}: {' -> '.join(ops) if isinstance(ops, tuple) else ops}")
        lines.append(example)
    return "\n".join(lines)
