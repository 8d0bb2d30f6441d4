"""The registry in the HTTP API: ``/api/v1/models…`` and ``/api/v1/deployments…``, declared as
server operations and served through the feature table (``flightlog_api_operations``).

Handlers run the same rules as the CLI (`LocalRegistry`) over the server's store, scoped to
the token's project; registering and deploying need a writer, moving a protected alias or
choosing protected aliases an admin (checked by the rules, with the token's role passed in).
Every refusal is a 4xx with the JSON error body.
"""

from __future__ import annotations

from typing import Any

from flightlog.errors import InvalidInput
from flightlog.registry.service import LocalRegistry
from flightlog.registry.stores import sql_store_of
from flightlog.server.context import Ctx
from flightlog.server.operations import Operation, Param, json_body, ok
from flightlog.server.responses import Response, json_response

__all__ = ["OPERATIONS", "request_registry"]

_NAME = Param("name", "path", {"type": "string", "maxLength": 128}, "A registered model's name.")
_PROJECT = Param(
    "project", "query", {"type": "string", "maxLength": 200}, "The model's project (default: where it is registered)."
)
_VERSION = Param("version", "path", {"type": "integer", "minimum": 1}, "A version number.")
_ALIAS = Param("alias", "path", {"type": "string", "maxLength": 64}, "An alias (production, champion).")


def _actor(ctx: Ctx) -> str | None:
    p = ctx.principal
    if p.token_id is None:
        return None
    for row in ctx.store.tokens():
        if row.get("id") == p.token_id:
            return str(row.get("name") or p.token_id)
    return p.token_id


def request_registry(ctx: Ctx) -> LocalRegistry:
    """The registry as this request may use it: the server's store, the token's project and role,
    the token's name as the actor (the MLflow protocol's registry routes use it too)."""
    client = ctx.client
    store = sql_store_of(ctx.store)
    if store is None:
        raise InvalidInput("this server's store keeps no model registry")
    return LocalRegistry(
        client,
        store,
        actor=_actor(ctx),
        admin=ctx.principal.role == "admin",
        scope=ctx.principal.project,
        visible=ctx.visible(),
    )


def _text(doc: dict[str, Any], key: str, *, required: bool = False) -> Any:
    value = doc.get(key)
    if value is None and required:
        raise InvalidInput(f"the body needs {key!r}", details={"field": key})
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{key!r} must be text, not {type(value).__name__}", details={"field": key})
    return value


async def list_models(ctx: Ctx) -> Response:
    project = ctx.query.text("project", max_len=200)
    models = await ctx.call(lambda: request_registry(ctx).models(project))
    return json_response({"models": [m.to_dict() for m in models]})


async def get_model(ctx: Ctx) -> Response:
    name, project = ctx.path("name"), ctx.query.text("project", max_len=200)

    def read() -> dict[str, Any]:
        reg = request_registry(ctx)
        model = reg.model(name, project)
        return {**model.to_dict(), "versions": [v.to_dict() for v in reg.versions(name, model.project)]}

    return json_response(await ctx.call(read))


async def patch_model(ctx: Ctx) -> Response:
    name, project, doc = ctx.path("name"), ctx.query.text("project", max_len=200), await ctx.json()
    protected = doc.get("protected_aliases")
    if protected is not None and not (isinstance(protected, list) and all(isinstance(a, str) for a in protected)):
        raise InvalidInput("protected_aliases must be a list of alias names")
    model = await ctx.call(
        lambda: request_registry(ctx).update_model(
            name,
            project=project,
            description=_text(doc, "description"),
            tags=doc.get("tags"),
            remove_tags=doc.get("remove_tags") or [],
            protected=protected,
        )
    )
    return json_response(model.to_dict())


async def delete_model(ctx: Ctx) -> Response:
    name, project = ctx.path("name"), ctx.query.text("project", max_len=200)
    numbers = await ctx.call(lambda: request_registry(ctx).delete_model(name, project))
    return json_response({"deleted": name, "versions": numbers})


async def rename_model(ctx: Ctx) -> Response:
    name, project, doc = ctx.path("name"), ctx.query.text("project", max_len=200), await ctx.json()
    new_name = _text(doc, "new_name", required=True)
    model = await ctx.call(lambda: request_registry(ctx).rename_model(name, new_name, project))
    return json_response(model.to_dict())


