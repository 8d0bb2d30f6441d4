"""MLflow 3's logged models (``/api/2.0/mlflow/logged-models``), which ``log_model`` creates,
fills through the artifact proxy, then finalizes.

flightlog has no such noun, so a logged model is a row of this feature's own table, and its
files are artifacts of a flightlog run under ``models/<model_id>/``: the run it was logged in
(its ``source_run_id``), or, for a model logged outside any run, a run made for it in the
experiment's project (named after the model), so every byte has a run and a digest. When the
model is finalized ``READY`` its directory is also recorded as one artifact (a manifest of the
files and their digests, `artifacts.write_manifest`): what a registry version points at.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from flightlog.errors import NotFound
from flightlog.ids import new_run_id, new_writer_id
from flightlog.mlflow_server.api.artifacts import db_of, live_artifacts, model_artifact_uri, path_param, write_manifest
from flightlog.mlflow_server.common import Call, mlflow_operations
from flightlog.mlflow_server.errors import invalid, missing, not_found
from flightlog.mlflow_server.experiments import experiments_of
from flightlog.models import RunInfo
from flightlog.names import check_name_text
from flightlog.query.like import like_match
from flightlog.schema import record as schema_record
from flightlog.server.context import Ctx
from flightlog.server.operations import Operation

__all__ = [
    "OPERATIONS",
    "experiment_of_project",
    "logged_model",
    "Clause",
    "matches",
    "parse_filter",
    "project_of_experiment",
    "run_outputs",
]

_STATUSES = ("LOGGED_MODEL_PENDING", "LOGGED_MODEL_READY", "LOGGED_MODEL_UPLOAD_FAILED")
_COLS = (
    "model_id, project, experiment_id, run_id, source_run_id, name, model_type, status, status_message, "
    "params, tags, step, created, updated, deleted"
)
_MAX_RESULTS = 1000


# ── experiments ↔ projects (the tracking routes' table, experiments.py) ────


def project_of_experiment(store: Any, experiment_id: str) -> str:
    """The project an MLflow experiment id stands for (``0``: ``default``); MLflow's NOT_FOUND otherwise."""
    return experiments_of(store).by_id(experiment_id).name


def experiment_of_project(store: Any, project: str) -> str:
    """The experiment id MLflow knows a project by (given on first use, as the tracking routes do)."""
    found = experiments_of(store).by_name(project, {project})
    return "0" if found is None else found.id


# ── the table ──────────────────────────────────────────────────────────────


def _row(db: Any, model_id: str) -> dict[str, Any] | None:
    with db.read() as conn:
        row = conn.execute(f"SELECT {_COLS} FROM mlflow_logged_models WHERE model_id=?", (model_id,)).fetchone()
    return None if row is None else _as_dict(row)


def _as_dict(row: Any) -> dict[str, Any]:
    doc = dict(zip([c.strip() for c in _COLS.split(",")], row, strict=True))
    doc["params"], doc["tags"] = json.loads(doc["params"]), json.loads(doc["tags"])
    return doc


def logged_model(db: Any, model_id: str, project: str | None = None) -> dict[str, Any]:
    """A logged model's row (visible to a token limited to ``project``); MLflow's NOT_FOUND otherwise."""
    row = _row(db, model_id)
    if row is None or row["deleted"] or (project is not None and row["project"] != project):
        raise not_found(f"Logged model with ID '{model_id}' not found.")
    return row


def run_outputs(db: Any, run_id: str) -> list[dict[str, Any]]:
    """The models a run logged, for its run document's ``outputs.model_outputs`` (tracking routes)."""
    with db.read() as conn:
        rows = conn.execute(
            "SELECT model_id, step FROM mlflow_logged_models WHERE source_run_id=? AND deleted=0 ORDER BY created",
            (run_id,),
        ).fetchall()
    return [{"model_id": str(model_id), "step": int(step or 0)} for model_id, step in rows]


