"""Bug: .detach() in forward cuts the first layer off the graph."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 12)
        self.fc2 = nn.Linear(12, 3)

    def forward(self, x):
        h = F.relu(self.fc1(x)).detach()
        return self.fc2(h)

torch.manual_seed(0)
model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(8):
    x, y = torch.randn(16, 5), torch.randint(0, 3, (16,))
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
