"""The differences of a comparison, one line each, grouped by what they are about.

This is the single source for both what ``flightlog compare`` prints and the counts in its
``differences`` field: a difference is counted exactly when it has a line, so a count can
never point at something the report does not show.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from flightlog.diagnose.factors import change_text
from flightlog.timefmt import format_duration, format_size

__all__ = ["difference_lines", "differences_text", "count_differences", "SECTIONS", "STAGE_CHANGE", "STAGE_MIN_DELTA_S"]

#: the sections of the ``differences`` counts, in the order the lines come
SECTIONS = (
    "command",
    "params",
    "code",
    "python",
    "packages",
    "environment",
    "inputs",
    "stages",
    "resources",
    "metrics",
)
#: a stage counts as changed from this relative change (either way) and this many seconds
STAGE_CHANGE = 0.25
STAGE_MIN_DELTA_S = 0.1
#: a resource figure counts from this relative change; a memory figure from this many bytes too
RESOURCE_CHANGE = 0.2
RESOURCE_MIN_BYTES = 16 << 20
#: a final metric counts from this relative change
METRIC_CHANGE = 0.01

_RESOURCE_LABELS = {
    "rss_peak_bytes": "memory peak (RSS)",
    "cpu_percent_peak": "CPU peak (% of a core)",
    "cpu_percent_avg": "CPU average (% of a core)",
    "gpu_memory_peak_bytes": "GPU memory peak",
    "gpu_utilization_avg": "GPU utilization average",
    "disk_write_bytes": "disk writes",
    "cpu_wait_percent_avg": "CPU wait for a free core, average (% of a core)",
}
#: a wait for a free core counts from this many points of a core either way (a few is any host)
CPU_WAIT_MIN_POINTS = 10.0


def differences_text(cmp: dict[str, Any]) -> list[str]:
    """The notable differences, one line each, for a person."""
    return [line for _, line in difference_lines(cmp)]


def count_differences(cmp: dict[str, Any]) -> dict[str, int]:
    """How many lines each section has (every section, zero included)."""
    counts = Counter(section for section, _ in difference_lines(cmp))
    return {section: counts.get(section, 0) for section in SECTIONS}


def difference_lines(cmp: dict[str, Any]) -> list[tuple[str, str]]:
    """``(section, line)`` for every difference between the run and its baseline."""
    lines: list[tuple[str, str]] = []
    command = cmp.get("command") or {}
    if command.get("changed"):
        lines.append(("command", f"command: {command.get('baseline') or '(none)'} → {command.get('run') or '(none)'}"))
    p = cmp["params"]
    lines += [("params", f"param {row['name']}: {row['baseline']!r} → {row['run']!r}") for row in p["changed"]]
    lines += [("params", f"param {k} added: {v!r}") for k, v in p["added"].items()]
    lines += [("params", f"param {k} removed (was {v!r})") for k, v in p["removed"].items()]
    code = cmp["code"]
    if code["changed"]:
        lines.append(
            (
                "code",
                f"code: {((code['baseline'] or {}).get('commit') or '?')[:10]} → "
                f"{((code['run'] or {}).get('commit') or '?')[:10]}"
                + (" (dirty)" if (code["run"] or {}).get("dirty") else ""),
            )
        )
    if cmp["python"]["changed"]:
        lines.append(("python", f"python: {cmp['python']['baseline']} → {cmp['python']['run']}"))
    k = cmp["packages"]
    lines += [("packages", f"package {row['name']}: {row['baseline']} → {row['run']}") for row in k["changed"]]
    lines += [("packages", f"package {row['name']} {row['version']} added") for row in k["added"]]
    lines += [("packages", f"package {row['name']} {row['version']} removed") for row in k["removed"]]
    env = cmp["environment"]
    lines += [
        ("environment", f"environment {row['name']}: {row['baseline']!r} → {row['run']!r}") for row in env["changed"]
    ]
    lines += [("environment", f"environment {name} added") for name in env["added"]]
    lines += [("environment", f"environment {name} removed") for name in env["removed"]]
    lines += [("inputs", _input_line(i)) for i in cmp["inputs"] if i.get("status") != "identical"]
    lines += [("stages", line) for line in _stage_lines(cmp["stages"])]
    lines += [("resources", line) for key, row in cmp["resources"].items() if (line := _resource_line(key, row))]
    lines += [("metrics", line) for m in cmp["metrics"] if (line := _metric_line(m)) and not m.get("became_nonfinite")]
    # a metric that went from a number to NaN or inf is the headline: it comes first
    headline = [("metrics", _nonfinite_line(m)) for m in cmp["metrics"] if m.get("became_nonfinite")]
    return headline + lines


def _input_line(i: dict[str, Any]) -> str:
    fc, ts = i.get("file_count") or {}, i.get("total_size") or {}
    text = f"input {i['name']!r} {i['status']}"
    if i.get("reached") is False:
        return text + " (the run ended before the point where the baseline logged it: it never got there)"
    if fc.get("run") is not None and fc.get("baseline") is not None:
        text += (
            f": {fc['baseline']} → {fc['run']} files, {format_size(ts.get('baseline'))} → {format_size(ts.get('run'))}"
        )
    changed_files = [*i.get("removed_files", [])[:2], *i.get("changed_files", [])[:2]]
    if changed_files:
        text += f" (e.g. {', '.join(changed_files)})"
    return text


def _stage_lines(stages: list[dict[str, Any]]) -> list[str]:
    """One line per changed stage — or a single line when the run reached none of the
    baseline's stages (it failed at start-up): six "only in the baseline" lines say less."""
    missed = [s for s in stages if s.get("run") is None and s.get("baseline") is not None]
    ran = [s for s in stages if s.get("run") is not None]
    if len(missed) > 1 and not ran:
        names = ", ".join(s["name"] for s in missed[:6]) + (f", … {len(missed) - 6} more" if len(missed) > 6 else "")
        return [f"stages: the run reached none of the baseline's {len(missed)} stages ({names})"]
    return [line for s in stages if (line := _stage_line(s))]