def _update(db: Any, model_id: str, **fields: Any) -> None:
    sets = ", ".join(f"{k}=?" for k in fields)
    values = [json.dumps(v, sort_keys=True) if k in ("params", "tags") else v for k, v in fields.items()]
    with db.write() as conn:
        conn.execute(
            f"UPDATE mlflow_logged_models SET {sets}, updated=? WHERE model_id=?", (*values, time.time(), model_id)
        )


def to_mlflow(row: dict[str, Any]) -> dict[str, Any]:
    """A logged model in MLflow's message shape (``LoggedModel``)."""
    info: dict[str, Any] = {
        "model_id": row["model_id"],
        "experiment_id": row["experiment_id"],
        "name": row["name"],
        "artifact_uri": model_artifact_uri(row["model_id"], row["experiment_id"]),
        "creation_timestamp_ms": int(row["created"] * 1000),
        "last_updated_timestamp_ms": int(row["updated"] * 1000),
        "status": row["status"],
        "tags": [{"key": k, "value": v} for k, v in sorted(row["tags"].items())],
    }
    for key in ("model_type", "source_run_id", "status_message"):
        if row.get(key):
            info[key] = row[key]
    params = [{"key": k, "value": v} for k, v in sorted(row["params"].items())]
    return {"info": info, "data": {"params": params, "metrics": []}}


def _pairs(call: Call, name: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in call.items(name, limit=1000):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str) or not item["key"]:
            raise invalid(f"Each entry of '{name}' needs a 'key' (text) and a 'value'.")
        check_name_text(item["key"], f"{name[:-1]} key")
        value = item.get("value")
        out[item["key"]] = "" if value is None else str(value)
    return out


# ── MLflow's search filters (the registry's and logged models' small dialect) ──

