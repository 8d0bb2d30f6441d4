"""A loss that goes NaN (the log of a negative quantity) in a loop that prints
``step N loss VALUE`` (a space, no ``=``) and exits 0: anomaly detection is on, but the NaN is
made in the forward pass, so nothing raises (issue 29, a run nobody tuned on)."""

import torch

torch.manual_seed(0)
torch.autograd.set_detect_anomaly(True)
w = torch.randn(8, 1, requires_grad=True)
opt = torch.optim.Adam([w], lr=0.05)
x = torch.randn(256, 8)
for step in range(100):
    pred = x @ w
    loss = torch.log(pred.abs() - 0.5).mean()  # the log of a possibly negative quantity
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
