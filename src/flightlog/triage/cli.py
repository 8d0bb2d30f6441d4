"""`flightlog triage`: failures grouped by cause across runs, or with ``--goodput`` where a
project's hours went; ``--format json`` prints one report object (docs/triage.md)."""

from __future__ import annotations

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import console, emit_json, format_option
from flightlog.triage.goodput import goodput_report
from flightlog.triage.render import render_goodput, render_triage
from flightlog.triage.report import DEFAULT_SINCE, triage_report

__all__ = ["triage_cmd"]


@click.command("triage")
@click.option("--project", "-p", help="The project (default: FLIGHTLOG_PROJECT, else every project).")
@click.option(
    "--since",
    default=DEFAULT_SINCE,
    show_default=True,
    metavar="TIME",
    help="Failures after a time: a duration ago (7d, 12h) or an ISO time (2026-11-30T12:00:00Z).",
)
@click.option("--pipeline", metavar="NAME", help="Only the runs of this pipeline and its steps.")
@click.option("--goodput", is_flag=True, help="Where the hours went (goodput per run) instead of failures.")
@format_option
def triage_cmd(project: str | None, since: str, pipeline: str | None, goodput: bool, fmt: str) -> None:
    """Failed, crashed and killed runs grouped by cause, with when each cause began and what changed then."""
    client = open_client()
    project = project or client.settings.project
    if goodput:
        report = goodput_report(client, project=project, since=since, pipeline=pipeline)
        if fmt == "json":
            emit_json(report)
        else:
            console().print(render_goodput(report))
        return
    report = triage_report(client, project=project, since=since, pipeline=pipeline)
    if fmt == "json":
        emit_json(report)
        return
    console().print(render_triage(report))
