"""Clean: a tiny GAN: two optimizers, the discriminator step on fake.detach(), the generator
step through the discriminator (whose gradients are zeroed at its next step)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
for step in range(10):
    real = torch.randn(16, 2) * 0.5 + 2
    fake = G(torch.randn(16, 2))
    opt_d.zero_grad()
    loss_d = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = bce(D(fake), torch.ones(16, 1))
    loss_g.backward()
    opt_g.step()
