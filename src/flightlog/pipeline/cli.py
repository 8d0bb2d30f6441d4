"""``flightlog pipeline run | resume | ls | show``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from flightlog.cli.common import duration_text, open_client, short_time, status_text
from flightlog.cli.output import console, emit_json, format_option
from flightlog.pipeline.executors import EXECUTORS

__all__ = ["pipeline_group"]

_EXIT = {"succeeded": 0, "failed": 1, "stopped": 130, "killed": 143}


@click.group("pipeline")
def pipeline_group() -> None:
    """Pipelines: steps as child runs, with retries, caching, resume and gates (docs/pipelines.md).

    \b
    flightlog pipeline run pipeline.yaml --max-parallel 4
    flightlog pipeline show RUN
    flightlog pipeline plan pipeline.yaml
    flightlog pipeline resume RUN
    """


def _run_options(func: Any) -> Any:
    func = click.option("--verbose", "-v", is_flag=True, help="Pass the steps' output through to this terminal.")(func)
    func = click.option("--quiet", "-q", is_flag=True, help="Print nothing but the result.")(func)
    return func


def _report(result: Any, fmt: str) -> None:
    if fmt == "json":
        client = open_client()
        from flightlog.pipeline.state import load_view

        emit_json(load_view(client, result.run_id).to_dict())
    sys.exit(_EXIT.get(result.status, 1))


@pipeline_group.command("run")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--max-parallel", "-j", type=click.IntRange(min=1), default=4, show_default=True, help="Steps running at once."
)
@click.option(
    "--executor",
    type=click.Choice(sorted(EXECUTORS)),
    default="local",
    show_default=True,
    help="Where steps run: local processes, or Ray tasks (RAY_ADDRESS; pip install 'flightlog[ray]').",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Run every step, even one whose inputs, params and code match a succeeded earlier run.",
)
@click.option("--project", "-p", help="Project of the runs (default: the file's project, else FLIGHTLOG_PROJECT).")
@_run_options
@format_option
def run_cmd(
    file: Path,
    max_parallel: int,
    executor: str,
    no_cache: bool,
    project: str | None,
    verbose: bool,
    quiet: bool,
    fmt: str,
) -> None:
    """Run the pipeline in FILE (YAML); exit 1 when a step or gate failed.

    Everything is checked first (cycles, unknown steps, missing commands, unknown suites): a
    mistake stops the pipeline before any step runs.
    """
    from flightlog.pipeline.controller import run_pipeline
    from flightlog.pipeline.yamlfile import load_pipeline_file

    spec = load_pipeline_file(file)
    if project:
        spec.project = project
    result = run_pipeline(
        spec,
        max_parallel=max_parallel,
        executor=executor,
        use_cache=not no_cache,
        quiet=quiet or fmt == "json",
        verbose=verbose,
    )
    _report(result, fmt)


@pipeline_group.command("resume")
@click.argument("run")
@click.option("--max-parallel", "-j", type=click.IntRange(min=1), help="Steps running at once (default: as before).")
@click.option("--executor", type=click.Choice(sorted(EXECUTORS)), help="Where steps run (default: as before).")
@_run_options
@format_option
def resume_cmd(run: str, max_parallel: int | None, executor: str | None, verbose: bool, quiet: bool, fmt: str) -> None:
    """Run again only the steps of RUN that failed or never ran (a retried step gets its last
    checkpoint in FLIGHTLOG_RESUME_FROM); steps that succeeded are kept."""
    from flightlog.pipeline.resume import resume_pipeline

    result = resume_pipeline(
        run, max_parallel=max_parallel, executor=executor, quiet=quiet or fmt == "json", verbose=verbose
    )
    _report(result, fmt)


@pipeline_group.command("ls")
@click.option("--project", "-p", help="Only this project.")
@click.option("--name", "-n", help="Only pipelines of this name.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@format_option
def ls_cmd(project: str | None, name: str | None, limit: int, fmt: str) -> None:
    """Pipeline runs, newest first, with how many steps succeeded, were cached or failed."""
    from flightlog.pipeline.state import load_view

    client = open_client()
    where = "parent is null and tags.pipeline is not null"
    if name:
        where += " and tags.pipeline = '" + name.replace("'", "''") + "'"
    rows = []
    for info in client.runs(project=project, filter=where, order_by="-created", limit=limit):
        try:
            view = load_view(client, info.id).to_dict()
        except Exception:
            continue
        counts: dict[str, int] = {}
        for s in view["steps"]:
            counts[s["status"]] = counts.get(s["status"], 0) + 1
        rows.append(
            {
                "id": info.id,
                "name": view["name"],
                "project": info.project,
                "status": info.status,
                "attempt": info.attempt,
                "started": info.to_dict()["started"],
                "duration": info.duration,
                "steps": len(view["steps"]),
                "counts": counts,
                "_started": info.started,
            }
        )
    if fmt == "json":
        emit_json([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows])
        return
    from rich.table import Table

    table = Table(box=None)
    for col in ("id", "name", "status", "attempt", "started", "duration", "steps"):
        table.add_column(col)
    for r in rows:
        summary = ", ".join(f"{n} {k}" for k, n in sorted(r["counts"].items()))
        table.add_row(
            r["id"][:12],
            r["name"],
            status_text(r["status"]),
            str(r["attempt"]),
            short_time(r["_started"]),
            duration_text(r["duration"]),
            summary,
        )
    console().print(table)


@pipeline_group.command("show")
@click.argument("run")
@format_option
def show_cmd(run: str, fmt: str) -> None:
    """The DAG of pipeline RUN as a tree: each step's status, attempts, duration and cache hit."""
    from flightlog.pipeline.render import render_pipeline
    from flightlog.pipeline.state import load_view

    # a controller that died: reading its run ships its journal (its last step states, its end)
    view = load_view(open_client(), run).to_dict()
    if fmt == "json":
        emit_json(view)
        return
    render_pipeline(view, console())


@pipeline_group.command("plan")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--no-cache", is_flag=True, help="Plan as `pipeline run --no-cache` would run: every step.")
@click.option("--project", "-p", help="Project of the runs (default: the file's project, else FLIGHTLOG_PROJECT).")
@format_option
def plan_cmd(file: Path, no_cache: bool, project: str | None, fmt: str) -> None:
    """Before running FILE: which steps would run and why (what changed since their last success),
    and which would be reused, from which run. Nothing runs."""
    # imported when used, as the other commands here: `flightlog --help` loads every command group
    from flightlog.pipeline.plan import plan_pipeline
    from flightlog.pipeline.render import render_plan  # (as above)
    from flightlog.pipeline.yamlfile import load_pipeline_file  # (as above)

    spec = load_pipeline_file(file)
    if project:
        spec.project = project
    plan = plan_pipeline(open_client(), spec, use_cache=not no_cache)
    if fmt == "json":
        emit_json(plan)
        return
    render_plan(plan, console())
