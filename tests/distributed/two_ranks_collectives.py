"""Run by test_distributed.py on two ranks: every collective against the values it must give,
written from the ranks' inputs. Prints "rank R ok" at the end."""
import numpy as np

import glasstorch as torch
import glasstorch.distributed as dist

dist.init_process_group("gloo")
r, w = dist.get_rank(), dist.get_world_size()
assert w == 2 and dist.get_backend() == "gloo" and dist.is_initialized()


def check(got, expected, what):
    np.testing.assert_allclose(np.asarray(got.float().tolist()), np.asarray(expected, float),
                               err_msg=f"rank {r}: {what}")


def values(rank, n=4, dtype=torch.float32):
    return (torch.arange(n) + 10 * rank).to(dtype)


# all_reduce, every op, several dtypes, a strided tensor, async
for op, fn in [(dist.ReduceOp.SUM, np.add), (dist.ReduceOp.PRODUCT, np.multiply),
               (dist.ReduceOp.MIN, np.minimum), (dist.ReduceOp.MAX, np.maximum)]:
    for dtype in (torch.float32, torch.float64, torch.int64, torch.bfloat16, torch.float16):
        t = values(r, dtype=dtype)
        dist.all_reduce(t, op=op)
        check(t, fn(values(0, dtype=torch.float64).numpy(), values(1, dtype=torch.float64).numpy()),
              f"all_reduce {op} {dtype}")
t = values(r, dtype=torch.float64)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
check(t, (values(0).numpy() + values(1).numpy()) / 2, "all_reduce AVG")
for op, fn in [(dist.ReduceOp.BAND, np.bitwise_and), (dist.ReduceOp.BOR, np.bitwise_or),
               (dist.ReduceOp.BXOR, np.bitwise_xor)]:
    t = values(r, dtype=torch.int64)
    dist.all_reduce(t, op=op)
    check(t, fn(values(0, dtype=torch.int64).numpy(), values(1, dtype=torch.int64).numpy()), f"{op}")
base = torch.arange(12.).reshape(3, 4) + 100 * r
strided = base.t()                                    # not contiguous: staged and written back
dist.all_reduce(strided)
check(base, (torch.arange(12.).reshape(3, 4) * 2 + 100).numpy(), "all_reduce of a strided view")
work = dist.all_reduce(values(r), async_op=True)
assert work.wait() and work.is_completed()
empty = torch.zeros(0)
dist.all_reduce(empty)
flags = torch.tensor([r == 0, False])
dist.all_reduce(flags)
assert flags.tolist() == [True, False], flags

# broadcast, reduce
t = values(r)
dist.broadcast(t, src=1)
check(t, values(1).numpy(), "broadcast")
t = values(r)
dist.reduce(t, dst=0)
check(t, (values(0) + values(1)).numpy() if r == 0 else values(1).numpy(), "reduce")

# all_gather with uneven sizes, all_gather_into_tensor, gather, scatter
out = [torch.zeros(1), torch.zeros(2)]
dist.all_gather(out, torch.full((r + 1,), float(r)))
check(out[0], [0.0], "all_gather[0]")
check(out[1], [1.0, 1.0], "all_gather[1]")
big = torch.zeros(2, 4, dtype=torch.int64)
dist.all_gather_into_tensor(big, values(r, dtype=torch.int64))
check(big, np.stack([values(0).numpy(), values(1).numpy()]), "all_gather_into_tensor")
gl = [torch.zeros(4), torch.zeros(4)] if r == 0 else None
dist.gather(values(r), gl, dst=0)
if r == 0:
    check(gl[1], values(1).numpy(), "gather")
got = torch.zeros(3)
dist.scatter(got, [torch.full((3,), 5.0), torch.full((3,), 7.0)] if r == 1 else None, src=1)
check(got, [5.0 if r == 0 else 7.0] * 3, "scatter")

# reduce_scatter_tensor, all_to_all_single (uneven splits)
o = torch.zeros(2)
dist.reduce_scatter_tensor(o, values(r))
check(o, (values(0) + values(1)).numpy()[2 * r:2 * r + 2], "reduce_scatter_tensor")
send = torch.arange(3.) + 10 * r                      # rank 0 sends 1 row to 0, 2 to 1
splits_in = [1, 2] if r == 0 else [2, 1]
splits_out = [1, 2] if r == 0 else [2, 1]
recv = torch.zeros(sum(splits_out))
dist.all_to_all_single(recv, send, splits_out, splits_in)
expected = [0.0, 10.0, 11.0] if r == 0 else [1.0, 2.0, 12.0]
check(recv, expected, "all_to_all_single uneven")

# point to point, objects, barriers
if r == 0:
    dist.send(values(0) * 3, dst=1)
    req = dist.irecv(t := torch.zeros(4), src=1)
    req.wait()
    check(t, values(1).numpy(), "irecv")
else:
    t = torch.zeros(4)
    assert dist.recv(t, src=0) == 0
    check(t, values(0).numpy() * 3, "recv")
    dist.isend(values(1), dst=0).wait()
objs = [None, None]
dist.all_gather_object(objs, {"rank": r, "text": "x" * r})
assert objs == [{"rank": 0, "text": ""}, {"rank": 1, "text": "x"}], objs
lst = [r, "from rank " + str(r)]
dist.broadcast_object_list(lst, src=1)
assert lst == [1, "from rank 1"], lst
dist.barrier()
dist.monitored_barrier()

# two groups at once: a group of rank 1 alone, and the whole world again
solo = dist.new_group([1])
pair = dist.new_group([0, 1])
if r == 1:
    assert dist.get_world_size(solo) == 1 and dist.get_rank(solo) == 0
    t = values(1)
    dist.all_reduce(t, group=solo)
    check(t, values(1).numpy(), "all_reduce in a group of one")
else:
    assert solo == dist.GroupMember.NON_GROUP_MEMBER
t = values(r)
dist.all_reduce(t, group=pair)
check(t, (values(0) + values(1)).numpy(), "all_reduce in a second group")
dist.destroy_process_group()
print(f"rank {r} ok", flush=True)
