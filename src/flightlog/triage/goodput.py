"""Goodput: of a run's, a pipeline's or a project's hours, the share that did useful work, and where the rest went.

One run is measured by :mod:`.goodput_run` (queued, startup, productive steps, data stalls,
idle GPU, checkpointing, wind-down, retried and thrown-away attempts); this module sums runs
over a project or a pipeline, names the runs that wasted the most, prices the hours with the
project's configuration (:mod:`.goodput_prices`), and says it in one line:
``goodput 71%: 12% startup, 9% data stalls, 8% retried``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from flightlog.errors import NotFound
from flightlog.models import RunInfo, kind_filter
from flightlog.timefmt import iso, parse_time
from flightlog.triage.goodput_prices import Prices, prices_for
from flightlog.triage.goodput_run import CATEGORIES, LABELS, WASTE, RunTime, measure_run

__all__ = ["run_goodput", "goodput_report", "summary_line", "MAX_RUNS"]

#: runs one report measures (newest first); more are counted and said to be left out
MAX_RUNS = 2000
_TOP = 10


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def summary_line(seconds: dict[str, float]) -> str:
    """``goodput 71%: 12% startup, 9% data stalls, 8% retried`` (the biggest wastes, ≥ 1%)."""
    total = sum(seconds.values())
    if total <= 0:
        return "goodput -: no time recorded"
    shares = {c: seconds.get(c, 0.0) / total for c in CATEGORIES}
    wastes = sorted((c for c in WASTE if shares[c] >= 0.005), key=lambda c: -shares[c])
    text = f"goodput {shares['productive']:.0%}"
    if wastes:
        text += ": " + ", ".join(f"{shares[c]:.0%} {LABELS[c]}" for c in wastes[:4])
    return text


def _superseded(client: Any, info: RunInfo) -> bool:
    """A pipeline step's run that its pipeline ran again later (a retry, a resume)."""
    step = info.tags.get("pipeline_step")
    if not step or not info.parent_id or info.status == "succeeded":
        return False
    where = f"parent = {_quoted(info.parent_id)} and tags.pipeline_step = {_quoted(step)}"
    return any(
        (r.created or 0) > (info.created or 0) for r in client.runs(info.project, filter=where, order_by="-created")
    )


def _doc(time: RunTime, prices: Prices) -> dict[str, Any]:
    total = time.total
    gpu = time.gpu_seconds()
    gpu_total = sum(gpu.values())
    info = time.run
    billed = (total - time.seconds["queued"]) / 3600
    wasted_billed = (time.wasted - time.seconds["queued"]) / 3600
    cost = prices.cost(billed, gpu_total / 3600)
    return {
        "run": info.id,
        "project": info.project,
        "name": info.name,
        "status": info.status,
        "pipeline": info.tags.get("pipeline"),
        "step": info.tags.get("pipeline_step"),
        "created": iso(info.created),
        "attempts": time.attempts,
        "wall_seconds": total,
        "gpus": time.gpus,
        "gpu_hours": gpu_total / 3600,
        "seconds": dict(time.seconds),
        "shares": {c: (s / total if total > 0 else 0.0) for c, s in time.seconds.items()},
        "goodput": time.seconds["productive"] / total if total > 0 else None,
        "wasted_seconds": time.wasted,
        "wasted_gpu_hours": sum(gpu[c] for c in WASTE) / 3600,
        "cost": cost,
        "wasted_cost": prices.cost(wasted_billed, sum(gpu[c] for c in WASTE) / 3600),
        "summary": summary_line(time.seconds),
    }


def run_goodput(client: Any, run: RunInfo | str) -> dict[str, Any]:
    """One run's goodput: seconds and shares per category, GPU-hours, cost, and the summary line.

    A pipeline's run is the sum of its steps' runs (its controller only waits on them), a
    step run again later counted as retried; ``steps`` says how many runs were summed."""
    info = run if isinstance(run, RunInfo) else client.run(run)
    prices = prices_for(info.project)
    if info.parent_id is None and info.tags.get("pipeline"):
        steps = client.runs(info.project, filter=f"parent = {_quoted(info.id)}", order_by="created")
        latest = {r.tags.get("pipeline_step") or r.id: r.id for r in steps}
        times = [
            measure_run(
                client, r, superseded=latest[r.tags.get("pipeline_step") or r.id] != r.id and r.status != "succeeded"
            )
            for r in steps
        ]
        doc = _doc(measure_run(client, info), prices)
        if times:
            whole = RunTime(info, gpus=max(t.gpus for t in times))
            whole.seconds = {c: sum(t.seconds[c] for t in times) for c in CATEGORIES}
            summed = [_doc(t, prices) for t in times]
            doc.update(_sum(summed))
            doc["gpus"] = whole.gpus
            doc["wasted_seconds"] = whole.wasted
        doc["steps"] = len(times)
    else:
        doc = _doc(measure_run(client, info, superseded=_superseded(client, info)), prices)
    doc["currency"] = prices.currency if prices.any else None
    return doc


