"""Plain PyTorch without stages: a CNN on random images, a grad-norm and a learning-rate schedule logged beside the loss."""

import os

import torch

import flightlog

torch.manual_seed(1)
images, labels = torch.randn(256, 1, 12, 12), torch.randint(0, 3, (256,))
model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(400, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
run = flightlog.init(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"),
    name=os.environ.get("WORKLOAD_NAME"),
    params={"optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}},
)
for step in range(60):
    i = torch.randint(0, 256, (32,))
    loss = torch.nn.functional.cross_entropy(model(images[i]), labels[i])
    opt.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    sched.step()
    run.log({"loss": loss.item(), "grad_norm": float(norm), "lr": sched.get_last_lr()[0]}, step=step)
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.3f}", flush=True)
run.finish()
