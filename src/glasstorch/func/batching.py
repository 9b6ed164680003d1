"""The FuncTorchBatched key's kernel: one batched op per call on BatchedTensors.

A call with a BatchedTensor argument reaches `batched_kernel`, which takes the highest vmap
level among the arguments and runs the op's batching rule for it (func/batching_rules.py):
the rule gets the op and the arguments, unwraps those batched at that level, calls ops on
the physical values (which may be BatchedTensors of lower levels: those calls dispatch
again) and wraps the result. Ops without a rule decompose when they have a
CompositeImplicitAutograd kernel (its ops then meet their own rules), and otherwise run the
*fallback*: one call per example, stacked. `fallback_ops()` names the ops that took it.
"""
from __future__ import annotations

from collections import Counter

from ..core.tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch.keys import DispatchKey
from ..ops.shape.joining import stack
from ._levels import vmap_level
from .batched_tensor import BatchedTensor, wrap

RULES: dict = {}          # qualified op name -> rule(op, level, args)
SAME_RULES: dict = {}     # random op name -> its rule under randomness='same'
_TAG_RULES: dict = {}     # op tag ('pointwise', 'reduction') -> rule
fallback_counts: Counter = Counter()   # op name -> calls that ran one op per example

RANDOM_OPS = frozenset((
    "aten::uniform_", "aten::normal_", "aten::bernoulli_.float", "aten::bernoulli_.Tensor",
    "aten::random_.from", "aten::random_.to", "aten::random_", "aten::exponential_",
    "aten::geometric_", "aten::log_normal_", "aten::cauchy_", "aten::bernoulli",
    "aten::multinomial", "aten::poisson", "aten::normal.Tensor_float",
    "aten::normal.float_Tensor", "aten::normal.Tensor_Tensor", "aten::rand_like",
    "aten::rand_like.generator", "aten::randn_like", "aten::randn_like.generator",
    "aten::randint_like", "aten::randint_like.generator", "aten::randint_like.low_dtype",
    "aten::randint_like.low_generator_dtype", "aten::rrelu_with_noise",
    "aten::rrelu_with_noise_", "aten::native_dropout"))

RANDOMNESS_ERROR = ("vmap: called random operation while in randomness error mode. Please "
                    "either use the 'same' or 'different' randomness flags on vmap or perform "
                    "the randomness operation out of vmap")


def rule(*names):
    """Decorator: the batching rule of the named operators."""
    def register(fn):
        for name in names:
            RULES[name] = fn
        return fn
    return register


def tag_rule(tag):
    def register(fn):
        _TAG_RULES[tag] = fn
        return fn
    return register


def fallback_ops() -> list:
    """The operators that ran the per-example fallback since the last reset, most used first."""
    return [name for name, _ in fallback_counts.most_common()]


def _level_of(op, args) -> int:
    """The innermost vmap level among the call's BatchedTensors: the one this call handles."""
    level = 0
    for i in op.tensor_positions:
        a = args[i]
        if a.__class__ is BatchedTensor:
            level = max(level, a._level)
        elif isinstance(a, (list, tuple)):
            for t in a:
                if t.__class__ is BatchedTensor:
                    level = max(level, t._level)
    return level


def find_rule(op):
    """The op's own rule, else its tag's (pointwise, reduction, scan), else its decomposition,
    else the per-example fallback."""
    fn = RULES.get(op.name)
    if fn is not None:
        return fn
    for tag in op.tags:
        if tag in _TAG_RULES and not op.info.get("out"):
            return _TAG_RULES[tag]
    if "CompositeImplicitAutograd" in op.kernels:
        return decompose
    return loop_fallback


def batched_kernel(op, ks, *args):
    level = _level_of(op, args)
    if op.name in RANDOM_OPS:
        randomness = vmap_level(level).randomness
        if randomness == "error":
            raise RuntimeError(RANDOMNESS_ERROR)
        if randomness == "same":
            return SAME_RULES.get(op.name, _same_unsupported)(op, level, args)
    return find_rule(op)(op, level, args)


def _same_unsupported(op, level, args):
    raise RuntimeError(f"vmap: randomness='same' is not supported for {op.name}; use "
                       "randomness='different' or call it outside vmap")


def decompose(op, level, args):
    """A CompositeImplicitAutograd op: run its decomposition on the BatchedTensors."""
    return op.kernels["CompositeImplicitAutograd"](*args)


# ---- the per-example fallback ----------------------------------------------------------------

def _example(x, level, i):
    if x.__class__ is BatchedTensor and x._level == level:
        return x._value.select(x._bdim, i)
    if isinstance(x, (list, tuple)) and any(isinstance(t, BatchedTensor) for t in x):
        return type(x)(_example(t, level, i) for t in x)
    return x


INPLACE_ERROR = (
    "vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` in "
    "extra_args that has more elements than `self`. This happened due to `other` being "
    "vmapped over but `self` not being vmapped over {where}. Please try to use "
    "out-of-place operators instead of {op}. If said operator is being called inside the "
    "PyTorch framework, please file a bug report instead.")


def check_inplace_self(op, level, self, name="inplace arithmetic"):
    """An in-place op may write a batch only into a tensor batched at this level."""
    if not (self.__class__ is BatchedTensor and self._level == level):
        where = "in a vmap" if name == "inplace arithmetic" else f"at level {level}"
        raise RuntimeError(INPLACE_ERROR.format(op=name, where=where))


def loop_fallback(op, level, args):
    """One call per example, results stacked along a new batch dimension (0)."""
    fallback_counts[op.name] += 1
    size = vmap_level(level).batch_size
    mutated = op.info.get("mutated") or ()
    for i in mutated:
        check_inplace_self(op, level, args[i], f"{op.schema.namespace}::{op.schema.name}")
    results = [op(*(_example(a, level, i) for a in args)) for i in range(size)]
    if mutated:
        return args[mutated[0]]
    first = results[0]
    if isinstance(first, Tensor):
        return wrap(stack(results), 0, level)
    if isinstance(first, (tuple, list)) and all(isinstance(r, Tensor) for r in first):
        return type(first)(wrap(stack([r[k] for r in results]), 0, level)
                           for k in range(len(first)))
    if all(r == first for r in results):
        return first
    raise RuntimeError(f"vmap: {op.name} returned a different non-Tensor value for each "
                       "example; vmap cannot batch it")


def _install() -> None:
    dispatcher.register_fallback(DispatchKey.FuncTorchBatched, batched_kernel)
