"""``flightlog diagnose --deployment ENDPOINT``: the way back from production to training.

One report answers three questions with their evidence:

1. **what changed in production, and when**: rollouts (the deployment's desired history, and the
   versions the replicas were observed serving), a p99 latency step and an error-rate step on
   the merged per-minute aggregates (:mod:`.steps`), a drift onset and a cohort regression from
   the sampled records (:mod:`.livechanges`);
2. **which version served before and after the main change**: the rollout that came last
   before the first symptom (or, with no symptom, the latest rollout; with no rollout, the
   versions serving on either side of the symptom);
3. **what differs between those versions' training runs**: the ``compare_runs`` service's
   document and the runs' cohort evaluations, reshaped by :mod:`.versiondiff`.

The report (docs/models.md, *The way back*)::

    {"endpoint", "env", "since", "headline",
     "changes": [{"time", "kind", "summary", "evidence"}],
     "before": {"version", "run_id", "model", ...} | null, "after": {...} | null,
     "differences": [{"kind", "summary", "before", "after"}], "notes": [...], "text"}

It is the serving feature's service ``diagnose_deployment`` on the feature table: the diagnose
command and the alert kinds (below serving in the layers) ask for it by name.
"""

from __future__ import annotations

import time
from typing import Any

from flightlog.errors import InvalidInput, NotFound
from flightlog.serving.livechanges import cohort_change, drift_change
from flightlog.serving.reading import aggregates, predictions, replica_runs
from flightlog.serving.rollouts import first_traffic, rollouts
from flightlog.serving.steps import Minute, Step, error_step, latency_step, merge_minutes
from flightlog.serving.versiondiff import feature_differences, version_differences
from flightlog.serving.versioninfo import registry_of, version_info
from flightlog.serving.versions import Change, VersionStats, compare_versions, version_stats
from flightlog.timefmt import iso, parse_time

__all__ = ["diagnose_deployment", "deployment_brief", "DEFAULT_SINCE"]

DEFAULT_SINCE = "24h"
_LEAD_S = 120.0  # a rollout up to two minutes after a symptom's first minute still explains it (minute buckets)


def _hhmm(t: float | None) -> str:
    return (iso(t) or "?")[11:16]


def _scope(
    client: Any, registry: Any, endpoint: str, env: str | None, project: str | None
) -> tuple[str, Any, list[Any]]:
    """(env, the deployment or None, the replica runs of that env); NotFound for an unknown
    endpoint or environment, naming the known ones."""
    deployments = list(registry.deployments(project)) if registry is not None else []
    mine = [d for d in deployments if d.endpoint == endpoint]
    runs = replica_runs(client, endpoint, project)
    envs = sorted({d.env for d in mine} | {str((r.tags or {}).get("serving.env")) for r in runs})
    if not envs:
        served = client.runs(project=project, filter="tags.`serving.endpoint` is not null")
        known = sorted(
            {d.endpoint for d in deployments}
            | {str(e) for r in served if (e := (r.tags or {}).get("serving.endpoint"))}
        )
        raise NotFound(
            f"no deployment or serving replica of endpoint {endpoint!r}; "
            + (f"known endpoints: {', '.join(known)}" if known else "no endpoint is deployed yet (flightlog deploy)"),
            details={"endpoint": endpoint, "endpoints": known},
        )
    if env is None:
        if len(envs) > 1:
            raise InvalidInput(
                f"endpoint {endpoint!r} serves in several environments ({', '.join(envs)}): name one with --env",
                details={"endpoint": endpoint, "envs": envs},
            )
        env = envs[0]
    elif env not in envs:
        raise NotFound(
            f"endpoint {endpoint!r} has no deployment or replica in environment {env!r}; its environments: {', '.join(envs)}",
            details={"endpoint": endpoint, "env": env, "envs": envs},
        )
    deployment = next((d for d in mine if d.env == env), None)
    return env, deployment, [r for r in runs if (r.tags or {}).get("serving.env") == env]


