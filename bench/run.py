"""glasstorch and PyTorch side by side, in one process: per-call time of a few ops.

    python bench/run.py              # a table
    python bench/run.py --markdown   # the section for BENCHMARKS.md

Each case is timed with timeit: `--repeat` rounds, each round timing glasstorch and then
torch for about `--min-time` seconds (interleaved, so a noisy neighbour slows both), and the
median per-call time of the rounds is reported with the ratio glasstorch / torch. Both
libraries run with their default thread settings (unless `--torch-threads` is given); the
thread counts are printed.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import timeit

import numpy as np
import torch

import glasstorch
from glasstorch import cli


def _add(lib, n):
    a, b = lib.ones(n, dtype=lib.float32), lib.ones(n, dtype=lib.float32)
    return "lib.add(a, b)", {"lib": lib, "a": a, "b": b}


def _add_inplace(lib, n):
    a, b = lib.ones(n, dtype=lib.float32), lib.ones(n, dtype=lib.float32)
    return "a.add_(b)", {"lib": lib, "a": a, "b": b}


def _forward_backward(lib, n):
    x = lib.ones(n, dtype=lib.float32, requires_grad=True)

    def step():
        x.grad = None
        y = (x * 2 + 1).sum()
        y.backward()
        return x.grad
    return "step()", {"step": step}



def _array(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _conv2d(lib):
    F = lib.nn.functional
    x = lib.from_numpy(_array((64, 3, 32, 32)))
    w = lib.from_numpy(_array((32, 3, 3, 3), 1) * 0.1).requires_grad_()
    b = lib.zeros(32, requires_grad=True)

    def step():
        w.grad = b.grad = None
        F.conv2d(x, w, b, padding=1).square().mean().backward()
        return w.grad
    return "step()", {"step": step}


def _softmax(lib):
    x = lib.from_numpy(_array((4096, 4096)))
    return "F.softmax(x, dim=-1)", {"F": lib.nn.functional, "x": x}


def _cross_entropy(lib):
    x = lib.from_numpy(_array((4096, 4096)))
    y = lib.from_numpy(np.random.default_rng(2).integers(0, 4096, 4096))
    return "F.cross_entropy(x, y)", {"F": lib.nn.functional, "x": x, "y": y}


def _copied(lib, build):
    """The model built in torch (seeded) and, for glasstorch, with torch's weights copied."""
    torch.manual_seed(0)
    reference = build(torch)
    if lib is torch:
        return reference
    model = build(lib)
    model.load_state_dict({k: lib.from_numpy(v.detach().numpy().copy())
                           for k, v in reference.state_dict().items()})
    return model


def _train_step(lib, model, optimizer, x, y):
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()
    return "step()", {"step": step}


def _mlp_step(lib):
    model = _copied(lib, lambda L: L.nn.Sequential(
        L.nn.Linear(784, 256), L.nn.ReLU(), L.nn.Linear(256, 256), L.nn.ReLU(),
        L.nn.Linear(256, 10)))
    x = lib.from_numpy(_array((128, 784)))
    y = lib.from_numpy(np.random.default_rng(3).integers(0, 10, 128))
    return _train_step(lib, model, lib.optim.Adam(model.parameters(), lr=1e-3), x, y)


def _cnn_step(lib):
    model = _copied(lib, lambda L: L.nn.Sequential(
        L.nn.Conv2d(1, 16, 3, padding=1), L.nn.ReLU(), L.nn.MaxPool2d(2),
        L.nn.Conv2d(16, 32, 3, padding=1), L.nn.ReLU(), L.nn.MaxPool2d(2),
        L.nn.Flatten(), L.nn.Linear(32 * 7 * 7, 10)))
    x = lib.from_numpy(_array((64, 1, 28, 28)))
    y = lib.from_numpy(np.random.default_rng(4).integers(0, 10, 64))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return _train_step(lib, model, optimizer, x, y)


class _TinyGPT:
    """2 pre-norm transformer blocks, d=128, 4 heads, causal, over a 64-character vocab."""

    @staticmethod
    def build(L):
        nn = L.nn

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(64, 128)
                self.pos = nn.Embedding(64, 128)
                layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True,
                                                   norm_first=True)
                self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
                self.head = nn.Linear(128, 64)
                self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(64))

            def forward(self, idx):
                x = self.tok(idx) + self.pos(L.arange(idx.shape[1]))
                return self.head(self.blocks(x, mask=self.mask, is_causal=True)).flatten(0, 1)
        return GPT()


