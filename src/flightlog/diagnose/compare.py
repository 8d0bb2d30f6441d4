"""What changed between a run and a baseline: the command line, params, code revision, packages,
environment, input manifests, stage durations, resource peaks and final metrics.

:func:`compare_runs` gives the JSON document of ``flightlog compare`` (and the ``"baseline"``
part of a diagnosis; :mod:`.selection` chooses the baseline when the user names none).
"""

from __future__ import annotations

import math
import re
import shlex
from typing import TYPE_CHECKING, Any

from flightlog.diagnose.differences import count_differences
from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.selection import baseline_for, choice_fields
from flightlog.diagnose.window import cpu_wait_percent_between, is_runner_stage, training_window
from flightlog.errors import InvalidInput, NotFound
from flightlog.models import MetricSummary, RunInfo
from flightlog.statuses import ACTIVE_STATUSES

if TYPE_CHECKING:
    from flightlog.diagnose.reader import Reader

__all__ = ["compare_runs", "compare_evidence", "package_changes", "command_line"]


def compare_runs(client: Reader, run: str | RunInfo, baseline: str | RunInfo | None = None) -> dict[str, Any]:
    """``flightlog compare RUN [BASELINE]``: without a baseline, the one
    :func:`~.selection.baseline_for` chooses — the same as a diagnosis's — with the choice's
    reason in the document; :class:`~flightlog.errors.NotFound` (saying why) when none qualifies."""
    info = client.run(run if isinstance(run, str) else run.id)
    a = RunEvidence(client, info)
    if baseline is None:
        choice = baseline_for(client, info)
        if choice.run is None:
            raise NotFound(
                f"no baseline for run {info.id[:12]}: {choice.reason}. Name one: flightlog compare RUN BASELINE",
                details={"run": info.id, "baseline_choice": choice.to_dict()},
            )
        doc = compare_evidence(a, RunEvidence(client, choice.run), chosen="automatic")
        doc.update(choice_fields(choice))
        return doc
    b = RunEvidence(client, client.run(baseline if isinstance(baseline, str) else baseline.id))
    if b.id == info.id:
        raise InvalidInput("a run cannot be compared with itself: name another run as the baseline")
    return compare_evidence(a, b)


def compare_evidence(a: RunEvidence, b: RunEvidence, *, chosen: str = "given") -> dict[str, Any]:
    ca, cb = a.context, b.context
    doc: dict[str, Any] = {
        "run": a.id,
        "baseline": b.id,
        "chosen": chosen,
        "status": {"run": a.info.status, "baseline": b.info.status},
        "duration": _change(a.info.duration, b.info.duration),
        "command": _command(a, b),
        "params": _dict_diff(a.info.params, b.info.params),
        "code": _code(ca.get("git"), cb.get("git")),
        "packages": package_changes(ca.get("packages") or {}, cb.get("packages") or {}),
        "python": {
            "run": ca.get("python"),
            "baseline": cb.get("python"),
            "changed": ca.get("python") != cb.get("python"),
        },
        "environment": _environment(ca, cb),
        "inputs": _inputs(a, b),
        "stages": _stages(a, b),
        "resources": _resources(a, b),
        "metrics": _metrics(a, b),
    }
    # the headline of a comparison: metrics that were finite in the baseline and are not now
    doc["nonfinite_metrics"] = [m["name"] for m in doc["metrics"] if m["became_nonfinite"]]
    doc["differences"] = count_differences(doc)
    return doc


def _command(a: RunEvidence, b: RunEvidence) -> dict[str, Any]:
    """The command lines, as stored (the workload's under ``flightlog run``, else the SDK's
    argv). Changed means the program's own arguments changed: the SDK's argv starts at the
    script, the runner's at the interpreter, and ``python train.py`` under the runner is
    ``train.py`` to the SDK."""
    ra, rb = command_line(a), command_line(b)
    changed = None if ra is None or rb is None else _program(ra) != _program(rb)
    return {"run": ra, "baseline": rb, "changed": changed}


_INTERPRETER = re.compile(r"^(?:.*/)?python[\d.]*$")


def _program(line: str) -> list[str]:
    """A command line without its Python interpreter and the interpreter's own options."""
    try:
        args = shlex.split(line)
    except ValueError:
        return [line]
    if args and _INTERPRETER.match(args[0]):
        args = args[1:]
        while args and args[0].startswith("-") and args[0] not in ("-m", "-c"):
            args = args[1:]
    return args


def command_line(ev: RunEvidence) -> str | None:
    """The run's command line as one shell-quoted string, secrets redacted (they are redacted
    when stored; this holds for runs recorded before that, too)."""
    from flightlog.redaction.engine import Redactor

    argv = ev.runner_config.get("command") or ev.context.get("command")
    if isinstance(argv, str):
        argv = [argv]
    if not isinstance(argv, list) or not argv:
        return None
    return Redactor(env={}).redact(shlex.join(str(x) for x in argv))


def _change(run: float | None, base: float | None) -> dict[str, Any]:
    delta = None if run is None or base is None else run - base
    ratio = None if run is None or not base else run / base
    return {"run": run, "baseline": base, "delta": delta, "ratio": ratio}


