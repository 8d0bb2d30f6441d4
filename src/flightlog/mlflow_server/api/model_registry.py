"""MLflow's model registry (``registered-models/…``, ``model-versions/…``) onto flightlog's.

One registry, two voices: a model version the MLflow client creates is a flightlog version made
from its run's artifact, with its digest, and an alias set by either side is the same alias, so
``flightlog models show`` and ``MlflowClient.get_model_version_by_alias`` answer alike. The rules
(names, aliases, protected aliases, a token's project) are `LocalRegistry`'s, run over the
server's store exactly as the native ``/api/v1/models`` routes run them.

What differs, because the two models differ:

* an MLflow model is a directory, a flightlog version one artifact: registering a directory
  records its manifest (every file with its digest, `artifacts.write_manifest`) as the artifact
  the version points at, so one digest covers the whole model;
* MLflow's registry is global, flightlog's per project: a model created before its first version
  waits in the token's project (``default`` for an unlimited token) and moves to its first
  version's run's project with that version;
* stages are deprecated in MLflow (aliases replace them), but CI jobs still move versions through
  them: ``transition-stage`` keeps a version's stage (``None``, ``Staging``, ``Production``,
  ``Archived``; ``archive_existing_versions`` archives the others in that stage) in this
  feature's table, and ``get-latest-versions`` answers per stage, so ``models:/fraud/Production``
  resolves in MLflow clients. flightlog's own references use aliases.

What MLflow keeps that flightlog's version does not (the ``source`` the client gave, the logged
model id) is in this feature's ``mlflow_versions`` table.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from flightlog.errors import FlightlogError, NotFound
from flightlog.mlflow_server.api.artifacts import (
    MANIFEST,
    SCHEME,
    artifact_uri,
    db_of,
    live_artifacts,
    model_artifact_uri,
    resolve_target,
    write_manifest,
)
from flightlog.mlflow_server.api.logged_models import (
    experiment_of_project,
    logged_model,
    matches,
    parse_filter,
)
from flightlog.mlflow_server.common import Call, mlflow_operations
from flightlog.mlflow_server.errors import MlflowError, already_exists, invalid, not_found
from flightlog.mlflow_server.experiments import DEFAULT_PROJECT
from flightlog.models import RunInfo
from flightlog.names import check_name_text
from flightlog.registry.api import request_registry
from flightlog.registry.refs import check_name
from flightlog.registry.service import LocalRegistry
from flightlog.registry.stores import sql_store_of
from flightlog.registry.types import ModelVersion, RegisteredModel
from flightlog.server.context import Ctx
from flightlog.server.operations import Operation

__all__ = ["OPERATIONS"]

_MODEL_ID = re.compile(r"^models:/(m-[0-9a-f]{32})/?$")
_PAGE = 100


# ── the registry, as the server's native routes build it ───────────────────


def _registry(ctx: Ctx) -> LocalRegistry:
    if sql_store_of(ctx.store) is None:
        raise MlflowError("NOT_IMPLEMENTED", "this server's store keeps no model registry")
    return request_registry(ctx)


def _model(reg: LocalRegistry, name: str) -> RegisteredModel:
    try:
        return reg.model(check_name(name))
    except NotFound:
        raise not_found(f"Registered Model with name={name} not found") from None


def _version(reg: LocalRegistry, name: str, version: str) -> ModelVersion:
    if not str(version).isdigit() or int(version) < 1:
        raise invalid(f"Parameter 'version' must be an integer, got '{version}'.")
    model = _model(reg, name)
    found = reg.store.versions(model.project, model.name, int(version))
    if not found:
        raise not_found(f"Model Version (name={name}, version={version}) not found")
    return found[0]


class Extra(NamedTuple):
    """What MLflow keeps of a version that flightlog's does not."""

    source: str
    model_id: str | None
    stage: str = "None"


STAGES = ("None", "Staging", "Production", "Archived")


