"""Serving evidence in the HTTP API: ``/api/v1/serving/{endpoint}/aggregates|predictions|replicas``,
the deployment timeline ``/api/v1/deployments/{endpoint}/timeline`` and its diagnosis
``/api/v1/deployments/{endpoint}/diagnosis`` (the JSON of ``flightlog diagnose --deployment``), declared as server
operations and served through the feature table (``flightlog_api_operations``).

Every handler reads through a `flightlog.Client` over the server's store with the readers of
`serving.reading` and `serving.timeline` (the CLI's code), limited to the token's project: a
token of another project sees no replica of the endpoint, so it gets the same 404 as for an
endpoint nobody served.
"""

from __future__ import annotations

from typing import Any

from flightlog.client import Client
from flightlog.errors import InvalidInput, NotFound
from flightlog.names import check_name_text
from flightlog.registry.service import LocalRegistry
from flightlog.registry.stores import sql_store_of
from flightlog.server.context import Ctx, forbid_other_project
from flightlog.server.operations import Operation, Param, ok
from flightlog.server.responses import Response, json_response
from flightlog.serving.diagnosis import DEFAULT_SINCE, diagnose_deployment
from flightlog.serving.drift import DEFAULT_DRIFT_SINCE, endpoint_drift
from flightlog.serving.reading import aggregates, predictions, replica_runs, replicas
from flightlog.serving.timeline import timeline
from flightlog.serving.versions import version_stats
from flightlog.timefmt import iso, parse_time

__all__ = ["OPERATIONS"]


def _registry(ctx: Ctx, client: Client) -> LocalRegistry:
    store = sql_store_of(ctx.store)
    if store is None:
        raise InvalidInput("this server's store keeps no model registry (so no deployments)")
    return LocalRegistry(client, store, admin=False, scope=ctx.principal.project, visible=ctx.visible())


def _since(ctx: Ctx) -> float | None:
    raw = ctx.query.text("since", max_len=100)
    return None if raw is None or raw == "" else parse_time(raw, what="since")


def _scope(ctx: Ctx) -> str | None:
    return forbid_other_project(ctx.principal, ctx.query.text("project", max_len=200))


def _served(client: Client, endpoint: str, project: str | None, env: str | None) -> None:
    """NotFound unless some replica (in the token's project, and ``env`` when given) served the endpoint."""
    if replica_runs(client, endpoint, project, env):
        return
    where = f" in environment {env!r}" if env else ""
    raise NotFound(
        f"no serving replica has reported endpoint {endpoint!r}{where}: attach one with "
        "serving.attach(model=..., endpoint=...) (docs/models.md#serving)",
        details={"endpoint": endpoint, "env": env},
    )


