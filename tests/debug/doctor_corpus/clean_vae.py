"""Clean: a VAE with the reparameterisation trick, exp of a log-variance, BCE on logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(20, 16); self.mu = nn.Linear(16, 4); self.logvar = nn.Linear(16, 4)
        self.dec = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 20))
    def forward(self, x):
        h = F.relu(self.enc(x)); mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar
vae = VAE(); opt = torch.optim.Adam(vae.parameters(), lr=1e-3)
for step in range(10):
    x = torch.rand(32, 20)
    recon, mu, logvar = vae(x)
    kld = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
    loss = F.binary_cross_entropy_with_logits(recon, x) + kld
    opt.zero_grad(); loss.backward(); opt.step()
