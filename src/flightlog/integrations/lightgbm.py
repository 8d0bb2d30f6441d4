"""LightGBM: a callback for ``lightgbm.train`` and the scikit-learn estimators.

    from flightlog.integrations.lightgbm import flightlog_lightgbm_callback
    booster = lgb.train(params, train_set, num_boost_round=100, valid_sets=[valid],
                        callbacks=[flightlog_lightgbm_callback(project="tabular")])

Recorded: the training params, each evaluation result after every round as
``<data>-<metric>`` (``valid-l2``) at the round number, and the final model (``model.txt``) as a
checkpoint at the last round, copied into the artifact store. Each round is a ``train_step``
stage.

The run starts when the callback is made (unless it records into a given or active run):
LightGBM calls callbacks after each round only, and a training that fails in its first round
is still recorded as failed, with its traceback.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from flightlog.integrations._common import RunHolder, clean_params, never_raise
from flightlog.sdk.run import Run

__all__ = ["FlightlogLightGBMCallback", "flightlog_lightgbm_callback"]


class FlightlogLightGBMCallback:
    """A LightGBM callback (a callable of ``CallbackEnv``, run after each round)."""

    order = 30  # after LightGBM's own evaluation logging
    before_iteration = False

    def __init__(self, run: Run | None = None, *, log_model: bool = True, **init_kwargs: Any) -> None:
        self._holder = RunHolder(run, **init_kwargs)
        self._log_model = log_model
        self._params_logged = False
        self._last = time.time()
        # the run starts now: LightGBM calls this callback only after a first round, and a
        # training that fails in that round (a custom metric, an objective) must land on a run
        self._holder.run  # noqa: B018

    @property
    def run(self) -> Run:
        return self._holder.run

    @never_raise
    def __call__(self, env: Any) -> None:
        run = self._holder.recording()
        now = time.time()
        if not self._params_logged:
            self._params_logged = True
            run.log_params(clean_params(dict(env.params or {})))
            self._last = now if env.iteration == env.begin_iteration else self._last
        run.record_stage("train_step", self._last, now)
        self._last = now
        values = {f"{item[0]}-{item[1]}": float(item[2]) for item in env.evaluation_result_list or []}
        if values:
            run.log(values, step=env.iteration)
        if env.iteration + 1 >= env.end_iteration:
            self._finish(env)

    def _finish(self, env: Any) -> None:
        run = self._holder.recording()
        if self._log_model and env.model is not None and hasattr(env.model, "save_model"):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "model.txt"
                env.model.save_model(str(path))
                run.checkpoint(path, step=env.iteration, copy=True)
        self._holder.finish("succeeded")


def flightlog_lightgbm_callback(
    project: str | None = None,
    name: str | None = None,
    *,
    run: Run | None = None,
    log_model: bool = True,
    **init_kwargs: Any,
) -> FlightlogLightGBMCallback:
    """The LightGBM callback, named like LightGBM's own (``lgb.log_evaluation``, ``lgb.early_stopping``)."""
    return FlightlogLightGBMCallback(run, log_model=log_model, project=project, name=name, **init_kwargs)
