"""Clean: a custom autograd Function with a masked backward, bfloat16 autocast on the CPU,
RMSprop and smooth L1."""
import torch
class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1, 1)
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * (x.abs() <= 1)
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.Tanh(), torch.nn.Linear(20, 1))
opt = torch.optim.RMSprop(net.parameters(), lr=1e-3)
X = torch.randn(128, 10); Y = torch.randn(128, 1)
for i in range(25):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(X)
    loss = torch.nn.functional.smooth_l1_loss(Clamp.apply(out.float()), Y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
