"""Keras 3: a ``Callback`` (any backend: torch, JAX or TensorFlow).

    from flightlog.integrations.keras import FlightlogKerasCallback
    model.fit(x, y, epochs=5, validation_split=0.2,
              callbacks=[FlightlogKerasCallback(project="tabular", checkpoint_dir="ckpt")])

Recorded: ``fit``'s settings (``epochs``, ``steps``) and the optimizer's config as params,
every epoch's logs (``loss``, ``val_loss``, metrics) at the epoch number, with
``log_every_n_batches`` also batch logs at the global batch step (as ``batch/loss``, ...);
with ``checkpoint_dir`` the model saved after each epoch (``epoch-N.keras``) and recorded as a
checkpoint; stages ``train_step`` (one batch), ``data_loading`` (the wait before it) and
``validation``.

The run starts when the callback is made (unless it records into a given or active run), so
a ``fit`` that fails before its first callback hook — Keras checks the model against a first
batch before it calls any — is still recorded as failed, with its traceback.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import keras

from flightlog.integrations._common import (
    BatchTimer,
    RunHolder,
    clean_params,
    never_raise,
    numeric_metrics,
)
from flightlog.sdk.run import Run

__all__ = ["FlightlogKerasCallback"]


class FlightlogKerasCallback(keras.callbacks.Callback):
    """Records a Keras ``fit`` into a flightlog run (see the module docstring)."""

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        *,
        run: Run | None = None,
        checkpoint_dir: str | Path | None = None,
        log_every_n_batches: int | None = None,
        **init_kwargs: Any,
    ) -> None:
        super().__init__()
        self._holder = RunHolder(run, project=project, name=name, **init_kwargs)
        self._checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self._every = log_every_n_batches
        self._timer = BatchTimer()
        self._batches = 0
        self._test_start: float | None = None
        # the run starts now, not at the first hook: Keras builds the model on a first batch
        # before it calls any callback, and a shape mismatch found there must land on a run
        self._holder.run  # noqa: B018

    @property
    def run(self) -> Run:
        return self._holder.run

    @never_raise
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        params: dict[str, Any] = {
            k: v for k, v in (self.params or {}).items() if k in ("epochs", "steps", "batch_size")
        }
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            config = optimizer.get_config()
            params["optimizer"] = {"name": type(optimizer).__name__, **{k: v for k, v in config.items() if k != "name"}}
        if params:
            self._holder.recording().log_params(clean_params(params))

    @never_raise
    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._timer.reset()

    @never_raise
    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._timer.begin(self._holder.recording())

    @never_raise
    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        run = self._holder.recording()
        self._timer.end(run)
        self._batches += 1
        if self._every and logs and self._batches % self._every == 0:
            run.log(numeric_metrics(logs, prefix="batch/"), step=self._batches)

    @never_raise
    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._timer.pause()
        self._test_start = time.time()

    @never_raise
    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._test_start is not None:
            self._holder.recording().record_stage("validation", self._test_start, time.time())
        self._test_start = None

    @never_raise
    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        run = self._holder.recording()
        values = numeric_metrics(logs or {})
        if values:
            run.log(values, step=epoch)
        if self._checkpoint_dir is not None:
            self._checkpoint_dir.mkdir(parents=True, exist_ok=True)
            path = self._checkpoint_dir / f"epoch-{epoch}.keras"
            self.model.save(path)
            run.checkpoint(path, step=epoch)

    @never_raise
    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._holder.finish("succeeded")
