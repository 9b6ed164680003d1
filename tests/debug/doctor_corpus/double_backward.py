"""Bug: two losses, each backward separately; the second goes through the shared, freed graph."""
import torch
import torch.nn as nn

torch.manual_seed(0)
encoder = nn.Linear(10, 6)
cls_head, reg_head = nn.Linear(6, 3), nn.Linear(6, 1)
opt = torch.optim.SGD([*encoder.parameters(), *cls_head.parameters(), *reg_head.parameters()], lr=0.1)
x = torch.randn(8, 10)
z = torch.sigmoid(encoder(x))
loss_cls = nn.functional.cross_entropy(cls_head(z), torch.randint(0, 3, (8,)))
loss_reg = reg_head(z).pow(2).mean()
opt.zero_grad()
loss_cls.backward()
loss_reg.backward()
opt.step()
