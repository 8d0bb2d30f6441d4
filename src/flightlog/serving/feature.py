"""The serving feature on the feature table: its ``flightlog serving`` commands and its API routes
(``/api/v1/serving/...``, ``/api/v1/deployments/{endpoint}/timeline``), each imported when used."""

from __future__ import annotations

from typing import Any

from flightlog.plugins import CommandRef, hookimpl


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [CommandRef("flightlog.serving.cli", "serving_group", "serving")]


@hookimpl
def flightlog_api_operations() -> list[Any]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.serving.api import OPERATIONS

    return list(OPERATIONS)
