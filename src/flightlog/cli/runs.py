"""``flightlog runs ls | show | rm | note`` and ``flightlog projects``."""

from __future__ import annotations

import signal as signals
import sys
from typing import Any

import click

from flightlog.cli.common import duration_text, open_client, short_time, status_text
from flightlog.cli.output import clip, console, emit_json, esc, format_option
from flightlog.cli.ranks import ranks_line
from flightlog.errors import FilterSyntaxError, InvalidInput
from flightlog.failure import frames_for_display
from flightlog.launchenv import ranks_text
from flightlog.models import RUN_KINDS, SERVING_KIND, kind_filter
from flightlog.notices import notice
from flightlog.plugins import features
from flightlog.timefmt import format_size, iso

__all__ = ["runs_group", "projects_cmd"]


@click.group("runs")
def runs_group() -> None:
    """List, inspect, annotate and delete runs."""


@runs_group.command("ls")
@click.option("--project", "-p", help="Only runs of this project.")
@click.option(
    "--filter",
    "-f",
    "filter_",
    metavar="EXPR",
    help="e.g. \"params.lr > 0.01 and status = 'failed'\" (docs/filters.md).",
)
@click.option("--order-by", "-o", metavar="KEY", help="e.g. -metrics.acc (descending), created; default -created.")
@click.option("--limit", "-n", type=click.IntRange(min=0), default=50, show_default=True)
@click.option("--columns", "-c", metavar="KEYS", help="Extra columns, comma-separated: params.lr,metrics.acc,tags.team")
@click.option(
    "--kind",
    type=click.Choice(RUN_KINDS),
    default="training",
    show_default=True,
    help="Which runs: training (serving replicas left out), serving (only replicas), all.",
)
@format_option
def runs_ls(
    project: str | None,
    filter_: str | None,
    order_by: str | None,
    limit: int,
    columns: str | None,
    kind: str,
    fmt: str,
) -> None:
    """List runs, newest first (serving replicas only with --kind serving or all)."""
    client = open_client()
    try:
        runs = client.runs(project=project, filter=kind_filter(filter_, kind), order_by=order_by, limit=limit)
    except FilterSyntaxError:
        client.runs(project=project, filter=filter_, limit=1)  # the error as the user wrote the filter
        raise
    if fmt == "json":
        emit_json([r.to_dict(detail=False) for r in runs])
        return
    from rich.table import Table

    extra = [c.strip() for c in columns.split(",") if c.strip()] if columns else _default_columns(runs)
    table = Table(box=None, header_style="bold", pad_edge=False)
    for head in ("ID", "PROJECT", "NAME", "STATUS", "STARTED", "DURATION", *extra):
        table.add_column(esc(head), no_wrap=True)
    for r in runs:
        table.add_row(
            r.id[:8],
            esc(r.project),
            esc(r.name or "-"),
            status_text(r.status),
            short_time(r.started or r.created),
            duration_text(r.duration),
            *(esc(_column(r, c)) for c in extra),
        )
    out = console()
    out.print(table)
    if not runs:
        out.print(
            "[dim]no runs match[/]" + (" [dim](serving replicas: --kind serving)[/]" if kind == "training" else "")
        )


def _serving_facts(info: Any) -> list[tuple[str, str]]:
    """A serving replica's run says which deployment it serves and how to open it."""
    if info.kind != SERVING_KIND:
        return []
    tags = info.tags or {}
    endpoint, env = tags.get("serving.endpoint", "?"), tags.get("serving.env", "?")
    model = tags.get("serving.model") or "?"
    return [
        ("kind", "serving replica"),
        ("serves", f"{endpoint} ({env}): {model} v{tags.get('serving.version', '?')}"),
        ("deployment", f"flightlog deployments show {endpoint} --env {env}"),
    ]