_CLAUSE = re.compile(
    r"""\s*(?P<ident>(?:[A-Za-z_]+\.)?(?:`[^`]+`|"[^"]+"|[A-Za-z_][\w.]*))\s*"""
    r"""(?P<op>!=|<=|>=|=|<|>|\bNOT\s+ILIKE\b|\bNOT\s+LIKE\b|\bILIKE\b|\bLIKE\b|\bIN\b)\s*"""
    r"""(?P<value>'(?:[^']|'')*'|"(?:[^"])*"|\((?:[^)]*)\)|-?\d+(?:\.\d+)?)\s*""",
    re.IGNORECASE,
)
_AND = re.compile(r"\s*\bAND\b\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Clause:
    """One comparison of a filter: ``kind`` is the prefix (``tag``, ``tags``, ``attributes``; "" for none)."""

    kind: str
    key: str
    op: str
    value: Any


def _literal(text: str) -> Any:
    if text[0] in "'\"":
        return text[1:-1].replace("''", "'") if text[0] == "'" else text[1:-1]
    if text[0] == "(":
        return [_literal(v.strip()) for v in text[1:-1].split(",") if v.strip()]
    return float(text) if "." in text else int(text)


def parse_filter(text: str | None) -> list[Clause]:
    """``name = 'x' AND tags.k LIKE 'a%'`` as clauses; MLflow's INVALID_PARAMETER_VALUE otherwise."""
    if text is None or not text.strip():
        return []
    clauses, pos = [], 0
    while pos < len(text):
        m = _CLAUSE.match(text, pos)
        if m is None:
            raise invalid(f"Invalid filter '{text[:300]}': expected KEY OPERATOR VALUE near {text[pos : pos + 40]!r}")
        ident = m.group("ident")
        kind, _, key = ident.partition(".") if "." in ident and not ident.startswith(("`", '"')) else ("", "", ident)
        key = key.strip('`"')
        clauses.append(Clause(kind.lower(), key, " ".join(m.group("op").upper().split()), _literal(m.group("value"))))
        pos = m.end()
        if pos < len(text):
            joined = _AND.match(text, pos)
            if joined is None:
                raise invalid(f"Invalid filter '{text[:300]}': join comparisons with AND (OR is not supported)")
            pos = joined.end()
    return clauses


def matches(value: Any, clause: Clause) -> bool:
    """Whether ``value`` (None when the key is absent) passes ``clause``."""
    op, want = clause.op, clause.value
    if value is None:
        return op == "!=" or op.startswith("NOT")
    if op == "IN":
        return str(value) in {str(v) for v in (want if isinstance(want, list) else [want])}
    if op in ("LIKE", "ILIKE", "NOT LIKE", "NOT ILIKE"):
        hit = like_match(str(value), str(want), fold="ILIKE" in op)  # RE2: linear, whatever the pattern
        return not hit if op.startswith("NOT") else hit
    if isinstance(want, (int, float)) and not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return False
    if isinstance(value, (int, float)) and isinstance(want, str):
        value = str(value)
    try:
        return bool(
            {
                "=": value == want,
                "!=": value != want,
                "<": value < want,
                ">": value > want,
                "<=": value <= want,
                ">=": value >= want,
            }[op]
        )
    except TypeError:
        return False


# ── routes ─────────────────────────────────────────────────────────────────


async def _holder_run(ctx: Ctx, project: str, name: str, model_id: str) -> str:
    """A run for a model logged outside any run: its files need one."""
    run_id, now = new_run_id(), time.time()
    record = schema_record(
        "run",
        r=run_id,
        w=f"mlflow-{new_writer_id()}",
        s=1,
        t=now,
        project=project,
        name=f"logged model {name}"[:200],
        status="succeeded",
        end_reason="exit",
        created=now,
        started=now,
        ended=now,
    )
    tag = schema_record(
        "tags", r=run_id, w=f"mlflow-{new_writer_id()}", s=1, t=now, data={"mlflow.loggedModelId": model_id}
    )
    result = await ctx.call(ctx.store.ingest, [record, tag])
    if result.skipped:
        raise invalid(f"The store refused a run for the logged model: {result.skipped[0]}")
    return run_id


async def create(call: Call) -> dict[str, Any]:
    ctx, db = call.ctx, db_of(call.ctx)
    experiment_id = call.need("experiment_id", max_len=40)
    project = await ctx.call(project_of_experiment, ctx.store, experiment_id)
    ctx.principal.check_project(project)
    name = call.text("name", max_len=250) or "model"
    model_id = f"m-{uuid.uuid4().hex}"
    source_run_id = call.text("source_run_id", max_len=64)
    if source_run_id:
        run: RunInfo = await ctx.run(source_run_id)
        holder = run.id
    else:
        holder = await _holder_run(ctx, project, name, model_id)
    params, tags, now = _pairs(call, "params"), _pairs(call, "tags"), time.time()

    def insert() -> None:
        with db.write() as conn:
            conn.execute(
                f"INSERT INTO mlflow_logged_models({_COLS}) VALUES({', '.join('?' * 15)})",
                (
                    model_id,
                    project,
                    experiment_id,
                    holder,
                    source_run_id or None,
                    name,
                    call.text("model_type", max_len=500),
                    "LOGGED_MODEL_PENDING",
                    None,
                    json.dumps(params, sort_keys=True),
                    json.dumps(tags, sort_keys=True),
                    0,
                    now,
                    now,
                    0,
                ),
            )

    await ctx.call(insert)
    return {"model": to_mlflow(logged_model(db, model_id))}


async def _model(call: Call) -> dict[str, Any]:
    model_id = call.ctx.path("model_id")
    return await call.ctx.call(logged_model, db_of(call.ctx), model_id, call.ctx.principal.project)


async def get(call: Call) -> dict[str, Any]:
    return {"model": to_mlflow(await _model(call))}


async def finalize(call: Call) -> dict[str, Any]:
    ctx, row = call.ctx, await _model(call)
    status = call.need("status", max_len=64)
    if status.isdigit():
        status = {"1": "LOGGED_MODEL_PENDING", "2": "LOGGED_MODEL_READY", "3": "LOGGED_MODEL_UPLOAD_FAILED"}.get(
            status, status
        )
    if status not in _STATUSES:
        raise invalid(f"Invalid value {status!r} for parameter 'status': use one of {', '.join(_STATUSES)}.")
    if status == "LOGGED_MODEL_READY":
        run = await ctx.run(row["run_id"])
        try:
            await write_manifest(ctx, run, f"models/{row['model_id']}", source=f"models:/{row['model_id']}")
        except Exception as exc:  # noqa: BLE001 - a model with no files yet is READY as MLflow's is
            if getattr(exc, "error_code", None) != "RESOURCE_DOES_NOT_EXIST":
                raise
    db = db_of(ctx)
    await ctx.call(_update, db, row["model_id"], status=status, status_message=call.text("status_message"))
    return {"model": to_mlflow(logged_model(db, row["model_id"]))}


async def delete(call: Call) -> dict[str, Any]:
    row = await _model(call)
    await call.ctx.call(_update, db_of(call.ctx), row["model_id"], deleted=1)
    return {}


async def set_tags(call: Call) -> dict[str, Any]:
    row = await _model(call)
    await call.ctx.call(_update, db_of(call.ctx), row["model_id"], tags={**row["tags"], **_pairs(call, "tags")})
    return {}


async def delete_tag(call: Call) -> dict[str, Any]:
    row, key = await _model(call), call.ctx.path("tag_key")
    if key not in row["tags"]:
        raise not_found(f"No tag with key {key!r} found for logged model {row['model_id']!r}.")
    await call.ctx.call(
        _update, db_of(call.ctx), row["model_id"], tags={k: v for k, v in row["tags"].items() if k != key}
    )
    return {}


async def log_params(call: Call) -> dict[str, Any]:
    row = await _model(call)
    await call.ctx.call(_update, db_of(call.ctx), row["model_id"], params={**row["params"], **_pairs(call, "params")})
    return {}


async def log_outputs(call: Call) -> dict[str, Any]:
    """``runs/outputs``: a run says which logged models it produced (and at which step)."""
    ctx, db = call.ctx, db_of(call.ctx)
    run = await ctx.run(call.need("run_id", max_len=64))
    for item in call.items("models", limit=1000):
        model_id = item.get("model_id") if isinstance(item, dict) else None
        if not isinstance(model_id, str) or not model_id:
            raise missing("models.model_id")
        row = await ctx.call(logged_model, db, model_id, ctx.principal.project)
        step = item.get("step") or 0
        if not str(step).lstrip("-").isdigit():
            raise invalid(f"Invalid value {step!r} for 'models.step': it must be an integer.")
        await ctx.call(_update, db, model_id, source_run_id=row["source_run_id"] or run.id, step=int(step))
    return {}


_FIELDS = {"name", "model_id", "source_run_id", "status", "model_type", "experiment_id"}


def _value_of(row: dict[str, Any], clause: Clause) -> Any:
    if clause.kind in ("tag", "tags"):
        return row["tags"].get(clause.key)
    if clause.kind in ("param", "params"):
        return row["params"].get(clause.key)
    if clause.kind == "attributes" or clause.key in _FIELDS or clause.key.endswith("_timestamp"):
        key = {"creation_timestamp": "created", "last_updated_timestamp": "updated"}.get(clause.key, clause.key)
        value = row.get(key)
        return int(value * 1000) if key in ("created", "updated") and value is not None else value
    raise invalid(f"Invalid attribute key '{clause.key}' in the filter: use name, source_run_id, status, tag.KEY.")


async def search(call: Call) -> dict[str, Any]:
    ctx, db = call.ctx, db_of(call.ctx)
    experiments = [str(e) for e in call.items("experiment_ids", limit=1000)]
    clauses = parse_filter(call.text("filter", max_len=10_000))
    limit = call.integer("max_results", default=_MAX_RESULTS, min=1) or _MAX_RESULTS
    offset = call.integer("page_token", default=0, min=0) or 0
    where, args = "deleted=0", []
    if experiments:
        where += f" AND experiment_id IN ({', '.join('?' * len(experiments))})"
        args.extend(experiments)
    if ctx.principal.project is not None:
        where += " AND project=?"
        args.append(ctx.principal.project)

    def read() -> list[dict[str, Any]]:
        with db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLS} FROM mlflow_logged_models WHERE {where} ORDER BY created DESC, model_id", args
            ).fetchall()
        # the filter runs here too, in the worker thread: matching never holds the event loop
        return [d for d in map(_as_dict, rows) if all(matches(_value_of(d, c), c) for c in clauses)]

    rows = await ctx.call(read)
    for order in reversed(call.items("order_by", limit=10)):
        field = order.get("field_name") if isinstance(order, dict) else None
        if not isinstance(field, str):
            raise invalid("Each 'order_by' entry needs a 'field_name'.")
        key = {"creation_timestamp": "created", "last_updated_timestamp": "updated"}.get(field, field)
        if key not in ("created", "updated", "name", "model_id"):
            raise invalid(f"Invalid order_by field {field!r}: use creation_timestamp, last_updated_timestamp or name.")
        rows.sort(key=lambda r: r[key], reverse=not order.get("ascending", True))
    page = rows[offset : offset + limit]
    doc: dict[str, Any] = {"models": [to_mlflow(r) for r in page]}
    if offset + limit < len(rows):
        doc["next_page_token"] = str(offset + limit)
    return doc


