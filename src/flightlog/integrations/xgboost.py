"""XGBoost: a ``TrainingCallback`` for ``xgboost.train`` and the scikit-learn estimators.

    from flightlog.integrations.xgboost import FlightlogXGBoostCallback
    booster = xgb.train(params, dtrain, num_boost_round=100, evals=[(dvalid, "valid")],
                        callbacks=[FlightlogXGBoostCallback(project="tabular")])

Recorded: the booster's training parameters (``eta``, ``max_depth``, ``objective``, ...) as
params, each evaluation result after every round as ``<data>-<metric>`` (``valid-rmse``) at the
round number, and the final model (``model.json``) as a checkpoint at the last round, copied
into the artifact store. Each round is a ``train_step`` stage.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import xgboost

from flightlog.integrations._common import RunHolder, clean_params, never_raise
from flightlog.sdk.run import Run

__all__ = ["FlightlogXGBoostCallback"]

# the learner's own parameter sections in ``Booster.save_config()``
_SECTIONS = (
    ("learner", "learner_train_param"),
    ("learner", "gradient_booster", "tree_train_param"),
    ("learner", "learner_model_param"),
    ("learner", "objective"),
)


class FlightlogXGBoostCallback(xgboost.callback.TrainingCallback):
    """Records an XGBoost training run into a flightlog run (see the module docstring)."""

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        *,
        run: Run | None = None,
        log_model: bool = True,
        **init_kwargs: Any,
    ) -> None:
        super().__init__()
        self._holder = RunHolder(run, project=project, name=name, **init_kwargs)
        self._log_model = log_model
        self._round_start = 0.0
        self._last_round = -1

    @property
    def run(self) -> Run:
        return self._holder.run

    @never_raise
    def before_training(self, model: Any) -> Any:
        config = json.loads(model.save_config())
        params: dict[str, Any] = {}
        for path in _SECTIONS:
            section: Any = config
            for key in path:
                section = section.get(key, {}) if isinstance(section, dict) else {}
            params.update({k: _number(v) for k, v in section.items() if isinstance(v, str)})
        self._holder.recording().log_params(clean_params(params))
        return model

    def before_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        self._round_start = time.time()
        return False

    def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        self._record_round(epoch, evals_log)
        return False  # never stops training

    @never_raise
    def _record_round(self, epoch: int, evals_log: Any) -> None:
        run = self._holder.recording()
        run.record_stage("train_step", self._round_start, time.time())
        values = {
            f"{data}-{metric}": float(history[-1])
            for data, metrics in evals_log.items()
            for metric, history in metrics.items()
            if history
        }
        if values:
            run.log(values, step=epoch)
        self._last_round = epoch

    @never_raise
    def after_training(self, model: Any) -> Any:
        run = self._holder.recording()
        if self._log_model:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "model.json"
                model.save_model(path)
                run.checkpoint(path, step=max(self._last_round, 0), copy=True)
        self._holder.finish("succeeded")
        return model


def _number(text: str) -> Any:
    """XGBoost's config holds every value as text; numbers come back as numbers."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
