"""Pipelines as a feature: `flightlog pipeline` and the pipelines API.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): what it adds to the
CLI and the API, named lazily so that nothing heavy is imported before it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.plugins import CommandRef, Ref, hookimpl

if TYPE_CHECKING:
    from flightlog.server.operations import Operation

__all__ = ["flightlog_cli_commands", "flightlog_api_operations", "flightlog_diagnosis_reports"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.pipeline.cli", "pipeline_group", "pipeline"),
    ]


@hookimpl
def flightlog_api_operations() -> list[Operation]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.pipeline.api import OPERATIONS

    return list(OPERATIONS)


@hookimpl
def flightlog_diagnosis_reports() -> list[Ref]:
    # a pipeline's report is its failing step's cause (None for a run that is not a pipeline)
    return [Ref("flightlog.pipeline.diagnosis", "diagnose_pipeline")]
