"""Bug: a [N, 1] prediction against an [N] target: MSE broadcasts to [N, N]."""
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(64, 3)
y = x @ torch.tensor([1.0, -2.0, 0.5])
model = nn.Linear(3, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.MSELoss()
for epoch in range(5):
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