def _default_columns(runs: list[Any]) -> list[str]:
    names: dict[str, None] = {}  # ordered, and a set: a run may have thousands of metrics
    for r in runs[:50]:
        for name in r.metrics:
            names.setdefault(f"metrics.{name}")
            if len(names) == 4:
                return list(names)
    return list(names)


def _column(run: Any, key: str) -> str:
    kind, _, name = key.partition(".")
    if kind == "metrics":
        m = run.metrics.get(name)
        return "-" if m is None or m.last is None else f"{m.last:.6g}"
    if kind == "params":
        return str(run.params.get(name, "-"))
    if kind == "tags":
        return run.tags.get(name, "-")
    raise InvalidInput(f"unknown column {key!r}: use params.NAME, metrics.NAME or tags.NAME")


@runs_group.command("show")
@click.argument("run")
@format_option
def runs_show(run: str, fmt: str) -> None:
    """Everything about one run: status, times, failure, params, metrics, stages, artifacts."""
    client = open_client()
    info = client.run(run)
    notes = client.notes(info)  # the run, not its id: nothing to resolve again
    stages = client.stages(info)
    artifacts = client.artifacts(info)
    context = client.context(info)
    goodput = _goodput(client, info)
    ranks = client.ranks(info)
    if fmt == "json":
        doc = info.to_dict()
        doc["goodput"] = goodput
        doc["ranks"] = [r.to_dict() for r in ranks]
        doc["notes"] = [n.to_dict() for n in notes]
        doc["stages"] = [s.to_dict() for s in stages]
        doc["artifacts"] = [a.to_dict() for a in artifacts]
        doc["context"] = context
        emit_json(doc)
        return
    _print_run(info, notes, stages, artifacts, context, goodput, ranks)


def _goodput(client: Any, info: Any) -> dict[str, Any] | None:
    """The run's goodput, where a feature measures it (``flightlog_run_goodput``); a run the
    measure cannot read still shows, without it; a serving replica has none."""
    if not info.is_finished or info.kind == SERVING_KIND:
        return None  # a model server's life is its traffic (its deployment's page), not training hours
    try:
        goodput = features().ask("flightlog_run_goodput", client=client, run=info)
        return None if goodput is None else dict(goodput)
    except Exception as exc:  # noqa: BLE001 - the card is the point; its goodput line is extra
        notice(f"warning: the run's goodput could not be measured: {type(exc).__name__}: {exc}")
        return None


