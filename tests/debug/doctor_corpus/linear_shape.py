"""Bug: a CNN whose Linear after the flatten has the wrong in_features."""
import torch
import torch.nn as nn

class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 7 * 7, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv(x)))
        x = torch.flatten(x, 1)
        return self.fc(x)

model = CNN()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
images = torch.randn(8, 1, 12, 12)
labels = torch.randint(0, 10, (8,))
loss = nn.CrossEntropyLoss()(model(images), labels)
loss.backward()
