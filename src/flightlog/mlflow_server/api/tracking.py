"""MLflow's tracking routes: experiments, runs, params, tags, metrics, batches, inputs, search
and metric history, onto flightlog's projects, runs and records (docs/mlflow.md).

Scoping is the native API's: a token limited to a project sees only that project's
experiment and runs; a run outside it is answered as one that does not exist, an experiment
outside it with PERMISSION_DENIED (its name is what the client asked for). A run that a
flightlog process owns (``flightlog run``, the SDK: it has a pid) keeps the status its owner
reports: an MLflow client inside it (``MLFLOW_RUN_ID``) cannot end it early.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from flightlog.errors import FlightlogError
from flightlog.ids import new_run_id
from flightlog.mlflow_server.api.artifacts import db_of
from flightlog.mlflow_server.api.logged_models import run_outputs
from flightlog.mlflow_server.common import Call, mlflow_operations
from flightlog.mlflow_server.entities import (
    DELETED_TAG,
    RUN_NAME_TAG,
    TO_FLIGHTLOG,
    metric_value,
    ms,
    run_doc,
    run_info,
)
from flightlog.mlflow_server.errors import MlflowError, invalid, not_found
from flightlog.mlflow_server.experiments import Experiment, experiments_of, project_of_name
from flightlog.mlflow_server.search import (
    EXPERIMENT_ATTRIBUTES,
    lifecycle_filter,
    parse_mlflow_filter,
    to_flightlog_filter,
    to_flightlog_order,
)
from flightlog.mlflow_server.writes import (
    check_batch_sizes,
    check_param,
    check_tag,
    metric_series,
    records_for,
    write,
)
from flightlog.models import RunInfo
from flightlog.query.like import like_match
from flightlog.server.operations import Operation
from flightlog.server.responses import Response, json_bytes
from flightlog.statuses import ACTIVE_STATUSES

__all__ = ["OPERATIONS"]

MAX_RESULTS = 50_000
MAX_HISTORY = 25_000
#: what one ``get-history-bulk-interval`` request may ask (issue 31, item 4): runs (MLflow's bound),
#: points a run (MLflow's bound), points in all (each run sampled more sparsely past it)
MAX_BULK_RUNS = 100
MAX_BULK_PER_RUN = 2500
MAX_BULK_POINTS = 100_000


# ── helpers ─────────────────────────────────────────────────────────────────────────────────


async def _projects(call: Call) -> set[str]:
    rows = await call.ctx.call(call.ctx.client.projects)
    return {r["name"] for r in rows}


async def _experiment(call: Call, experiment_id: str) -> Experiment:
    exps = experiments_of(call.ctx.store)
    exp = await call.ctx.call(exps.by_id, experiment_id)
    call.ctx.principal.check_project(exp.name)
    return exp


async def _experiment_id(call: Call, project: str) -> str:
    exps = experiments_of(call.ctx.store)
    exp = await call.ctx.call(exps.by_name, project, {project})
    return exp.id if exp is not None else ""


async def _run(call: Call, run_id: str | None = None) -> RunInfo:
    """The run named by ``run_id`` (or ``run_uuid``), exactly, within the caller's scope."""
    ref = run_id or call.text("run_id") or call.text("run_uuid")
    if not ref:
        raise invalid("Missing value for required parameter 'run_id'.")
    ctx = call.ctx
    try:
        resolved = await ctx.call(ctx.store.resolve, ref, project=ctx.principal.project)
        if resolved != ref:
            raise LookupError(ref)
        return await ctx.call(ctx.store.get_run, resolved)
    except Exception as exc:  # noqa: BLE001 - any lookup failure of a run is MLflow's not-found
        if isinstance(exc, LookupError) or getattr(exc, "http_status", None) in (404, 400):
            raise not_found(f"Run with id={ref} not found") from None
        raise


async def _write(call: Call, run_id: str, parts: list[tuple[str, dict[str, Any]]]) -> None:
    records = records_for(run_id, parts)
    await call.ctx.call(write, call.ctx.store, records)


def _active(info: RunInfo) -> None:
    if DELETED_TAG in info.tags:
        raise invalid(f"The run {info.id} must be in the 'active' state. Current state is deleted.")


