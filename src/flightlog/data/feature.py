"""Data evidence as a feature: `flightlog data` (its commands need `flightlog[data]`).

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): what it adds to the
CLI, named lazily so that nothing heavy is imported before it is used.
"""

from __future__ import annotations

from flightlog.plugins import CommandRef, Ref, hookimpl

__all__ = ["flightlog_cli_commands", "flightlog_services"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.data.cli", "data_group", "data"),
    ]


@hookimpl
def flightlog_services() -> dict[str, Ref]:
    return {
        "data_manifest": Ref("flightlog.data.manifest", "build_manifest"),  # run.log_input
        "cohort_evaluate": Ref("flightlog.data.cohorts", "evaluate"),  # run.log_eval
    }
