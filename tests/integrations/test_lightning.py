"""PyTorch Lightning: a real Trainer fits a tiny model for a few steps into a flightlog run."""

from __future__ import annotations

from pathlib import Path

import pytest

import flightlog

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning.pytorch")

from flightlog.integrations.lightning import FlightlogLogger  # noqa: E402

pytestmark = [
    pytest.mark.embedded_only("the integration writes through the SDK; transports are covered in tests/sdk"),
]


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


def _loader(n: int = 32) -> torch.utils.data.DataLoader:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)


def test_lightning_logger_records_params_metrics_checkpoints_and_stages(home: Path, tmp_path: Path) -> None:
    logger = FlightlogLogger(project="lit", name="tiny", resources=False)
    checkpoints = L.callbacks.ModelCheckpoint(
        dirpath=tmp_path / "ckpt", monitor="val_loss", save_top_k=1, save_last=True
    )
    trainer = L.Trainer(
        max_epochs=2,
        logger=logger,
        callbacks=[checkpoints, logger.stages()],
        log_every_n_steps=1,
        accelerator="cpu",
        devices=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(TinyRegressor(lr=0.05, hidden=4), _loader(), _loader(16))
    run_id = logger.version

    client = flightlog.Client()
    info = client.run(run_id)
    assert info.status == "succeeded" and info.project == "lit" and info.name == "tiny"
    assert info.params == {"lr": 0.05, "hidden": 4}
    history = client.metric_history(run_id, "train_loss")
    assert history.steps.tolist() == list(range(8))  # 4 batches x 2 epochs, one point per step
    assert client.metric_history(run_id, "val_loss").values.size == 2
    saved = [a for a in client.artifacts(run_id) if a.kind == "checkpoint"]
    # each epoch's best and last, at the step it was saved; the files stay where Lightning put them
    assert sorted((Path(a.source or "").name, a.step) for a in saved) == [
        ("epoch=0-step=4.ckpt", 4),
        ("epoch=1-step=8.ckpt", 8),
        ("last.ckpt", 4),
        ("last.ckpt", 8),
    ]
    assert Path(checkpoints.best_model_path).name in {Path(a.source or "").name for a in saved}
    stages = {s.name: s for s in client.stages(run_id)}
    assert stages["train_step"].count == 8
    assert stages["data_loading"].count == 8
    assert stages["validation"].count == 2


def test_testing_after_fit_continues_the_loggers_run_as_a_new_attempt(home: Path) -> None:
    logger = FlightlogLogger(project="lit", resources=False)
    trainer = L.Trainer(
        max_epochs=1,
        logger=logger,
        accelerator="cpu",
        devices=1,
        enable_progress_bar=False,
        log_every_n_steps=1,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
    )
    model = TinyRegressor()
    trainer.fit(model, _loader())
    assert flightlog.Client().run(logger.version).status == "succeeded"
    trainer.test(model, _loader(8))
    info = flightlog.Client().run(logger.version)
    assert info.status == "succeeded" and info.attempt == 2 and "test_loss" in info.metrics
    assert "train_loss" in info.metrics  # the same run: fit's metrics are still there