def _extra(db: Any, project: str, name: str) -> dict[int, Extra]:
    with db.read() as conn:
        rows = conn.execute(
            "SELECT version, source, model_id, stage FROM mlflow_versions WHERE project=? AND name=?", (project, name)
        ).fetchall()
    return {int(r[0]): Extra(str(r[1]), r[2], str(r[3] or "None")) for r in rows}


def _ms(t: float) -> int:
    return int(t * 1000)


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": k, "value": v} for k, v in sorted(tags.items())]


def version_doc(mv: ModelVersion, extra: dict[int, Extra]) -> dict[str, Any]:
    """A version in MLflow's message shape (``ModelVersion``)."""
    source, model_id, stage = extra.get(mv.version, Extra(f"runs:/{mv.run_id}/{mv.artifact_path}", None))
    doc: dict[str, Any] = {
        "name": mv.name,
        "version": str(mv.version),
        "creation_timestamp": _ms(mv.created),
        "last_updated_timestamp": _ms(mv.created),
        "current_stage": stage,
        "description": mv.description or "",
        "source": source,
        "run_id": mv.run_id,
        "status": "READY",
        "tags": _tags(mv.tags),
        "aliases": list(mv.aliases),
    }
    if mv.created_by:
        doc["user_id"] = mv.created_by
    if model_id:
        doc["model_id"] = model_id
    return doc


def model_doc(reg: LocalRegistry, db: Any, model: RegisteredModel) -> dict[str, Any]:
    """A registered model in MLflow's message shape (``RegisteredModel``)."""
    versions = reg.store.versions(model.project, model.name)
    extra = _extra(db, model.project, model.name)
    updated = max([model.created, *(v.created for v in versions)])
    doc: dict[str, Any] = {
        "name": model.name,
        "creation_timestamp": _ms(model.created),
        "last_updated_timestamp": _ms(updated),
        "description": model.description or "",
        "tags": _tags(model.tags),
        "aliases": [{"alias": a, "version": str(v)} for a, v in sorted(model.aliases.items())],
    }
    if versions:
        doc["latest_versions"] = [version_doc(versions[-1], extra)]
    return doc


# ── registered models ──────────────────────────────────────────────────────


def _create(ctx: Ctx, name: str, description: str | None, tags: dict[str, str]) -> dict[str, Any]:
    reg, db = _registry(ctx), db_of(ctx)
    check_name(name)
    visible = [m for m in reg.models() if m.name == name]
    if visible:
        raise already_exists(f"Registered Model (name={name}) already exists.")
    reg.store.create_model(ctx.principal.project or DEFAULT_PROJECT, name, description, tags)
    return {"registered_model": model_doc(reg, db, _model(reg, name))}


def _pairs(call: Call, name: str = "tags") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in call.items(name, limit=1000):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str) or not item["key"]:
            raise invalid(f"Each entry of '{name}' needs a 'key' (text) and a 'value'.")
        check_name_text(item["key"], f"{name[:-1]} key")
        out[item["key"]] = "" if item.get("value") is None else str(item["value"])
    return out


async def create_model(call: Call) -> dict[str, Any]:
    name, description, tags = call.need("name", max_len=256), call.text("description"), _pairs(call)
    return await call.ctx.call(_create, call.ctx, name, description, tags)


async def get_model(call: Call) -> dict[str, Any]:
    ctx, name = call.ctx, call.need("name", max_len=256)

    def read() -> dict[str, Any]:
        reg = _registry(ctx)
        return {"registered_model": model_doc(reg, db_of(ctx), _model(reg, name))}

    return await ctx.call(read)


async def update_model(call: Call) -> dict[str, Any]:
    ctx, name, description = call.ctx, call.need("name", max_len=256), call.text("description")

    def update() -> dict[str, Any]:
        reg = _registry(ctx)
        model = _model(reg, name)
        if description is not None:
            reg.update_model(name, project=model.project, description=description)
        return {"registered_model": model_doc(reg, db_of(ctx), _model(reg, name))}

    return await ctx.call(update)


