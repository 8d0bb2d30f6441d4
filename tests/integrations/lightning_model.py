"""The tiny Lightning model and data of tests/integrations/test_lightning.py, in a module of their
own so that collecting the suite does not import Lightning (~5 s of CPU in each xdist worker):
only the test that runs imports this module."""

from __future__ import annotations

import lightning.pytorch as L
import torch


class TinyRegressor(L.LightningModule):
    def __init__(self, lr: float = 0.05, hidden: int = 4) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(3, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def test_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        self.log("test_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def validation_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):  # type: ignore[no-untyped-def]
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def loader(n: int = 32) -> torch.utils.data.DataLoader:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
