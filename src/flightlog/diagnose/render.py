"""Reports for a person: the diagnosis, the comparison and the right-sizing, through rich.

Every finding quotes its evidence (source, time, the line or figure itself) and ends with
what to do next; leads (confidence 0.5 or more) come first, hints after them.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from flightlog.cli.output import esc as escape  # markup escaped, control characters made visible
from flightlog.diagnose.differences import differences_text
from flightlog.diagnose.findings import LEAD
from flightlog.diagnose.taxonomy import TITLE
from flightlog.launchenv import ranks_text
from flightlog.timefmt import format_duration, format_size

__all__ = ["render_diagnosis", "render_comparison", "render_rightsizing"]


def _t(iso_time: str | None) -> str:
    return f"{iso_time[11:23]}Z" if iso_time else "—"


def _bar(conf: float) -> str:
    style = "bold red" if conf >= 0.75 else "yellow" if conf >= LEAD else "dim"
    return f"[{style}]{conf:.2f}[/]"


def render_diagnosis(report: dict[str, Any], out: Console) -> None:
    status = report["status"]
    out.print(
        f"[bold]diagnosis of run {escape(report['run'])}[/]  status [bold]{escape(status)}[/]  kind [bold]{report['kind']}[/]"
    )
    base = report.get("baseline")
    serving = report.get("serving")
    if serving:  # a model server's replica: diagnosed as serving, with its deployment a command away
        _serving(serving, out)
    elif base:
        how = base.get("reason") or "given with --baseline"
        out.print(f"[dim]baseline {escape(base['baseline'])} ({escape(how)})[/]")
    else:
        choice = report.get("baseline_choice") or {}
        why = choice.get("reason") or "none found"
        out.print(
            f"[dim]no baseline: {escape(why)}; none pinned (flightlog runs edit RUN --tag baseline=true), "
            "or pass --baseline RUN[/]"
        )
    findings = report["findings"]
    leads = [f for f in findings if f["confidence"] >= LEAD]
    hints = [f for f in findings if f["confidence"] < LEAD]
    if not leads:
        out.print("\n[green]No likely problem found.[/]" + (" Weaker hints follow." if hints else ""))
    for i, f in enumerate(leads, 1):
        _finding(out, i, f, full=True)
    if hints:
        out.print("\n[bold]hints[/] [dim](confidence below 0.5)[/]")
        for i, f in enumerate(hints, len(leads) + 1):
            _finding(out, i, f, full=False)
    if base:
        lines = differences_text(base)
        out.print(f"\n[bold]changed since the baseline[/] ({len(lines)})")
        for line in lines[:15] or ["nothing that flightlog compares"]:
            out.print(f"  {escape(line)}")
        if len(lines) > 15:
            out.print(
                f"  [dim]… {len(lines) - 15} more: flightlog compare {report['run'][:12]} {base['baseline'][:12]}[/]"
            )
    if report.get("runbook"):
        out.print("\n[bold]runbook[/]")
        for e in report["runbook"]:
            out.print(
                f"  [bold]{escape(e['title'])}[/] [dim]({escape(e['id'])}, {escape(e['source'])}; matched {escape('; '.join(e['matched']))})[/]"
            )
            for advice in e["advice"]:
                out.print(f"    • {escape(advice)}")
            for link in e.get("links") or []:
                out.print(f"    [dim]{escape(link)}[/]")
    rs = report.get("rightsizing")
    if rs and _has_advice(rs):
        out.print("\n[bold]rightsizing[/]")
        _rightsizing_lines(rs, out)
    elif rs:  # nothing to recommend: one line that says why, not a section of "no recommendation" lines
        why = (rs.get("evidence") or {}).get("reason") or "no resource samples to go on"
        out.print(f"\n[dim]rightsizing: nothing to recommend ({escape(why)})[/]")


def _serving(section: dict[str, Any], out: Console) -> None:
    """A replica's own traffic and its deployment's diagnosis (the serving feature's ``serving`` section)."""
    model = f"{section.get('model')} " if section.get("model") else ""
    out.print(
        f"serving replica {escape(str(section.get('replica')))} of [bold]{escape(str(section.get('endpoint')))}[/] "
        f"({escape(str(section.get('env')))}), {escape(model)}v{escape(str(section.get('version')))}"
    )
    for t in section.get("traffic") or []:
        rates = f"5xx {t['error_rate']:.1%}, 4xx {t['client_error_rate']:.1%}" if t.get("requests") else "no requests"
        p50, p99 = t.get("p50_ms"), t.get("p99_ms")
        lat = f", p50 {p50:.1f} ms, p99 {p99:.1f} ms" if p50 is not None and p99 is not None else ""
        out.print(f"  [dim]v{escape(str(t['version']))}: {t['requests']} requests, {rates}{lat}[/]")
    if section.get("stop"):
        out.print(f"  {escape(str(section['stop']))}")
    brief = section.get("diagnosis") or {}
    if brief.get("headline"):
        out.print(f"  deployment: {escape(brief['headline'])}")
    elif brief.get("error"):
        out.print(f"  [dim]deployment diagnosis: {escape(brief['error'])}[/]")
    for what, command in (section.get("commands") or {}).items():
        out.print(f"  [dim]{what}: {escape(command)}[/]")


def _has_advice(rs: dict[str, Any]) -> bool:
    return bool(
        rs["memory"].get("recommended_bytes") or rs["cpu"].get("recommended_cores") or rs.get("gpu") or rs.get("flags")
    )


def _finding(out: Console, index: int, f: dict[str, Any], *, full: bool) -> None:
    out.print(f"\n{index}. [bold]{f['category']}[/] {_bar(f['confidence'])} [dim]{TITLE.get(f['category'], '')}[/]")
    out.print(f"   {escape(f['summary'])}")
    if full:
        _ranks(out, f)
    evidence = f["evidence"] if full else f["evidence"][:2]
    for e in evidence:
        detail = escape(str(e["detail"]).replace("\n", " ⏎ "))
        out.print(f"   [dim]{e['source']:>9} {_t(e.get('at'))}[/]  {detail}")
    if full and f["next_steps"]:
        out.print("   [bold]next[/]")
        for step in f["next_steps"][:4]:
            out.print(f"   → {escape(step)}")


def _ranks(out: Console, f: dict[str, Any]) -> None:
    """A distributed finding's culprit first, its victims folded under it (docs/distributed.md)."""
    culprit = f.get("culprit")
    if isinstance(culprit, dict) and culprit.get("rank") is not None:
        where = culprit.get("where") or {}
        coll = culprit.get("collective") or {}
        text = f"rank {culprit['rank']}" + (f" on {culprit['host']}" if culprit.get("host") else "")
        if where:
            text += f", in {where.get('function')} at {where.get('file')}:{where.get('line')}"
        if coll:
            text += (
                f", never in {coll.get('op')} #{coll.get('seq')}"
                if f.get("category") == "hang"
                else f", {coll.get('op')} #{coll.get('seq')}"
            )
        out.print(f"   [bold]culprit[/] {escape(text)}")
    elif isinstance(culprit, dict) and culprit.get("alike"):  # no culprit: ranks that failed alike
        where = culprit.get("where") or {}
        text = ranks_text(list(culprit["alike"])) + " failed alike, none caused it"
        if where:
            text += f"; raised in {where.get('function')} at {where.get('file')}:{where.get('line')}"
        out.print(f"   [bold]alike[/]   {escape(text)}")
    for v in f.get("victims") or []:
        waited = f" waited {format_duration(float(v['waited_s']))}" if v.get("waited_s") is not None else ""
        error = f": {v['error']}" if v.get("error") else ""
        out.print(f"   [dim]victim[/]  rank {v['rank']}{escape(waited + error)}")


def render_comparison(cmp: dict[str, Any], out: Console) -> None:
    out.print(
        f"[bold]run {escape(cmp['run'])}[/] ({escape(cmp['status']['run'])}) against baseline "
        f"[bold]{escape(cmp['baseline'])}[/] ({escape(cmp['status']['baseline'])})"
    )
    if cmp.get("reason"):  # chosen automatically: how, and why
        out.print(f"[dim]baseline {escape(cmp['reason'])}[/]")
    d = cmp["duration"]
    if d["run"] is not None and d["baseline"] is not None:
        out.print(
            f"duration {format_duration(d['baseline'])} → {format_duration(d['run'])}"
            + (f" (×{d['ratio']:.2f})" if d["ratio"] else "")
        )
    lines = differences_text(cmp)
    if not lines:
        out.print(
            "[green]no differences in params, code, packages, environment, inputs, stages, resources or metrics[/]"
        )
    headline = len(cmp.get("nonfinite_metrics") or [])  # the first lines: metrics that went NaN or inf
    for i, line in enumerate(lines):
        out.print(f"  [bold red]{escape(line)}[/]" if i < headline else f"  {escape(line)}")
    counts = ", ".join(f"{k} {v}" for k, v in cmp["differences"].items() if v)
    if counts:
        out.print(f"[dim]differences: {counts}[/]")


def render_rightsizing(rs: dict[str, Any], out: Console) -> None:
    subject = rs["subject"]
    what = f"run {subject['run']}" if "run" in subject else f"{subject['runs']} run(s) named {subject['name']!r}"
    out.print(f"[bold]rightsizing of {escape(what)}[/]")
    _rightsizing_lines(rs, out)
    for o in rs["observations"]:
        out.print(
            f"  [dim]{escape(o['run'][:12])} attempt {o['attempt']}: {escape(o['status'])}, peak {format_size(o['memory_peak_bytes'])}"
            + (f" of {format_size(o['memory_limit_bytes'])}" if o["memory_limit_bytes"] else "")
            + (f", CPU peak {o['cpu_peak_cores']:.2f} cores" if o.get("cpu_peak_cores") is not None else "")
            + f", {o.get('samples', 0)} samples"
            + ("" if o.get("used", True) else f" (not used: {escape(o.get('why') or '')})")
            + "[/]"
        )


def _rightsizing_lines(rs: dict[str, Any], out: Console) -> None:
    mem, cpu, req = rs["memory"], rs["cpu"], rs["request"]
    evidence = rs.get("evidence") or {}
    if mem["recommended_bytes"]:
        asked = f", limit was {format_size(mem['requested_bytes'])}" if mem["requested_bytes"] else ""
        out.print(f"  memory: request {req['memory']} ({escape(mem['basis'] or '')}{asked})")
    elif evidence.get("reason"):
        out.print(f"  memory: no recommendation: {escape(evidence['reason'])}")
    else:
        out.print("  memory: no samples to go on")
    if not cpu["recommended_cores"] and evidence and not evidence.get("sufficient"):
        out.print(
            f"  cpu:    no recommendation: fewer than {evidence.get('min_samples')} samples from attempts that count"
        )
    if cpu["recommended_cores"]:
        out.print(
            f"  cpu:    request {req['cpu']} (95th percentile {cpu['p95_cores']:.2f} cores, peak {cpu['peak_cores']:.2f}, "
            f"average {cpu['avg_cores']:.2f}, {cpu['samples']} samples)"
        )
    if rs.get("gpu"):
        out.print(f"  gpu:    memory peak {format_size(rs['gpu']['memory_peak_bytes'])}")
    for flag in rs["flags"]:
        style = "yellow" if flag["kind"] == "over_provisioned" else "red"
        out.print(f"  [{style}]{flag['kind']}[/]: {escape(flag['detail'])}")
