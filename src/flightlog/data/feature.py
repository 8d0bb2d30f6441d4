"""Data evidence as a feature: `flightlog data` (its commands need `flightlog[data]`), and the
answers the SDK asks of it (``run.log_input``'s manifest, ``run.log_eval``'s cohorts).

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): the command is named
lazily and each answer imports its module inside the hook, so nothing heavy is imported before
it is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flightlog.plugins import CommandRef, hookimpl

__all__ = ["flightlog_cli_commands", "flightlog_cohort_evaluate", "flightlog_data_manifest"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.data.cli", "data_group", "data"),
    ]


@hookimpl
def flightlog_data_manifest(path: Any, cache_dir: Any, exclude: Sequence[str]) -> dict[str, Any]:
    from flightlog.data.manifest import build_manifest  # cost: run.log_input only

    return build_manifest(path, cache_dir=cache_dir, exclude=exclude)


@hookimpl
def flightlog_cohort_evaluate(
    y_true: Any, y_pred: Any, cohorts: Any, metrics: Sequence[str] | None, sample_size: int
) -> dict[str, Any]:
    from flightlog.data.cohorts import evaluate  # cost: run.log_eval only (numpy)

    return evaluate(y_true, y_pred, cohorts=cohorts, metrics=metrics, sample_size=sample_size)