def _times(row: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {**row, **{k: iso(row[k]) for k in keys if isinstance(row.get(k), (int, float))}}


async def get_aggregates(ctx: Ctx) -> Response:
    endpoint, env, since, project = ctx.path("endpoint"), ctx.query.text("env", max_len=128), _since(ctx), _scope(ctx)

    def read() -> dict[str, Any]:
        client = ctx.client
        _served(client, endpoint, project, env)
        rows = aggregates(client, endpoint, since, project=project, env=env)
        return {"endpoint": endpoint, "env": env, "aggregates": [{**r, "time": iso(r["minute"] * 60.0)} for r in rows]}

    return json_response(await ctx.call(read))


async def get_versions(ctx: Ctx) -> Response:
    endpoint, env, since, project = ctx.path("endpoint"), ctx.query.text("env", max_len=128), _since(ctx), _scope(ctx)

    def read() -> dict[str, Any]:
        client = ctx.client
        _served(client, endpoint, project, env)
        rows = aggregates(client, endpoint, since, project=project, env=env)
        return {
            "endpoint": endpoint,
            "env": env,
            "versions": [_times(v.to_dict(), "first", "last") for v in version_stats(rows)],
        }

    return json_response(await ctx.call(read))


async def get_drift(ctx: Ctx) -> Response:
    endpoint, env, project = ctx.path("endpoint"), ctx.query.text("env", max_len=128), _scope(ctx)
    since = ctx.query.text("since", max_len=100) or DEFAULT_DRIFT_SINCE
    version = ctx.query.text("version", max_len=64)

    def read() -> dict[str, Any]:
        client = ctx.client
        _served(client, endpoint, project, env)
        return endpoint_drift(client, endpoint, env=env, since=since, version=version, project=project)

    return json_response(await ctx.call(read))


async def get_predictions(ctx: Ctx) -> Response:
    endpoint, env, since, project = ctx.path("endpoint"), ctx.query.text("env", max_len=128), _since(ctx), _scope(ctx)
    limit = ctx.query.count("limit", default=1000, max=100_000)

    def read() -> dict[str, Any]:
        client = ctx.client
        _served(client, endpoint, project, env)
        rows = predictions(client, endpoint, since, project=project, env=env, limit=limit or None)
        return {"endpoint": endpoint, "env": env, "predictions": [_times(r, "time", "labeled_at") for r in rows]}

    return json_response(await ctx.call(read))


async def get_replicas(ctx: Ctx) -> Response:
    endpoint, env, project = ctx.path("endpoint"), ctx.query.text("env", max_len=128), _scope(ctx)

    def read() -> dict[str, Any]:
        client = ctx.client
        _served(client, endpoint, project, env)
        rows = replicas(client, endpoint, project=project, env=env)
        return {
            "endpoint": endpoint,
            "env": env,
            "replicas": [_times(r, "started", "heartbeat", "ended") for r in rows],
        }

    return json_response(await ctx.call(read))


async def get_timeline(ctx: Ctx) -> Response:
    endpoint, env, since, project = ctx.path("endpoint"), ctx.query.text("env", max_len=128), _since(ctx), _scope(ctx)

    def read() -> dict[str, Any]:
        client = ctx.client
        return timeline(client, _registry(ctx, client), endpoint, env, since=since, project=project)

    return json_response(await ctx.call(read))


_OBJ = {"type": "object"}
_EP = Param("endpoint", "path", {"type": "string", "maxLength": 128}, "An endpoint (fraud-api).")
_ENV = Param("env", "query", {"type": "string", "maxLength": 128}, "Only this environment (prod).")
_ENV_ONE = Param(
    "env", "query", {"type": "string", "maxLength": 128}, "The environment (default: the endpoint's only one)."
)
_SINCE = Param("since", "query", {"type": "string"}, "Only what is newer: 10m, 2h, an ISO time.")
_PROJECT = Param("project", "query", {"type": "string", "maxLength": 200}, "Only this project (a token keeps its own).")
_LIMIT = Param(
    "limit", "query", {"type": "integer", "minimum": 0, "maximum": 100000, "default": 1000}, "The newest N (0: all)."
)
_TIMELINE = {
    "type": "object",
    "required": ["endpoint", "env", "desired", "replicas", "minutes", "rollouts", "alerts"],
    "properties": {
        "endpoint": {"type": "string"},
        "env": {"type": "string"},
        "project": {"type": "string"},
        "model": {"type": "string"},
        "version": {"type": "integer"},
        "desired": {"type": "array", "items": _OBJ, "description": "the desired version's history, oldest first"},
        "replicas": {"type": "array", "items": _OBJ, "description": "each replica: version, state, start, heartbeat"},
        "minutes": {"type": "array", "items": _OBJ, "description": "per version and minute: requests, errors, p99"},
        "rollouts": {"type": "array", "items": _OBJ, "description": "desired changes: rollout or rollback"},
        "alerts": {"type": "array", "items": _OBJ, "description": "alerts that name the endpoint"},
    },
}


async def get_diagnosis(ctx: Ctx) -> Response:
    endpoint = ctx.path("endpoint")
    env = ctx.query.text("env", max_len=128)
    since = ctx.query.text("since", max_len=64) or DEFAULT_SINCE
    project = forbid_other_project(ctx.principal, ctx.query.text("project", max_len=200))
    report = await ctx.call(lambda: diagnose_deployment(ctx.client, endpoint, env=env, since=since, project=project))
    return json_response(report)


async def get_serving_key(ctx: Ctx) -> Response:
    """The project's serving key (serving/privacy.py): what a replica keys its hashes with. A
    writer's only (a replica writes): a reader holding a record must not be able to test guesses
    against its hashes. Made on first use, kept in the store, never in any reader's answer."""
    project = ctx.query.text("project", max_len=200)
    if not project:
        raise InvalidInput("give the project whose serving key this is: ?project=NAME")
    check_name_text(project, "project name")
    ctx.principal.check_project(project)
    key = await ctx.call(ctx.store.shared_secret, f"serving:{project}")
    return json_response({"project": project, "key": key.hex()}, headers={"Cache-Control": "no-store"})


OPERATIONS: list[Operation] = [
    Operation(
        "GET",
        "/serving/key",
        get_serving_key,
        "writer",
        "The project's serving key: the HMAC key a replica's hashes use (writers only)",
        "serving",
        params=(
            Param("project", "query", {"type": "string", "maxLength": 200}, "The replica's project.", required=True),
        ),
        responses={"200": ok("The key", _OBJ)},
    ),
    Operation(
        "GET",
        "/serving/{endpoint}/aggregates",
        get_aggregates,
        "reader",
        "Per version and minute, the replicas merged: requests, errors, p50/p95/p99, histogram, outputs",
        "serving",
        params=(_EP, _SINCE, _ENV, _PROJECT),
        responses={"200": ok("The minutes", _OBJ)},
    ),
    Operation(
        "GET",
        "/serving/{endpoint}/versions",
        get_versions,
        "reader",
        "Per version over the window, the replicas merged: requests, 5xx and 4xx rates, p50/p95/p99, "
        "throughput, the exception types of its 5xx",
        "serving",
        params=(_EP, _SINCE, _ENV, _PROJECT),
        responses={"200": ok("The versions", _OBJ)},
    ),
    Operation(
        "GET",
        "/serving/{endpoint}/drift",
        get_drift,
        "reader",
        "Each feature live against its version's training profile: test, verdict, both distributions",
        "serving",
        params=(
            _EP,
            Param("since", "query", {"type": "string"}, "The live window: 10m, 2h (default 1h), an ISO time."),
            Param("version", "query", {"type": "string", "maxLength": 64}, "Only this version."),
            _ENV,
            _PROJECT,
        ),
        responses={"200": ok("The drift of each version that served", _OBJ)},
    ),
    Operation(
        "GET",
        "/serving/{endpoint}/predictions",
        get_predictions,
        "reader",
        "Sampled prediction records, oldest first, with labels joined by request id",
        "serving",
        params=(_EP, _SINCE, _LIMIT, _ENV, _PROJECT),
        responses={"200": ok("The records", _OBJ)},
    ),
    Operation(
        "GET",
        "/serving/{endpoint}/replicas",
        get_replicas,
        "reader",
        "The replicas that served the endpoint: serving or gone, version, heartbeat",
        "serving",
        params=(_EP, _ENV, _PROJECT),
        responses={"200": ok("The replicas", _OBJ)},
    ),
    Operation(
        "GET",
        "/deployments/{endpoint}/timeline",
        get_timeline,
        "reader",
        "A deployment's timeline: desired history, replica lanes, minutes per version, rollouts, alerts",
        "deployments",
        params=(_EP, _ENV_ONE, _SINCE, _PROJECT),
        responses={"200": ok("The timeline", _TIMELINE)},
    ),
    Operation(
        "GET",
        "/deployments/{endpoint}/diagnosis",
        get_diagnosis,
        "reader",
        "The way back: what changed in production and when, the versions before and after, what differs in training",
        "deployments",
        params=(
            Param("endpoint", "path", {"type": "string", "maxLength": 128}, "An endpoint (fraud-api)."),
            Param(
                "env", "query", {"type": "string", "maxLength": 128}, "Its environment (needed when it has several)."
            ),
            Param("since", "query", {"type": "string", "maxLength": 64}, "Look back this far (24h, 2h, an ISO time)."),
            Param("project", "query", {"type": "string", "maxLength": 200}, "Only this project's deployment."),
        ),
        responses={"200": ok("The deployment diagnosis (docs/models.md, The way back)", {"type": "object"})},
    ),
]