def _gpt_step(lib):
    model = _copied(lib, _TinyGPT.build)
    rng = np.random.default_rng(5)
    x = lib.from_numpy(rng.integers(0, 64, (16, 64)))
    y = lib.from_numpy(rng.integers(0, 64, 16 * 64))
    return _train_step(lib, model, lib.optim.AdamW(model.parameters(), lr=1e-3), x, y)


CASES = [
    ("add, 16 float32", lambda lib: _add(lib, 16)),
    ("add, 1000x1000 float32", lambda lib: _add(lib, (1000, 1000))),
    ("add_ (in-place), 16 float32", lambda lib: _add_inplace(lib, 16)),
    ("(x*2+1).sum().backward(), 16 float32", lambda lib: _forward_backward(lib, 16)),
    ("conv2d fwd+bwd, 64x3x32x32, 3x3x32", _conv2d),
    ("softmax, 4096x4096", _softmax),
    ("cross_entropy, 4096x4096", _cross_entropy),
    ("MLP step (128, 784-256-256-10, Adam)", _mlp_step),
    ("CNN step (64x1x28x28, 2 conv, SGD momentum)", _cnn_step),
    ("tiny GPT step (2 blocks, d=128, seq 64, batch 16, AdamW)", _gpt_step),
]


def _per_call(stmt: str, env: dict, min_time: float) -> tuple:
    """(timer, number of calls per measurement) giving about `min_time` seconds."""
    timer = timeit.Timer(stmt, globals=env)
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= min_time:
            return timer, number
        number = max(number * 2, int(number * min_time / max(elapsed, 1e-9)))


def _check_same(case, results) -> None:
    """Both libraries compute the same values (to float32 rounding) before either is timed."""
    ours, theirs = (np.asarray(r.detach().numpy()) for r in results)
    if ours.shape != theirs.shape or not np.allclose(ours, theirs, rtol=1e-4, atol=1e-5):
        raise SystemExit(f"{case}: glasstorch and torch disagree; not timing it")


def measure(repeat: int, min_time: float) -> list:
    rows = []
    for name, make in CASES:
        setups = [make(glasstorch), make(torch)]
        _check_same(name, [eval(stmt, dict(env)) for stmt, env in setups])
        timers = [_per_call(stmt, env, min_time) for stmt, env in setups]
        samples = ([], [])
        for _ in range(repeat):
            for (timer, number), out in zip(timers, samples):
                out.append(timer.timeit(number) / number)
        ours, theirs = statistics.median(samples[0]), statistics.median(samples[1])
        rows.append((name, ours, theirs, ours / theirs))
    return rows


def _cpu_model() -> str:
    if shutil.which("lscpu"):
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    return cli.collect_info()["cpu"]


def machine() -> dict:
    info = cli.collect_info()
    return {
        "date": datetime.date.today().isoformat(),
        "cpu": f"{_cpu_model()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "glasstorch": f"{glasstorch.__version__} (NumPy {np.__version__}, {info['blas']}, "
                      f"BLAS threads: {info['blas_threads']})",
        "torch": f"{torch.__version__} (threads: {torch.get_num_threads()}, "
                 f"interop threads: {torch.get_num_interop_threads()})",
    }


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def text_table(rows, env) -> str:
    lines = [f"{k}: {v}" for k, v in env.items()] + [""]
    width = max(len(r[0]) for r in rows)
    lines.append(f"{'case'.ljust(width)}  {'glasstorch':>11}  {'torch':>11}  {'ratio':>7}")
    for name, ours, theirs, ratio in rows:
        lines.append(f"{name.ljust(width)}  {_time(ours):>11}  {_time(theirs):>11}  "
                     f"{ratio:6.1f}x")
    return "\n".join(lines)


def markdown_table(rows, env, repeat: int) -> str:
    lines = [f"- Date: {env['date']}", f"- Machine: {env['cpu']}",
             f"- Python {env['python']}", f"- glasstorch {env['glasstorch']}",
             f"- PyTorch {env['torch']}",
             f"- Median of {repeat} rounds of timeit per case; ratio = glasstorch / torch "
             "(lower is better for glasstorch).", "",
             "| case | glasstorch | torch | ratio |", "|---|---:|---:|---:|"]
    for name, ours, theirs, ratio in rows:
        lines.append(f"| {name} | {_time(ours)} | {_time(theirs)} | {ratio:.1f}x |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a BENCHMARKS.md table")
    parser.add_argument("--repeat", type=int, default=9, help="timing rounds per case")
    parser.add_argument("--min-time", type=float, default=0.1,
                        help="seconds each measurement runs for")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads(N) first (default: torch's own choice)")
    args = parser.parse_args(argv)
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    rows = measure(args.repeat, args.min_time)
    env = machine()
    print(markdown_table(rows, env, args.repeat) if args.markdown else text_table(rows, env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
