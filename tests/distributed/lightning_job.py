"""A Lightning DDP job on CPU (2 processes) for tests/distributed: healthy, or rank 1 raises in
its third training step (SCENARIO=raises). Lightning starts the second rank itself."""

import os

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

SCENARIO = os.environ.get("SCENARIO", "healthy")


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, index):
        if SCENARIO == "raises" and self.global_rank == 1 and index == 2:
            raise ValueError("batch 2 of rank 1 has no labels")
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    trainer = L.Trainer(
        max_epochs=1,
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Model(), DataLoader(data, batch_size=8))
    # as PyTorch's docs ask: a rank that exits with its gloo group alive can abort while the
    # interpreter shuts down ("terminate called without an active exception", exit 134; torch's
    # own issue, seen once here after a healthy fit)
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
