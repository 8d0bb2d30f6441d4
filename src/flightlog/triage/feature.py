"""Triage as a feature: `flightlog triage`, ``GET /api/v1/triage`` and the ``triage`` alert rule
kind (docs/triage.md).

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): the command is named
lazily, and the operations and the rule kind are imported inside their hooks, so loading the
table imports nothing of triage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.plugins import CommandRef, Ref, hookimpl

if TYPE_CHECKING:
    from flightlog.server.operations import Operation

__all__ = ["flightlog_cli_commands", "flightlog_api_operations", "flightlog_services"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [CommandRef("flightlog.triage.cli", "triage_cmd", "triage")]


@hookimpl
def flightlog_api_operations() -> list[Operation]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.triage.goodput_api import OPERATIONS as GOODPUT

    return list(GOODPUT)


@hookimpl
def flightlog_services() -> dict[str, Ref]:
    # `flightlog runs show` prints a run's goodput line when a feature provides it
    return {"run_goodput": Ref("flightlog.triage.goodput", "run_goodput")}