async def delete_model(call: Call) -> dict[str, Any]:
    ctx, name = call.ctx, call.need("name", max_len=256)

    def delete() -> None:
        reg = _registry(ctx)
        model = _model(reg, name)
        reg.delete_model(model.name, model.project)  # the registry's rules and events
        with db_of(ctx).write() as conn:
            conn.execute("DELETE FROM mlflow_versions WHERE project=? AND name=?", (model.project, model.name))

    await ctx.call(delete)
    return {}


async def rename_model(call: Call) -> dict[str, Any]:
    ctx, name, new = call.ctx, call.need("name", max_len=256), call.need("new_name", max_len=256)

    def rename() -> dict[str, Any]:
        reg, db = _registry(ctx), db_of(ctx)
        model = _model(reg, name)
        check_name(new)
        if reg.store.model(model.project, new) is not None:
            raise already_exists(f"Registered Model (name={new}) already exists.")
        reg.rename_model(model.name, new, model.project)
        with db.write() as conn:
            conn.execute("UPDATE mlflow_versions SET name=? WHERE project=? AND name=?", (new, model.project, name))
        return {"registered_model": model_doc(reg, db, _model(reg, new))}

    return await ctx.call(rename)


def _order(items: list[tuple[dict[str, Any], dict[str, Any]]], order_by: list[Any], fields: dict[str, str]) -> None:
    for entry in reversed(order_by or []):
        if not isinstance(entry, str) or not entry.strip():
            raise invalid(f"Invalid order_by clause {entry!r}.")
        words = entry.split()
        field, direction = words[0], (words[1].upper() if len(words) > 1 else "ASC")
        field = field.removeprefix("attributes.")
        if field not in fields or direction not in ("ASC", "DESC") or len(words) > 2:
            raise invalid(f"Invalid order_by clause '{entry}': use one of {', '.join(sorted(fields))} [ASC|DESC].")
        key = fields[field]
        items.sort(key=lambda pair: (pair[1].get(key) is None, pair[1].get(key)), reverse=direction == "DESC")


def _page(call: Call, items: list[Any], key: str) -> dict[str, Any]:
    limit = call.integer("max_results", default=_PAGE, min=1) or _PAGE
    offset = call.integer("page_token", default=0, min=0) or 0
    doc: dict[str, Any] = {key: items[offset : offset + limit]}
    if offset + limit < len(items):
        doc["next_page_token"] = str(offset + limit)
    return doc


async def search_models(call: Call) -> dict[str, Any]:
    ctx, clauses = call.ctx, parse_filter(call.text("filter", max_len=10_000))
    for c in clauses:
        if not (c.key == "name" and c.kind in ("", "attributes")) and c.kind not in ("tag", "tags"):
            raise invalid(f"Invalid attribute key '{c.key}' in the filter: search registered models by name or tags.")

    def read() -> list[tuple[dict[str, Any], dict[str, Any]]]:
        reg, db = _registry(ctx), db_of(ctx)
        out = []
        for m in reg.models():
            values = {"name": m.name, **{f"tag:{k}": v for k, v in m.tags.items()}}
            if all(
                matches(values.get("name" if c.key == "name" and not c.kind else f"tag:{c.key}"), c) for c in clauses
            ):
                doc = model_doc(reg, db, m)
                out.append((doc, doc))
        return out

    found = await ctx.call(read)
    found.sort(key=lambda pair: pair[0]["name"])
    _order(
        found,
        call.items("order_by", limit=10),
        {"name": "name", "last_updated_timestamp": "last_updated_timestamp", "timestamp": "last_updated_timestamp"},
    )
    return _page(call, [doc for doc, _ in found], "registered_models")


async def set_model_tag(call: Call) -> dict[str, Any]:
    ctx, name, key = call.ctx, call.need("name", max_len=256), call.need("key", max_len=250)
    value = call.text("value") or ""

    def update() -> None:
        reg = _registry(ctx)
        reg.update_model(name, project=_model(reg, name).project, tags={key: value})

    await ctx.call(update)
    return {}


