"""Alerts, silences and test results as rich tables (the JSON shapes are the objects' to_dict)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flightlog.alerts.silences import Silence
from flightlog.alerts.types import Alert
from flightlog.cli.common import short_time
from flightlog.cli.output import console, esc, styled

__all__ = ["alerts_table", "silences_table", "replay_table", "events_table", "STATE_STYLE"]

STATE_STYLE = {"firing": "bold red", "pending": "yellow", "resolved": "green"}
SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def _value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _labels(labels: dict[str, str], skip: Sequence[str] = ("run", "project", "pipeline")) -> str:
    shown = [f"{k}={v}" for k, v in sorted(labels.items()) if k not in skip]
    return esc(",".join(shown) or "-")


def alerts_table(alerts: Sequence[Alert], *, empty: str = "no alerts") -> None:
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for head in ("STATE", "SEVERITY", "RULE", "RUN", "LABELS", "SINCE", "RESOLVED", "VALUE", "SUMMARY"):
        table.add_column(head, no_wrap=head != "SUMMARY")
    for a in alerts:
        table.add_row(
            styled(a.state, STATE_STYLE.get(a.state)),
            styled(a.severity, SEVERITY_STYLE.get(a.severity)),
            esc(a.rule),
            esc((a.run_id or "-")[:8]),
            _labels(a.labels),
            short_time(a.fired_at or a.active_since),
            short_time(a.resolved_at),
            esc(_value(a.value)),
            esc(a.summary),
        )
    out = console()
    out.print(table)
    if not alerts:
        out.print(f"[dim]{empty}[/]")


def events_table(events: Sequence[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for head in ("TIME", "EVENT", "RULE", "RUN", "LABELS", "DETAIL"):
        table.add_column(head, no_wrap=head != "DETAIL")
    for e in events:
        detail = e.get("detail") or {}
        text = (
            detail.get("summary")
            or detail.get("error")
            or ", ".join(
                f"{k}={v}" for k, v in detail.items() if k in ("notifier", "attempts", "reason", "silence", "value")
            )
        )
        table.add_row(
            esc(e["time"]),
            esc(e["event"]),
            esc(e.get("rule") or "-"),
            esc((e.get("run_id") or "-")[:8]),
            _labels(e.get("labels") or {}),
            esc(text),
        )
    out = console()
    out.print(table)
    if not events:
        out.print("[dim]no alert history[/]")


def silences_table(silences: Sequence[Silence], now: float) -> None:
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for head in ("ID", "RULE", "LABELS", "UNTIL", "ACTIVE", "BY", "COMMENT"):
        table.add_column(head, no_wrap=head != "COMMENT")
    for s in silences:
        table.add_row(
            esc(s.id),
            esc(s.rule),
            _labels(s.matchers, ()),
            short_time(s.ends),
            "yes" if s.active(now) else "no",
            esc(s.author or "-"),
            esc(s.comment or ""),
        )
    out = console()
    out.print(table)
    if not silences:
        out.print("[dim]no silences[/]")


def replay_table(result: Any) -> None:
    from rich.table import Table

    out = console()
    run = result.run
    out.print(
        f"[bold]alerts test[/] run {run.id} ({esc(run.project)}/{esc(run.name or '-')}, {esc(run.status)}): "
        f"{len(result.rules)} rules applied, {result.evaluations} evaluations every {result.interval:g}s"
    )
    table = Table(box=None, header_style="bold", pad_edge=False)
    for head in ("RULE", "SEVERITY", "STATE", "PENDING", "FIRED", "RESOLVED", "VALUE", "SUMMARY"):
        table.add_column(head, no_wrap=head != "SUMMARY")
    for a in result.alerts:
        table.add_row(
            esc(a.rule),
            styled(a.severity, SEVERITY_STYLE.get(a.severity)),
            styled(a.state, STATE_STYLE.get(a.state)) + (f" ({esc(a.resolved_reason)})" if a.resolved_reason else ""),
            short_time(a.active_since),
            short_time(a.fired_at),
            short_time(a.resolved_at),
            esc(_value(a.value)),
            esc(a.summary),
        )
    if result.alerts:
        out.print(table)
    else:
        out.print("[dim]no alert would have fired[/]")
    for error in result.errors:
        out.print(f"[yellow]warning:[/] {esc(error)}")
