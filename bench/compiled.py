"""The compiler's workloads (issue 16): glasstorch's inductor (`compile_fx` on the `make_fx`
graph) against torch eager and `torch.compile` (PyTorch's Inductor on the CPU), same
inputs. Results and compile times are taken in the bench's process; the steady times, with
a WorkerPool, each in a worker of its own ("glasstorch", "torch", "torch.compile"), which
compiles on its untimed first call.

Each row's ratio is compiled glasstorch / torch eager (the issue's targets: at most 0.5 for
the pointwise chains, 1/1.4 for the normalisations); the notes give torch.compile's time,
glasstorch / torch.compile (the target: at most 1), and glasstorch's compile times, cold
(an empty kernel cache) and warm (the same graph again in the same process: inductor's
compiled-graph cache serves it, as PyTorch's FX graph cache; its library is on disk).

The training rows (`c_mlp`, `c_gpt`) compile the model (`torch.compile(model)`, the default
backend) and time whole steps (forward, `loss.backward()`, the optimizer) against torch eager
and torch.compile; their compile times are the first step's time less a steady step's, cold
with empty kernel caches (both libraries' cache directories pointed at fresh temporary
directories) and, for glasstorch, warm (after `torch._dynamo.reset()`, in the same process:
capture and the backward's joint trace run again, the graphs' compiles are served by
inductor's compiled-graph cache; kernels on disk).
"""
from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from .harness import Case, Row, Settings, Target, Workload, _short, compare, time_interleaved
from .training import GPT_BATCH, SEQ, VOCAB, copied_model, gpt
from .workloads import BIG, array, tensor


def _fma_relu(lib):
    a, b, c = (tensor(lib, array(BIG, seed)) for seed in range(3))
    return (lambda a, b, c: lib.relu(a * b + c)), (a, b, c)


def _gelu_chain(lib):
    x = tensor(lib, array(BIG))

    def gelu_chain(x):            # a sigmoid GELU plus a tanh GELU
        return x * lib.sigmoid(1.702 * x) + 0.5 * x * (
            1 + lib.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    return gelu_chain, (x,)


def _layer_norm_residual(lib):
    x, r = tensor(lib, array((8192, 1024), 0)), tensor(lib, array((8192, 1024), 1))
    w, b = tensor(lib, array(1024, 2)), tensor(lib, array(1024, 3))
    layer_norm = lib.nn.functional.layer_norm
    return (lambda x, r, w, b: layer_norm(x + r, (1024,), w, b)), (x, r, w, b)


def _scaled_softmax(lib):
    x = tensor(lib, array((4096, 4096)))
    return (lambda x: lib.softmax(x * 0.125, -1)), (x,)


def _glasstorch_compile(fn, inputs):
    from glasstorch.compiler.inductor import compile_fx
    from glasstorch.fx.experimental.proxy_tensor import make_fx
    return compile_fx(make_fx(fn)(*inputs), list(inputs))


def _compile_times(fn, inputs):
    """(cold, warm) seconds of glasstorch's `compile_fx` (the graph traced once before):
    with an empty kernel cache, then the same graph again."""
    from glasstorch.compiler.inductor import compile_fx
    from glasstorch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(fn)(*inputs)
    old = os.environ.get("GLASSTORCH_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["GLASSTORCH_CACHE_DIR"] = cache
        try:
            start = time.perf_counter()
            compile_fx(gm, list(inputs))
            cold = time.perf_counter() - start
            start = time.perf_counter()
            compile_fx(gm, list(inputs))
            warm = time.perf_counter() - start
        finally:
            if old is None:
                os.environ.pop("GLASSTORCH_CACHE_DIR")
            else:
                os.environ["GLASSTORCH_CACHE_DIR"] = old
    return cold, warm


def _pointwise_case(setup):
    """worker_setup of a compiled-function workload: the call each label times."""
    def case(label, lib):
        fn, inputs = setup(lib)
        if label == "glasstorch":
            fn = _glasstorch_compile(fn, inputs)
        elif label == "torch.compile":
            fn = lib.compile(fn)
        return Case(lambda: fn(*inputs))
    return case


def _timed_by(workers, name, calls, settings) -> dict:
    """The steady times of `calls` ({label: call}): in the workers where given (each label
    rebuilds its call there), else interleaved in this process."""
    if workers is None:
        return time_interleaved(calls, settings)
    return workers.time(name, list(calls), settings)


def _measure(name, description, setup, target, rtol, atol):
    def run(settings: Settings, workers=None) -> Row:
        import torch

        import glasstorch
        row = Row(name, description, target=target)
        g_fn, g_in = setup(glasstorch)
        t_fn, t_in = setup(torch)
        cold, warm = _compile_times(g_fn, g_in)
        compiled = _glasstorch_compile(g_fn, g_in)
        calls = {"glasstorch": lambda: compiled(*g_in), "torch": lambda: t_fn(*t_in)}
        notes = []
        try:
            start = time.perf_counter()
            t_compiled = torch.compile(t_fn)
            t_compiled(*t_in)
            notes.append(f"torch.compile first call {time.perf_counter() - start:.1f} s")
            calls["torch.compile"] = lambda: t_compiled(*t_in)
        except Exception as e:      # PyTorch's inductor needs a working C++ toolchain
            notes.append(f"torch.compile failed: {_short(e)}")
        reference = (calls["torch"](),)
        for lib in ("glasstorch", "torch.compile"):
            if lib in calls:
                problem = compare((calls[lib](),), reference, rtol, atol)
                if problem:
                    row.error = f"error: {lib} differs from torch: {problem}"
                    return row
        row.times = _timed_by(workers, name, calls, settings)
        row.metric = row.times["glasstorch"] / row.times["torch"]
        if "torch.compile" in row.times:
            tc = row.times["torch.compile"]
            notes.insert(0, f"torch.compile {tc * 1e3:.1f} ms; glasstorch/torch.compile "
                            f"{row.times['glasstorch'] / tc:.2f}")
        notes.append(f"glasstorch compile cold {cold:.2f} s, warm {warm:.2f} s")
        row.extra = "; ".join(notes)
        return row
    return Workload(name, description, target=target, run=run,
                    worker_setup=_pointwise_case(setup))


def gelu_ln_mlp(lib):
    """The bench MLP with GELU and LayerNorm after each hidden layer."""
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 256), nn.GELU(), nn.LayerNorm(256),
                         nn.Linear(256, 256), nn.GELU(), nn.LayerNorm(256),
                         nn.Linear(256, 10))