def _check_project(client: Any, project: str) -> None:
    names = sorted(str(p.get("name")) for p in client.projects())
    if project not in names:
        raise NotFound(f"no project {project!r}; projects: {', '.join(names) or 'none yet'}")


def goodput_report(
    client: Any, *, project: str | None, since: str | float | None, pipeline: str | None
) -> dict[str, Any]:
    """Goodput summed over a project's (or every project's) runs created since ``since`` (a
    duration ago or an ISO time), or over one pipeline's runs, with the runs that wasted most.

    A pipeline's own run is left out of the sums (its steps' runs hold its hours), so a
    pipeline's hours are not counted twice; its steps' runs are summed per pipeline too."""
    since_ts = parse_time(since, what="--since") if isinstance(since, str) else since
    if project:
        _check_project(client, project)
    clauses = []
    if since_ts is not None:
        clauses.append(f"created >= {_quoted(iso(since_ts) or '')}")
    if pipeline:
        clauses.append(f"tags.pipeline = {_quoted(pipeline)}")
    # training runs only: a serving replica lives until a rollout replaces it, and its hours
    # would read as "thrown away" and drown the training time this report is about
    where = kind_filter(" and ".join(clauses) or None, "training")
    runs = client.runs(project, filter=where, order_by="-created", limit=MAX_RUNS + 1)
    if pipeline and not runs:
        known = client.runs(project, filter=f"tags.pipeline = {_quoted(pipeline)}", limit=1)
        if not known:
            raise NotFound(
                f"no runs of pipeline {pipeline!r}"
                + (f" in project {project!r}" if project else "")
                + "; list pipelines with `flightlog pipeline ls`"
            )
    truncated = len(runs) > MAX_RUNS
    runs = [r for r in runs[:MAX_RUNS] if not (r.parent_id is None and r.tags.get("pipeline"))]
    latest: dict[tuple[str, str], str] = {}  # (pipeline run, step) -> the newest run of that step
    for r in sorted(runs, key=lambda r: r.created or 0.0):
        if r.parent_id and r.tags.get("pipeline_step"):
            latest[(r.parent_id, r.tags["pipeline_step"])] = r.id
    docs = []
    price_cache: dict[str, Prices] = {}
    for info in runs:
        key = (info.parent_id or "", info.tags.get("pipeline_step") or "")
        superseded = key in latest and latest[key] != info.id and info.status != "succeeded"
        prices = price_cache.setdefault(info.project, prices_for(info.project))
        docs.append(_doc(measure_run(client, info, superseded=superseded), prices))
    total = _sum(docs)
    by_pipeline: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in docs:
        if d["pipeline"]:
            by_pipeline[d["pipeline"]].append(d)
    wasters = sorted(docs, key=lambda d: (-d["wasted_gpu_hours"], -d["wasted_seconds"]))[:_TOP]
    currency = {p.currency for p in price_cache.values() if p.any}
    return {
        "project": project,
        "since": iso(since_ts),
        "pipeline": pipeline,
        "runs": len(docs),
        "truncated": truncated,
        **total,
        "currency": currency.pop() if len(currency) == 1 else None,
        "pipelines": {name: {"runs": len(ds), **_sum(ds)} for name, ds in sorted(by_pipeline.items())},
        "top_wasters": [{k: d[k] for k in _WASTER_KEYS} for d in wasters if d["wasted_seconds"] > 0],
        "message": None if docs else "no runs" + (f" in project {project!r}" if project else "") + " in that time",
    }


_WASTER_KEYS = (
    "run",
    "project",
    "name",
    "status",
    "pipeline",
    "step",
    "wall_seconds",
    "wasted_seconds",
    "gpu_hours",
    "wasted_gpu_hours",
    "wasted_cost",
    "summary",
)


def _sum(docs: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = {c: sum(d["seconds"][c] for d in docs) for c in CATEGORIES}
    total = sum(seconds.values())
    costs = [d["cost"] for d in docs if d["cost"] is not None]
    wasted = [d["wasted_cost"] for d in docs if d["wasted_cost"] is not None]
    return {
        "wall_seconds": total,
        "gpu_hours": sum(d["gpu_hours"] for d in docs),
        "wasted_gpu_hours": sum(d["wasted_gpu_hours"] for d in docs),
        "seconds": seconds,
        "shares": {c: (s / total if total > 0 else 0.0) for c, s in seconds.items()},
        "goodput": seconds["productive"] / total if total > 0 else None,
        "cost": sum(costs) if costs else None,
        "wasted_cost": sum(wasted) if wasted else None,
        "summary": summary_line(seconds),
    }
