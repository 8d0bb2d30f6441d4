"""The serving feature on the feature table: its ``flightlog serving`` commands (``serving
diagnose`` among them), ``flightlog diagnose --deployment`` as a mode of diagnose's command, a
replica's run diagnosed as serving, its rule kinds (``serving_latency``, ``serving_error_rate``,
``serving_drift``, ``serving_cohort``) and its API routes (``/api/v1/serving/...``,
``/api/v1/deployments/{endpoint}/timeline|diagnosis``), each imported when used.
"""

from __future__ import annotations

from typing import Any

from flightlog.plugins import CommandMode, CommandRef, Ref, hookimpl
from flightlog.plugins.operations import Operation

__all__ = [
    "flightlog_alert_rule_kinds",
    "flightlog_api_operations",
    "flightlog_cli_commands",
    "flightlog_command_modes",
    "flightlog_diagnosis_reports",
]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [CommandRef("flightlog.serving.cli", "serving_group", "serving")]


@hookimpl
def flightlog_command_modes() -> list[CommandMode]:
    return [
        CommandMode(
            "diagnose",
            CommandRef("flightlog.serving.cli", "deployment_mode", "diagnose-deployment"),
            conflict=(
                "{option} diagnoses an endpoint, not a run: drop {given}, or drop {option} "
                "(flightlog diagnose RUN, or flightlog diagnose {option} ENDPOINT)"
            ),
            help=(
                "With --deployment: walk back from a production change to the training behind it "
                "(as flightlog serving diagnose).\n\n\b\nflightlog diagnose --deployment fraud-api --env prod --since 6h"
            ),
            hint="or --deployment ENDPOINT for a deployment",
        )
    ]


@hookimpl
def flightlog_diagnosis_reports() -> list[Ref]:
    # a serving replica's run is diagnosed as serving (None for any other run)
    return [Ref("flightlog.serving.replicadiag", "diagnose_replica")]


@hookimpl
def flightlog_alert_rule_kinds() -> list[Any]:
    from flightlog.serving.alertkinds import KINDS  # only where rules are read

    return list(KINDS)


@hookimpl
def flightlog_api_operations() -> list[Operation]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.serving.api import OPERATIONS

    return list(OPERATIONS)
