"""Peak memory of a training step with and without activation checkpointing:

    python bench/checkpoint_memory.py

A 16-block MLP (width 256, batch 4096: activations dominate) runs forward and backward once plainly and once with
`utils.checkpoint.checkpoint_sequential` (4 segments); the peak is the allocator's exact
count of live tensor bytes during the step (PyTorch has no such count on the CPU; its RSS
mixes in the allocator's caching, so it is not shown). The two runs' gradients are checked
to be equal.
"""
from __future__ import annotations

import sys

import numpy as np

import glasstorch
from glasstorch.utils.checkpoint import checkpoint_sequential

WIDTH, BATCH, BLOCKS, SEGMENTS = 256, 4096, 16, 4


def model(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU())
                           for _ in range(BLOCKS)])


def glasstorch_peak(use_checkpoint: bool):
    net = model(glasstorch)
    x = glasstorch.from_numpy(np.random.default_rng(0).standard_normal(
        (BATCH, WIDTH)).astype(np.float32)).requires_grad_()
    glasstorch.memory.reset_peak_memory_stats("cpu")
    before = glasstorch.memory.memory_allocated("cpu")
    if use_checkpoint:
        out = checkpoint_sequential(net, SEGMENTS, x, use_reentrant=False)
    else:
        out = net(x)
    out.square().mean().backward()
    peak = glasstorch.memory.max_memory_allocated("cpu") - before
    return peak, x.grad.numpy().copy()


def _mib(n):
    return f"{n / 2**20:.1f} MiB"


def main() -> int:
    plain, g_plain = glasstorch_peak(False)
    saved, g_saved = glasstorch_peak(True)
    if not np.allclose(g_plain, g_saved, rtol=1e-4, atol=1e-6):
        raise SystemExit("checkpointed gradients differ from the plain run")
    print(f"model: {BLOCKS} x (Linear({WIDTH}, {WIDTH}) + GELU), batch {BATCH}, "
          f"{SEGMENTS} checkpoint segments")
    print(f"{'':28}{'plain':>12}{'checkpoint':>14}{'saved':>9}")
    print(f"{'glasstorch (allocator peak)':28}{_mib(plain):>12}{_mib(saved):>14}"
          f"{1 - saved / plain:>9.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