class _CacheDirs:
    """Both libraries' kernel caches in fresh temporary directories (a cold compile)."""

    NAMES = ("GLASSTORCH_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")

    def __enter__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.old = {n: os.environ.get(n) for n in self.NAMES}
        for n in self.NAMES:
            os.environ[n] = os.path.join(self.tmp.name, n.lower())
        return self

    def __exit__(self, *exc):
        for n, v in self.old.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v
        self.tmp.cleanup()


def _train_setup(lib, build, make_optimizer, x, y, compiled: bool):
    """(step, model): one training step of `build`'s model, compiled or eager."""
    model = copied_model(lib, build)
    optimizer = make_optimizer(lib, model.parameters())
    run = lib.compile(model) if compiled else model
    inputs, targets = lib.from_numpy(x.copy()), lib.from_numpy(y.copy())
    cross_entropy = lib.nn.functional.cross_entropy

    def step():
        optimizer.zero_grad()
        loss = cross_entropy(run(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss
    return step, model


def _first_call(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _training(name, description, build, make_optimizer, x, y):
    def worker_setup(label, lib) -> Case:
        step, _ = _train_setup(lib, build, make_optimizer, x, y, label != "torch")
        return Case(step)

    def run(settings: Settings, workers=None) -> Row:
        import torch

        import glasstorch
        row = Row(name, description, target=Target(1.0))
        steps, models = {}, {}
        with _CacheDirs():
            glasstorch._dynamo.reset()
            torch._dynamo.reset()
            for lib, module, compiled in (("glasstorch", glasstorch, True),
                                          ("torch", torch, False),
                                          ("torch.compile", torch, True)):
                steps[lib], models[lib] = _train_setup(module, build, make_optimizer, x, y,
                                                       compiled)
            firsts = {lib: _first_call(steps[lib]) for lib in ("glasstorch", "torch.compile")}
            glasstorch._dynamo.reset()     # the same graphs again, their kernels on disk
            firsts["glasstorch warm"] = _first_call(steps["glasstorch"])
        steps["torch"]()                   # every library two steps, then the third's loss
        steps["torch"]()
        steps["torch.compile"]()
        losses = {lib: steps[lib]().detach() for lib in ("torch", "glasstorch",
                                                        "torch.compile")}
        problems = []
        for lib in ("glasstorch", "torch.compile"):
            problem = compare((losses[lib],), (losses["torch"],), 1e-4, 1e-5)
            if problem:
                problems.append(f"{lib} differs from torch eager: {problem}")
        if problems:
            row.error = "error: " + "; ".join(problems)
            return row
        row.times = _timed_by(workers, name, steps, settings)
        row.metric = row.times["glasstorch"] / row.times["torch"]
        tc = row.times["torch.compile"]
        cold = firsts["glasstorch"] - row.times["glasstorch"]
        warm = firsts["glasstorch warm"] - row.times["glasstorch"]
        row.extra = (f"torch.compile {tc * 1e3:.1f} ms; glasstorch/torch.compile "
                     f"{row.times['glasstorch'] / tc:.2f}; compile cold: glasstorch "
                     f"{cold:.2f} s, torch.compile {firsts['torch.compile'] - tc:.2f} s; "
                     f"glasstorch warm {warm:.2f} s")
        return row
    return Workload(name, description, target=Target(1.0), run=run,
                    worker_setup=worker_setup)


_rng = np.random.default_rng(11)
POINTWISE, NORMALISATION = Target(0.5), Target(round(1 / 1.4, 3))

WORKLOADS = [
    _measure("c_fma_relu", "compiled relu(a*b+c), 10M float32", _fma_relu, POINTWISE,
             1e-6, 1e-6),
    _measure("c_gelu", "compiled sigmoid-GELU + tanh-GELU chain, 10M float32", _gelu_chain,
             POINTWISE, 1e-4, 1e-5),
    _measure("c_layernorm", "compiled layer_norm(x + r), 8192x1024 float32",
             _layer_norm_residual, NORMALISATION, 1e-4, 1e-4),
    _measure("c_softmax", "compiled softmax(x * 0.125, -1), 4096x4096 float32",
             _scaled_softmax, NORMALISATION, 1e-4, 1e-8),
    _training("c_mlp", "compiled MLP step: batch 128, 784-256-256-10, GELU + LayerNorm, "
              "Adam", gelu_ln_mlp, lambda lib, p: lib.optim.Adam(p, lr=1e-3),
              array((128, 784), 5), _rng.integers(0, 10, 128)),
    _training("c_gpt", "compiled tiny GPT step (bench `gpt`), AdamW", gpt,
              lambda lib, p: lib.optim.AdamW(p, lr=1e-3),
              _rng.integers(0, VOCAB, (GPT_BATCH, SEQ)),
              _rng.integers(0, VOCAB, GPT_BATCH * SEQ)),
]
