"""Bug: validation under no_grad but with dropout and batch norm still in training mode."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5),
                      nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x_val = torch.randn(32, 6)
for epoch in range(3):
    for _ in range(4):
        x = torch.randn(32, 6)
        opt.zero_grad()
        loss = (model(x) - x[:, :1]).pow(2).mean()
        loss.backward()
        opt.step()
    with torch.no_grad():
        val = (model(x_val) - x_val[:, :1]).pow(2).mean().item()
