"""The triage report for a person, through rich: one block per cause, the biggest first.

Each block says how many runs, since when and until when, the signature, an example
message as one run printed it, the runs (newest first), a sparkline of failures per day and
the onset (what changed between the last good run and the first bad one).
"""

from __future__ import annotations

from typing import Any

from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from flightlog.cli.output import esc
from flightlog.timefmt import format_duration
from flightlog.triage.goodput import MAX_RUNS
from flightlog.triage.goodput_run import CATEGORIES, LABELS

__all__ = ["render_goodput", "render_triage", "sparkline"]

_BARS = "▁▂▃▄▅▆▇█"
#: the runs a block names before "… N more"
SHOWN_RUNS = 5


def sparkline(counts: list[int]) -> str:
    """Counts as block characters, the highest count the tallest (a day without failures: a dot)."""
    top = max(counts, default=0)
    if top == 0:
        return "·" * len(counts)
    return "".join("·" if c == 0 else _BARS[min(len(_BARS) - 1, (c * len(_BARS) - 1) // top)] for c in counts)


def _when(text: str | None) -> str:
    return f"{text[:10]} {text[11:16]}" if text else "—"


def render_triage(report: dict[str, Any]) -> RenderableType:
    scope = report.get("project") or "every project"
    if report.get("pipeline"):
        scope += f", pipeline {report['pipeline']}"
    groups = report["groups"]
    if not groups:
        return Text(f"no failures in {scope} since {_when(report['since'])} (failed, crashed or killed runs)")
    parts: list[RenderableType] = [
        Text.from_markup(
            f"[bold]{report['failures']} failures[/] in {esc(scope)} since {_when(report['since'])}: "
            f"[bold]{len(groups)} cause{'s' if len(groups) != 1 else ''}[/]"
        )
    ]
    for n, g in enumerate(groups, 1):
        statuses = ", ".join(f"{v} {k}" for k, v in g["statuses"].items())
        runs = ", ".join(r[:12] for r in g["runs"][:SHOWN_RUNS])
        if len(g["runs"]) > SHOWN_RUNS:
            runs += f", … {len(g['runs']) - SHOWN_RUNS} more"
        lines = [
            "",
            f"[bold]{n}. {esc(g['category'])}[/]  [bold]{g['count']}[/] runs ({esc(statuses)})  "
            f"first {_when(g['first_seen'])}  last {_when(g['last_seen'])}  [dim]{g['id']}[/]",
            f"   signature  {esc(g['signature'])}",
            f"   example    {esc(g['example'])}",
            f"   per day    [cyan]{sparkline(g['per_day'])}[/]  [dim]{report['days'][0]} … {report['days'][-1]}[/]",
            f"   runs       {esc(runs)}",
        ]
        if g.get("memory"):
            lines.append(f"   memory     [bold]{esc(g['memory']['text'])}[/]")
        onset = g.get("onset")
        if onset is not None:
            if onset.get("last_good"):
                lines.append(
                    f"   onset      last good {onset['last_good'][:12]} → first bad {onset['first_bad'][:12]}: "
                    f"[bold]{esc(onset['summary'])}[/]"
                )
                lines += [f"              {esc(c['text'])}" for c in onset["changes"][1:6]]
            else:
                lines.append(f"   onset      [dim]{esc(onset['summary'])}[/]")
        parts.extend(Text.from_markup(line) for line in lines)
    return RichGroup(*parts)


def _money(value: float | None, currency: str | None) -> str:
    return "-" if value is None else f"{value:,.2f} {currency or ''}".strip()


def render_goodput(report: dict[str, Any]) -> Any:
    """The report as rich text: the summary line, the categories, the pipelines, the top wasters."""
    scope = f"project {report['project']}" if report.get("project") else "every project"
    if report.get("pipeline"):
        scope += f", pipeline {report['pipeline']}"
    head = Text.from_markup(
        f"[bold]{report['summary']}[/]  {scope}, {report['runs']} runs"
        + (f" since {report['since']}" if report.get("since") else "")
    )
    parts: list[Any] = [head]
    if report.get("message"):
        parts.append(Text(report["message"]))
        return RichGroup(*parts)
    if report.get("truncated"):
        parts.append(Text(f"(the newest {MAX_RUNS} runs; narrow with --since or --pipeline)", style="dim"))
    cur = report.get("currency")
    table = Table(box=None, header_style="bold")
    for col in ("WHERE THE TIME WENT", "SHARE", "TIME"):
        table.add_column(col)
    for c in CATEGORIES:
        if report["seconds"][c] > 0:
            table.add_row(LABELS[c], f"{report['shares'][c]:.1%}", format_duration(report["seconds"][c]))
    parts.append(table)
    totals = f"{format_duration(report['wall_seconds'])} of run time, {report['gpu_hours']:.2f} GPU-hours"
    if report.get("cost") is not None:
        totals += f"; cost {_money(report['cost'], cur)}, of it wasted {_money(report['wasted_cost'], cur)}"
    parts.append(Text(totals))
    if report.get("pipelines"):
        pipes = Table(box=None, header_style="bold", title_justify="left")
        for col in ("PIPELINE", "RUNS", "GOODPUT"):
            pipes.add_column(col)
        for name, p in report["pipelines"].items():
            pipes.add_row(name, str(p["runs"]), p["summary"])
        parts.append(pipes)
    if report.get("top_wasters"):
        top = Table(box=None, header_style="bold")
        for col in ("RUN", "NAME", "STATUS", "WASTED", "GPU-H WASTED", "COST WASTED", "GOODPUT"):
            top.add_column(col)
        for w in report["top_wasters"]:
            top.add_row(
                w["run"][:12],
                w["name"] or "-",
                w["status"],
                format_duration(w["wasted_seconds"]),
                f"{w['wasted_gpu_hours']:.2f}",
                _money(w["wasted_cost"], cur),
                w["summary"],
            )
        parts.append(Text("runs that wasted the most", style="bold"))
        parts.append(top)
    return RichGroup(*parts)
