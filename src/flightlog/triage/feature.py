"""Triage as a feature: `flightlog triage`, ``GET /api/v1/triage``, ``GET /api/v1/runs/{run}/goodput``,
the ``triage`` alert rule kind and a run's goodput for ``flightlog runs show`` (docs/triage.md).

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): the command is named
lazily, and the operations, the rule kind and the goodput are imported inside their hooks, so
loading the table imports nothing of triage.
"""

from __future__ import annotations

from typing import Any

from flightlog.plugins import CommandRef, hookimpl
from flightlog.plugins.operations import Operation

__all__ = ["flightlog_alert_rule_kinds", "flightlog_api_operations", "flightlog_cli_commands", "flightlog_run_goodput"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [CommandRef("flightlog.triage.cli", "triage_cmd", "triage")]


@hookimpl
def flightlog_api_operations() -> list[Operation]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.triage.api import OPERATIONS

    return list(OPERATIONS)


@hookimpl
def flightlog_alert_rule_kinds() -> list[Any]:
    from flightlog.triage.alertkinds import KIND  # only where rules are read

    return [KIND]


@hookimpl
def flightlog_run_goodput(client: Any, run: Any) -> dict[str, Any]:
    """`flightlog runs show`'s goodput line."""
    from flightlog.triage.goodput import run_goodput  # cost: `runs show` of a finished run only

    return run_goodput(client, run)
