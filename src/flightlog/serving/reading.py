"""Reading serving evidence back, through a ``flightlog.Client`` (local store or a server).

* ``predictions(client, endpoint, since)``: the sampled prediction records of every replica of
  the endpoint, each with its label joined by request id (labels arrive later, from any replica);
* ``aggregates(client, endpoint, since)``: per version and minute, the aggregate events of every
  replica merged — counts summed, histograms and output distributions merged exactly;
* ``replicas(client, endpoint)``: the observed state, one row per replica run: serving, or gone
  (the run ended, crashed, or its heartbeat is older than three heartbeat intervals).
"""

from __future__ import annotations

import time
from typing import Any

from flightlog.registry.replicas import replica_state
from flightlog.serving.histogram import LatencyHistogram
from flightlog.serving.outputs import merge_output_dicts
from flightlog.serving.recorder import AGGREGATE, LABEL, PREDICTION

__all__ = ["predictions", "aggregates", "replicas", "replica_runs"]


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def replica_runs(client: Any, endpoint: str, project: str | None = None, env: str | None = None) -> list[Any]:
    """The replica runs of ``endpoint`` (of one environment with ``env``)."""
    runs = client.runs(project=project, filter=f"tags.`serving.endpoint` = {_quote(endpoint)}")
    return [r for r in runs if env is None or (r.tags or {}).get("serving.env") == env]


def predictions(
    client: Any,
    endpoint: str,
    since: str | float | None = None,
    *,
    project: str | None = None,
    limit: int | None = None,
    env: str | None = None,
) -> list[dict[str, Any]]:
    """Sampled prediction records, oldest first, with ``label`` (None until one arrived) joined."""
    rows: list[dict[str, Any]] = []
    labels: dict[str, tuple[float, Any]] = {}
    for run in replica_runs(client, endpoint, project, env):
        replica = run.tags.get("serving.replica")
        for event in client.logs(run, component=PREDICTION, since=since):
            f = event.fields or {}
            rows.append(
                {
                    "time": event.time,
                    "request_id": f.get("request_id"),
                    "version": f.get("version"),
                    "replica": replica,
                    "run_id": run.id,
                    "latency_ms": f.get("latency_ms"),
                    "status": f.get("status"),
                    "inputs": f.get("inputs") or {},
                    "input_hashes": f.get("input_hashes") or {},
                    "output": f.get("output"),
                    **({"output_hashes": f["output_hashes"]} if f.get("output_hashes") else {}),
                    "error": f.get("error"),
                    **({"label_field": f["label_field"]} if f.get("label_field") else {}),
                }
            )
        for event in client.logs(run, component=LABEL):  # a label may come long after `since`
            f = event.fields or {}
            rid = f.get("request_id")
            if isinstance(rid, str) and (rid not in labels or labels[rid][0] <= event.time):
                labels[rid] = (event.time, f.get("label"))
    rows.sort(key=lambda r: r["time"])
    for row in rows:
        found = labels.get(row["request_id"]) if row["request_id"] else None
        row["label"] = found[1] if found else None
        row["labeled_at"] = found[0] if found else None
    return rows[-limit:] if limit else rows


def aggregates(
    client: Any,
    endpoint: str,
    since: str | float | None = None,
    *,
    project: str | None = None,
    env: str | None = None,
) -> list[dict[str, Any]]:
    """Per (version, minute), every replica merged: requests, errors (5xx and exceptions, with
    ``error_types`` and their last ``error_messages``), ``client_errors`` (4xx), the two rates,
    p50/p95/p99 (ms), the merged latency histogram and output distribution, and how many
    replicas contributed."""
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for run in replica_runs(client, endpoint, project, env):
        for event in client.logs(run, component=AGGREGATE, since=since):
            f = event.fields or {}
            key = (str(f.get("version")), int(f.get("minute") or 0))
            row = merged.get(key)
            if row is None:
                row = merged[key] = {
                    "version": key[0],
                    "minute": key[1],
                    "requests": 0,
                    "errors": 0,
                    "client_errors": 0,
                    "error_types": {},
                    "error_messages": {},
                    "dropped": 0,
                    "_hist": LatencyHistogram(),
                    "outputs": None,
                    "replicas": set(),
                }
            row["requests"] += int(f.get("requests") or 0)
            row["errors"] += int(f.get("errors") or 0)
            row["client_errors"] += int(f.get("client_errors") or 0)
            for kind, n in dict(f.get("error_types") or {}).items():
                row["error_types"][str(kind)] = row["error_types"].get(str(kind), 0) + int(n or 0)
            row["error_messages"].update({str(k): str(v) for k, v in dict(f.get("error_messages") or {}).items()})
            row["dropped"] += int(f.get("dropped") or 0)
            row["_hist"].merge(LatencyHistogram.from_dict(f.get("latency") or {"base_ms": 0.001, "per_octave": 8}))
            row["outputs"] = merge_output_dicts(row["outputs"], f.get("outputs"))
            row["replicas"].add(run.id)
    out = []
    for key in sorted(merged):
        row = merged[key]
        hist: LatencyHistogram = row.pop("_hist")
        row.update({f"{k}_ms": v for k, v in hist.percentiles().items()})
        row["error_rate"] = row["errors"] / row["requests"] if row["requests"] else None
        row["client_error_rate"] = row["client_errors"] / row["requests"] if row["requests"] else None
        row["latency"] = hist.to_dict()
        row["replicas"] = len(row["replicas"])
        out.append(row)
    return out


def replicas(
    client: Any, endpoint: str, *, project: str | None = None, now: float | None = None, env: str | None = None
) -> list[dict[str, Any]]:
    """One row per replica run: state ``serving`` or ``gone``, with version, host:pid, start and heartbeat."""
    now = time.time() if now is None else now
    rows = []
    reconcile = getattr(client, "reconcile", None)
    if reconcile is not None:  # reads never write: settle dead owners first, so a SIGKILLed replica is crashed
        reconcile()
    for run in replica_runs(client, endpoint, project, env):
        beat = run.timeline.get("heartbeat") if run.timeline else None
        state = replica_state(run, now)
        rows.append(
            {
                "run_id": run.id,
                "endpoint": endpoint,
                "env": run.tags.get("serving.env"),
                "version": run.tags.get("serving.version"),
                "replica": run.tags.get("serving.replica"),
                "state": state,
                "status": run.status,
                "started": run.started,
                "heartbeat": beat,
                "ended": run.ended,
            }
        )
    return rows