async def list_artifacts(call: Call) -> dict[str, Any]:
    """What a logged model holds, one directory at a time (MLflow's UI asks this)."""
    ctx, row = call.ctx, await _model(call)
    below = (call.text("artifact_directory_path", max_len=4096) or "").strip("/")
    prefix = f"models/{row['model_id']}" + (f"/{below}" if below else "")
    try:
        arts = live_artifacts(await ctx.call(ctx.client.artifacts, row["run_id"]))
    except NotFound:  # its run was deleted (`flightlog runs rm`): a model with no files, as before
        arts = {}
    children: dict[str, dict[str, Any]] = {}
    for p, a in arts.items():
        if not p.startswith(prefix + "/"):
            continue
        head, _, tail = p[len(prefix) + 1 :].partition("/")
        path = f"{below}/{head}" if below else head
        if tail:
            children[head] = {"path": path, "is_dir": True}
        elif head not in children:
            children[head] = {"path": path, "is_dir": False, "file_size": a.size}
    return {
        "root_uri": model_artifact_uri(row["model_id"], row["experiment_id"]),
        "files": [children[k] for k in sorted(children)],
    }


_ID = "/logged-models/{model_id}"

_PARAMS = (path_param("model_id", "A logged model's id (m-…)."), path_param("tag_key", "A tag's key."))


