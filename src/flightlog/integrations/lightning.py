"""PyTorch Lightning: a ``Logger`` for params, metrics and checkpoints, and a callback for
stages.

    from flightlog.integrations.lightning import FlightlogLogger
    logger = FlightlogLogger(project="vision", name="resnet")
    trainer = L.Trainer(logger=logger, callbacks=[logger.stages()])

``log_hyperparams`` records params (``save_hyperparameters()`` in the module), ``log_metrics``
records every ``self.log(...)`` value at the global step, and every checkpoint the
``ModelCheckpoint`` callback writes is recorded as a checkpoint (path and step, the file stays
where Lightning put it). The stages callback times each training batch (``train_step``), the
wait for the next batch (``data_loading``) and each validation loop (``validation``).

Inside ``flightlog run`` or after ``flightlog.init()`` the logger records into that run;
otherwise it starts one (and finishes it when ``fit`` ends: succeeded, or failed with the
exception's traceback as a stderr event and the last lines the process printed, so that
``flightlog diagnose`` names the cause as it would under ``flightlog run``).
"""

from __future__ import annotations

import sys
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers.logger import Logger, rank_zero_experiment
from lightning.pytorch.utilities import rank_zero_only

from flightlog.integrations._common import (
    BatchTimer,
    RunHolder,
    clean_params,
    never_raise,
    numeric_metrics,
)
from flightlog.sdk.run import Run

__all__ = ["FlightlogLogger", "FlightlogStages"]


class FlightlogLogger(Logger):
    """A Lightning logger writing into a flightlog run (see the module docstring)."""

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        *,
        run: Run | None = None,
        tags: dict[str, Any] | None = None,
        log_checkpoints: bool = True,
        **init_kwargs: Any,
    ) -> None:
        super().__init__()
        self._holder = RunHolder(run, project=project, name=name, tags=tags, **init_kwargs)
        self._project = project
        self._log_checkpoints = log_checkpoints
        self._recorded: set[tuple[str, float]] = set()

    @property
    def name(self) -> str:
        return self._project or "flightlog"

    @property
    def version(self) -> str:
        return self._holder.run.id

    @property
    @rank_zero_experiment
    def experiment(self) -> Run:
        """The flightlog run (``logger.experiment.note(...)`` and every other Run method)."""
        return self._holder.run

    @rank_zero_only
    @never_raise
    def log_hyperparams(self, params: dict[str, Any] | Namespace, *args: Any, **kwargs: Any) -> None:
        data = vars(params) if isinstance(params, Namespace) else dict(params or {})
        cleaned = clean_params(data)
        if cleaned:
            self._holder.recording().log_params(cleaned)

    @rank_zero_only
    @never_raise
    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        values = numeric_metrics(metrics)
        if values:
            self._holder.recording().log(values, step=step)

    @rank_zero_only
    @never_raise
    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        if not self._log_checkpoints:
            return
        step = int(getattr(checkpoint_callback, "_last_global_step_saved", 0) or 0)
        paths = [
            *getattr(checkpoint_callback, "best_k_models", {}),
            getattr(checkpoint_callback, "last_model_path", ""),
        ]
        for path in paths:
            if not path or not Path(path).exists():
                continue
            key = (str(path), Path(path).stat().st_mtime)
            if key in self._recorded:
                continue
            self._recorded.add(key)
            self._holder.recording().checkpoint(path, step=step)

    @rank_zero_only
    @never_raise
    def finalize(self, status: str) -> None:
        if not self._holder.started:
            return
        if status == "success":
            self._holder.finish("succeeded")
        else:
            # Lightning calls ``finalize("failed")`` from the ``except`` block that re-raises
            # the training's exception: it is still the one being handled here
            self._holder.fail(sys.exc_info()[1])

    def stages(self) -> FlightlogStages:
        """The callback that times batches and validation loops into this logger's run."""
        return FlightlogStages(self)


class FlightlogStages(Callback):
    """Times training batches (``train_step``), the waits between them (``data_loading``) and
    validation loops (``validation``) as stages of the run."""

    def __init__(self, logger: FlightlogLogger | None = None, *, run: Run | None = None) -> None:
        self._logger = logger
        self._holder = RunHolder(run)
        self._timer = BatchTimer()
        self._validation_start: float | None = None

    def _run(self) -> Run:
        holder = self._logger._holder if self._logger is not None else self._holder
        return holder.recording()

    @never_raise
    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._timer.reset()

    @never_raise
    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if trainer.global_rank == 0:
            self._timer.begin(self._run())

    @never_raise
    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if trainer.global_rank == 0:
            self._timer.end(self._run())

    @never_raise
    def on_validation_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._timer.pause()
        self._validation_start = time.time()

    @never_raise
    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self._validation_start is not None and trainer.global_rank == 0 and not trainer.sanity_checking:
            self._run().record_stage("validation", self._validation_start, time.time())
        self._validation_start = None
        self._timer.reset()
