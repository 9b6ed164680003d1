"""The caching allocator against the plain CPU allocator: `python bench/allocator.py`.

1. Replay: one training step of the bench's MLP is recorded with the memory history (every
   allocation and free, in order, with its size); the sequence is then replayed on each
   allocator alone, timing allocate + free per event.
2. The training step itself, timed under each allocator (median of rounds, interleaved).
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import glasstorch as torch
from glasstorch.memory import raw_backends
from glasstorch.memory.caching_allocator import CachingAllocator
from glasstorch.memory.cpu_allocator import CPUAllocator


def mlp_step():
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((128, 784), np.float32))
    y = torch.from_numpy(np.random.default_rng(1).integers(0, 10, 128))

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return step


def recorded_events(step) -> list:
    step()                                    # optimizer state exists: a steady-state step
    torch.memory._record_memory_history(context=None)      # sizes only, no stacks
    step()
    trace = torch.memory._snapshot()["device_traces"][0]
    torch.memory._record_memory_history(enabled=None)
    return [(e["action"] == "alloc", e["addr"], e["size"]) for e in trace]


def replay(allocator_factory, events, rounds=20) -> float:
    """Seconds per event (allocate or free), median over rounds."""
    samples = []
    for _ in range(rounds):
        allocator = allocator_factory()
        live = {}
        start = time.perf_counter()
        for is_alloc, addr, size in events:
            if is_alloc:
                live[addr] = allocator.allocate(size)
            else:
                buf = live.pop(addr, None)
                if buf is not None:
                    allocator.free(size, buf)
                    del buf
        samples.append((time.perf_counter() - start) / len(events))
        live.clear()
    return statistics.median(samples)


def step_time(step, rounds=15) -> tuple:
    times = {"default": [], "caching": []}
    for _ in range(rounds):
        for name in times:
            torch.memory.set_cpu_allocator(name)
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    torch.memory.set_cpu_allocator("default")
    return statistics.median(times["default"]), statistics.median(times["caching"])


def main() -> int:
    step = mlp_step()
    events = recorded_events(step)
    plain = replay(CPUAllocator, events)
    caching = replay(lambda: raw_backends.HostCachingAllocator(
        CachingAllocator(raw_backends.HostBackend())), events)
    print(f"MLP step (128, 784-256-256-10, Adam): {len(events)} allocation events "
          f"({sum(1 for e in events if e[0])} allocations)")
    print(f"replayed allocate/free per event: plain {plain * 1e6:.1f} us, "
          f"caching {caching * 1e6:.1f} us ({caching / plain:.2f}x)")
    d, c = step_time(step)
    print(f"training step: default allocator {d * 1e3:.2f} ms, caching {c * 1e3:.2f} ms "
          f"({c / d:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
