"""Run by test_sync_batchnorm.py on two ranks: SyncBatchNorm on half of each batch gives the
outputs, input gradients, summed weight gradients and running statistics of BatchNorm on
the whole batch in one process. Prints "rank R syncbn ok"."""
import numpy as np

import glasstorch as torch
import glasstorch.distributed as dist

dist.init_process_group("gloo")
r = dist.get_rank()
torch.manual_seed(0)
x = torch.randn(8, 3, 4, dtype=torch.float64)
grad = torch.randn(8, 3, 4, dtype=torch.float64)

reference = torch.nn.BatchNorm1d(3).double()
with torch.no_grad():
    reference.weight.copy_(torch.tensor([0.5, 1.5, -1.0], dtype=torch.float64))
    reference.bias.copy_(torch.tensor([0.1, 0.0, -0.2], dtype=torch.float64))
model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(
    torch.nn.Sequential(torch.nn.BatchNorm1d(3).double()))
model[0].load_state_dict(reference.state_dict())
assert isinstance(model[0], torch.nn.SyncBatchNorm)

whole = x.clone().requires_grad_()
expected = reference(whole)          # one training step: the running statistics move once
expected.backward(grad)
half = slice(4 * r, 4 * r + 4)
mine = x[half].clone().requires_grad_()
out = model(mine)
out.backward(grad[half])
np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy()[half],
                           rtol=1e-10, atol=1e-12)
np.testing.assert_allclose(mine.grad.numpy(), whole.grad.numpy()[half], rtol=1e-9,
                           atol=1e-12)
for p, q in zip(model.parameters(), reference.parameters()):
    summed = p.grad.clone()
    dist.all_reduce(summed)
    np.testing.assert_allclose(summed.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12)
np.testing.assert_allclose(model[0].running_mean.numpy(), reference.running_mean.numpy(),
                           rtol=1e-12)
np.testing.assert_allclose(model[0].running_var.numpy(), reference.running_var.numpy(),
                           rtol=1e-12)
print(f"rank {r} syncbn ok")
dist.destroy_process_group()
