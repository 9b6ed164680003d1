"""torch.distributed on two ranks of this machine: glasstorch (Open MPI) against PyTorch's
gloo, same sizes, medians of repeated runs.

    python -m bench.distributed

Prints, for all_reduce of 1, 16 and 64 MiB of float32, each library's time and bus
bandwidth (2(n-1)/n * bytes / time, NCCL-tests' convention); then the DDP training step of an
MLP on two ranks against one rank, and how much of the all-reduce time DDP hides behind the
backward pass (1 - (2-rank step - 1-rank step) / all-reduce time of the gradients)."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SIZES_MIB = (1, 16, 64)
REPEATS = 15


def _allreduce_times(lib, dist, rank):
    out = {}
    for mib in SIZES_MIB:
        t = lib.ones(mib * 1024 * 1024 // 4)
        dist.all_reduce(t)
        times = []
        for _ in range(REPEATS):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - start)
        out[mib] = statistics.median(times)
    return out


def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(512, 1024), lib.nn.GELU(), lib.nn.Linear(1024, 1024),
                             lib.nn.GELU(), lib.nn.Linear(1024, 10))


def _step_times(lib, dist, wrap):
    model = _mlp(lib)
    net = wrap(model)
    opt = lib.optim.SGD(net.parameters(), lr=0.01)
    x, y = lib.randn(64, 512), lib.randint(0, 10, (64,))
    times = []
    for i in range(REPEATS + 3):
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        lib.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - start)
    grads = sum(p.numel() for p in model.parameters()) * 4
    return statistics.median(times), grads


def rank_main(which: str, result_path: str) -> None:
    """One rank of one library's measurement (started twice by main)."""
    if which == "glasstorch":
        import glasstorch as lib
        import glasstorch.distributed as dist
        from glasstorch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo")
    else:
        import torch as lib
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        lib.set_num_threads(1)
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29531",
                                rank=int(os.environ["RANK"]), world_size=2)
    rank = dist.get_rank()
    result = {"allreduce": _allreduce_times(lib, dist, rank)}
    result["ddp_step"], nbytes = _step_times(lib, dist, DDP)
    result["local_step"], _ = _step_times(lib, dist, lambda m: m)
    grad = lib.ones(nbytes // 4)
    times = []
    for _ in range(REPEATS):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(grad)
        times.append(time.perf_counter() - start)
    result["grad_allreduce"] = statistics.median(times)
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def _run(which: str) -> dict:
    path = tempfile.mktemp(suffix=".json")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(here, "src"), here,
                                         env.get("PYTHONPATH", "")])
    code = f"from bench.distributed import rank_main; rank_main({which!r}, {path!r})"
    if which == "glasstorch":
        script = tempfile.mktemp(suffix=".py")
        with open(script, "w") as f:
            f.write(code + "\n")
        subprocess.run([sys.executable, "-m", "glasstorch.distributed.run",
                        "--nproc-per-node", "2", script], env=env, check=True)
    else:
        procs = [subprocess.Popen([sys.executable, "-c", code], env=dict(env, RANK=str(r)))
                 for r in range(2)]
        for p in procs:
            if p.wait():
                raise SystemExit("the PyTorch gloo run failed")
    with open(path) as f:
        return json.load(f)


def main() -> int:
    results = {which: _run(which) for which in ("glasstorch", "torch")}
    print("all_reduce, 2 ranks, float32 (median of 15):")
    print(f"{'size':>8} {'glasstorch':>22} {'torch gloo':>22} {'ratio':>7}")
    for mib in SIZES_MIB:
        g, t = results["glasstorch"]["allreduce"][str(mib)], results["torch"]["allreduce"][str(mib)]
        bus = lambda s: mib / 1024 / s          # (2(n-1)/n = 1 for two ranks) GiB/s
        print(f"{mib:>5} MiB {g * 1e3:9.2f} ms {bus(g):6.2f} GiB/s "
              f"{t * 1e3:9.2f} ms {bus(t):6.2f} GiB/s {g / t:7.2f}")
    for which in ("glasstorch", "torch"):
        r = results[which]
        overhead = r["ddp_step"] - r["local_step"]
        hidden = 1 - overhead / r["grad_allreduce"] if r["grad_allreduce"] else 0.0
        print(f"{which}: MLP step {r['local_step'] * 1e3:.1f} ms on 1 rank, "
              f"{r['ddp_step'] * 1e3:.1f} ms with DDP on 2 ranks; gradient all-reduce "
              f"{r['grad_allreduce'] * 1e3:.1f} ms, {max(hidden, 0):.0%} of it hidden")
    return 0


if __name__ == "__main__":
    sys.exit(main())
