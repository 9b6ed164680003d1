"""Bug: a parameter read through .data inside forward: it scales the output but never gets a
gradient."""
import torch, torch.nn as nn
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 5)
        self.gain = nn.Parameter(torch.ones(5))
    def forward(self, x):
        return self.lin(x) * self.gain.data
m = Scale()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(6):
    x = torch.randn(8, 5)
    loss = (m(x) - x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
