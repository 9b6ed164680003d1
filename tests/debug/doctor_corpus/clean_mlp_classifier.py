"""Clean: an MLP classifier with dropout, eval under no_grad, targets detached, logging by item()."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(256, 10)
y = (x[:, 0] + x[:, 1] > 0).long()
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
history = []
for epoch in range(3):
    model.train()
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        history.append(loss.item())
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
print(f"accuracy {acc:.2f}")