def _stage_line(s: dict[str, Any]) -> str | None:
    run, base = s.get("run"), s.get("baseline")
    if run is None or base is None:
        where = "baseline" if run is None else "run"
        return f"stage {s['name']} only in the {where} ({format_duration(base if run is None else run)})"
    ratio, delta = s.get("ratio"), s.get("delta")
    if ratio is None or delta is None or abs(ratio - 1) < STAGE_CHANGE or abs(delta) < STAGE_MIN_DELTA_S:
        return None
    return (
        f"stage {s['name']}: {format_duration(base)} → {format_duration(run)} (×{ratio:.1f})"
        if ratio >= 1
        else f"stage {s['name']}: {format_duration(base)} → {format_duration(run)} (×{ratio:.2f})"
    )


def _resource_line(key: str, row: dict[str, Any]) -> str | None:
    if key == "cpu_wait_percent_avg":  # from none at all (a ratio of nothing) counts too
        if row["run"] is None or row["baseline"] is None or abs(row["run"] - row["baseline"]) < CPU_WAIT_MIN_POINTS:
            return None
        return f"{_RESOURCE_LABELS[key]}: {row['baseline']:.0f}% → {row['run']:.0f}%"
    if row["ratio"] is None or row["run"] is None or row["baseline"] is None or abs(row["ratio"] - 1) < RESOURCE_CHANGE:
        return None
    label = _RESOURCE_LABELS.get(key, key)
    if key.endswith("bytes"):
        if abs(row["run"] - row["baseline"]) < RESOURCE_MIN_BYTES:
            return None  # a few megabytes either way is noise
        return f"{label}: {format_size(row['baseline'])} → {format_size(row['run'])}"
    return f"{label}: {row['baseline']:.0f}% → {row['run']:.0f}%"


def _nonfinite_line(m: dict[str, Any]) -> str:
    bad = m["nonfinite"]["run"]
    base = m.get("baseline")
    was = f"{base:.4g}" if isinstance(base, (int, float)) else "finite"
    return (
        f"metric {m['name']} became {bad['value']} at step {bad['step']}: {was} in the baseline → {bad['value']} "
        f"({bad['points']} non-finite point(s))"
    )


def _metric_line(m: dict[str, Any]) -> str | None:
    if m["relative"] is not None and abs(m["relative"]) >= METRIC_CHANGE:
        return f"metric {m['name']}: {m['baseline']:.4g} → {m['run']:.4g} ({change_text(m['run'], m['baseline'])})"
    if m["run"] is None or m["baseline"] is None:
        return f"metric {m['name']} only in the {'baseline' if m['run'] is None else 'run'}"
    return None