async def delete_version(ctx: Ctx) -> Response:
    name, project, version = ctx.path("name"), ctx.query.text("project", max_len=200), ctx.path("version")
    if not version.isdigit():
        raise InvalidInput(f"version {version!r} is not a whole number")
    removed = await ctx.call(lambda: request_registry(ctx).delete_version(name, int(version), project))
    return json_response(
        {"deleted": {"name": name, "version": int(version)}, "aliases_removed": [c.to_dict() for c in removed]}
    )


async def post_version(ctx: Ctx) -> Response:
    name, doc = ctx.path("name"), await ctx.json()
    mv = await ctx.call(
        lambda: request_registry(ctx).register(
            _text(doc, "run", required=True),
            _text(doc, "path", required=True),
            name,
            alias=_text(doc, "alias"),
            description=_text(doc, "description"),
            tags=doc.get("tags"),
        )
    )
    return json_response(mv.to_dict(), status=201)


async def get_version(ctx: Ctx) -> Response:
    name, project = ctx.path("name"), ctx.query.text("project", max_len=200)
    version = ctx.path("version")
    if not version.isdigit():
        raise InvalidInput(f"version {version!r} is not a whole number")
    ref = f"{name}/{version}"
    if ctx.query.flag("lineage"):
        return json_response(await ctx.call(lambda: request_registry(ctx).lineage(ref, project)))
    return json_response((await ctx.call(lambda: request_registry(ctx).resolve(ref, project))).to_dict())


async def get_alias(ctx: Ctx) -> Response:
    ref, project = f"{ctx.path('name')}@{ctx.path('alias')}", ctx.query.text("project", max_len=200)
    return json_response((await ctx.call(lambda: request_registry(ctx).resolve(ref, project))).to_dict())


async def put_alias(ctx: Ctx) -> Response:
    name, alias, project, doc = (
        ctx.path("name"),
        ctx.path("alias"),
        ctx.query.text("project", max_len=200),
        await ctx.json(),
    )
    version = doc.get("version")
    if version is None or isinstance(version, bool) or not isinstance(version, (int, str)):
        raise InvalidInput("the body needs 'version': a version number or another alias of the model")
    change = await ctx.call(lambda: request_registry(ctx).set_alias(name, alias, version, project))
    return json_response({"changed": change is not None, "change": None if change is None else change.to_dict()})


async def delete_alias(ctx: Ctx) -> Response:
    name, alias, project = ctx.path("name"), ctx.path("alias"), ctx.query.text("project", max_len=200)
    change = await ctx.call(lambda: request_registry(ctx).set_alias(name, alias, None, project))
    return json_response({"changed": change is not None, "change": None if change is None else change.to_dict()})


async def alias_history(ctx: Ctx) -> Response:
    name, project, alias = ctx.path("name"), ctx.query.text("project", max_len=200), ctx.query.text("alias", max_len=64)
    changes = await ctx.call(lambda: request_registry(ctx).alias_history(name, alias, project))
    return json_response({"history": [c.to_dict() for c in changes]})


async def post_deployment(ctx: Ctx) -> Response:
    doc = await ctx.json()

    def deploy() -> dict[str, Any]:
        d, change = request_registry(ctx).deploy(
            _text(doc, "ref", required=True),
            _text(doc, "endpoint", required=True),
            _text(doc, "env", required=True),
            _text(doc, "project"),
        )
        return {**d.to_dict(), "changed": change is not None}

    return json_response(await ctx.call(deploy))


async def list_deployments(ctx: Ctx) -> Response:
    project = ctx.query.text("project", max_len=200)
    found = await ctx.call(lambda: request_registry(ctx).deployments(project))
    return json_response({"deployments": [d.to_dict() for d in found]})


async def get_deployment(ctx: Ctx) -> Response:
    endpoint, env, project = ctx.path("endpoint"), ctx.path("env"), ctx.query.text("project", max_len=200)
    return json_response(await ctx.call(lambda: request_registry(ctx).deployment_report(endpoint, env, project)))


_OBJ = {"type": "object"}
_BODY_VERSION = {
    "type": "object",
    "required": ["run", "path"],
    "properties": {
        "run": {"type": "string"},
        "path": {"type": "string"},
        "alias": {"type": "string"},
        "description": {"type": "string"},
        "tags": {"type": "object"},
    },
}
_EP = Param("endpoint", "path", {"type": "string", "maxLength": 128}, "An endpoint (fraud-api).")
_ENV = Param("env", "path", {"type": "string", "maxLength": 128}, "An environment (prod).")