def _rollout_change(r: dict[str, Any]) -> dict[str, Any]:
    """A rollout (``rollouts.rollouts``) as a change row of the report."""
    model, frm, to = r["model"], r["from_version"], r["to_version"]
    desired, observed = r["deployed_at"], r["first_traffic_at"]
    word = "rolled back" if r["kind"] == "rollback" else "rolled out"
    name = f"{model} " if model else ""
    summary = f"{name}v{to} {word} at {_hhmm(r['time'])}" + (f", replacing v{frm}" if frm else "")
    if desired is not None and observed is not None:
        summary += f" (deployed {_hhmm(desired)}, first traffic {_hhmm(observed)})"
    elif desired is None:
        summary += " (observed in the replicas' traffic; no deploy recorded)"
    else:
        summary += " (deployed; no traffic from it yet)"
    return {
        "time": r["time"],
        "kind": r["kind"],
        "summary": summary,
        "evidence": {
            "model": model,
            "from_version": frm,
            "to_version": to,
            "desired_at": iso(desired),
            "first_traffic_at": iso(observed),
            "actor": r["actor"],
            "ref": r["ref"],
        },
    }


def _step_change(step: Step) -> dict[str, Any]:
    if step.kind == "latency":
        ratio = step.ratio or 0.0
        text = f"p99 latency {step.before:.1f} → {step.after:.1f} ms (×{ratio:.1f}) from {_hhmm(step.time)}"
        short = f"p99 latency {ratio:.1f}x"
    else:
        text = f"error rate {step.before:.1%} → {step.after:.1%} from {_hhmm(step.time)}"
        short = f"error rate {step.before:.1%} → {step.after:.1%}"
    return {
        "time": step.time,
        "kind": "latency_step" if step.kind == "latency" else "error_rate_step",
        "summary": text + f" ({step.minutes_before} min before, {step.minutes_after} min after)",
        "evidence": step.evidence,
        "short": short,
    }


def _comparison(rollout: dict[str, Any], stats: dict[str, VersionStats]) -> dict[str, Any] | None:
    """The two versions of a rollout compared on their whole windows (``versions.py``)."""
    ev = rollout["evidence"]
    before, after = stats.get(str(ev["from_version"])), stats.get(str(ev["to_version"]))
    if before is None or after is None:
        return None
    changes = compare_versions(before, after)
    return {
        "from_version": before.version,
        "to_version": after.version,
        "rollout_at": iso(rollout["time"]),
        "before": before.to_dict(),
        "after": after.to_dict(),
        "changes": [c.to_dict() for c in changes],
        "_findings": [c for c in changes if c.finding],
    }


def _version_change(comparison: dict[str, Any], when: float) -> dict[str, Any] | None:
    """The findings of a comparison as one change row: the largest first, each with its size."""
    findings: list[Change] = comparison["_findings"]
    if not findings:
        return None
    a, b = comparison["from_version"], comparison["to_version"]
    n = f"{findings[0].n_after:,} requests against {findings[0].n_before:,} on v{a}"
    said = [c.text() for c in findings]
    return {
        "time": when,
        "kind": "version_change",
        "summary": f"version {b} against version {a}: {'; '.join(said)} ({n})",
        "evidence": {k: v for k, v in comparison.items() if not k.startswith("_")},
        "short": " and ".join(said[:3]) + f" on v{b} ({n})",
        "size": findings[0].size,
    }


