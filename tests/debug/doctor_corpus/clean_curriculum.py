"""Clean: a curriculum whose noise grows every step, so the loss rises a hundredfold from a
tiny start while training is healthy."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(2, 1)
with torch.no_grad():
    model.weight.copy_(torch.tensor([[1.0, -1.0]]))
    model.bias.zero_()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(20):
    x = torch.randn(64, 2)
    noise = 0.01 * (step + 1) ** 1.5
    y = x[:, :1] - x[:, 1:] + noise * torch.randn(64, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
