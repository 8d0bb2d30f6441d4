"""The deployment diagnosis for a person, through rich, in the manner of the other diagnose reports:
the headline first, then what changed and when (each change with its evidence), the versions on
either side of the main change, and what differs between their training runs."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from flightlog.cli.output import esc as escape  # markup escaped, control characters made visible

__all__ = ["render_deployment_diagnosis"]

_STYLE = {
    "rollout": "cyan",
    "rollback": "cyan",
    "latency_step": "bold red",
    "version_change": "bold red",
    "error_rate_step": "bold red",
    "drift": "yellow",
    "cohort": "bold red",
}


def _evidence_line(change: dict[str, Any]) -> str | None:
    ev = change.get("evidence") or {}
    kind = change["kind"]
    if kind == "latency_step":
        before, after = ev.get("p99_ms_per_minute_before") or [], ev.get("p99_ms_per_minute_after") or []
        return (
            "p99 per minute: "
            + " ".join(f"{x:.0f}" for x in before[-5:])
            + " │ "
            + " ".join(f"{x:.0f}" for x in after[:5])
            + " ms"
        )
    if kind == "error_rate_step":
        e, r = ev.get("errors") or {}, ev.get("requests") or {}
        return f"errors {e.get('before')} of {r.get('before')} → {e.get('after')} of {r.get('after')} requests (z {ev.get('z')})"
    if kind == "version_change":
        b, a = ev.get("before") or {}, ev.get("after") or {}
        return (
            f"v{b.get('version')}: {b.get('requests')} requests, p50 {_ms(b.get('p50_ms'))} p99 {_ms(b.get('p99_ms'))} ms, "
            f"5xx {_pct(b.get('error_rate'))}, 4xx {_pct(b.get('client_error_rate'))}  │  "
            f"v{a.get('version')}: {a.get('requests')} requests, p50 {_ms(a.get('p50_ms'))} p99 {_ms(a.get('p99_ms'))} ms, "
            f"5xx {_pct(a.get('error_rate'))}, 4xx {_pct(a.get('client_error_rate'))}"
        )
    if kind == "cohort":
        labelled = ev.get("labelled") or {}
        return f"{labelled.get('after')} labelled records of version {ev.get('version')}, against {ev.get('against')}"
    if kind == "drift":
        return f"against the training profile of run {str(ev.get('training_run'))[:12]}"
    if kind in ("rollout", "rollback"):
        parts = [f"desired {ev['desired_at'][11:19]}Z" if ev.get("desired_at") else None]
        parts.append(f"first traffic {ev['first_traffic_at'][11:19]}Z" if ev.get("first_traffic_at") else None)
        parts.append(f"by {ev['actor']}" if ev.get("actor") else None)
        return ", ".join(p for p in parts if p) or None
    return None


def _ms(x: Any) -> str:
    return "-" if not isinstance(x, (int, float)) else f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def _pct(x: Any) -> str:
    return "-" if not isinstance(x, (int, float)) else f"{x:.1%}"


def _version(v: dict[str, Any] | None) -> str:
    if v is None:
        return "—"
    run = f" training run {v['run_id'][:12]}" if v.get("run_id") else " (training run unknown)"
    return f"{v.get('model') or ''} v{v['version']}{run}".strip()


def render_deployment_diagnosis(report: dict[str, Any], out: Console) -> None:
    out.print(
        f"[bold]diagnosis of deployment {escape(report['endpoint'])}[/] ({escape(report['env'])})  "
        f"[dim]since {escape(report['since'])}[/]"
    )
    out.print(f"\n[bold]{escape(report['headline'])}[/]")
    t = report.get("traffic") or {}
    out.print(
        f"[dim]{t.get('requests', 0)} requests over {t.get('minutes', 0)} minute{'' if t.get('minutes') == 1 else 's'}, {t.get('sampled', 0)} sampled, "
        f"{t.get('labelled', 0)} labelled, {t.get('replicas', 0)} replica run(s)[/]"
    )
    out.print("\n[bold]what changed in production[/]")
    if not report["changes"]:
        out.print("  [dim]nothing in this window[/]")
    for c in report["changes"]:
        style = _STYLE.get(c["kind"], "bold")
        out.print(f"  [dim]{c['time'][11:19]}Z[/] [{style}]{c['kind']:<15}[/] {escape(c['summary'])}")
        line = _evidence_line(c)
        if line:
            out.print(f"  {'':9} {'':15} [dim]{escape(line)}[/]")
    out.print(
        f"\n[bold]before[/] {escape(_version(report['before']))}   [bold]after[/] {escape(_version(report['after']))}"
    )
    if report["differences"]:
        out.print(f"\n[bold]what differs between their training runs[/] ({len(report['differences'])})")
        for d in report["differences"]:
            style = "bold" if d["kind"] == "data" else ""
            text = escape(d["summary"])
            out.print(f"  [dim]{d['kind']:<15}[/] " + (f"[{style}]{text}[/]" if style else text))
        b, a = report["before"] or {}, report["after"] or {}
        if b.get("run_id") and a.get("run_id"):
            out.print(f"  [dim]all of it: flightlog compare {a['run_id'][:12]} {b['run_id'][:12]}[/]")
    for note in report.get("notes") or []:
        out.print(f"[dim]note: {escape(note)}[/]")
