"""Bug: hidden layers kept in a plain Python list: the optimizer never sees them."""
import torch
import torch.nn as nn

class DeepMLP(nn.Module):
    def __init__(self, width=16, depth=3):
        super().__init__()
        self.inp = nn.Linear(4, width)
        self.hidden = [nn.Linear(width, width) for _ in range(depth)]
        self.out = nn.Linear(width, 1)

    def forward(self, x):
        x = torch.relu(self.inp(x))
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x)

torch.manual_seed(0)
model = DeepMLP()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(5):
    x = torch.randn(8, 4)
    opt.zero_grad()
    loss = (model(x) - x[:, :1]).pow(2).mean()
    loss.backward()
    opt.step()
