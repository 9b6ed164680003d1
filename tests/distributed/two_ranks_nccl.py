"""Run by test_nccl.py on two ranks: backend "cpu:gloo,cuda:nccl" with CUDA tensors on
simulated CuPy and NCCL played by fake_nccl.py, every collective against the values it must
give, written from the ranks' inputs. Prints "rank R nccl ok" at the end."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "cuda")]

import numpy as np  # noqa: E402

import fake_nccl  # noqa: E402
import simulated_cupy  # noqa: E402
import glasstorch as torch  # noqa: E402
import glasstorch.distributed as dist  # noqa: E402
from glasstorch.backends.cuda import runtime  # noqa: E402

simulated_cupy.reset()
simulated_cupy.cuda.nccl = fake_nccl
runtime.use_cupy(simulated_cupy)

dist.init_process_group("cpu:gloo,cuda:nccl")
r, w = dist.get_rank(), dist.get_world_size()
assert w == 2
Op = dist.ReduceOp


def check(got, expected, what):
    assert got.device.type == "cuda", what
    np.testing.assert_allclose(np.asarray(got.float().tolist()), np.asarray(expected, float),
                               err_msg=f"rank {r}: {what}")


def values(rank, n=4, dtype=torch.float32):
    return (torch.arange(n) + 10 * rank + 1).to(dtype).to("cuda")


def both(fn, dtype=torch.float64):
    return fn(values(0, dtype=dtype).cpu().numpy(), values(1, dtype=dtype).cpu().numpy())


# all_reduce: NCCL's ops on every type it has, bool as "any", AVG, PREMUL_SUM, async
for op, fn in [(Op.SUM, np.add), (Op.PRODUCT, np.multiply), (Op.MIN, np.minimum),
               (Op.MAX, np.maximum)]:
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                  torch.uint8, torch.int32, torch.int64):
        t = values(r, dtype=dtype)
        dist.all_reduce(t, op=op)
        check(t, both(fn), f"all_reduce {op} {dtype}")
t = values(r)
dist.all_reduce(t, op=Op.AVG)
check(t, both(np.add) / 2, "all_reduce AVG")
t = values(r)
dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
check(t, both(np.add) / 2, "all_reduce PREMUL_SUM(0.5)")
flags = torch.tensor([r == 0, False, True], device="cuda")
dist.all_reduce(flags)
assert flags.tolist() == [True, False, True], flags
c = torch.tensor([1 + 2j, 3 - 1j], device="cuda") * (r + 1)
dist.all_reduce(c)
assert c.cpu().tolist() == [3 + 6j, 9 - 3j], c
work = dist.all_reduce(values(r), async_op=True)
assert work.wait() and work.is_completed()

# the CPU half of the backend is MPI's
cpu = torch.arange(3.0) + r
dist.all_reduce(cpu)
assert cpu.tolist() == [1.0, 3.0, 5.0], cpu

# broadcast, reduce, all_gather (even and uneven), all_gather_into_tensor
t = values(r)
dist.broadcast(t, src=1)
check(t, values(1).cpu().numpy(), "broadcast")
t = values(r)
dist.reduce(t, dst=0, op=Op.MAX)
check(t, both(np.maximum) if r == 0 else values(1).cpu().numpy(), "reduce")
out = [torch.zeros(4, device="cuda") for _ in range(2)]
dist.all_gather(out, values(r))
check(torch.stack(out), [values(0).tolist(), values(1).tolist()], "all_gather")
out = [torch.zeros(1, device="cuda"), torch.zeros(2, device="cuda")]
dist.all_gather(out, torch.full((r + 1,), float(r + 5), device="cuda"))
check(torch.cat(out), [5.0, 6.0, 6.0], "all_gather, uneven")
big = torch.zeros(2, 4, device="cuda")
dist.all_gather_into_tensor(big, values(r))
check(big, [values(0).tolist(), values(1).tolist()], "all_gather_into_tensor")

# reduce_scatter (tensor and list), gather, scatter
mine = torch.zeros(2, device="cuda")
dist.reduce_scatter_tensor(mine, values(r))
check(mine, both(np.add)[2 * r:2 * r + 2], "reduce_scatter_tensor")
mine = torch.zeros(2, device="cuda")
dist.reduce_scatter(mine, [values(r, 2), values(r, 2) * 10], op=Op.SUM)
check(mine, (values(0, 2) + values(1, 2)).cpu().numpy() * (10 if r else 1), "reduce_scatter")
got = [torch.zeros(4, device="cuda") for _ in range(2)] if r == 1 else None
dist.gather(values(r), got, dst=1)
if r == 1:
    check(torch.stack(got), [values(0).tolist(), values(1).tolist()], "gather")
t = torch.zeros(4, device="cuda")
dist.scatter(t, [values(0), values(1)] if r == 0 else None, src=0)
check(t, values(r).cpu().numpy(), "scatter")

# all_to_all_single (even, uneven), all_to_all
x = torch.arange(4.0, device="cuda") + 10 * r
y = torch.zeros(4, device="cuda")
dist.all_to_all_single(y, x)
check(y, [0, 1, 10, 11] if r == 0 else [2, 3, 12, 13], "all_to_all_single")
x = torch.arange(3.0, device="cuda") + 10 * r        # rank 0 sends 1 row to 0, 2 to 1; ...
splits_in = [1, 2] if r == 0 else [2, 1]
splits_out = [1, 2] if r == 0 else [2, 1]
y = torch.zeros(3, device="cuda")
dist.all_to_all_single(y, x, splits_out, splits_in)
check(y, [0, 10, 11] if r == 0 else [1, 2, 12], "all_to_all_single, uneven")
outs = [torch.zeros(2, device="cuda") for _ in range(2)]
dist.all_to_all(outs, [torch.full((2,), 10.0 * r + j, device="cuda") for j in range(2)])
check(torch.stack(outs), [[r, r], [10 + r, 10 + r]], "all_to_all")

# send/recv (a strided receiver is written back), isend/irecv
if r == 0:
    dist.send(values(0), dst=1)
    base = torch.zeros(4, 2, device="cuda")
    dist.recv(base.t()[0], src=1)
    check(base[:, 0], values(1).cpu().numpy(), "recv into a strided view")
else:
    t = torch.zeros(4, device="cuda")
    assert dist.recv(t, src=0) == 0
    check(t, values(0).cpu().numpy(), "recv")
    dist.send(values(1), dst=0)
peer = 1 - r
got = torch.zeros(4, device="cuda")
works = [dist.isend(values(r), dst=peer), dist.irecv(got, src=peer)]
for work in works:
    work.wait()
check(got, values(peer).cpu().numpy(), "isend/irecv")

# objects and barrier on a group that is NCCL only
nccl_only = dist.new_group([0, 1], backend="nccl")
objs = [None, None]
dist.all_gather_object(objs, {"rank": r, "pad": "x" * (5 * r)}, group=nccl_only)
assert objs == [{"rank": 0, "pad": ""}, {"rank": 1, "pad": "xxxxx"}], objs
items = [("from", 0), [1, 2, 3]] if r == 0 else [None, None]
dist.broadcast_object_list(items, src=0, group=nccl_only)
assert items == [("from", 0), [1, 2, 3]], items
gathered = [None, None] if r == 0 else None
dist.gather_object(r * 7, gathered, dst=0, group=nccl_only)
assert r != 0 or gathered == [0, 7], gathered
out = [None]
dist.scatter_object_list(out, ["a", "b"] if r == 1 else None, src=1, group=nccl_only)
assert out == ["ab"[r]], out
dist.barrier(group=nccl_only)
dist.destroy_process_group()
print(f"rank {r} nccl ok", flush=True)
