"""Bug: the loss rebuilt from a Python number: backward has no graph to go through."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(10, 3), torch.randn(10, 1)
opt.zero_grad()
loss = torch.tensor(nn.functional.mse_loss(model(x), y).item(), requires_grad=False)
loss.backward()
opt.step()
