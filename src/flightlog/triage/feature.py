"""Triage as a feature: `flightlog triage`, ``GET /api/v1/triage`` and the ``triage`` alert rule
kind (docs/triage.md).

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): the command is named
lazily, and the operations and the rule kind are imported inside their hooks, so loading the
table imports nothing of triage.
"""

from __future__ import annotations

from flightlog.plugins import CommandRef, hookimpl

__all__ = ["flightlog_cli_commands"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [CommandRef("flightlog.triage.cli", "triage_cmd", "triage")]