def _tag_list(items: list[Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in items:
        if not isinstance(t, dict):
            raise invalid(f"Invalid tag {t!r}: each tag is an object with key and value.")
        key, value = check_tag(t.get("key"), t.get("value"))
        out[key] = value
    return out


# ── experiments ─────────────────────────────────────────────────────────────────────────────


async def create_experiment(call: Call) -> Any:
    name = call.need("name", max_len=10_000)
    call.ctx.principal.check_project(project_of_name(name))
    tags = _tag_list(call.items("tags"))
    exps = experiments_of(call.ctx.store)
    exp = await call.ctx.call(exps.create, name, call.text("artifact_location"), tags)
    return {"experiment_id": exp.id}


async def get_experiment(call: Call) -> Any:
    exp = await _experiment(call, call.need("experiment_id"))
    return {"experiment": exp.to_mlflow()}


async def get_experiment_by_name(call: Call) -> Any:
    name = call.need("experiment_name", max_len=10_000)
    call.ctx.principal.check_project(project_of_name(name))
    exps = experiments_of(call.ctx.store)
    exp = await call.ctx.call(exps.by_name, name, await _projects(call))
    if exp is None:
        raise not_found(f"Could not find experiment with name '{name}'")
    return {"experiment": exp.to_mlflow()}


async def search_experiments(call: Call) -> Any:
    exps = experiments_of(call.ctx.store)
    projects = await _projects(call)
    scope = call.ctx.principal
    view = (call.text("view_type") or "ACTIVE_ONLY").upper()
    wanted = {"ACTIVE_ONLY": {"active"}, "DELETED_ONLY": {"deleted"}, "ALL": {"active", "deleted"}}.get(view)
    if wanted is None:
        raise invalid(f"Invalid view_type '{view}': use ACTIVE_ONLY, DELETED_ONLY or ALL.")
    text, orders = call.text("filter", max_len=10_000), [str(o) for o in call.items("order_by", limit=10)]
    limit = call.integer("max_results", default=1000, min=1) or 1000
    start = _offset(call.text("page_token"))

    def select() -> list[Experiment]:  # in a worker thread: filtering and sorting never hold the event loop
        found = [e for e in exps.all(projects) if scope.allows(e.name) and e.lifecycle in wanted]
        found = _filter_experiments(found, text)
        found.sort(key=lambda e: (-e.created, int(e.id)))  # MLflow's default: the newest first
        for order in reversed(orders):
            found = _order_experiments(found, order)
        return found

    found = await call.ctx.call(select)
    page = found[start : start + limit]
    doc: dict[str, Any] = {"experiments": [e.to_mlflow() for e in page]}
    if start + limit < len(found):
        doc["next_page_token"] = _token(start + limit)
    return doc


def _filter_experiments(found: list[Experiment], text: str | None) -> list[Experiment]:
    """MLflow's experiment filter: ``name``, ``creation_time``, ``last_update_time`` (epoch
    milliseconds) and ``tags.KEY``, joined with AND."""
    clauses = parse_mlflow_filter(text, EXPERIMENT_ATTRIBUTES) if text else []
    for c in clauses:
        if c.kind == "tag":
            found = [e for e in found if c.key in e.tags and _text_matches(e.tags[c.key], c.op, c.value)]
        elif c.ms:
            found = [e for e in found if _number_matches(int(getattr(e, c.key) * 1000), c.op, c.value)]
        elif c.kind == "column" and c.key == "name":
            found = [e for e in found if _text_matches(e.mlflow_name, c.op, c.value)]
        else:
            raise invalid(
                f"Invalid filter string '{text}': experiments are filtered by name, creation_time, "
                "last_update_time and tags."
            )
    return found


def _number_matches(value: float, op: str, want: object) -> bool:
    if op in ("is null", "is not null"):
        return op == "is not null"
    if not isinstance(want, float):
        raise invalid(f"Invalid comparator '{op}' for a time in milliseconds.")
    compare = {"=": value == want, "!=": value != want, "<": value < want, "<=": value <= want,
               ">": value > want, ">=": value >= want}  # fmt: skip
    return compare[op]


def _text_matches(value: str, op: str, want: object) -> bool:
    if op in ("like", "ilike"):
        return like_match(value, str(want), fold=op == "ilike")  # RE2: linear, whatever the pattern
    if op == "=":
        return value == want
    if op == "!=":
        return value != want
    if op == "in":
        return value in (want or ())  # type: ignore[operator]
    if op == "not in":
        return value not in (want or ())  # type: ignore[operator]
    raise invalid(f"Invalid comparator '{op}' for an experiment's name or tag.")


def _order_experiments(found: list[Experiment], order: str) -> list[Experiment]:
    parts = order.split()
    key, desc = parts[0].lower(), len(parts) > 1 and parts[1].lower() == "desc"
    getters = {"name": lambda e: e.mlflow_name, "experiment_id": lambda e: int(e.id), "creation_time": lambda e: e.created,
               "last_update_time": lambda e: e.updated}  # fmt: skip
    getter = getters.get(key.removeprefix("attributes.").removeprefix("attribute."))
    if getter is None:
        raise invalid(f"Invalid order_by clause '{order}': use name, experiment_id, creation_time, last_update_time.")
    return sorted(found, key=getter, reverse=desc)


async def update_experiment(call: Call) -> Any:
    exp = await _experiment(call, call.need("experiment_id"))
    new_name = call.need("new_name", max_len=10_000)
    if new_name != exp.name:
        raise invalid(
            f"Experiment '{exp.name}' cannot be renamed to '{new_name}': an experiment is a flightlog project, "
            "which keeps its name (docs/mlflow.md)"
        )
    return {}


async def _lifecycle(call: Call, lifecycle: str) -> Any:
    exp = await _experiment(call, call.need("experiment_id"))
    call.ctx.principal.require("admin" if lifecycle == "deleted" else "writer")
    await call.ctx.call(experiments_of(call.ctx.store).set_lifecycle, exp, lifecycle)
    return {}


async def delete_experiment(call: Call) -> Any:
    return await _lifecycle(call, "deleted")


async def restore_experiment(call: Call) -> Any:
    return await _lifecycle(call, "active")


async def set_experiment_tag(call: Call) -> Any:
    exp = await _experiment(call, call.need("experiment_id"))
    key, value = check_tag(call.text("key"), call.message.get("value"))
    await call.ctx.call(experiments_of(call.ctx.store).set_tag, exp, key, value)
    return {}


async def delete_experiment_tag(call: Call) -> Any:
    exp = await _experiment(call, call.need("experiment_id"))
    key = call.need("key")
    await call.ctx.call(experiments_of(call.ctx.store).set_tag, exp, key, None)
    return {}


# ── runs ────────────────────────────────────────────────────────────────────────────────────


async def create_run(call: Call) -> Any:
    exp = await _experiment(call, call.text("experiment_id") or "0")
    if exp.lifecycle != "active":
        raise invalid(f"The experiment {exp.id} must be in the 'active' state. Current state is {exp.lifecycle}.")
    tags = _tag_list(call.items("tags"))
    start = call.integer("start_time", min=0)
    started = start / 1000 if start is not None else time.time()
    run_id = new_run_id()
    name = call.text("run_name", max_len=1000) or tags.get(RUN_NAME_TAG) or f"mlflow-{run_id[:8]}"
    tags[RUN_NAME_TAG] = name
    if call.text("user_id"):
        tags.setdefault("mlflow.user", str(call.text("user_id")))
    fields = {"project": exp.name, "name": name, "status": "running", "created": started, "started": started}
    await _write(call, run_id, [("run", {"t": started, "attempt": 1, **fields}), ("tags", {"data": tags})])
    info = await _run(call, run_id)
    return {"run": run_doc(info, exp.id)}


async def get_run(call: Call) -> Any:
    info = await _run(call)
    inputs = await _inputs(call, info)
    doc = run_doc(info, await _experiment_id(call, info.project), inputs)
    outputs = await call.ctx.call(_model_outputs, call.ctx, info.id)
    if outputs:  # MLflow 3's register_model("runs:/…") picks the logged model from these
        doc["outputs"] = {"model_outputs": outputs}
    return {"run": doc}


def _model_outputs(ctx: Any, run_id: str) -> list[dict[str, Any]]:
    """The models the run logged (MLflow 3's logged models), none on a store without a database."""
    try:
        return run_outputs(db_of(ctx), run_id)
    except MlflowError:
        return []


async def _inputs(call: Call, info: RunInfo) -> list[dict[str, Any]]:
    rows = await call.ctx.call(call.ctx.client.evidence, info, "manifest")
    out = []
    for row in rows:
        data = row.get("data") if isinstance(row.get("data"), dict) else {}
        mlflow = data.get("mlflow_dataset") if isinstance(data, dict) else None
        if isinstance(mlflow, dict):
            out.append(mlflow)
    return out


async def update_run(call: Call) -> Any:
    info = await _run(call)
    status = call.text("status")
    fields: dict[str, Any] = {}
    name = call.text("run_name", max_len=1000)
    if name:
        fields["name"] = name
    end = call.integer("end_time", min=0)
    if status is not None:
        if status not in TO_FLIGHTLOG:
            raise invalid(f"Invalid value '{status}' for parameter 'status': use one of {', '.join(TO_FLIGHTLOG)}.")
        owned = info.pid is not None and not info.is_finished  # its owner reports its end (module doc)
        if not owned:
            flightlog_status, reason, exit_code = TO_FLIGHTLOG[status]
            fields["status"] = flightlog_status
            if flightlog_status in ACTIVE_STATUSES:
                fields.update(ended=None, end_reason=None)
            else:
                fields["ended"] = end / 1000 if end is not None else time.time()
                fields["end_reason"] = reason
                if exit_code is not None:
                    fields["exit_code"] = exit_code
    parts: list[tuple[str, dict[str, Any]]] = [("run", fields)] if fields else []
    if name:
        parts.append(("tags", {"data": {RUN_NAME_TAG: name}}))
    await _write(call, info.id, parts)
    info = await _run(call, info.id)
    return {"run_info": run_info(info, await _experiment_id(call, info.project))}


async def delete_run(call: Call) -> Any:
    info = await _run(call)
    await _write(call, info.id, [("tags", {"data": {DELETED_TAG: str(ms(time.time()))}})])
    return {}


async def restore_run(call: Call) -> Any:
    info = await _run(call)
    await _write(call, info.id, [("tags", {"data": {DELETED_TAG: None}})])
    return {}


async def set_tag(call: Call) -> Any:
    info = await _run(call)
    _active(info)
    key, value = check_tag(call.text("key"), call.message.get("value"))
    parts: list[tuple[str, dict[str, Any]]] = [("tags", {"data": {key: value}})]
    if key == RUN_NAME_TAG:
        parts.append(("run", {"name": value}))
    await _write(call, info.id, parts)
    return {}


async def delete_tag(call: Call) -> Any:
    info = await _run(call)
    _active(info)
    key = call.need("key")
    if key not in info.tags or key in (DELETED_TAG,):
        raise not_found(f"No tag with name: {key} in run with id {info.id}")
    await _write(call, info.id, [("tags", {"data": {key: None}})])
    return {}


def _check_params(info: RunInfo, params: dict[str, str]) -> None:
    for key, value in params.items():
        old = info.params.get(key)
        if old is not None and str(old) != value:
            raise invalid(
                f"Changing param values is not allowed. Param with key='{key}' was already logged with "
                f"value='{old}' for run ID='{info.id}'. Attempted logging new value '{value}'."
            )


async def log_param(call: Call) -> Any:
    info = await _run(call)
    _active(info)
    key, value = check_param(call.text("key"), call.message.get("value"))
    _check_params(info, {key: value})
    await _write(call, info.id, [("params", {"data": {key: value}})])
    return {}


async def log_metric(call: Call) -> Any:
    info = await _run(call)
    _active(info)
    message = {k: call.message.get(k) for k in ("key", "value", "timestamp", "step")}
    series = metric_series([message])
    await _write(call, info.id, [("metrics", {"attempt": info.attempt, "series": series})])
    return {}


async def log_batch(call: Call) -> Any:
    metrics, params, tags = call.items("metrics"), call.items("params"), call.items("tags")
    check_batch_sizes(metrics, params, tags)
    info = await _run(call)
    _active(info)
    param_map: dict[str, str] = {}
    for p in params:
        if not isinstance(p, dict):
            raise invalid(f"Invalid param {p!r}: each param is an object with key and value.")
        key, value = check_param(p.get("key"), p.get("value"))
        if key in param_map and param_map[key] != value:
            raise invalid(f"Duplicate parameter keys have been submitted: ['{key}'].")
        param_map[key] = value
    _check_params(info, param_map)
    tag_map = _tag_list(tags)
    if any(type(m) is dict and m.get("model_id") for m in metrics):
        metrics = await call.ctx.call(_not_yet_logged, call.ctx.store, info.id, metrics)
    series = metric_series(metrics)
    parts: list[tuple[str, dict[str, Any]]] = []
    if param_map:
        parts.append(("params", {"data": param_map}))
    if tag_map:
        parts.append(("tags", {"data": tag_map}))
        if RUN_NAME_TAG in tag_map:
            parts.append(("run", {"name": tag_map[RUN_NAME_TAG]}))
    if series:
        parts.append(("metrics", {"attempt": info.attempt, "series": series}))
    await _write(call, info.id, parts)
    return {}


def _not_yet_logged(store: Any, run_id: str, metrics: list[Any]) -> list[Any]:
    """``metrics`` less the points a model id only links to a logged model: MLflow 3's
    ``log_model`` sends the run's points of its step again, each with the new model's id, and an
    MLflow server keeps one point per (key, step, timestamp, value), so the history a client
    reads back has each point once."""
    keys = {m.get("key") for m in metrics if type(m) is dict and m.get("model_id") and isinstance(m.get("key"), str)}
    have: set[tuple[Any, int, int, float]] = set()
    for key in keys:
        try:
            history = store.metric_history(run_id, key)
        except FlightlogError:  # no such metric yet: every point is new
            continue
        for step, t, value in zip(history.steps.tolist(), history.times.tolist(), history.values.tolist(), strict=True):
            have.add((key, int(step), round(t * 1000), value))

    def logged(m: Any) -> bool:
        if type(m) is not dict or not m.get("model_id"):
            return False
        try:
            stamp, value = m["timestamp"], m["value"]
            point = (m.get("key"), int(m.get("step") or 0), int(stamp), float(value))
        except (KeyError, TypeError, ValueError):
            return False  # checked, and refused with its words, by metric_series
        return point in have

    return [m for m in metrics if not logged(m)]


async def log_inputs(call: Call) -> Any:
    """MLflow's dataset inputs as flightlog data manifests (evidence ``manifest``)."""
    info = await _run(call)
    _active(info)
    parts: list[tuple[str, dict[str, Any]]] = []
    for item in call.items("datasets", limit=1000):
        dataset = item.get("dataset") if isinstance(item, dict) else None
        if not isinstance(dataset, dict) or not dataset.get("name") or not dataset.get("digest"):
            raise invalid(f"Invalid dataset input {str(item)[:200]}: it needs a dataset with a name and a digest.")
        input_tags = _tag_list(item.get("tags") or [])
        doc = {
            "dataset": {k: str(dataset[k]) for k in ("name", "digest", "source_type", "source", "schema", "profile")
                        if dataset.get(k) is not None},
            "tags": [{"key": k, "value": v} for k, v in input_tags.items()],
        }  # fmt: skip
        manifest: dict[str, Any] = {
            "kind": "mlflow_dataset",
            "path": str(dataset.get("source") or ""),
            "digest": str(dataset["digest"]),
            "source_type": dataset.get("source_type"),
            "context": input_tags.get("mlflow.data.context"),
            "files": [],
            "mlflow_dataset": doc,
        }
        parts.append(("evidence", {"kind": "manifest", "name": str(dataset["name"])[:1000], "data": manifest}))
    await _write(call, info.id, parts)
    return {}


# ── search and history ──────────────────────────────────────────────────────────────────────


def _token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _offset(token: str | None) -> int:
    if not token:
        return 0
    try:
        doc = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        offset = int(doc["offset"])
    except (ValueError, KeyError, TypeError):
        raise invalid(f"Invalid page token '{token[:60]}': pass the next_page_token of the previous answer.") from None
    if offset < 0:
        raise invalid(f"Invalid page token '{token[:60]}'.")
    return offset


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


async def search_runs(call: Call) -> Any:
    exps = experiments_of(call.ctx.store)
    ids = [str(e) for e in call.items("experiment_ids")]
    if not ids:
        raise invalid("Missing value for required parameter 'experiment_ids'.")
    projects = []
    by_project: dict[str, str] = {}
    for experiment_id in ids:
        try:
            exp = await call.ctx.call(exps.by_id, experiment_id)
        except Exception:  # noqa: BLE001 - MLflow answers an unknown id with no runs
            continue
        if call.ctx.principal.allows(exp.name):
            projects.append(exp.name)
            by_project[exp.name] = exp.id
    limit = call.integer("max_results", default=1000, min=1) or 1000
    if limit > MAX_RESULTS:
        raise invalid(f"Invalid value {limit} for parameter 'max_results' supplied. It must be at most {MAX_RESULTS}")
    terms = [t for t in (to_flightlog_filter(parse_mlflow_filter(call.text("filter"))),
                         lifecycle_filter(call.text("run_view_type"))) if t]  # fmt: skip
    order = to_flightlog_order([str(o) for o in call.items("order_by")])
    start = _offset(call.text("page_token"))
    if not projects:
        return {"runs": []}
    terms.insert(0, f"project in ({', '.join(_quoted(p) for p in projects)})")
    found = await call.ctx.call(
        call.ctx.client.runs, filter=" and ".join(terms), order_by=order, limit=limit + 1, offset=start
    )
    doc: dict[str, Any] = {"runs": [run_doc(info, by_project.get(info.project, "")) for info in found[:limit]]}
    if len(found) > limit:
        doc["next_page_token"] = _token(start + limit)
    return doc


async def get_metric_history(call: Call) -> Response:
    info = await _run(call)
    key = call.need("metric_key")
    limit = min(call.integer("max_results", default=MAX_HISTORY, min=1) or MAX_HISTORY, MAX_HISTORY)
    start = _offset(call.text("page_token"))

    def page() -> bytes:  # in a worker thread: only the page's points are ever built, and encoded there
        history = call.ctx.client.metric_history(info, key)
        points = _points(history, key, slice(start, start + limit))
        doc: dict[str, Any] = {"metrics": points}
        if start + limit < len(history.steps):
            doc["next_page_token"] = _token(start + limit)
        return json_bytes(doc)

    return _encoded(await call.ctx.call(page))


def _encoded(body: bytes) -> Response:
    return Response(body, media_type="application/json")


def _points(history: Any, key: str, which: Any = None) -> list[dict[str, Any]]:
    """MLflow's metric messages for the points ``which`` (a slice or an index array) selects."""
    sel = slice(None) if which is None else which
    return [
        {"key": key, "value": metric_value(float(v)), "timestamp": int(round(float(t) * 1000)), "step": int(s)}
        for s, t, v in zip(
            history.steps[sel].tolist(), history.times[sel].tolist(), history.values[sel].tolist(), strict=True
        )
    ]


async def get_history_bulk_interval(call: Call) -> Response:
    """Sampled histories of one metric over several runs, bounded (issue 31, item 4): each run is
    read once however often it is named, at most :data:`MAX_BULK_PER_RUN` points a run (MLflow's
    own bound) and :data:`MAX_BULK_POINTS` in all (with many runs each is sampled more sparsely),
    and the answer is built and encoded in a worker thread, from the sampled points only."""
    asked = [str(r) for r in call.items("run_ids", limit=MAX_BULK_RUNS)]
    run_ids = list(dict.fromkeys(asked))  # one run named 100 times is read, and answered, once
    if not run_ids:
        raise invalid("Missing value for required parameter 'run_ids'.")
    key = call.need("metric_key")
    first, last = call.integer("start_step"), call.integer("end_step")
    if (first is None) != (last is None):
        raise invalid("If either start step or end step are specified, both must be specified.")
    if first is not None and last is not None and first > last:
        raise invalid("end_step must be greater than start_step.")
    limit = call.integer("max_results", default=MAX_BULK_PER_RUN, min=1) or MAX_BULK_PER_RUN
    if limit > MAX_BULK_PER_RUN:
        raise invalid(f"max_results must be between 1 and {MAX_BULK_PER_RUN}.")
    per_run = max(1, min(limit, MAX_BULK_POINTS // len(run_ids)))
    infos = [await _run(call, run_id) for run_id in run_ids]

    def answer() -> bytes:
        import numpy as np  # cost: numpy only for metric answers (the store's histories are numpy already)

        out: list[dict[str, Any]] = []
        for info in infos:
            history = call.ctx.client.metric_history(info, key)
            inside = np.arange(len(history.steps))
            if first is not None and last is not None:
                inside = np.flatnonzero((history.steps >= first) & (history.steps <= last))
            out.extend({**p, "run_id": info.id} for p in _points(history, key, inside[_sample(len(inside), per_run)]))
        return json_bytes({"metrics": out})

    return _encoded(await call.ctx.call(answer))


def _sample(count: int, limit: int) -> Any:
    """The positions of at most ``limit`` of ``count`` points, evenly over them, always with the
    first and the last (MLflow's bulk-interval answer samples the same way)."""
    if count <= limit:
        return slice(None)
    if limit == 1:
        return [count - 1]
    return sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)})


# ── the routes ──────────────────────────────────────────────────────────────────────────────

_ROUTES: list[tuple[str, str, Any, str, str]] = [
    ("POST", "/experiments/create", create_experiment, "writer", "Create an experiment (a project)"),
    ("GET", "/experiments/get", get_experiment, "reader", "Get an experiment by id"),
    ("GET", "/experiments/get-by-name", get_experiment_by_name, "reader", "Get an experiment by name"),
    ("POST", "/experiments/search", search_experiments, "reader", "Search experiments"),
    ("GET", "/experiments/search", search_experiments, "reader", "Search experiments"),
    ("POST", "/experiments/update", update_experiment, "writer", "Rename an experiment (refused)"),
    ("POST", "/experiments/delete", delete_experiment, "writer", "Delete an experiment (restorable)"),
    ("POST", "/experiments/restore", restore_experiment, "writer", "Restore an experiment"),
    ("POST", "/experiments/set-experiment-tag", set_experiment_tag, "writer", "Set an experiment's tag"),
    ("POST", "/experiments/delete-experiment-tag", delete_experiment_tag, "writer", "Delete an experiment's tag"),
    ("POST", "/runs/create", create_run, "writer", "Create a run"),
    ("GET", "/runs/get", get_run, "reader", "Get a run"),
    ("POST", "/runs/update", update_run, "writer", "Update a run's status, end time or name"),
    ("POST", "/runs/delete", delete_run, "writer", "Delete a run (restorable)"),
    ("POST", "/runs/restore", restore_run, "writer", "Restore a deleted run"),
    ("POST", "/runs/set-tag", set_tag, "writer", "Set a run's tag"),
    ("POST", "/runs/delete-tag", delete_tag, "writer", "Delete a run's tag"),
    ("POST", "/runs/log-parameter", log_param, "writer", "Log a param"),
    ("POST", "/runs/log-metric", log_metric, "writer", "Log a metric point"),
    ("POST", "/runs/log-batch", log_batch, "writer", "Log metrics, params and tags at once"),
    ("POST", "/runs/log-inputs", log_inputs, "writer", "Log dataset inputs (data manifests)"),
    ("POST", "/runs/search", search_runs, "reader", "Search runs with MLflow's filter and order_by"),
    ("GET", "/metrics/get-history", get_metric_history, "reader", "A metric's history"),
    ("GET", "/metrics/get-history-bulk-interval", get_history_bulk_interval, "reader", "Sampled metric histories"),
]

OPERATIONS: list[Operation] = [
    op
    for method, path, handler, role, summary in _ROUTES
    for op in mlflow_operations(method, path, handler, role, summary)
]
