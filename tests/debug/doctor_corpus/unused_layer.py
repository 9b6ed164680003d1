"""Bug: a layer built in __init__ and never called in forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return self.fc(x.flatten(1))

torch.manual_seed(0)
model = Classifier()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(3):
    x, y = torch.randn(4, 1, 8, 8), torch.randint(0, 5, (4,))
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