def _main(changes: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the rollout behind the symptoms, the symptoms)."""
    rollouts = [c for c in changes if c["kind"] in ("rollout", "rollback")]
    symptoms = [c for c in changes if c["kind"] not in ("rollout", "rollback")]
    if not rollouts:
        return None, symptoms
    if symptoms:
        first = min(s["time"] for s in symptoms)
        preceding = [r for r in rollouts if r["time"] <= first + _LEAD_S]
        if preceding:
            return preceding[-1], symptoms
    return rollouts[-1], symptoms


def diagnose_deployment(
    client: Any,
    endpoint: str,
    *,
    env: str | None = None,
    since: str | float | None = DEFAULT_SINCE,
    project: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The way back for ``endpoint`` in ``env`` over the time since ``since`` (``24h``, an ISO time)."""
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise InvalidInput("name the endpoint to diagnose, such as --deployment fraud-api")
    now = time.time() if now is None else now
    start = parse_time(since, now=now, what="since") if isinstance(since, str) else float(since or 0.0)
    registry = registry_of(client)
    env, deployment, runs = _scope(client, registry, endpoint, env, project)
    history: list[dict[str, Any]] = []
    if deployment is not None:
        history = list(registry.deployment_report(endpoint, env, deployment.project)["history"])
    notes: list[str] = []
    per_version = aggregates(client, endpoint, start, project=project, env=env)
    minutes = merge_minutes(per_version)
    changes = [_rollout_change(r) for r in rollouts(history, first_traffic(per_version), since=start)]
    stats = {s.version: s for s in version_stats(per_version)}
    comparisons: list[dict[str, Any]] = []
    for rollout in list(changes):  # every rollout: its two versions over the windows each served
        comparison = _comparison(rollout, stats)
        if comparison is not None:
            comparisons.append(comparison)
            found = _version_change(comparison, rollout["time"])
            if found is not None:
                changes.append(found)
    for step in (latency_step(minutes), error_step(minutes)):
        if step is not None:
            changes.append(_step_change(step))
    rows = predictions(client, endpoint, start, project=project, env=env)
    model = (
        deployment.name
        if deployment is not None
        else next((str((r.tags or {}).get("serving.model")) for r in runs if (r.tags or {}).get("serving.model")), None)
    )
    main, symptoms = _main(changes)
    if main is not None:
        before_v, after_v = main["evidence"]["from_version"], main["evidence"]["to_version"]
    else:
        serving_v = [m.main_version for m in minutes if m.main_version]
        before_v = serving_v[0] if serving_v else None
        after_v = serving_v[-1] if serving_v else (str(deployment.version) if deployment is not None else None)
        if before_v == after_v:
            before_v = None
    before = version_info(registry, model, before_v, runs, project)
    after = version_info(registry, model, after_v, runs, project)
    if main is None and before is not None and after is not None:  # no rollout in the window: the two ends
        comparison = _comparison(
            {"time": minutes[-1].start, "evidence": {"from_version": before_v, "to_version": after_v}}, stats
        )
        if comparison is not None:
            comparisons.append(comparison)
            found = _version_change(comparison, stats[str(after_v)].first_minute * 60.0)  # type: ignore[operator]
            if found is not None:
                changes.append(found)
        main, symptoms = _main(changes)
    if after is not None and rows:
        for found in (
            cohort_change(
                client,
                rows,
                (after["version"], after["run_id"]),
                None if before is None else (before["version"], before["run_id"]),
                notes,
            ),
            drift_change(client, rows, after["version"], after["run_id"], notes),
        ):
            if found is not None:
                changes.append(found)
        main, symptoms = _main(changes)
    changes.sort(key=lambda c: c["time"])
    differences: list[dict[str, Any]] = []
    if before and after and before.get("run_id") and after.get("run_id") and before["run_id"] != after["run_id"]:
        differences, _ = version_differences(client, after["run_id"], before["run_id"])
        drifted = next((c for c in changes if c["kind"] == "drift"), None)
        if drifted is not None:  # the features that moved live, with both versions' training data beside them
            differences = feature_differences(client, drifted, before, after) + differences
    elif before and after and not (before.get("run_id") and after.get("run_id")):
        notes.append(
            "the training runs of the two versions are not known (register them with flightlog models register)"
        )
    report: dict[str, Any] = {
        "endpoint": endpoint,
        "env": env,
        "project": deployment.project if deployment is not None else (runs[0].project if runs else project),
        "since": iso(start),
        "until": iso(now),
        "desired": deployment.to_dict() if deployment is not None else None,
        "traffic": {
            "minutes": len(minutes),
            "requests": sum(m.requests for m in minutes),
            "errors": sum(m.errors for m in minutes),
            "client_errors": sum(v.client_errors for v in stats.values()),
            "sampled": len(rows),
            "labelled": sum(1 for r in rows if r.get("label") is not None),
            "replicas": len(runs),
        },
        "headline": _headline(endpoint, env, main, symptoms, after, differences, minutes, model),
        "changes": [_public(c) for c in changes],
        "versions": [_times(v.to_dict()) for v in stats.values()],
        "comparisons": [_times_cmp(c) for c in comparisons],
        "before": before,
        "after": after,
        "differences": [_public(d) for d in differences],
        "notes": notes,
    }
    report["text"] = "\n".join(text_lines(report))
    return report


def _times(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "first": iso(row.get("first")), "last": iso(row.get("last"))}


def _times_cmp(c: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in c.items() if not k.startswith("_")}
    out["before"], out["after"] = _times(c["before"]), _times(c["after"])
    return out


def _public(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k not in ("short", "features", "details", "size", "profiles")}
    if isinstance(out.get("evidence"), dict) and "before" in out["evidence"] and "changes" in out["evidence"]:
        out["evidence"] = _times_cmp(out["evidence"])
    if isinstance(out.get("time"), (int, float)):
        out["time"] = iso(out["time"])
    return out


