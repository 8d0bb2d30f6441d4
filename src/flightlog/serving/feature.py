"""The serving feature on the feature table: its ``flightlog serving`` commands (imported when used)."""

from __future__ import annotations

from flightlog.plugins import CommandRef, hookimpl


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [CommandRef("flightlog.serving.cli", "serving_group", "serving")]
