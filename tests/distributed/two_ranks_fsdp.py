"""Run by test_distributed.py on two ranks: FullyShardedDataParallel training on half of each
batch equals one process training on the whole batch, for each sharding strategy, with
nested units; a FULL_SHARD unit frees its gathered parameters after forward; state_dict has
the whole parameters under their original names and loads back; device meshes give each
dimension its group, and FSDP shards over one. Prints "rank R fsdp ok"."""
import functools
import gc
import weakref

import numpy as np

import glasstorch as torch
import glasstorch.distributed as dist
from glasstorch.distributed.fsdp import (FullyShardedDataParallel as FSDP, ShardingStrategy,
                                         transformer_auto_wrap_policy)

dist.init_process_group("gloo")
r = dist.get_rank()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.norm = torch.nn.Linear(6, 6), torch.nn.LayerNorm(6)

    def forward(self, x):
        return x + self.norm(self.fc(x)).tanh()


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 6), Block(), Block(), torch.nn.Linear(6, 3))


torch.manual_seed(100)
xs, ys = torch.randn(4, 8, 5), torch.randint(0, 3, (4, 8))
policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
for strategy in ShardingStrategy:
    if strategy.name.startswith(("HYBRID", "_HYBRID")):
        continue
    reference, model = make_model(), FSDP(make_model(), sharding_strategy=strategy,
                                          auto_wrap_policy=policy)
    assert isinstance(model.module[1], FSDP) and isinstance(model.module[2], FSDP)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    ref_opt = torch.optim.Adam(reference.parameters(), lr=0.01)
    for x, y in zip(xs, ys):
        half = slice(4 * r, 4 * r + 4)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[half]), y[half])
        loss.backward()
        model.clip_grad_norm_(1.0)
        opt.step()
        ref_opt.zero_grad()
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
        ref_opt.step()
    full = model.state_dict()
    expected = reference.state_dict()
    assert list(sorted(full)) == list(sorted(expected)), (sorted(full), sorted(expected))
    for k in expected:
        np.testing.assert_allclose(full[k].numpy(), expected[k].numpy(), atol=1e-5, err_msg=k)
    if strategy is not ShardingStrategy.NO_SHARD:   # each rank holds about half
        held = sum(p.numel() for p in model.parameters())
        assert held <= sum(p.numel() for p in reference.parameters()) // 2 + 8, held

# FULL_SHARD: nothing holds the gathered parameters between forward and backward
model = FSDP(make_model())
gathered = []
original = model._gather
model._gather = lambda shard: gathered.append(original(shard)) or gathered[-1]
out = model(xs[0][:4]).sum()
alive = weakref.ref(gathered.pop().untyped_storage())
gc.collect()
assert alive() is None, "the gathered parameters outlived forward"
out.backward()                                            # gathers again, and works
assert model._flat_param.grad is not None

# state_dict loads back into another FSDP model, and into a plain one
other = FSDP(make_model(), auto_wrap_policy=policy)
with torch.no_grad():
    for p in other.parameters():
        p.zero_()
other.load_state_dict(expected)
with FSDP.summon_full_params(other):
    np.testing.assert_allclose(other.module[0].weight.numpy(), expected["0.weight"].numpy())
plain = make_model()
plain.load_state_dict(other.state_dict())
x = xs[1]
np.testing.assert_allclose(plain(x).detach().numpy(), other(x).detach().numpy(), atol=1e-6)
# device meshes: a row of two ranks, and a 2 x 1 mesh whose "tp" groups hold one rank each
from glasstorch.distributed.device_mesh import init_device_mesh
row = init_device_mesh("cpu", (2,), mesh_dim_names=("dp",))
assert row.get_coordinate() == (r,) and row.get_local_rank() == r
assert repr(row) == "DeviceMesh((dp=2), 'cpu', stride=(1,))"
grid = init_device_mesh("cpu", (2, 1), mesh_dim_names=("dp", "tp"))
assert grid["tp"].mesh.tolist() == [r] and grid["dp"].mesh.tolist() == [0, 1]
assert grid.get_local_rank("dp") == r and grid.get_local_rank("tp") == 0
t = torch.tensor([float(r + 1)])
dist.all_reduce(t, group=grid.get_group("dp"))
u = torch.tensor([float(r + 1)])
dist.all_reduce(u, group=grid["tp"].get_group())
assert t.item() == 3.0 and u.item() == r + 1
meshed = FSDP(make_model(), device_mesh=row)
meshed(xs[0][:4]).sum().backward()
assert meshed._flat_param.grad is not None
dist.destroy_process_group()
print(f"rank {r} fsdp ok", flush=True)
