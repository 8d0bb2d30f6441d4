"""What a baseline adds to findings: a difference that explains a finding is one more
independent signal for it (a package that changed under a dependency error, input files that
changed under a data error, a stage that grew under a slow phase)."""

from __future__ import annotations

from typing import Any

from flightlog.diagnose.behaviour import learning_rate_params
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.signals import Signal
from flightlog.timefmt import format_duration, format_size

__all__ = ["baseline_findings"]


def baseline_findings(findings: list[Finding], cmp: dict[str, Any]) -> list[Finding]:
    present = {f.category for f in findings if f.confidence >= 0.2}
    base = str(cmp.get("baseline", ""))[:12]
    out: list[Finding] = []

    def add(category: str, weight: float, signal_id: str, detail: str) -> None:
        if category in present:
            out.append(
                Finding(category, "", [Signal(category, weight, signal_id, "baseline", f"{detail} (baseline {base})")])
            )

    pk = cmp.get("packages") or {}
    changed_pk = [f"{p['name']} {p['baseline']} → {p['run']}" for p in pk.get("changed", [])]
    removed_pk = [f"{p['name']} {p['version']} removed" for p in pk.get("removed", [])]
    if changed_pk or removed_pk:
        add(
            "dependency_error",
            0.3,
            "packages_changed_since_the_baseline",
            f"packages changed since the last good run: {', '.join([*removed_pk, *changed_pk][:6])}",
        )
        add(
            "code_error",
            0.1,
            "packages_changed_since_the_baseline",
            f"{len(changed_pk) + len(removed_pk)} package(s) changed since the last good run",
        )
    if (cmp.get("python") or {}).get("changed"):
        add("dependency_error", 0.2, "python_changed", f"Python {cmp['python']['baseline']} → {cmp['python']['run']}")
    inputs = [i for i in cmp.get("inputs") or [] if i.get("status") != "identical" and i.get("reached") is not False]
    if inputs:
        i = inputs[0]
        fc = i.get("file_count") or {}
        detail = f"input {i['name']!r} {i['status']} since the last good run"
        if fc.get("delta"):
            detail += f": {fc['baseline']} → {fc['run']} files"
        counts = i.get("counts") or {}
        if counts:
            detail += f" ({counts.get('added', 0)} added, {counts.get('removed', 0)} removed, {counts.get('changed', 0)} changed)"
        for category, weight in (
            ("data_error", 0.3),
            ("missing_file", 0.25),
            ("data_drift", 0.2),
            ("data_loader_bottleneck", 0.1),
        ):
            add(category, weight, "input_changed_since_the_baseline", detail)
    params = cmp.get("params") or {}
    rows = sorted(params.get("changed", []), key=lambda p: 0 if learning_rate_params({p["name"]: None}) else 1)
    changed = [f"{p['name']}: {p['baseline']!r} → {p['run']!r}" for p in rows]
    changed += [f"{k} added ({v!r})" for k, v in (params.get("added") or {}).items()]
    if changed:
        add("bad_parameter", 0.3, "params_changed_since_the_baseline", f"params changed: {'; '.join(changed[:5])}")
        add("nan_loss", 0.15, "params_changed_since_the_baseline", f"params changed: {'; '.join(changed[:5])}")
        add("loss_divergence", 0.2, "params_changed_since_the_baseline", f"params changed: {'; '.join(changed[:5])}")
    if (cmp.get("code") or {}).get("changed"):
        code = cmp["code"]
        a = (code.get("baseline") or {}).get("commit") or "?"
        b = (code.get("run") or {}).get("commit") or "?"
        add("code_error", 0.2, "code_changed_since_the_baseline", f"code changed: commit {a[:10]} → {b[:10]}")
    for s in cmp.get("stages") or []:
        ratio, delta = s.get("ratio"), s.get("delta")
        if ratio is None or delta is None or ratio < 1.5 or delta < 0.5:
            continue
        detail = f"stage {s['name']!r} took {format_duration(s['run'])} against {format_duration(s['baseline'])} in the baseline (×{ratio:.1f})"
        if s["name"].startswith("startup"):
            add("slow_startup", 0.2, "startup_grew_since_the_baseline", detail)
        elif s["name"].startswith("tail"):
            add("slow_completion", 0.2, "tail_grew_since_the_baseline", detail)
        else:
            for category in ("data_loader_bottleneck", "slow_startup", "slow_completion", "timeout"):
                add(category, 0.15, f"stage_grew:{s['name']}", detail)
    rss = (cmp.get("resources") or {}).get("rss_peak_bytes") or {}
    if rss.get("ratio") and rss["ratio"] >= 1.5:
        detail = f"memory peak {format_size(rss['run'])} against {format_size(rss['baseline'])} in the baseline (×{rss['ratio']:.1f})"
        add("memory_leak", 0.15, "memory_peak_grew", detail)
        add("oom_killed", 0.15, "memory_peak_grew", detail)
    return out