def _said(symptoms: list[dict[str, Any]], main: dict[str, Any] | None) -> list[str]:
    """The symptoms a headline names: the main rollout's version comparison first (its largest
    significant change leads), then the others in time order; a step over time that the
    comparison already says (latency, the 5xx rate) is not said twice."""
    compared = [s for s in symptoms if s["kind"] == "version_change"]
    if main is not None:
        ev = main["evidence"]
        compared = [
            s
            for s in compared
            if (s["evidence"]["from_version"], s["evidence"]["to_version"]) == (ev["from_version"], ev["to_version"])
        ]
    lead = max(compared, key=lambda s: s["size"]) if compared else None
    found = set() if lead is None else {c["metric"] for c in lead["evidence"]["changes"] if c["finding"]}
    skip = {"version_change"}
    if found & {"p50_ms", "p95_ms", "p99_ms"}:
        skip.add("latency_step")
    if "error_rate" in found:
        skip.add("error_rate_step")
    rest = [s for s in sorted(symptoms, key=lambda s: s["time"]) if s["kind"] not in skip]
    said = ([lead] if lead is not None else []) + rest
    return [t for t in (s.get("short") or s["summary"] for s in said) if t][:3]


def _headline(
    endpoint: str,
    env: str,
    main: dict[str, Any] | None,
    symptoms: list[dict[str, Any]],
    after: dict[str, Any] | None,
    differences: list[dict[str, Any]],
    minutes: list[Minute],
    model: str | None,
) -> str:
    where = f"{endpoint} ({env})"
    if not minutes:
        deployed = ""
        if main is not None:
            ev = main["evidence"]
            deployed = (
                f" ({ev.get('model') or model or 'the model'} v{ev['to_version']} deployed at {_hhmm(main['time'])})"
            )
        return f"{where}: no traffic recorded in this window, so nothing to diagnose yet{deployed}"
    said = _said(symptoms, main)
    if main is not None:
        ev = main["evidence"]
        name = f"{ev.get('model') or model or 'the model'} v{ev['to_version']}"
        verb = "was rolled back" if main["kind"] == "rollback" else "rolled out"
        text = (
            (f"{' and '.join(said)} since {name} {verb} at {_hhmm(main['time'])}")
            if said
            else f"{name} {verb} at {_hhmm(main['time'])}"
        )
    elif said:
        v = after["version"] if after else "?"
        text = f"{' and '.join(said)} (version {v} serving throughout; no rollout in this window)"
    else:
        v = after["version"] if after else "?"
        return f"{where}: no change found in this window; version {v} served throughout"
    data = [d for d in differences if d["kind"] == "data"]
    other = [d for d in differences if d["kind"] in ("params", "code", "packages")]
    if main is not None and after is not None:
        if data:
            text += f"; v{after['version']}'s {data[0]['summary']}"
        elif other:
            text += f"; v{after['version']}'s training run differs: {other[0]['summary']}"
    return text


def text_lines(report: dict[str, Any]) -> list[str]:
    """The report as plain lines (its ``text``; the terminal gets the rich rendering)."""
    lines = [report["headline"], "", f"what changed in {report['endpoint']} ({report['env']}) since {report['since']}:"]
    lines += [f"  {c['time'][11:19]}Z  {c['kind']:<16} {c['summary']}" for c in report["changes"]] or ["  nothing"]
    for side in ("before", "after"):
        v = report[side]
        if v is not None:
            lines.append(
                f"{side}: version {v['version']}" + (f" (training run {v['run_id'][:12]})" if v.get("run_id") else "")
            )
    if report["differences"]:
        lines.append("what differs between their training runs:")
        lines += [f"  {d['kind']:<15} {d['summary']}" for d in report["differences"]]
    lines += [f"note: {n}" for n in report["notes"]]
    return lines


def deployment_brief(client: Any, endpoint: str, env: str | None = None, project: str | None = None) -> dict[str, Any]:
    """The short form an alert's payload carries: the headline and the versions before and after."""
    report = diagnose_deployment(client, endpoint, env=env, project=project)

    def short(v: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if v is None else {"version": v["version"], "run_id": v.get("run_id")}

    return {
        "headline": report["headline"],
        "before": short(report["before"]),
        "after": short(report["after"]),
        "command": f"flightlog diagnose --deployment {endpoint} --env {report['env']}",
    }
