"""PyTorch Lightning: a real Trainer fits a tiny model for a few steps into a flightlog run."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

import flightlog

pytestmark = [
    pytest.mark.embedded_only("the integration writes through the SDK; transports are covered in tests/sdk"),
]


@pytest.fixture
def pl() -> ModuleType:
    """The model module (imports torch and Lightning when a test here runs, not at collection)."""
    pytest.importorskip("lightning.pytorch")
    from tests.integrations import lightning_model

    return lightning_model


def test_lightning_logger_records_params_metrics_checkpoints_and_stages(
    home: Path, tmp_path: Path, pl: ModuleType
) -> None:
    from flightlog.integrations.lightning import FlightlogLogger

    logger = FlightlogLogger(project="lit", name="tiny", resources=False)
    checkpoints = pl.L.callbacks.ModelCheckpoint(
        dirpath=tmp_path / "ckpt", monitor="val_loss", save_top_k=1, save_last=True
    )
    trainer = pl.L.Trainer(
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
    trainer.fit(pl.TinyRegressor(lr=0.05, hidden=4), pl.loader(), pl.loader(16))
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


def test_testing_after_fit_continues_the_loggers_run_as_a_new_attempt(home: Path, pl: ModuleType) -> None:
    from flightlog.integrations.lightning import FlightlogLogger

    logger = FlightlogLogger(project="lit", resources=False)
    trainer = pl.L.Trainer(
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
    model = pl.TinyRegressor()
    trainer.fit(model, pl.loader())
    assert flightlog.Client().run(logger.version).status == "succeeded"
    trainer.test(model, pl.loader(8))
    info = flightlog.Client().run(logger.version)
    assert info.status == "succeeded" and info.attempt == 2 and "test_loss" in info.metrics
    assert "train_loss" in info.metrics  # the same run: fit's metrics are still there
