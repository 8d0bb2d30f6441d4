"""``flightlog diagnose``, ``flightlog compare`` and ``flightlog rightsize``."""

from __future__ import annotations

import click

from flightlog.cli.common import open_client, short_time
from flightlog.cli.output import console, emit_json, format_option

__all__ = ["diagnose_cmd", "compare_cmd", "rightsize_cmd"]


@click.command("diagnose")
@click.argument("run", required=False)
@click.option(
    "--baseline",
    "-b",
    metavar="RUN",
    help="Compare with this run (default: a pinned run, else the last good run of the same name, else the best comparable one; see docs/troubleshooting.md).",
)
@click.option("--no-baseline", is_flag=True, help="Do not look for a baseline.")
@format_option
def diagnose_cmd(run: str | None, baseline: str | None, no_baseline: bool, fmt: str) -> None:
    """Name the likely cause of a failed or slow run, with the evidence and what to do next.

    \b
    flightlog diagnose 3f2a
    flightlog diagnose 3f2a --baseline 91c0 --format json
    """
    if run is None:  # optional: another feature's mode of this command may take its place
        raise click.UsageError(_name_a_run())
    client = open_client()
    report = client.diagnose(run, baseline=baseline, auto_baseline=not no_baseline)
    if fmt == "json":
        emit_json(report)
        return
    from flightlog.diagnose.render import render_diagnosis

    render_diagnosis(report, console())


def _name_a_run() -> str:
    """The usage error without a RUN, naming the newest run to diagnose: a newcomer who has just
    run ``flightlog run`` expects that one, and the command it needs is then one copy away. The
    run is named, not taken: on a shared server the newest run may be somebody else's."""
    message = "name a RUN to diagnose"
    try:
        newest = open_client().runs(order_by="-created", limit=1)
    except Exception:  # noqa: BLE001 - the usage error stands without the hint
        return message
    if not newest:
        return f"{message} (there is no run yet: flightlog run -- python train.py records one)"
    info = newest[0]
    what = ", ".join(x for x in (info.name, info.status, f"project {info.project}", short_time(info.created)) if x)
    return f"{message}; the newest run is {info.id[:12]} ({what}): flightlog diagnose {info.id[:12]}"


@click.command("compare")
@click.argument("run")
@click.argument("baseline", required=False)
@format_option
def compare_cmd(run: str, baseline: str | None, fmt: str) -> None:
    """What changed from BASELINE to RUN: params, code, packages, environment, inputs, stages,
    resource peaks and final metrics. Without BASELINE, the run a diagnosis would compare
    with (pinned, else the last comparable run of the same name, else the best comparable
    one; docs/troubleshooting.md), and why it was chosen.

    \b
    flightlog compare 3f2a 91c0
    flightlog compare 3f2a --format json"""
    cmp = open_client().compare(run, baseline)
    if fmt == "json":
        emit_json(cmp)
        return
    from flightlog.diagnose.render import render_comparison

    render_comparison(cmp, console())


@click.command("rightsize")
@click.argument("run_or_name", metavar="RUN|NAME")
@click.option("--project", "-p", help="With a NAME: only runs of this project.")
@format_option
def rightsize_cmd(run_or_name: str, project: str | None, fmt: str) -> None:
    """Memory and CPU requests from what a run (all its attempts) or the runs of NAME used."""
    rs = open_client().rightsize(run_or_name, project=project)
    if fmt == "json":
        emit_json(rs)
        return
    from flightlog.diagnose.render import render_rightsizing

    render_rightsizing(rs, console())
