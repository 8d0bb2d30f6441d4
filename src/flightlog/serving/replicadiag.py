"""``flightlog diagnose RUN`` for a serving replica: diagnosed as serving, never as training.

A replica's run has no training steps, no data loader and no loss: the training analyzers
would read its long life as "a slow tail after the last step" and its idle seconds as a data
loader's gaps. So a replica gets the diagnosis engine's service analyzers only — what ended or
broke the process: a crash, an out-of-memory kill, a signal — and, beside them, what a person
asks of a model server: its own traffic (requests, 5xx and 4xx rates, latency), and its
deployment's diagnosis (the way back), with the commands that open both.

On the feature table as a whole-run diagnoser (``flightlog_diagnosis_reports``): None for any
run that is not a replica, so other runs are diagnosed as before.
"""

from __future__ import annotations

from typing import Any

from flightlog.client import Client
from flightlog.diagnose.engine import diagnose_run, service_stop
from flightlog.errors import FlightlogError
from flightlog.models import SERVING_KIND
from flightlog.serving.diagnosis import deployment_brief
from flightlog.serving.recorder import AGGREGATE
from flightlog.serving.versions import version_stats

__all__ = ["diagnose_replica"]


def _own_traffic(client: Any, run: Any) -> list[dict[str, Any]]:
    """This replica's totals per version (its aggregate events alone)."""
    rows = []
    for event in client.logs(run, component=AGGREGATE):
        f = event.fields or {}
        rows.append({**f, "minute": int(f.get("minute") or 0), "replicas": 1})
    return [s.to_dict() for s in version_stats(rows)]


def diagnose_replica(client: Client, run_id: str) -> dict[str, Any] | None:
    """The report of a replica's run (the engine's, with a ``serving`` section); None for any
    other run. ``client``: the diagnosis's reader, a `flightlog.Client` (in the server its
    ``ctx.client``), which the serving readers ask for log components and the registry."""
    info = client.run(run_id)
    if info.kind != SERVING_KIND:
        return None
    report = diagnose_run(client, info, service=True)
    tags = info.tags or {}
    endpoint, env = tags.get("serving.endpoint"), tags.get("serving.env")
    section: dict[str, Any] = {
        "endpoint": endpoint,
        "env": env,
        "model": tags.get("serving.model") or None,
        "version": tags.get("serving.version"),
        "replica": tags.get("serving.replica"),
        "traffic": _own_traffic(client, info),
        "stop": service_stop(info),
        "commands": {
            "deployment": f"flightlog deployments show {endpoint} --env {env}",
            "diagnose": f"flightlog diagnose --deployment {endpoint} --env {env}",
            "stats": f"flightlog serving stats {endpoint} --env {env} --by version",
        },
    }
    if endpoint and env:  # the deployment diagnosis, in the short form alerts carry
        try:
            section["diagnosis"] = deployment_brief(client, endpoint, env, project=info.project)
        except FlightlogError as exc:
            section["diagnosis"] = {"error": exc.message}
    report["serving"] = section
    return report
