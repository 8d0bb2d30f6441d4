"""Hyperparameter sweeps: grid, random or TPE (Optuna) search over a command or a function,
each trial a child run, with early stopping from alert rules (docs/integrations.md#sweeps).

    from flightlog.sweeps import sweep

    def train(trial):
        for epoch in range(20):
            loss = ...
            trial.run.log({"val_loss": loss}, step=epoch)
            if trial.should_stop():
                break

    result = sweep(train, {"lr": "log:1e-4:1e-1", "layers": "int:1:4"}, metric="val_loss", trials=20)
    result.best.params
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flightlog.sweeps.driver import CommandTarget, FunctionTarget, SweepResult, Trial, run_sweep
from flightlog.sweeps.space import Choice, IntUniform, LogUniform, Param, Uniform, parse_param

__all__ = ["sweep", "Trial", "SweepResult", "Choice", "Uniform", "LogUniform", "IntUniform"]


def sweep(
    target: Callable[[Trial], Any] | Sequence[str],
    space: Mapping[str, Param | str | Sequence[Any]],
    *,
    metric: str,
    goal: str = "minimize",
    method: str = "random",
    trials: int = 10,
    project: str | None = None,
    name: str | None = None,
    alerts: str | None = None,
    seed: int | None = None,
) -> SweepResult:
    """Run a sweep over a function (called with a :class:`Trial`) or a command (``{param}`` placeholders).

    ``space`` values: a ``Param`` (``LogUniform(1e-4, 1e-1)``), a spec string as on the command
    line (``"log:1e-4:1e-1"``, ``"int:1:4"``, ``"16,32,64"``) or a list of choices.
    """
    parsed: dict[str, Param] = {}
    for key, value in space.items():
        if isinstance(value, Param):
            parsed[key] = value
        elif isinstance(value, str):
            parsed[key] = parse_param(f"{key}={value}")[1]
        else:
            parsed[key] = Choice(tuple(value))
    runner = FunctionTarget(target) if callable(target) else CommandTarget(list(target))
    return run_sweep(
        runner,
        parsed,
        metric=metric,
        goal=goal,
        method=method,
        trials=trials,
        project=project,
        name=name,
        alerts=alerts,
        seed=seed,
    )