OPERATIONS: list[Operation] = [
    Operation(
        "GET",
        "/models",
        list_models,
        "reader",
        "Registered models with their latest version and aliases",
        "models",
        params=(_PROJECT,),
        responses={"200": ok("The models", _OBJ)},
    ),
    Operation(
        "GET",
        "/models/{name}",
        get_model,
        "reader",
        "A registered model and its versions",
        "models",
        params=(_NAME, _PROJECT),
        responses={"200": ok("The model", _OBJ)},
    ),
    Operation(
        "PATCH",
        "/models/{name}",
        patch_model,
        "writer",
        "Set a model's description and tags; its protected aliases (admin)",
        "models",
        params=(_NAME, _PROJECT),
        body=json_body(_OBJ),
        responses={"200": ok("The model", _OBJ)},
    ),
    Operation(
        "DELETE",
        "/models/{name}",
        delete_model,
        "writer",
        "Delete a model with its versions and aliases (refused while a deployment serves it)",
        "models",
        params=(_NAME, _PROJECT),
        responses={"200": ok("What was deleted", _OBJ)},
    ),
    Operation(
        "POST",
        "/models/{name}/rename",
        rename_model,
        "writer",
        "Rename a model: its versions, aliases, deployments and histories follow",
        "models",
        params=(_NAME, _PROJECT),
        body=json_body({"type": "object", "required": ["new_name"], "properties": {"new_name": {"type": "string"}}}),
        responses={"200": ok("The model", _OBJ)},
    ),
    Operation(
        "DELETE",
        "/models/{name}/versions/{version}",
        delete_version,
        "writer",
        "Delete a version and the aliases on it (refused while a deployment serves it)",
        "models",
        params=(_NAME, _VERSION, _PROJECT),
        responses={"200": ok("What was deleted", _OBJ)},
    ),
    Operation(
        "POST",
        "/models/{name}/versions",
        post_version,
        "writer",
        "Register the artifact or checkpoint a run logged as the model's next version",
        "models",
        params=(_NAME,),
        body=json_body(_BODY_VERSION),
        responses={"201": ok("The new version", _OBJ)},
    ),
    Operation(
        "GET",
        "/models/{name}/versions/{version}",
        get_version,
        "reader",
        "One version (with lineage=true: its run, the run's inputs and manifests)",
        "models",
        params=(_NAME, _VERSION, _PROJECT, Param("lineage", "query", {"type": "boolean"}, "Include the lineage.")),
        responses={"200": ok("The version", _OBJ)},
    ),
    Operation(
        "GET",
        "/models/{name}/aliases/{alias}",
        get_alias,
        "reader",
        "The version an alias points at",
        "models",
        params=(_NAME, _ALIAS, _PROJECT),
        responses={"200": ok("The version", _OBJ)},
    ),
    Operation(
        "PUT",
        "/models/{name}/aliases/{alias}",
        put_alias,
        "writer",
        "Point an alias at a version (a protected alias needs an admin token)",
        "models",
        params=(_NAME, _ALIAS, _PROJECT),
        body=json_body({"type": "object", "required": ["version"]}),
        responses={"200": ok("The change", _OBJ)},
    ),
    Operation(
        "DELETE",
        "/models/{name}/aliases/{alias}",
        delete_alias,
        "writer",
        "Remove an alias",
        "models",
        params=(_NAME, _ALIAS, _PROJECT),
        responses={"200": ok("The change", _OBJ)},
    ),
    Operation(
        "GET",
        "/models/{name}/alias-history",
        alias_history,
        "reader",
        "Where the model's aliases pointed, when, and who moved them",
        "models",
        params=(_NAME, _PROJECT, Param("alias", "query", {"type": "string", "maxLength": 64}, "One alias only.")),
        responses={"200": ok("The history", _OBJ)},
    ),
    Operation(
        "POST",
        "/deployments",
        post_deployment,
        "writer",
        "Set the version an endpoint in an environment should serve",
        "deployments",
        body=json_body({"type": "object", "required": ["ref", "endpoint", "env"]}),
        responses={"200": ok("The deployment", _OBJ)},
    ),
    Operation(
        "GET",
        "/deployments",
        list_deployments,
        "reader",
        "Deployments: the desired state",
        "deployments",
        params=(_PROJECT,),
        responses={"200": ok("The deployments", _OBJ)},
    ),
    Operation(
        "GET",
        "/deployments/{endpoint}/{env}",
        get_deployment,
        "reader",
        "A deployment: desired version, its history, the replicas serving it",
        "deployments",
        params=(_EP, _ENV, _PROJECT),
        responses={"200": ok("The deployment", _OBJ)},
    ),
]
