"""Keras 3 on the torch backend: a real ``fit`` of a tiny model for a few epochs."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import flightlog

pytestmark = pytest.mark.embedded_only("the integration writes through the SDK; transports are covered in tests/sdk")


@pytest.fixture
def keras() -> ModuleType:
    """Keras 3 (on the torch backend: tests/integrations/conftest.py), imported when a test here
    runs, not when the suite is collected (~6 s of CPU in each xdist worker)."""
    return pytest.importorskip("keras")


def test_keras_callback_records_params_epoch_metrics_checkpoints_and_stages(
    home: Path, tmp_path: Path, keras: ModuleType
) -> None:
    from flightlog.integrations.keras import FlightlogKerasCallback

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss="mse", metrics=["mae"])
    callback = FlightlogKerasCallback(
        project="tab", name="dense", checkpoint_dir=tmp_path / "ckpt", log_every_n_batches=2, resources=False
    )
    model.fit(x, y, epochs=3, batch_size=8, validation_split=0.2, verbose=0, callbacks=[callback])

    client = flightlog.Client()
    info = client.run(callback.run.id)
    assert info.status == "succeeded" and info.project == "tab"
    assert info.params["epochs"] == 3 and info.params["optimizer.name"] == "SGD"
    assert info.params["optimizer.learning_rate"] == pytest.approx(0.01)
    for name in ("loss", "mae", "val_loss", "val_mae"):
        assert client.metric_history(info.id, name).steps.tolist() == [0, 1, 2], name
    assert client.metric_history(info.id, "batch/loss").steps.tolist() == [2, 4, 6, 8, 10, 12]  # 4 batches x 3 epochs
    saved = sorted((Path(a.source or "").name, a.step) for a in client.artifacts(info.id) if a.kind == "checkpoint")
    assert saved == [("epoch-0.keras", 0), ("epoch-1.keras", 1), ("epoch-2.keras", 2)]
    assert keras.models.load_model(tmp_path / "ckpt" / "epoch-2.keras").count_params() == model.count_params()
    stages = {s.name: s for s in client.stages(info.id)}
    assert stages["train_step"].count == 12 and stages["data_loading"].count == 12
    assert stages["validation"].count == 3


def test_trouble_inside_a_callback_never_stops_training(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], keras: ModuleType
) -> None:
    from flightlog.integrations.keras import FlightlogKerasCallback

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the checkpoint directory should go")
    x = np.ones((16, 2), dtype="float32")
    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    callback = FlightlogKerasCallback(project="tab", checkpoint_dir=blocker / "ckpt", resources=False)
    history = model.fit(x, x[:, :1], epochs=2, batch_size=8, verbose=0, callbacks=[callback])
    assert len(history.history["loss"]) == 2  # both epochs ran
    assert "flightlog: FlightlogKerasCallback.on_epoch_end" in capsys.readouterr().err
    client = flightlog.Client()
    assert client.metric_history(callback.run.id, "loss").steps.tolist() == [0, 1]  # recorded before the failing save
    from flightlog.integrations._common import numeric_metrics

    logs = {"loss": np.float32(0.5), "schedule": "cosine", "vector": np.array([1.0, 2.0]), "flag": True}
    assert numeric_metrics(logs) == {"loss": 0.5}  # what frameworks mix in is left out, never a TypeError
