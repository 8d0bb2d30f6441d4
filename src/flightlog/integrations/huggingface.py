"""Hugging Face ``transformers``: a ``TrainerCallback``.

    from flightlog.integrations.huggingface import FlightlogCallback
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[FlightlogCallback(project="nlp")])

or, once this module is imported, ``TrainingArguments(report_to="flightlog")`` (the module
registers itself with the Trainer's reporting integrations).

Recorded: the ``TrainingArguments`` and the model's config as params (``args.*``,
``model.*``), every value the Trainer logs (``loss``, ``learning_rate``, ``eval_loss``, ...)
at the global step, each checkpoint directory the Trainer saves (path and step), and stages
``train_step`` (one optimizer step) and ``data_loading`` (the wait before it).
"""

from __future__ import annotations

import os
from typing import Any

from transformers import TrainerCallback
from transformers.integrations import integration_utils

from flightlog.integrations._common import (
    BatchTimer,
    RunHolder,
    clean_params,
    never_raise,
    numeric_metrics,
)
from flightlog.sdk.run import Run

__all__ = ["FlightlogCallback", "register"]

# TrainingArguments fields that are about the machine or the Hub rather than the experiment
_SKIP_ARGS = {"hub_token", "push_to_hub_token", "hub_model_id", "logging_dir", "output_dir", "deepspeed", "fsdp_config"}


class FlightlogCallback(TrainerCallback):
    """Records a ``Trainer``'s params, metrics, checkpoints and step stages into a flightlog run."""

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        *,
        run: Run | None = None,
        log_checkpoints: bool = True,
        **init_kwargs: Any,
    ) -> None:
        self._holder = RunHolder(run, project=project, name=name, **init_kwargs)
        self._log_checkpoints = log_checkpoints
        self._timer = BatchTimer()

    @property
    def run(self) -> Run:
        return self._holder.run

    @never_raise
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        params = {k: v for k, v in args.to_dict().items() if k not in _SKIP_ARGS and "token" not in k}
        data: dict[str, Any] = {"args": params}
        config = getattr(model, "config", None)
        if config is not None and hasattr(config, "to_dict"):
            data["model"] = {
                k: v for k, v in config.to_dict().items() if not k.startswith("_") and k not in ("id2label", "label2id")
            }
        self._holder.recording().log_params(clean_params(data))
        self._timer.reset()

    @never_raise
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self._timer.begin(self._holder.recording())

    @never_raise
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self._timer.end(self._holder.recording())

    @never_raise
    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._timer.reset()

    @never_raise
    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._timer.pause()  # the evaluation loop ran since the last step ended

    @never_raise
    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs:
            return
        values = numeric_metrics(logs)
        if values:
            self._holder.recording().log(values, step=state.global_step)
        self._timer.pause()

    @never_raise
    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not self._log_checkpoints:
            return
        path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        if os.path.exists(path):
            self._holder.recording().checkpoint(path, step=state.global_step)
        self._timer.pause()

    @never_raise
    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._holder.finish("succeeded")


def register() -> None:
    """Make ``report_to="flightlog"`` pick this callback (done on import)."""
    integration_utils.INTEGRATION_TO_CALLBACK["flightlog"] = FlightlogCallback


register()