def _print_run(
    info: Any,
    notes: list[Any],
    stages: list[Any],
    artifacts: list[Any],
    context: dict[str, Any],
    goodput: dict[str, Any] | None = None,
    ranks: list[Any] | None = None,
) -> None:
    from rich.table import Table

    out = console()
    room = max(20, out.width - 14)  # what is left of a line after the label or the indent
    out.print(
        f"[bold]run {info.id}[/]  {status_text(info.status)}"
        + (f" ({esc(info.end_reason)})" if info.end_reason else "")
    )
    facts = [
        ("project", info.project),
        ("name", info.name or "-"),
        ("parent", info.parent_id or "-"),
        ("attempt", str(info.attempt)),
        ("created", short_time(info.created)),
        ("queued", short_time(info.queued)),
        ("started", short_time(info.started)),
        ("ended", short_time(info.ended)),
        ("duration", duration_text(info.duration)),
        ("queue wait", duration_text(info.queue_wait)),
        *([("goodput", str(goodput["summary"]))] if goodput else []),
        ("exit code", "-" if info.exit_code is None else str(info.exit_code)),
        ("signal", "-" if info.signal is None else str(info.signal)),
        (
            "host",
            f"{info.host} (pid {info.pid})" if info.host else "-" if not ranks else "- (one per rank: flightlog ranks)",
        ),
        *_serving_facts(info),
    ]
    if ranks:  # a distributed run: its ranks at a glance, the table one command away
        culprit = (info.failure or {}).get("culprit")
        culprit_rank = culprit.get("rank") if isinstance(culprit, dict) else None
        alike = culprit.get("alike") if isinstance(culprit, dict) else None
        line = ranks_line(
            ranks,
            culprit_rank if isinstance(culprit_rank, int) else None,
            [r for r in alike if isinstance(r, int)] if isinstance(alike, list) else None,
        )
        facts.append(("ranks", f"{line} (flightlog ranks {info.id[:12]})"))
    git = context.get("git") or {}
    if git:
        facts.append(("commit", f"{str(git.get('commit') or '')[:12]}{' (dirty)' if git.get('dirty') else ''}"))
    if context.get("command"):
        facts.append(("command", " ".join(map(str, context["command"]))))
    if context.get("python"):
        facts.append(("python", str(context["python"])))
    # label and value on one line each, no grid: a long value neither pads the other lines
    # nor wraps into the next one; it is cut in the middle with "…" (--format json has it whole)
    for label, value in facts:
        out.print(f"[dim]{label:<12}[/]{esc(clip(value, room))}")
    if info.failure:
        f = info.failure
        summary = _failure_summary(f)
        out.print(f"\n[bold red]failure[/] {esc(clip(summary, room))}")
        if ranks:  # a distributed run: whose error this is, and which rank caused the failure
            out.print(f"  [dim]{esc(clip(_whose_failure(info), room))}[/]")
        for frame in frames_for_display(f.get("frames")):  # the user's innermost frame first
            where = f"{frame.get('file')}:{frame.get('line')} in {frame.get('function')}"
            if frame["user"]:
                out.print(f"  {esc(clip(where, room - 12))}  [bold]your code[/]")
            else:
                out.print(f"  [dim]{esc(clip(where, room))}[/]")
    if info.params:
        out.print("\n[bold]params[/]")
        for k, v in info.params.items():
            out.print(f"  {esc(clip(f'{k} = {v!r}', room))}")
    if info.tags:
        out.print("\n[bold]tags[/]  " + "  ".join(esc(clip(f"{k}={v}", room)) for k, v in info.tags.items()))
    if info.metrics:
        table = Table(box=None, header_style="bold", title=None)
        for head in ("METRIC", "LAST", "MIN", "MAX", "POINTS", "LAST STEP"):
            table.add_column(head)
        for name, m in info.metrics.items():
            table.add_row(
                esc(name),
                _num(m.last),
                _num(m.min),
                _num(m.max),
                f"{m.count}" + (f" ({m.nonfinite} non-finite)" if m.nonfinite else ""),
                str(m.last_step),
            )
        out.print()
        out.print(table)
    if stages:
        table = Table(box=None, header_style="bold")
        for head in ("STAGE", "COUNT", "TOTAL", "MEAN", "MAX"):
            table.add_column(head)
        for s in stages:
            table.add_row(
                esc(s.name), str(s.count), duration_text(s.total), duration_text(s.mean), duration_text(s.max)
            )
        out.print()
        out.print(table)
    if artifacts:
        out.print(f"\n[bold]artifacts[/] ({len(artifacts)})")
        for a in artifacts[:20]:
            tail = f"  {format_size(a.size)}" + (f"  step {a.step}" if a.step is not None else "")
            head = f"{a.role:6} {a.kind or '-':10} "
            out.print(f"  {esc(head)}{esc(clip(a.path, room - len(head) - len(tail)))}{tail}")
        if len(artifacts) > 20:
            out.print(f"  [dim]… {len(artifacts) - 20} more: flightlog artifacts {info.id[:8]}[/]")
    if info.counters:
        out.print("\n[bold]counters[/]  " + "  ".join(f"{esc(k)}={v:g}" for k, v in info.counters.items()))
    if notes:
        out.print("\n[bold]notes[/]")
        for n in notes:
            out.print(f"  [dim]{short_time(n.time)} {esc(n.author or '')}[/] {esc(n.text)}")