def _with_params(ops: list[Operation]) -> list[Operation]:
    return [replace(op, params=tuple(p for p in _PARAMS if "{" + p.name + "}" in op.path)) for op in ops]


OPERATIONS: list[Operation] = _with_params(
    [
        *mlflow_operations("POST", "/logged-models", create, "writer", "Create a logged model (MLflow 3)"),
        *mlflow_operations("POST", "/logged-models/search", search, "reader", "Search logged models (MLflow 3)"),
        *mlflow_operations("GET", _ID, get, "reader", "Get a logged model (MLflow 3)"),
        *mlflow_operations("PATCH", _ID, finalize, "writer", "Finalize a logged model (MLflow 3)"),
        *mlflow_operations("DELETE", _ID, delete, "writer", "Delete a logged model (MLflow 3)"),
        *mlflow_operations("PATCH", _ID + "/tags", set_tags, "writer", "Set a logged model's tags (MLflow 3)"),
        *mlflow_operations(
            "DELETE", _ID + "/tags/{tag_key}", delete_tag, "writer", "Delete a logged model's tag (MLflow 3)"
        ),
        *mlflow_operations("POST", _ID + "/params", log_params, "writer", "Log a logged model's params (MLflow 3)"),
        *mlflow_operations(
            "GET", _ID + "/artifacts/directories", list_artifacts, "reader", "List a logged model's files (MLflow 3)"
        ),
        *mlflow_operations("POST", "/runs/outputs", log_outputs, "writer", "Record the models a run logged (MLflow 3)"),
    ]
)
