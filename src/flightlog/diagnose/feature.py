"""Diagnosis as a feature: `flightlog diagnose`, `compare`, `rightsize` and their API.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): what it adds to the
CLI and the API, named lazily so that nothing heavy is imported before it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.plugins import CommandRef, hookimpl

if TYPE_CHECKING:
    from flightlog.server.operations import Operation

__all__ = ["flightlog_cli_commands", "flightlog_api_operations"]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.diagnose.cli", "diagnose_cmd", "diagnose"),
        CommandRef("flightlog.diagnose.cli", "compare_cmd", "compare"),
        CommandRef("flightlog.diagnose.cli", "rightsize_cmd", "rightsize"),
    ]


@hookimpl
def flightlog_api_operations() -> list[Operation]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.diagnose.api import OPERATIONS

    return list(OPERATIONS)
