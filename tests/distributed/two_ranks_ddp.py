"""Run by test_distributed.py on two ranks: DistributedDataParallel training on half of each
batch equals one process training on the whole batch; no_sync accumulates; unused parameters
are found; the fp16 hook averages in float16. Prints "rank R ddp ok"."""
import numpy as np

import glasstorch as torch
import glasstorch.distributed as dist
from glasstorch.distributed.algorithms.ddp_comm_hooks import default_hooks
from glasstorch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
r = dist.get_rank()


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                               torch.nn.Linear(16, 3))


torch.manual_seed(100)                        # the same data on both ranks
xs, ys = torch.randn(5, 8, 6), torch.randint(0, 3, (5, 8))

for as_view in (False, True):
    reference = make_model(0)                 # one process, the whole batch
    model = make_model(r)                     # different on rank 1: DDP must broadcast rank 0's
    ddp = DDP(model, bucket_cap_mb=0.0005, gradient_as_bucket_view=as_view)   # several buckets
    assert len(ddp._buckets) > 1
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.equal(p, q), "DDP did not start from rank 0's parameters"
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step, (x, y) in enumerate(zip(xs, ys)):
        half = slice(4 * r, 4 * r + 4)
        opt.zero_grad(set_to_none=step % 2 == 0)      # both ways of zeroing, with views
        torch.nn.functional.cross_entropy(ddp(x[half]), y[half]).backward()
        opt.step()
        ref_opt.zero_grad()
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), atol=1e-5)
    if as_view:
        bucket = ddp._bucket_of[id(model[0].weight)]
        assert model[0].weight.grad.untyped_storage().data_ptr() == \
            bucket.buffer.untyped_storage().data_ptr()

# no_sync: batch A accumulates locally, batch B's backward then averages the sum over ranks
acc = DDP(make_model(0))
mine = slice(4 * r, 4 * r + 4)
with acc.no_sync():
    acc(xs[0][mine]).sum().backward()
acc(xs[1][mine]).sum().backward()
local = make_model(0)
local(xs[0][mine]).sum().backward()
local(xs[1][mine]).sum().backward()
for p, q in zip(acc.parameters(), local.parameters()):
    expected = q.grad.clone()
    dist.all_reduce(expected, op=dist.ReduceOp.AVG)
    np.testing.assert_allclose(p.grad.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)

# unused parameters
class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.a(self.body(x))                     # b is never used


heads = DDP(TwoHeads(), find_unused_parameters=True)
heads(torch.randn(3, 4)).sum().backward()
assert heads.module.b.weight.grad is None and heads.module.a.weight.grad is not None
static = DDP(TwoHeads(), static_graph=True)      # the unused set is found once, then reused
for _ in range(3):
    static(torch.randn(3, 4)).sum().backward()
assert static._static_unused == [static.module.b.weight, static.module.b.bias]
assert static.module.b.weight.grad is None
strict = DDP(TwoHeads())
strict(torch.randn(3, 4)).sum().backward()
try:
    strict(torch.randn(3, 4))
    raise AssertionError("an unused parameter without find_unused_parameters must fail")
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e)

# the fp16 compression hook
half = DDP(make_model(0))
half.register_comm_hook(None, default_hooks.fp16_compress_hook)
full = DDP(make_model(0))
for m in (half, full):
    m(xs[2][4 * r:4 * r + 4]).sum().backward()
for p, q in zip(half.parameters(), full.parameters()):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-3, atol=2e-3)
dist.destroy_process_group()
print(f"rank {r} ddp ok", flush=True)