async def delete_model_tag(call: Call) -> dict[str, Any]:
    ctx, name, key = call.ctx, call.need("name", max_len=256), call.need("key", max_len=250)

    def update() -> None:
        reg = _registry(ctx)
        reg.update_model(name, project=_model(reg, name).project, remove_tags=[key])

    await ctx.call(update)
    return {}


async def latest_versions(call: Call) -> dict[str, Any]:
    """The latest version in each stage asked for (every stage when none is): what an MLflow
    client resolves ``models:/NAME/Production`` with."""
    ctx, name = call.ctx, call.need("name", max_len=256)
    stages = [_stage(str(s)) for s in call.items("stages", limit=10)]

    def read() -> dict[str, Any]:
        reg = _registry(ctx)
        model = _model(reg, name)
        extra = _extra(db_of(ctx), model.project, model.name)
        latest: dict[str, ModelVersion] = {}
        for mv in reg.store.versions(model.project, model.name):
            latest[extra.get(mv.version, Extra("", None)).stage] = mv  # versions come oldest first
        wanted = stages or list(STAGES)
        found = [latest[s] for s in wanted if s in latest]
        return {"model_versions": [version_doc(mv, extra) for mv in found]} if found else {}

    return await ctx.call(read)


def _stage(text: str) -> str:
    """A stage as MLflow writes it (``production`` → ``Production``); refused when it is none."""
    for stage in STAGES:
        if text.strip().lower() == stage.lower():
            return stage
    raise invalid(f"Invalid Model Version stage: {text}. Value must be one of {', '.join(STAGES)}.")


# ── model versions ─────────────────────────────────────────────────────────


async def _source(ctx: Ctx, source: str, model_id: str | None) -> tuple[RunInfo, str, str | None]:
    """The run and the artifact path (a file, or a directory) a version's ``source`` names."""
    found = _MODEL_ID.match(source)
    model_id = model_id or (found.group(1) if found else None)
    if model_id:
        row = await ctx.call(logged_model, db_of(ctx), model_id, ctx.principal.project)
        return await ctx.run(row["run_id"]), f"models/{model_id}", model_id
    if source.startswith(SCHEME):
        target = await resolve_target(ctx, source[len(SCHEME) :])
        return target.run, target.path(), target.model_id
    if "/mlflow-artifacts/artifacts/" in source and source.startswith(("http://", "https://")):
        target = await resolve_target(ctx, source.split("/mlflow-artifacts/artifacts/", 1)[1])
        return target.run, target.path(), target.model_id
    if source.startswith("runs:/"):
        run_id, _, path = source[len("runs:/") :].partition("/")
        return await ctx.run(run_id), path.strip("/"), None
    raise invalid(
        f"Invalid model version source '{source[:300]}': use models:/<model_id>, runs:/<run>/<path> or an "
        "mlflow-artifacts:/ location of this server."
    )


async def create_version(call: Call) -> dict[str, Any]:
    ctx = call.ctx
    name, source = call.need("name", max_len=256), call.need("source", max_len=4096)
    description, tags = call.text("description"), _pairs(call)
    reg = await ctx.call(_registry, ctx)
    model = await ctx.call(_model, reg, name)
    run, path, model_id = await _source(ctx, source, call.text("model_id", max_len=64))
    if not path:
        raise invalid(f"The source '{source[:300]}' names a run's whole artifact root: name the model's directory.")
    arts = live_artifacts(await ctx.call(ctx.client.artifacts, run))
    below = any(p.startswith(path + "/") for p in arts)
    if below and (path not in arts or arts[path].kind != MANIFEST):
        await write_manifest(ctx, run, path, source=source)
    elif not below and path not in arts:
        raise not_found(f"Run '{run.id}' has no artifact at '{path}': the source '{source[:300]}' names nothing.")

    if model.project != run.project and model.latest_version > 0:
        raise invalid(
            f"Registered model '{name}' lives in project '{model.project}' (flightlog keeps a registry per project): "
            f"a version of it must come from a run of that project, not of '{run.project}'."
        )

    def register() -> ModelVersion:
        if model.project != run.project:
            _move(reg, model.project, run.project, name)
        mv = reg.register(run.id, path, name, description=description, tags=tags)
        with db_of(ctx).write() as conn:
            conn.execute(
                "INSERT INTO mlflow_versions(project, name, version, source, model_id) VALUES(?, ?, ?, ?, ?)",
                (mv.project, mv.name, mv.version, source, model_id),
            )
        return mv

    mv = await ctx.call(register)
    return {"model_version": version_doc(mv, {mv.version: Extra(source, model_id)})}


