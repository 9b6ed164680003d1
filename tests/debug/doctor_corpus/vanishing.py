"""Bug: a deep sigmoid network with small weights: the first layers' gradients vanish."""
import torch
import torch.nn as nn

torch.manual_seed(0)
blocks = []
for _ in range(12):
    lin = nn.Linear(16, 16)
    nn.init.normal_(lin.weight, std=0.05)
    blocks += [lin, nn.Sigmoid()]
model = nn.Sequential(*blocks, nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(32, 16), torch.randint(0, 2, (32,))
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
