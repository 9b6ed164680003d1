"""Bug: the encoder runs under torch.no_grad() inside forward, although the optimizer trains it."""
import torch
import torch.nn as nn

class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(10, 3)
        self.decoder = nn.Linear(3, 10)

    def forward(self, x):
        with torch.no_grad():
            code = torch.tanh(self.encoder(x))
        return self.decoder(code)

torch.manual_seed(0)
model = AutoEncoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(5):
    x = torch.randn(32, 10)
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), x)
    loss.backward()
    opt.step()
