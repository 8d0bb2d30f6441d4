"""Plain PyTorch: an MLP trained with a DataLoader, timed_batches and a validation pass per epoch."""

import os

import torch

import flightlog
from flightlog.integrations.pytorch import timed_batches

torch.manual_seed(0)
x = torch.randn(512, 10)
y = (x[:, :3].sum(dim=1) > 0).long()
train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[:448], y[:448]), batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
run = flightlog.init(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"),
    name=os.environ.get("WORKLOAD_NAME"),
    params={"lr": 1e-2, "batch_size": 32, "epochs": 5},
)
step = 0
for _epoch in range(5):
    for xb, yb in timed_batches(train, run):
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.log({"train_loss": loss.item()}, step=step)
        step += 1
    with torch.no_grad(), run.stage("validation"):
        logits = model(x[448:])
        run.log(
            {
                "val_loss": torch.nn.functional.cross_entropy(logits, y[448:]).item(),
                "val_acc": (logits.argmax(1) == y[448:]).float().mean().item(),
            },
            step=step,
        )
run.finish()
