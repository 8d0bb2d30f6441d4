"""The serving feature on the feature table: its ``flightlog serving`` commands, the deployment
diagnosis as services (``diagnose_deployment`` for ``flightlog diagnose --deployment``,
``deployment_brief`` for the serving alerts' payloads, and its renderer) and its API routes
(``/api/v1/serving/...``, ``/api/v1/deployments/{endpoint}/timeline|diagnosis``), each imported when used."""

from __future__ import annotations

from typing import Any

from flightlog.plugins import CommandRef, Ref, hookimpl


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [CommandRef("flightlog.serving.cli", "serving_group", "serving")]


@hookimpl
def flightlog_services() -> dict[str, Ref]:
    return {
        "diagnose_deployment": Ref("flightlog.serving.diagnosis", "diagnose_deployment"),  # diagnose --deployment
        "deployment_brief": Ref("flightlog.serving.diagnosis", "deployment_brief"),  # a serving alert's payload
        "render_deployment_diagnosis": Ref("flightlog.serving.render", "render_deployment_diagnosis"),
    }


@hookimpl
def flightlog_diagnosis_reports() -> list[Ref]:
    # a serving replica's run is diagnosed as serving (None for any other run)
    return [Ref("flightlog.serving.replicadiag", "diagnose_replica")]


@hookimpl
def flightlog_api_operations() -> list[Any]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.serving.api import OPERATIONS

    return list(OPERATIONS)
