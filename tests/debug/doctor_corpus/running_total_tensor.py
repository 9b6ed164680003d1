"""Bug: an epoch's loss summed as a tensor: every batch's graph stays alive until the epoch ends."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 1))
opt = torch.optim.Adam(model.parameters())
for epoch in range(2):
    epoch_loss = 0
    for batch in range(10):
        x = torch.randn(8, 5)
        loss = (model(x) - x[:, :1]).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_loss += loss
    print(f"epoch {epoch}: {epoch_loss.item() / 10:.3f}")