def _dict_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    added = {k: a[k] for k in sorted(a.keys() - b.keys())}
    removed = {k: b[k] for k in sorted(b.keys() - a.keys())}
    changed = [{"name": k, "run": a[k], "baseline": b[k]} for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]
    return {"added": added, "removed": removed, "changed": changed}


def _code(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    def short(g: dict[str, Any] | None) -> dict[str, Any] | None:
        if not g:
            return None
        return {
            "commit": g.get("commit"),
            "branch": g.get("branch"),
            "dirty": bool(g.get("dirty")),
            "diff_sha256": g.get("diff_sha256"),
        }

    sa, sb = short(a), short(b)
    changed = (
        None if sa is None or sb is None else (sa["commit"] != sb["commit"] or sa["diff_sha256"] != sb["diff_sha256"])
    )
    return {"run": sa, "baseline": sb, "changed": changed}


def package_changes(a: dict[str, str], b: dict[str, str]) -> dict[str, Any]:
    """Packages added, removed and changed from ``b`` (the baseline's) to ``a`` (names normalized)."""
    norm_a = {k.lower().replace("_", "-"): v for k, v in a.items()}
    norm_b = {k.lower().replace("_", "-"): v for k, v in b.items()}
    return {
        "added": [{"name": k, "version": norm_a[k]} for k in sorted(norm_a.keys() - norm_b.keys())],
        "removed": [{"name": k, "version": norm_b[k]} for k in sorted(norm_b.keys() - norm_a.keys())],
        "changed": [
            {"name": k, "run": norm_a[k], "baseline": norm_b[k]}
            for k in sorted(norm_a.keys() & norm_b.keys())
            if norm_a[k] != norm_b[k]
        ],
    }


def _environment(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    def env(ctx: dict[str, Any]) -> dict[str, Any]:  # flightlog's own plumbing is not the workload's environment
        return {k: v for k, v in (ctx.get("env") or {}).items() if not k.startswith("FLIGHTLOG_")}

    out = _dict_diff(env(a), env(b))
    for key in ("host", "cwd", "platform", "container", "cpu_count"):
        if a.get(key) != b.get(key):
            out["changed"].append({"name": key, "run": a.get(key), "baseline": b.get(key)})
    return out


def _inputs(a: RunEvidence, b: RunEvidence) -> list[dict[str, Any]]:
    ma = {e["name"]: e["data"] for e in a.evidence_of("manifest") if isinstance(e.get("data"), dict)}
    mb = {e["name"]: e["data"] for e in b.evidence_of("manifest") if isinstance(e.get("data"), dict)}
    logged_at = {e["name"]: e.get("time") for e in b.evidence_of("manifest")}
    out = []
    for name in sorted(ma.keys() | mb.keys()):
        x, y = ma.get(name), mb.get(name)
        if x is None or y is None:
            one: dict[str, Any] = {
                "name": name,
                "status": "added" if y is None else "removed",
                "file_count": _change((x or {}).get("file_count"), (y or {}).get("file_count")),
                "total_size": _change((x or {}).get("total_size"), (y or {}).get("total_size")),
            }
            if x is None:
                one["reached"] = _reached(a, b, logged_at.get(name))
            out.append(one)
            continue
        row: dict[str, Any] = {
            "name": name,
            "status": "identical" if x.get("digest") == y.get("digest") else "changed",
            "digest": {"run": x.get("digest"), "baseline": y.get("digest")},
            "file_count": _change(x.get("file_count"), y.get("file_count")),
            "total_size": _change(x.get("total_size"), y.get("total_size")),
        }
        if row["status"] == "changed" and "files" in x and "files" in y:
            try:
                from flightlog.data.manifest import diff_manifests

                d = diff_manifests(y, x)  # from the baseline's data to this run's
                row["counts"] = d.get("counts")
                row["added_files"] = [f["path"] for f in d.get("added", [])[:10]]
                row["removed_files"] = [f["path"] for f in d.get("removed", [])[:10]]
                row["changed_files"] = [f["path"] for f in d.get("changed", [])[:10]]
                row["shifts"] = d.get("shifts")
            except Exception:  # a manifest of another version: the summary above still holds
                pass
        out.append(row)
    return out


def _reached(a: RunEvidence, b: RunEvidence, logged: Any) -> bool | None:
    """Whether run ``a`` lived as long as the baseline ``b`` had when it logged an input (the
    offset from each one's start): an input a run never got far enough to log was not
    removed from it. None when a time is missing (or the run is still going)."""
    start_a, start_b = a.process_start, b.process_start
    end_a = a.process_end if a.info.status not in ACTIVE_STATUSES else None
    if not isinstance(logged, (int, float)) or None in (start_a, start_b, end_a):
        return None
    assert start_a is not None and start_b is not None and end_a is not None
    return end_a - start_a >= float(logged) - start_b


def _stages(a: RunEvidence, b: RunEvidence) -> list[dict[str, Any]]:
    sa = {s.name: s for s in a.stages if not is_runner_stage(s.name)}
    sb = {s.name: s for s in b.stages if not is_runner_stage(s.name)}
    rows = []
    for name in sorted(sa.keys() | sb.keys()):
        x, y = sa.get(name), sb.get(name)
        row = _change(x.total if x else None, y.total if y else None)
        row.update(
            name=name,
            count={"run": x.count if x else None, "baseline": y.count if y else None},
            mean={"run": x.mean if x else None, "baseline": y.mean if y else None},
        )
        rows.append(row)
    for label, ev_a, ev_b in (("startup (start → first step)", a, b), ("tail (last step → end)", a, b)):
        va, vb = _phase(ev_a, label), _phase(ev_b, label)
        if label.startswith("tail") and ("process_end" in a.info.timeline) != ("process_end" in b.info.timeline):
            # one ends at its process's exit (the runner saw it), the other when the SDK
            # finished the run: their tails are not the same measure
            va = vb = None
        if va is not None or vb is not None:
            row = _change(va, vb)
            row.update(name=label, count=None, mean=None)
            rows.append(row)
    rows.sort(key=lambda r: -(r["delta"] if r["delta"] is not None else -math.inf))
    return rows


def _phase(ev: RunEvidence, label: str) -> float | None:
    w = training_window(ev)
    if w is None:
        return None
    if label.startswith("startup"):
        return None if ev.process_start is None else max(0.0, w.start - ev.process_start)
    return None if ev.process_end is None else max(0.0, ev.process_end - w.end)


def _numbers(rows: list[dict[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in rows if isinstance(r.get(key), (int, float))]


def _peaks(ev: RunEvidence) -> dict[str, float | None]:
    rss = _numbers(ev.resources, "rss_bytes") + _numbers(ev.resource_summaries, "rss_bytes_max")
    cpu = _numbers(ev.resources, "cpu_percent")
    gpu_mem: list[float] = []
    gpu_util: list[float] = []
    for s in ev.resources:
        for g in s.get("gpus") or []:
            if isinstance(g.get("memory_used_bytes"), (int, float)):
                gpu_mem.append(g["memory_used_bytes"])
            if isinstance(g.get("utilization_percent"), (int, float)):
                gpu_util.append(g["utilization_percent"])
    writes = _numbers(ev.resources, "disk_write_bytes")
    return {
        "rss_peak_bytes": max(rss) if rss else None,
        "cpu_percent_peak": max(cpu) if cpu else None,
        "cpu_percent_avg": sum(cpu) / len(cpu) if cpu else None,
        "gpu_memory_peak_bytes": max(gpu_mem) if gpu_mem else None,
        "gpu_utilization_avg": sum(gpu_util) / len(gpu_util) if gpu_util else None,
        "disk_write_bytes": max(writes) if writes else None,
        # how long the tree was ready to run with no core free (docs/resources.md): a run slower
        # than its baseline because the machine was busy with other work, not because of itself
        "cpu_wait_percent_avg": cpu_wait_percent_between(ev, -math.inf, math.inf),  # the whole run
    }


def _resources(a: RunEvidence, b: RunEvidence) -> dict[str, Any]:
    pa, pb = _peaks(a), _peaks(b)
    return {k: _change(pa[k], pb[k]) for k in pa}


def _metrics(a: RunEvidence, b: RunEvidence) -> list[dict[str, Any]]:
    """One row per metric, by name — those that went from finite to NaN or infinite first:
    they are the comparison's headline, and a NaN has no delta to rank by."""
    rows = []
    for name in sorted(a.info.metrics.keys() | b.info.metrics.keys()):
        x, y = a.info.metrics.get(name), b.info.metrics.get(name)
        va = x.last if x else None
        vb = y.last if y else None
        row: dict[str, Any] = {"name": name, "run": va, "baseline": vb, "delta": None, "relative": None}
        if va is not None and vb is not None and math.isfinite(va) and math.isfinite(vb):
            row["delta"] = va - vb
            row["relative"] = (va - vb) / abs(vb) if vb else None
        row["nonfinite"] = {"run": _first_nonfinite(a, x), "baseline": _first_nonfinite(b, y)}
        row["became_nonfinite"] = (
            y is not None and row["nonfinite"]["run"] is not None and row["nonfinite"]["baseline"] is None
        )
        rows.append(row)
    rows.sort(key=lambda r: 0 if r["became_nonfinite"] else 1)
    return rows


def _first_nonfinite(ev: RunEvidence, m: MetricSummary | None) -> dict[str, Any] | None:
    """``{"value": "NaN" | "+inf" | "-inf", "step", "points"}`` of the first non-finite point
    of a metric, None when every point is finite."""
    if m is None or not m.nonfinite:
        return None
    h = ev.history(m.name)
    bad = [i for i, v in enumerate(h.values.tolist()) if not math.isfinite(v)]
    if not bad:
        return None
    v = float(h.values[bad[0]])
    text = "NaN" if math.isnan(v) else ("+inf" if v > 0 else "-inf")
    return {"value": text, "step": int(h.steps[bad[0]]), "points": m.nonfinite}
