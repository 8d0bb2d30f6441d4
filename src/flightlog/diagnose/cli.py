"""``flightlog diagnose``, ``flightlog compare`` and ``flightlog rightsize``."""

from __future__ import annotations

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import console, emit_json, format_option
from flightlog.plugins import features

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
@click.option(
    "--deployment",
    metavar="ENDPOINT",
    help="Diagnose a deployment instead of a run: what changed in production and when, the versions before and after, what differs in their training (docs/models.md).",
)
@click.option("--env", metavar="ENV", help="With --deployment: its environment (needed when it has several).")
@click.option(
    "--since", default="24h", show_default=True, help="With --deployment: look back this far (2h, an ISO time)."
)
@click.option("--project", "-p", help="With --deployment: only this project's deployment and replicas.")
@format_option
def diagnose_cmd(
    run: str | None,
    baseline: str | None,
    no_baseline: bool,
    deployment: str | None,
    env: str | None,
    since: str,
    project: str | None,
    fmt: str,
) -> None:
    """Name the likely cause of a failed or slow run, with the evidence and what to do next;
    or, with --deployment, walk back from a production change to the training behind it.

    \b
    flightlog diagnose 3f2a
    flightlog diagnose 3f2a --baseline 91c0 --format json
    flightlog diagnose --deployment fraud-api --env prod --since 6h
    """
    if deployment is not None:
        if run is not None or baseline is not None or no_baseline:
            raise click.UsageError(
                f"--deployment diagnoses an endpoint, not a run: drop {run or '--baseline'!r}, or drop --deployment "
                "(flightlog diagnose RUN, or flightlog diagnose --deployment ENDPOINT)"
            )
        _diagnose_deployment(deployment, env, since, project, fmt)
        return
    if run is None:
        raise click.UsageError("name a RUN to diagnose, or --deployment ENDPOINT for a deployment")
    if env is not None or project is not None or since != "24h":
        raise click.UsageError("--env, --since and --project go with --deployment ENDPOINT")
    client = open_client()
    report = client.diagnose(run, baseline=baseline, auto_baseline=not no_baseline)
    if fmt == "json":
        emit_json(report)
        return
    from flightlog.diagnose.render import render_diagnosis

    render_diagnosis(report, console())


def _diagnose_deployment(endpoint: str, env: str | None, since: str, project: str | None, fmt: str) -> None:
    """Through the serving feature's service: diagnose sits below serving and never imports it."""
    table = features()
    diagnose = table.require(
        "diagnose_deployment", needed_by="flightlog diagnose --deployment", install="flightlog (its serving feature)"
    )
    report = diagnose(open_client(), endpoint, env=env, since=since, project=project)
    if fmt == "json":
        emit_json(report)
        return
    render = table.service("render_deployment_diagnosis")
    if render is None:
        click.echo(report["text"])
        return
    render(report, console())


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