def _move(reg: LocalRegistry, from_project: str, to_project: str, name: str) -> None:
    """A model MLflow created before its first version joins the project of that version's run."""
    if reg.scope is not None and to_project != reg.scope:
        raise not_found(f"Registered Model with name={name} not found")
    if reg.store.model(to_project, name) is not None:
        raise already_exists(f"Registered Model (name={name}) already exists in project {to_project!r}.")
    reg.store.move_model(from_project, to_project, name)


async def get_version(call: Call) -> dict[str, Any]:
    ctx, name, version = call.ctx, call.need("name", max_len=256), call.need("version", max_len=20)

    def read() -> dict[str, Any]:
        mv = _version(_registry(ctx), name, version)
        return {"model_version": version_doc(mv, _extra(db_of(ctx), mv.project, mv.name))}

    return await ctx.call(read)


async def update_version(call: Call) -> dict[str, Any]:
    ctx, name, version = call.ctx, call.need("name", max_len=256), call.need("version", max_len=20)
    description = call.text("description")

    def update() -> dict[str, Any]:
        reg = _registry(ctx)
        mv = _version(reg, name, version)
        if description is not None:
            mv = reg.update_version(f"{name}/{mv.version}", project=mv.project, description=description)
        return {"model_version": version_doc(mv, _extra(db_of(ctx), mv.project, mv.name))}

    return await ctx.call(update)


async def delete_version(call: Call) -> dict[str, Any]:
    ctx, name, version = call.ctx, call.need("name", max_len=256), call.need("version", max_len=20)

    def delete() -> None:
        reg = _registry(ctx)
        mv = _version(reg, name, version)
        reg.delete_version(mv.name, mv.version, mv.project)  # the registry's rules and events
        with db_of(ctx).write() as conn:
            conn.execute(
                "DELETE FROM mlflow_versions WHERE project=? AND name=? AND version=?",
                (mv.project, mv.name, mv.version),
            )

    await ctx.call(delete)
    return {}


_VERSION_FIELDS = {"name", "run_id", "source_path", "version_number", "model_id"}


async def search_versions(call: Call) -> dict[str, Any]:
    ctx, clauses = call.ctx, parse_filter(call.text("filter", max_len=10_000))
    for c in clauses:
        if c.kind not in ("tag", "tags") and c.key not in _VERSION_FIELDS:
            raise invalid(
                f"Invalid attribute key '{c.key}' in the filter: use name, run_id, source_path, version_number, "
                "model_id or tags.KEY."
            )

    def read() -> list[tuple[dict[str, Any], dict[str, Any]]]:
        reg, db = _registry(ctx), db_of(ctx)
        names = [c.value for c in clauses if c.key == "name" and c.op == "=" and c.kind not in ("tag", "tags")]
        out = []
        for m in reg.models():
            if names and m.name not in names:
                continue
            extra = _extra(db, m.project, m.name)
            for mv in reg.store.versions(m.project, m.name):
                doc = version_doc(mv, extra)
                values = {
                    "name": mv.name,
                    "run_id": mv.run_id,
                    "source_path": doc["source"],
                    "version_number": mv.version,
                    "model_id": doc.get("model_id"),
                    "creation_timestamp": doc["creation_timestamp"],
                    "last_updated_timestamp": doc["last_updated_timestamp"],
                }
                if all(matches(mv.tags.get(c.key) if c.kind in ("tag", "tags") else values[c.key], c) for c in clauses):
                    out.append((doc, values))
        return out

    found = await ctx.call(read)
    found.sort(key=lambda pair: (pair[1]["name"], -pair[1]["version_number"]))
    _order(
        found,
        call.items("order_by", limit=10),
        {
            "name": "name",
            "version_number": "version_number",
            "creation_timestamp": "creation_timestamp",
            "last_updated_timestamp": "last_updated_timestamp",
            "timestamp": "creation_timestamp",
        },
    )
    return _page(call, [doc for doc, _ in found], "model_versions")


