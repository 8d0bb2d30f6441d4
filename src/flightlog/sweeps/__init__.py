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
from typing import TYPE_CHECKING, Any

from flightlog.lazy import lazy_attributes

if TYPE_CHECKING:
    from flightlog.sweeps.driver import SweepResult, Trial
    from flightlog.sweeps.space import Choice, IntUniform, LogUniform, Param, Uniform

__all__ = ["sweep", "Trial", "SweepResult", "Choice", "Uniform", "LogUniform", "IntUniform"]

# imported on first use: the feature table imports this package for `sweeps/feature.py` on every
# `flightlog` command, and the driver brings the client with it (issue 32)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "Trial": "flightlog.sweeps.driver",
        "SweepResult": "flightlog.sweeps.driver",
        "Choice": "flightlog.sweeps.space",
        "Uniform": "flightlog.sweeps.space",
        "LogUniform": "flightlog.sweeps.space",
        "IntUniform": "flightlog.sweeps.space",
    },
    eager=("sweep",),
)


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
    from flightlog.sweeps.driver import CommandTarget, FunctionTarget, run_sweep  # cost: see __getattr__ above
    from flightlog.sweeps.space import Choice, Param, parse_param  # cost: as above

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
