"""``flightlog import mlflow``: runs recorded by MLflow, copied into flightlog."""

from __future__ import annotations

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import emit_json, format_option

__all__ = ["import_group"]


@click.group("import")
def import_group() -> None:
    """Copy runs recorded by other tools into flightlog."""


@import_group.command("mlflow")
@click.option(
    "--tracking-uri",
    required=True,
    metavar="URI",
    help="The MLflow store: sqlite:///path/mlflow.db, file:///path/mlruns, or a directory.",
)
@click.option("--experiment", metavar="NAME", help="Only this experiment (name or id); default: every active one.")
@click.option("--project", metavar="NAME", help="Put every run in this project (default: the experiment's name).")
@click.option("--no-artifacts", is_flag=True, help="Copy runs without their artifact files.")
@click.option(
    "--allow-external-artifacts",
    is_flag=True,
    help="Also copy artifacts that lie outside the MLflow store's directory (default: skipped and reported).",
)
@format_option
def import_mlflow_cmd(
    tracking_uri: str,
    experiment: str | None,
    project: str | None,
    no_artifacts: bool,
    allow_external_artifacts: bool,
    fmt: str,
) -> None:
    """Copy MLflow runs: params, tags, metric histories, artifacts, status and times.

    \b
    Run ids are kept, so `flightlog runs show MLFLOW_RUN_ID` finds a run, and importing the
    same store again changes nothing (those runs are reported as already imported).
    Status: FINISHED → succeeded, FAILED → failed, KILLED → killed, RUNNING → running,
    SCHEDULED → queued. Deleted runs and experiments are not copied. Params and tags are
    redacted as the SDK redacts them (docs/redaction.md).

    \b
    Artifacts are copied only from inside the store's directory (the folder holding mlflow.db
    or mlruns), each from its run's own <run id>/artifacts folder; an artifact_uri elsewhere on
    disk, or a symbolic link out of that folder, is skipped unless --allow-external-artifacts.
    What cannot be read (a run, a malformed metric line) is skipped, the rest imported; the
    summary lists what was skipped and the command then exits 1.
    """
    from flightlog.importers.mlflow_copy import import_runs
    from flightlog.importers.mlflow_sources import open_source

    client = open_client()
    source = open_source(tracking_uri)
    try:
        summary = import_runs(
            client,
            source,
            experiment=experiment,
            project=project,
            artifacts=not no_artifacts,
            allow_external_artifacts=allow_external_artifacts,
        )
    finally:
        source.close()
    for line in summary.warnings:
        click.echo(f"warning: {line}", err=True)
    for line in summary.skipped:
        click.echo(f"skipped: {line}", err=True)
    if fmt == "json":
        emit_json(summary.to_dict())
    else:
        click.echo(
            f"imported {summary.runs} run(s) from {summary.experiments} experiment(s): {summary.params} params, "
            f"{summary.tags} tags, {summary.metric_points} metric points, {summary.artifacts} artifacts"
            + (f"; {summary.already_imported} already imported" if summary.already_imported else "")
            + (f"; {len(summary.skipped)} thing(s) skipped (listed above)" if summary.skipped else ""),
            err=True,
        )
    if summary.skipped:
        raise SystemExit(1)  # the rest is imported; a script must still notice what was not
