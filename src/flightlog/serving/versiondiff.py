"""What differs between the training runs of two model versions, for the way back.

Nothing here compares anything itself: the runs are compared by the ``compare_runs`` service
(``flightlog compare``'s document, through ``Client.compare``), their evaluations per cohort by
the data feature's ``compare_cohorts``. This module turns those answers into the rows of a
deployment diagnosis (``{"kind", "summary", "before", "after"}``), the data first, and adds to a
changed input what the runs' data profiles say of it (rows, columns) — the figure a person
looks for when a version got worse: "train.csv changed (rows 10,000 → 6,200)".
"""

from __future__ import annotations

import os
from typing import Any

from flightlog.diagnose.differences import METRIC_CHANGE
from flightlog.errors import FlightlogError

__all__ = ["version_differences", "cohort_differences"]

_SHOWN = 8  # rows per kind: a report is read, not searched


def _profiles(client: Any, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's data profiles by source file name (and by profile name)."""
    out: dict[str, dict[str, Any]] = {}
    for e in client.evidence(run_id, "profile"):
        data = e.get("data") or {}
        if not isinstance(data, dict):
            continue
        out[str(e.get("name"))] = data
        source = data.get("source")
        if isinstance(source, str) and source:
            out[os.path.basename(source.rstrip("/"))] = data
    return out


def _shape(profile: dict[str, Any] | None) -> dict[str, Any]:
    if not profile:
        return {}
    columns = profile.get("columns") or []
    return {
        "rows": profile.get("row_count"),
        "columns": {str(c.get("name")): str(c.get("type")) for c in columns if isinstance(c, dict)},
    }


def _n(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) else str(x)


def _data_rows(
    cmp: dict[str, Any], profiles_after: dict[str, Any], profiles_before: dict[str, Any]
) -> list[dict[str, Any]]:
    rows = []
    for i in cmp.get("inputs") or []:
        if i.get("status") == "identical":
            continue
        name = str(i.get("name"))
        base = os.path.basename(name.rstrip("/"))
        after = {
            "digest": (i.get("digest") or {}).get("run"),
            **_shape(profiles_after.get(base) or profiles_after.get(name)),
        }
        before = {
            "digest": (i.get("digest") or {}).get("baseline"),
            **_shape(profiles_before.get(base) or profiles_before.get(name)),
        }
        for side, key in ((after, "run"), (before, "baseline")):
            side["size"] = (i.get("total_size") or {}).get(key)
            side["files"] = (i.get("file_count") or {}).get(key)
        details = _shape_details(before, after)
        if i.get("status") == "changed":
            text = f"training data {base} changed" + (f" ({', '.join(details)})" if details else " (digest)")
        else:
            text = f"training data {base} {'only in the later version' if i.get('status') == 'added' else 'no longer used'}"
        rows.append(
            {
                "kind": "data",
                "summary": text,
                "before": before,
                "after": after,
                "name": base,
                "details": details,
                "status": i.get("status"),
            }
        )
    return _paired(rows)


def _shape_details(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two data snapshots' shapes: rows, columns, else size."""
    details = []
    if before.get("rows") is not None and after.get("rows") is not None and before["rows"] != after["rows"]:
        details.append(f"rows {_n(before['rows'])} → {_n(after['rows'])}")
    cb, ca = before.get("columns"), after.get("columns")
    if cb is not None and ca is not None and cb != ca:
        added = sorted(ca.keys() - cb.keys())
        removed = sorted(cb.keys() - ca.keys())
        retyped = sorted(k for k in ca.keys() & cb.keys() if ca[k] != cb[k])
        details += [f"column {c} added" for c in added[:3]] + [f"column {c} removed" for c in removed[:3]]
        details += [f"column {c} {cb[c]} → {ca[c]}" for c in retyped[:3]]
    if not details and before.get("size") != after.get("size") and None not in (before.get("size"), after.get("size")):
        details.append(f"size {_n(before['size'])} → {_n(after['size'])} bytes")
    return details


def _paired(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One input no longer used and one new input: a snapshot replaced by another (the usual way a
    dataset changes between two trainings), said as one difference with the two shapes compared."""
    gone = [r for r in rows if r["status"] == "removed"]
    new = [r for r in rows if r["status"] == "added"]
    if len(gone) != 1 or len(new) != 1:
        return rows
    before, after = gone[0]["before"], new[0]["after"]
    details = _shape_details(before, after)
    replaced = {
        "kind": "data",
        "summary": f"training data {gone[0]['name']} replaced by {new[0]['name']}"
        + (f" ({', '.join(details)})" if details else ""),
        "before": {**before, "name": gone[0]["name"]},
        "after": {**after, "name": new[0]["name"]},
        "name": new[0]["name"],
        "details": details,
        "status": "replaced",
    }
    return [replaced] + [r for r in rows if r is not gone[0] and r is not new[0]]


def _param_rows(cmp: dict[str, Any]) -> list[dict[str, Any]]:
    p = cmp.get("params") or {}
    rows = [
        {
            "kind": "params",
            "summary": f"param {r['name']}: {r['baseline']!r} → {r['run']!r}",
            "before": r["baseline"],
            "after": r["run"],
            "name": r["name"],
        }
        for r in p.get("changed", [])
    ]
    rows += [
        {"kind": "params", "summary": f"param {k} added: {v!r}", "before": None, "after": v, "name": k}
        for k, v in (p.get("added") or {}).items()
    ]
    rows += [
        {"kind": "params", "summary": f"param {k} removed (was {v!r})", "before": v, "after": None, "name": k}
        for k, v in (p.get("removed") or {}).items()
    ]
    return [r for r in rows if not str(r["name"]).startswith("serving.")]


def _code_rows(cmp: dict[str, Any]) -> list[dict[str, Any]]:
    code = cmp.get("code") or {}
    if not code.get("changed"):
        return []
    before, after = code.get("baseline") or {}, code.get("run") or {}
    text = f"code {(before.get('commit') or '?')[:10]} → {(after.get('commit') or '?')[:10]}" + (
        " (uncommitted changes)" if after.get("dirty") else ""
    )
    return [{"kind": "code", "summary": text, "before": before, "after": after}]


def _package_rows(cmp: dict[str, Any]) -> list[dict[str, Any]]:
    k = cmp.get("packages") or {}
    rows = [
        {
            "kind": "packages",
            "summary": f"package {r['name']} {r['baseline']} → {r['run']}",
            "before": r["baseline"],
            "after": r["run"],
            "name": r["name"],
        }
        for r in k.get("changed", [])
    ]
    rows += [
        {
            "kind": "packages",
            "summary": f"package {r['name']} {r['version']} added",
            "before": None,
            "after": r["version"],
            "name": r["name"],
        }
        for r in k.get("added", [])
    ]
    rows += [
        {
            "kind": "packages",
            "summary": f"package {r['name']} {r['version']} removed",
            "before": r["version"],
            "after": None,
            "name": r["name"],
        }
        for r in k.get("removed", [])
    ]
    return rows


def _metric_rows(cmp: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for m in cmp.get("metrics") or []:
        if m.get("relative") is None or abs(m["relative"]) < METRIC_CHANGE:
            continue
        rows.append(
            {
                "kind": "metrics",
                "summary": f"metric {m['name']}: {m['baseline']:.4g} → {m['run']:.4g}",
                "before": m["baseline"],
                "after": m["run"],
                "name": m["name"],
            }
        )
    return rows


def cohort_differences(client: Any, after_run: str, before_run: str) -> list[dict[str, Any]]:
    """The cohorts whose training evaluation got worse from one version's run to the other's."""
    # the data feature (flightlog[data]): the cohort code, only for a diagnosis that has two runs
    from flightlog.data.cohorts import compare_cohorts

    evals = []
    for run in (after_run, before_run):
        items = [e for e in client.evidence(run, "eval") if isinstance(e.get("data"), dict)]
        evals.append(items[-1]["data"] if items else None)
    if evals[0] is None or evals[1] is None:
        return []
    try:
        out = compare_cohorts(evals[0], evals[1])
    except FlightlogError:
        return []
    return [
        {
            "kind": "cohort_metrics",
            "summary": f"training eval cohort {r['cohort']}={r['value']} {r['metric']}: {r['baseline']:.3g} → {r['current']:.3g}",
            "before": r["baseline"],
            "after": r["current"],
            "name": f"{r['cohort']}={r['value']}",
        }
        for r in out["regressions"]
    ]


def version_differences(client: Any, after_run: str, before_run: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(rows, the comparison document) from the before version's run to the after version's."""
    cmp: dict[str, Any] = client.compare(after_run, before_run)
    rows = _data_rows(cmp, _profiles(client, after_run), _profiles(client, before_run))
    for part in (_param_rows(cmp), _code_rows(cmp), _package_rows(cmp), _metric_rows(cmp)):
        rows += part[:_SHOWN]
    rows += cohort_differences(client, after_run, before_run)[:_SHOWN]
    return rows, cmp
