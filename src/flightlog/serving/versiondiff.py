"""What differs between the training runs of two model versions, for the way back.

Nothing here compares anything itself: the runs are compared by the ``compare_runs`` service
(``flightlog compare``'s document, through ``Client.compare``), their evaluations per cohort by
the data feature's ``compare_cohorts``. This module turns those answers into the rows of a
deployment diagnosis (``{"kind", "summary", "before", "after"}``), the data first, and adds to a
changed input what the runs' data profiles say of it (rows, columns) — the figure a person
looks for when a version got worse: "train.csv changed (rows 10,000 → 6,200)".
"""

from __future__ import annotations

import math
import os
from typing import Any

from flightlog.diagnose.differences import METRIC_CHANGE
from flightlog.errors import FlightlogError

__all__ = ["version_differences", "cohort_differences", "feature_differences"]

_SHOWN = 8  # rows per kind: a report is read, not searched


def _profiles(client: Any, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's data profiles by source file name (and by profile name); the training data's
    profile (named ``train``, or the run's only one) also under ``_TRAINING``, for an input
    whose name no profile carries."""
    out: dict[str, dict[str, Any]] = {}
    for e in client.evidence(run_id, "profile"):
        data = e.get("data") or {}
        if not isinstance(data, dict):
            continue
        out[str(e.get("name"))] = data
        source = data.get("source")
        if isinstance(source, str) and source:
            out[os.path.basename(source.rstrip("/"))] = data
    names = {str(e.get("name")) for e in client.evidence(run_id, "profile")}
    if "train" in out or len(names) == 1:
        out[_TRAINING] = out.get("train") or out[next(iter(names))]
    return out


_TRAINING = "\0training"
_SHIFT_STDS = 0.1  # a numeric column whose mean moved by this many standard deviations (and past noise) has shifted


def _profile_for(profiles: dict[str, Any], base: str, name: str, single_input: bool) -> dict[str, Any] | None:
    found = profiles.get(base) or profiles.get(name)
    if found is None and single_input:
        found = profiles.get(_TRAINING)  # one input, one training profile: they are the same data
    return found


def _shifts(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    """Columns whose distribution moved between two profiles, as figures: "amount mean 100 → 140"."""
    # the data feature (flightlog[data]): only for a diagnosis whose two runs logged profiles
    from flightlog.data.livesummary import column_summary, describe_change
    from flightlog.data.profiling import Profile  # as above

    if not before or not after:
        return []
    try:
        a, b = Profile.from_dict(before), Profile.from_dict(after)
    except (KeyError, TypeError, ValueError):
        return []
    out = []
    for name in a.columns:
        if name not in b.columns:
            continue
        sa, sb = column_summary(a.columns[name]), column_summary(b.columns[name])
        if not sa or not sb or sa["kind"] != sb["kind"]:
            continue
        na, nb = max(int(sa.get("count") or 0), 1), max(int(sb.get("count") or 0), 1)
        noise = 3.0 * math.sqrt(1 / na + 1 / nb)  # three standard errors of a difference of means, in stds
        if sa["kind"] == "numeric":
            std = sa.get("std") or 0.0
            if sa.get("mean") is None or sb.get("mean") is None or not std:
                continue
            if abs(sb["mean"] - sa["mean"]) / std < max(_SHIFT_STDS, noise):
                continue
        elif sa["kind"] == "categorical":
            ta = {str(t["value"]): t["share"] for t in sa.get("top") or []}
            tb = {str(t["value"]): t["share"] for t in sb.get("top") or []}
            if max((abs(ta.get(v, 0.0) - tb.get(v, 0.0)) for v in set(ta) | set(tb)), default=0.0) < max(
                0.1,
                noise / 2,  # a share's standard error is at most half a std's
            ):
                continue
        else:
            continue
        text = describe_change(sa, sb)
        if text:
            out.append(f"{name} {text}")
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
    inputs = cmp.get("inputs") or []
    one_after = sum(1 for i in inputs if i.get("status") != "removed") == 1  # the later run read one input
    one_before = sum(1 for i in inputs if i.get("status") != "added") == 1
    for i in inputs:
        if i.get("status") == "identical":
            continue
        name = str(i.get("name"))
        base = os.path.basename(name.rstrip("/"))
        profile_after = _profile_for(profiles_after, base, name, one_after)
        profile_before = _profile_for(profiles_before, base, name, one_before)
        after = {"digest": (i.get("digest") or {}).get("run"), **_shape(profile_after)}
        before = {"digest": (i.get("digest") or {}).get("baseline"), **_shape(profile_before)}
        for side, key in ((after, "run"), (before, "baseline")):
            side["size"] = (i.get("total_size") or {}).get(key)
            side["files"] = (i.get("file_count") or {}).get(key)
        details = _shape_details(before, after, _shifts(profile_before, profile_after))
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
                "profiles": (profile_before, profile_after),
            }
        )
    return _paired(rows)


def _shape_details(before: dict[str, Any], after: dict[str, Any], shifts: list[str] | None = None) -> list[str]:
    """What differs between two data snapshots: rows, columns, distributions that moved (from the
    runs' profiles), else size."""
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
    details += (shifts or [])[:3]
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
    details = _shape_details(
        before, after, _shifts(gone[0].get("profiles", (None, None))[0], new[0].get("profiles", (None, None))[1])
    )
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


def feature_differences(
    client: Any, drift: dict[str, Any], before: dict[str, Any], after: dict[str, Any]
) -> list[dict[str, Any]]:
    """For each feature that drifted live (a diagnosis's ``drift`` change), its distribution in
    the training data of both versions next to the live one: whether the training data moved
    too, in figures, rather than a file's bytes."""
    # the data feature (flightlog[data]): only for a diagnosis that found drift
    from flightlog.data.livesummary import describe_change, profile_column
    from flightlog.serving.livechanges import profile_of  # as above

    try:
        profiles = {side: profile_of(client, v["run_id"]) for side, v in (("before", before), ("after", after))}
    except FlightlogError:
        return []
    rows: list[dict[str, Any]] = []
    for feature in (drift.get("evidence") or {}).get("features") or []:
        name = str(feature.get("feature"))
        if feature.get("test") == "type" or any(r["name"] == name for r in rows):
            continue
        b, a = profile_column(profiles["before"], name), profile_column(profiles["after"], name)
        live = feature.get("live")
        trained = describe_change(b, a)
        moved = describe_change(a, live)
        text = f"feature {name} drifted live" + (
            f" ({moved} from v{after['version']}'s training data)" if moved else ""
        )
        if b is not None and a is not None:
            text += f"; in training, v{before['version']} → v{after['version']}: {trained or 'no shift'}"
        rows.append(
            {
                "kind": "data",
                "summary": text,
                "before": b,
                "after": a,
                "live": live,
                "name": name,
                "status": "drifted",
            }
        )
    return rows
