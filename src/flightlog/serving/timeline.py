"""A deployment's timeline as one document: what it should serve (the desired history), what
each replica served from its start to its last heartbeat, per version and minute what the
traffic looked like, the rollouts, and the alerts that named the endpoint.

Plain Python over a `flightlog.Client` and a registry (`flightlog.registry.Registry`, or the
server's project-scoped one), so the UI's deployment page (``GET /api/v1/deployments/{endpoint}/timeline``),
the CLI and the deployment diagnosis read the same evidence the same way.
"""

from __future__ import annotations

from typing import Any

from flightlog.alerts.stores import open_alert_store
from flightlog.errors import InvalidInput, NotFound
from flightlog.serving.reading import aggregates, replicas
from flightlog.serving.rollouts import as_iso, first_traffic, rollouts
from flightlog.serving.versions import version_stats
from flightlog.timefmt import iso

__all__ = ["MINUTE_FIELDS", "deployment_of", "timeline"]

#: what a minute row of the timeline keeps of an aggregate (its histogram and outputs stay out:
#: a day of minutes would weigh megabytes; `serving.aggregates` has them)
MINUTE_FIELDS = (
    "version",
    "minute",
    "requests",
    "errors",
    "error_rate",
    "client_errors",
    "client_error_rate",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "replicas",
)
_ALERTS_READ = 1000


def deployment_of(registry: Any, endpoint: str, env: str | None, project: str | None = None) -> Any:
    """The deployment of ``endpoint`` in ``env``; without ``env``, its only environment.

    NotFound (naming the deployments there are) for an endpoint never deployed; InvalidInput
    when it is deployed in several environments and none was named."""
    if env is not None:
        return registry.deployment(endpoint, env, project)
    found = [d for d in registry.deployments(project) if d.endpoint == endpoint]
    if not found:
        known = ", ".join(sorted({f"{d.endpoint} ({d.env})" for d in registry.deployments(project)})) or "none"
        raise NotFound(f"no deployment of endpoint {endpoint!r}; deployments: {known}", details={"endpoint": endpoint})
    envs = sorted({d.env for d in found})
    if len(envs) > 1:
        raise InvalidInput(
            f"endpoint {endpoint!r} is deployed in several environments ({', '.join(envs)}): name one (env=)",
            details={"envs": envs},
        )
    return found[0]


def _desired(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "time": h["time"],
            "version": h["to_version"],
            "model": h["model"],
            "ref": h.get("ref"),
            "actor": h.get("actor"),
            "from_version": h.get("from_version"),
        }
        for h in history
    ]


def _alerts(client: Any, endpoint: str, env: str, project: str) -> list[dict[str, Any]]:
    """Alerts whose labels or evidence name the endpoint (and, when they name one, the environment)."""
    try:
        store = open_alert_store(client.store)
        found = store.alerts(project=project, limit=_ALERTS_READ)
    except InvalidInput:  # a store that keeps no alerts: the timeline has none to show
        return []
    out = []
    for a in found:
        labels, evidence = a.labels or {}, a.evidence or {}
        named = labels.get("endpoint") or evidence.get("endpoint")
        where = labels.get("env") or evidence.get("env")
        if named == endpoint and (not where or where == env):
            out.append(a.to_dict())
    out.sort(key=lambda a: a.get("active_since") or a.get("fired_at") or "")
    return out


def _version_row(v: dict[str, Any]) -> dict[str, Any]:
    """A version's totals over the window (the page's per-version table), times ISO."""
    return {**v, "first": iso(v["first"]), "last": iso(v["last"])}


def _rollout_row(r: dict[str, Any]) -> dict[str, Any]:
    """A rollout as the timeline gives it: versions as numbers (the desired history's), times ISO."""
    row = as_iso(r)
    for key in ("from_version", "to_version"):
        v = row[key]
        row[key] = int(v) if isinstance(v, str) and v.isdigit() else v
    return row


def _replica_row(r: dict[str, Any]) -> dict[str, Any]:
    return {**r, "started": iso(r["started"]), "heartbeat": iso(r["heartbeat"]), "ended": iso(r["ended"])}


def timeline(
    client: Any,
    registry: Any,
    endpoint: str,
    env: str | None = None,
    *,
    since: str | float | None = None,
    project: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The deployment timeline of ``endpoint`` in ``env`` (its only environment if None).

    ``since`` (``1h``, an ISO time, epoch seconds) limits the minutes; the desired history,
    the replicas and the alerts are always whole (a replica that started before ``since`` still
    has a lane). Raises NotFound for an endpoint that is not deployed."""
    d = deployment_of(registry, endpoint, env, project)
    report = registry.deployment_report(d.endpoint, d.env, d.project)
    desired = _desired(report["history"])
    rows = replicas(client, d.endpoint, project=d.project, env=d.env, now=now)
    rows.sort(key=lambda r: (r["started"] or 0.0, str(r["replica"])))
    per_minute = aggregates(client, d.endpoint, since, project=d.project, env=d.env)
    minutes = [{**{k: m.get(k) for k in MINUTE_FIELDS}, "time": iso(float(m["minute"]) * 60.0)} for m in per_minute]
    # first traffic needs every minute, not only those since `since`: a rollout before it keeps its time
    traffic = first_traffic(
        per_minute if since is None else aggregates(client, d.endpoint, project=d.project, env=d.env)
    )
    changes = [r for r in rollouts(report["history"], traffic, replicas=rows, observed=False) if r["from_version"]]
    versions = [_version_row(v.to_dict()) for v in version_stats(per_minute)]
    return {
        "endpoint": d.endpoint,
        "env": d.env,
        "project": d.project,
        "model": d.name,
        "version": d.version,
        "desired": desired,
        "replicas": [_replica_row(r) for r in rows],
        "minutes": minutes,
        "versions": versions,
        "rollouts": [_rollout_row(r) for r in changes],
        "alerts": _alerts(client, d.endpoint, d.env, d.project),
    }