def _whose_failure(info: Any) -> str:
    """Under a distributed run's failure: the rank whose error it is, and the culprit (the
    runner's verdict) or where to find it — the first rank to fail often only waited."""
    f = info.failure or {}
    culprit = f.get("culprit") if isinstance(f.get("culprit"), dict) else None
    shown = f.get("rank")
    whose = f"rank {shown}'s error" if isinstance(shown, int) else "a rank's error"
    if culprit is not None and isinstance(culprit.get("rank"), int):
        if culprit["rank"] == shown:
            return f"{whose}, the culprit: {culprit.get('summary') or ''}".rstrip(": ")
        return (
            f"{whose}; it only waited for rank {culprit['rank']}, the culprit: {culprit.get('summary') or ''}".rstrip(
                ": "
            )
        )
    if culprit is not None and isinstance(culprit.get("alike"), list) and culprit["alike"]:
        alike = f"{ranks_text(culprit['alike'])} failed alike"
        summary = str(culprit.get("summary") or "").removeprefix(f"{alike}: ")  # said once
        return f"{whose}; {alike}, none caused it: {summary}".rstrip(": ")
    return f"{whose}; which rank caused the failure: flightlog diagnose {info.id[:12]}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


@runs_group.command("rm")
@click.argument("runs", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@format_option
def runs_rm(runs: tuple[str, ...], yes: bool, fmt: str) -> None:
    """Delete runs and everything recorded on them (artifact files go at the next `gc`)."""
    client = open_client()
    infos = [client.run(r) for r in runs]
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidInput("deleting runs needs confirmation: pass --yes")
        names = ", ".join(f"{i.id[:8]} ({i.name or '-'})" for i in infos)
        click.confirm(f"Delete {len(infos)} run(s): {names}?", abort=True)
    deleted = client.delete_runs([i.id for i in infos])
    if fmt == "json":
        emit_json({"deleted": [i.id for i in infos], "count": deleted})
    else:
        click.echo(f"deleted {deleted} run(s)", err=True)


@runs_group.command("note")
@click.argument("run")
@click.argument("text")
@click.option("--author", help="Default: the current user.")
def runs_note(run: str, text: str, author: str | None) -> None:
    """Keep a hypothesis or a piece of evidence with a run."""
    import getpass

    client = open_client()
    info = client.run(run)
    client.add_note(info.id, text, author or getpass.getuser())
    click.echo(f"note added to {info.id[:8]}", err=True)


@click.command("projects")
@format_option
def projects_cmd(fmt: str) -> None:
    """Projects with their run counts."""
    projects = open_client().projects()
    if fmt == "json":
        emit_json([{**p, "last_created": iso(p["last_created"])} for p in projects])
        return
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for head in ("PROJECT", "RUNS", "RUNNING", "FAILED", "LAST RUN"):
        table.add_column(head)
    for p in projects:
        table.add_row(
            esc(p["name"]), str(p["runs"]), str(p["running"]), str(p["failed"]), short_time(p["last_created"])
        )
    console().print(table)


def _failure_summary(failure: dict[str, Any]) -> str:
    """The failure's headline: its exception and message, the message left out when it has
    none (``KeyboardInterrupt``); for a process that printed no exception (stopped at the
    ``--timeout``, killed at the memory limit or by a signal) how it ended, in the runner's
    words — never a bare ``:`` (issue 29: "failure :" on every run killed from outside)."""
    exception, message = failure.get("exception"), failure.get("message")
    if exception:
        return f"{exception}: {message}" if message else str(exception)
    how = [str(failure.get("end_reason") or "ended")]
    if failure.get("exit_code") is not None:
        how.append(f"exit code {failure['exit_code']}")
    number = failure.get("signal")
    if isinstance(number, int) and number > 0:
        try:
            how.append(signals.Signals(number).name)
        except ValueError:
            how.append(f"signal {number}")
    if failure.get("category"):
        how.append(f"looks like {failure['category']}")
    return "no exception printed (" + ", ".join(how) + ")"