async def download_uri(call: Call) -> dict[str, Any]:
    ctx, name, version = call.ctx, call.need("name", max_len=256), call.need("version", max_len=20)

    def read() -> dict[str, Any]:
        db = db_of(ctx)
        mv = _version(_registry(ctx), name, version)
        model_id = _extra(db, mv.project, mv.name).get(mv.version, Extra("", None)).model_id
        if model_id:
            try:
                row = logged_model(db, model_id)
                return {"artifact_uri": model_artifact_uri(model_id, row["experiment_id"])}
            except FlightlogError:
                pass  # the logged model was deleted: its files are still the run's
        uri = artifact_uri(mv.run_id, experiment_of_project(ctx.store, mv.project))
        return {"artifact_uri": f"{uri}/{mv.artifact_path}"}

    return await ctx.call(read)


async def set_version_tag(call: Call) -> dict[str, Any]:
    ctx, name, version = call.ctx, call.need("name", max_len=256), call.need("version", max_len=20)
    key, value = call.need("key", max_len=250), call.text("value") or ""

    def update() -> None:
        reg = _registry(ctx)
        mv = _version(reg, name, version)
        reg.update_version(f"{name}/{mv.version}", project=mv.project, tags={key: value})

    await ctx.call(update)
    return {}


async def delete_version_tag(call: Call) -> dict[str, Any]:
    ctx, name, version = call.ctx, call.need("name", max_len=256), call.need("version", max_len=20)
    key = call.need("key", max_len=250)

    def update() -> None:
        reg = _registry(ctx)
        mv = _version(reg, name, version)
        reg.update_version(f"{name}/{mv.version}", project=mv.project, remove_tags=[key])

    await ctx.call(update)
    return {}


async def transition_stage(call: Call) -> dict[str, Any]:
    """Move a version to a stage (deprecated in MLflow, still used by CI jobs): kept in this
    feature's table; ``archive_existing_versions`` archives the model's other versions in a
    Staging or Production stage it moves into."""
    ctx, name, version = call.ctx, call.need("name", max_len=256), call.need("version", max_len=20)
    stage = _stage(call.need("stage", max_len=64))
    archive = call.message.get("archive_existing_versions") in (True, "true", "True", "1", 1)

    def update() -> dict[str, Any]:
        reg, db = _registry(ctx), db_of(ctx)
        mv = _version(reg, name, version)
        extra = _extra(db, mv.project, mv.name)
        with db.write() as conn:
            if mv.version not in extra:  # a version flightlog registered: MLflow's row for it now
                conn.execute(
                    "INSERT INTO mlflow_versions(project, name, version, source, model_id, stage) VALUES(?, ?, ?, ?, ?, ?)",
                    (mv.project, mv.name, mv.version, f"runs:/{mv.run_id}/{mv.artifact_path}", None, stage),
                )
            else:
                conn.execute(
                    "UPDATE mlflow_versions SET stage=? WHERE project=? AND name=? AND version=?",
                    (stage, mv.project, mv.name, mv.version),
                )
            if archive and stage in ("Staging", "Production"):
                conn.execute(
                    "UPDATE mlflow_versions SET stage='Archived' WHERE project=? AND name=? AND version<>? AND stage=?",
                    (mv.project, mv.name, mv.version, stage),
                )
        return {"model_version": version_doc(mv, _extra(db, mv.project, mv.name))}

    return await ctx.call(update)


# ── aliases: flightlog's own ───────────────────────────────────────────────


