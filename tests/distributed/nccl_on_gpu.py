"""Run by scripts/gpu-check on a machine with a GPU: backend="nccl" in a world of one process
on real CuPy and NCCL, so that every kind of call the engine makes (types, reductions,
groups of sends and receives, streams, events) meets the real library once. Values are
checked against what one rank must give. The last line is "key: ..." for the summary.

Two ranks on one GPU are not tried: NCCL refuses two ranks of a communicator on the same
device ("Duplicate GPU detected"); the two-rank logic is tested on the CPU with fake_nccl.py."""
import time

import cupy
from cupy.cuda import nccl

import glasstorch as torch
import glasstorch.distributed as dist

start = time.perf_counter()
assert cupy.cuda.runtime.getDeviceCount() > 0, "CuPy sees no GPU"
assert dist.is_nccl_available()
dist.init_process_group("nccl")
assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "nccl")
Op = dist.ReduceOp
checks = 0


def check(got, expected, what):
    global checks
    assert got.device.type == "cuda", what
    assert got.cpu().tolist() == expected, f"{what}: {got.cpu().tolist()} != {expected}"
    checks += 1


for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
              torch.uint8, torch.int32, torch.int64):
    for op in (Op.SUM, Op.PRODUCT, Op.MIN, Op.MAX):
        t = torch.arange(1, 5, device="cuda").to(dtype)
        dist.all_reduce(t, op=op)
        check(t, torch.arange(1, 5).to(dtype).tolist(), f"all_reduce {op} {dtype}")
t = torch.arange(4.0, device="cuda")
dist.all_reduce(t, op=Op.AVG)
check(t, [0.0, 1.0, 2.0, 3.0], "all_reduce AVG")
dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
check(t, [0.0, 2.0, 4.0, 6.0], "all_reduce PREMUL_SUM(2)")
flags = torch.tensor([True, False], device="cuda")
dist.all_reduce(flags)
check(flags, [True, False], "all_reduce of bools")
c = torch.tensor([1 + 2j], device="cuda")
dist.all_reduce(c)
check(c, [1 + 2j], "all_reduce of complex64")

# async on a side stream: the work's event, waited for by the stream current at wait()
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    big = torch.ones(1 << 20, device="cuda")
    work = dist.all_reduce(big, async_op=True)
    work.wait()
    total = big.sum()
side.synchronize()
assert total.item() == float(1 << 20) and work.is_completed()
checks += 1

t = torch.arange(4.0, device="cuda")
dist.broadcast(t, src=0)
check(t, [0.0, 1.0, 2.0, 3.0], "broadcast")
dist.reduce(t, dst=0)
check(t, [0.0, 1.0, 2.0, 3.0], "reduce")
out = torch.zeros(4, device="cuda")
dist.all_gather_into_tensor(out, t)
check(out, [0.0, 1.0, 2.0, 3.0], "all_gather_into_tensor")
outs = [torch.zeros(4, device="cuda")]
dist.all_gather(outs, t)
check(outs[0], [0.0, 1.0, 2.0, 3.0], "all_gather (a group of broadcasts)")
dist.reduce_scatter_tensor(out, t * 3)
check(out, [0.0, 3.0, 6.0, 9.0], "reduce_scatter_tensor")
dist.all_to_all_single(out, t)
check(out, [0.0, 1.0, 2.0, 3.0], "all_to_all_single (a group of send/recv to itself)")
g = [torch.zeros(4, device="cuda")]
dist.gather(t * 2, g, dst=0)
check(g[0], [0.0, 2.0, 4.0, 6.0], "gather")
dist.scatter(out, [t * 5], src=0)
check(out, [0.0, 5.0, 10.0, 15.0], "scatter")
objects = [None]
dist.all_gather_object(objects, {"rank": 0})
assert objects == [{"rank": 0}]
items = ["a", 2]
dist.broadcast_object_list(items)
assert items == ["a", 2]
dist.barrier()
torch.cuda.synchronize()
dist.destroy_process_group()
version = nccl.get_version()
print(f"key: NCCL {version // 10000}.{version // 100 % 100}.{version % 100}, one rank: "
      f"{checks + 2} checks ok in {time.perf_counter() - start:.1f} s")
