"""The server as a feature: `flightlog server`, `flightlog token` and `flightlog ui` (they need `flightlog[server]`).

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): what it adds to the
CLI, named lazily so that nothing heavy is imported before it is used.
"""

from __future__ import annotations

from flightlog.plugins import CommandRef, hookimpl

__all__ = ["flightlog_cli_commands"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.server.cli", "server_cmd", "server"),
        CommandRef("flightlog.server.cli", "token_group", "token"),
        CommandRef("flightlog.server.ui", "ui_cmd", "ui"),
    ]