async def set_alias(call: Call) -> dict[str, Any]:
    ctx, name, alias = call.ctx, call.need("name", max_len=256), call.need("alias", max_len=256)
    version = call.need("version", max_len=20)

    def update() -> None:
        reg = _registry(ctx)
        mv = _version(reg, name, version)
        reg.set_alias(name, alias, mv.version, mv.project)

    await ctx.call(update)
    return {}


async def delete_alias(call: Call) -> dict[str, Any]:
    ctx, name, alias = call.ctx, call.need("name", max_len=256), call.need("alias", max_len=256)

    def update() -> None:
        reg = _registry(ctx)
        model = _model(reg, name)
        if alias not in model.aliases:
            raise not_found(f"Registered model alias {alias} not found.")
        reg.set_alias(name, alias, None, model.project)

    await ctx.call(update)
    return {}


async def get_by_alias(call: Call) -> dict[str, Any]:
    ctx, name, alias = call.ctx, call.need("name", max_len=256), call.need("alias", max_len=256)

    def read() -> dict[str, Any]:
        reg = _registry(ctx)
        model = _model(reg, name)
        if alias not in model.aliases:
            raise not_found(f"Registered model alias {alias} not found.")
        mv = reg.store.versions(model.project, model.name, model.aliases[alias])[0]
        return {"model_version": version_doc(mv, _extra(db_of(ctx), mv.project, mv.name))}

    return await ctx.call(read)


_RM, _MV = "/registered-models", "/model-versions"

OPERATIONS: list[Operation] = [
    *mlflow_operations("POST", _RM + "/create", create_model, "writer", "Create a registered model (MLflow)"),
    *mlflow_operations("GET", _RM + "/get", get_model, "reader", "Get a registered model (MLflow)"),
    *mlflow_operations("GET", _RM + "/search", search_models, "reader", "Search registered models (MLflow)"),
    *mlflow_operations("PATCH", _RM + "/update", update_model, "writer", "Update a registered model (MLflow)"),
    *mlflow_operations("DELETE", _RM + "/delete", delete_model, "writer", "Delete a registered model (MLflow)"),
    *mlflow_operations("POST", _RM + "/rename", rename_model, "writer", "Rename a registered model (MLflow)"),
    *mlflow_operations("POST", _RM + "/set-tag", set_model_tag, "writer", "Tag a registered model (MLflow)"),
    *mlflow_operations("DELETE", _RM + "/delete-tag", delete_model_tag, "writer", "Untag a registered model (MLflow)"),
    *mlflow_operations(
        "POST", _RM + "/get-latest-versions", latest_versions, "reader", "A model's latest version (MLflow)"
    ),
    *mlflow_operations("POST", _RM + "/alias", set_alias, "writer", "Point an alias at a version (MLflow)"),
    *mlflow_operations("DELETE", _RM + "/alias", delete_alias, "writer", "Remove an alias (MLflow)"),
    *mlflow_operations("GET", _RM + "/alias", get_by_alias, "reader", "The version an alias points at (MLflow)"),
    *mlflow_operations("POST", _MV + "/create", create_version, "writer", "Create a model version (MLflow)"),
    *mlflow_operations("GET", _MV + "/get", get_version, "reader", "Get a model version (MLflow)"),
    *mlflow_operations("GET", _MV + "/search", search_versions, "reader", "Search model versions (MLflow)"),
    *mlflow_operations("PATCH", _MV + "/update", update_version, "writer", "Update a model version (MLflow)"),
    *mlflow_operations("DELETE", _MV + "/delete", delete_version, "writer", "Delete a model version (MLflow)"),
    *mlflow_operations("POST", _MV + "/set-tag", set_version_tag, "writer", "Tag a model version (MLflow)"),
    *mlflow_operations("DELETE", _MV + "/delete-tag", delete_version_tag, "writer", "Untag a model version (MLflow)"),
    *mlflow_operations(
        "GET", _MV + "/get-download-uri", download_uri, "reader", "Where a version's files are (MLflow)"
    ),
    *mlflow_operations(
        "POST",
        _MV + "/transition-stage",
        transition_stage,
        "writer",
        "Move a version to a stage (None, Staging, Production, Archived)",
    ),
]
