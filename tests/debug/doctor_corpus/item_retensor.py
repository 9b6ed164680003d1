"""Bug: a learned gate turned into a Python number with .item() and back into a tensor."""
import torch
import torch.nn as nn

class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(4, 1)
        self.value = nn.Linear(4, 4)

    def forward(self, x):
        g = torch.tensor(torch.sigmoid(self.gate(x)).mean().item())
        return self.value(x) * g

torch.manual_seed(0)
model = Gated()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x = torch.randn(8, 4)
    opt.zero_grad()
    loss = (model(x) - x).pow(2).mean()
    loss.backward()
    opt.step()
