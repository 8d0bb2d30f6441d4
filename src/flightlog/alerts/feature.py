"""Alerts as a feature: `flightlog alerts`.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): what it adds to the
CLI, named lazily so that nothing heavy is imported before it is used.
"""

from __future__ import annotations

from flightlog.plugins import CommandRef, hookimpl

__all__ = ["flightlog_cli_commands"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.alerts.cli", "alerts_group", "alerts"),
    ]
