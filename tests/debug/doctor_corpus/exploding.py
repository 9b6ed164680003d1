"""Bug: a deep network initialised with weights far too large: gradients explode."""
import torch
import torch.nn as nn

torch.manual_seed(0)
layers = []
for _ in range(8):
    lin = nn.Linear(32, 32)
    nn.init.normal_(lin.weight, std=1.3)
    layers += [lin, nn.LeakyReLU()]
model = nn.Sequential(*layers, nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-12)
for step in range(3):
    x = torch.randn(16, 32)
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
