"""Bug: optimizer.zero_grad() is never called."""
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.SGD(net.parameters(), lr=1e-3)
for it in range(20):
    x = torch.randn(32, 6)
    y = x.sum(dim=1, keepdim=True)
    loss = nn.functional.mse_loss(net(x), y)
    loss.backward()
    opt.step()
