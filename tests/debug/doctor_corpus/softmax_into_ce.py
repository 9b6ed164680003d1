"""Bug: softmax applied before CrossEntropyLoss, which applies log_softmax itself."""
import torch
import torch.nn as nn

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return torch.softmax(self.body(x), dim=1)

torch.manual_seed(0)
model = Classifier()
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x, y = torch.randn(16, 6), torch.randint(0, 4, (16,))
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
