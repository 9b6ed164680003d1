"""Bug: an attempt at gradient accumulation that steps every batch but zeroes every 4."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(16):
    x = torch.randn(8, 5)
    loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
    loss.backward()
    opt.step()
    if i % 4 == 0:
        opt.zero_grad()
