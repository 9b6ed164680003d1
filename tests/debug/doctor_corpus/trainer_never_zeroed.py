"""Bug: a Trainer class whose train_step never zeroes the gradients."""
import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

class Trainer:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.opt = optim.Adam(model.parameters(), lr=lr)
        self.crit = nn.CrossEntropyLoss()

    def train_step(self, xb, yb):
        out = self.model(xb)
        loss = self.crit(out, yb)
        loss.backward()
        self.opt.step()
        return loss.item()

torch.manual_seed(0)
data = TensorDataset(torch.randn(128, 6), torch.randint(0, 2, (128,)))
trainer = Trainer(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)))
for epoch in range(2):
    for xb, yb in DataLoader(data, batch_size=16):
        trainer.train_step(xb, yb)
