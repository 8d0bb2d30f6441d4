"""Diagnosis as a feature: `flightlog diagnose`, `compare`, `rightsize` and their API.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): what it adds to the
CLI and the API, named lazily so that nothing heavy is imported before it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flightlog.plugins import CommandRef, Ref, hookimpl

if TYPE_CHECKING:
    from flightlog.server.operations import Operation

__all__ = ["flightlog_cli_commands", "flightlog_api_operations", "flightlog_services", "flightlog_listing_fields"]


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


@hookimpl
def flightlog_services() -> dict[str, Ref]:
    return {
        "classify_failure": Ref("flightlog.diagnose.classify", "classify_failure"),  # the runner, at each exit
        # the runner, at the failed exit of a distributed job: the culprit rank's category
        "judge_ranks": Ref("flightlog.diagnose.distributed", "judge_attempt"),
        "diagnose_run": Ref("flightlog.diagnose.engine", "diagnose_run"),  # Client.diagnose
        "compare_runs": Ref("flightlog.diagnose.compare", "compare_runs"),  # Client.compare
        "rightsize": Ref("flightlog.diagnose.rightsize", "rightsize"),  # Client.rightsize
    }


@hookimpl
def flightlog_listing_fields() -> dict[str, Callable[[Any], Any]]:
    from flightlog.diagnose.cause import run_cause  # light: the category a run's row already says

    return {"cause": run_cause}
