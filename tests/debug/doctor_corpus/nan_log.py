"""Bug: log of a probability that reaches zero (NaN/inf loss)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 4)
y = (x[:, :1] > 0).float()
for step in range(5):
    p = torch.sigmoid(model(x) * 100)
    loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
