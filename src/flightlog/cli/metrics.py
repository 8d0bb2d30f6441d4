"""``flightlog metrics RUN [NAME]``: summaries with sparklines, or one metric's points."""

from __future__ import annotations

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import console, emit_json, esc, format_option, sparkline

__all__ = ["metrics_cmd"]


@click.command("metrics")
@click.argument("run")
@click.argument("name", required=False)
@click.option(
    "--points",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="With NAME: how many of the last points to print.",
)
@format_option
def metrics_cmd(run: str, name: str | None, points: int, fmt: str) -> None:
    """A table of every metric (min, max, last, a sparkline), or one metric's history."""
    client = open_client()
    info = client.run(run)
    if name is not None:
        history = client.metric_history(info, name)
        if fmt == "json":
            emit_json(history.to_dict())
            return
        summary = info.metrics.get(name)
        out = console()
        out.print(f"[bold]{esc(name)}[/]  {len(history)} points  {sparkline(history.values.tolist(), 60)}")
        if summary is not None:
            out.print(
                f"min {summary.min}  max {summary.max}  last {summary.last} (step {summary.last_step})"
                + (f"  [red]{summary.nonfinite} non-finite[/]" if summary.nonfinite else "")
            )
        start = max(0, len(history) - points)
        for step, value in zip(history.steps[start:].tolist(), history.values[start:].tolist(), strict=True):
            out.print(f"  {step:>10}  {value:.6g}")
        return
    summaries = info.metrics  # the run read above holds every summary: no second read
    histories = {n: client.metric_history(info, n).values.tolist() for n in summaries} if fmt != "json" else {}
    if fmt == "json":
        emit_json([s.to_dict() for s in summaries.values()])
        return
    if not summaries:
        click.echo(f'run {info.id[:8]} has no metrics (record some with run.log({{"loss": value}}, step=i))')
        return
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for head in ("METRIC", "POINTS", "MIN", "MAX", "LAST", "LAST STEP", "TREND"):
        table.add_column(head, no_wrap=True)
    for n, s in summaries.items():
        flag = f" [red]({s.nonfinite} NaN/inf)[/]" if s.nonfinite else ""
        table.add_row(
            esc(n),
            f"{s.count}{flag}",
            _num(s.min),
            _num(s.max),
            _num(s.last),
            str(s.last_step),
            sparkline(histories[n]),
        )
    console().print(table)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"
