"""Bug: an in-place write to an activation that the next op saved for backward."""
import torch
import torch.nn as nn

class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        a = torch.sigmoid(self.lin(x))
        out = a * x
        a += 1
        return out + a

torch.manual_seed(0)
model = Gate()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(5, 4)).sum()
loss.backward()
