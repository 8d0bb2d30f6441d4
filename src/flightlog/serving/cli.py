"""``flightlog serving predictions|stats|replicas|drift|diagnose ENDPOINT``: serving evidence at the
terminal; and ``flightlog diagnose --deployment ENDPOINT``, the same diagnosis as a mode of
diagnose's command that serving adds through the feature table (``flightlog_command_modes``)."""

from __future__ import annotations

import json
from typing import Any

import click

from flightlog.cli.common import open_client, short_time
from flightlog.cli.output import clip, console, emit_json, esc, format_option
from flightlog.client import Client
from flightlog.serving.reading import aggregates, predictions, replicas
from flightlog.serving.versions import version_stats
from flightlog.timefmt import iso

__all__ = ["deployment_mode", "diagnose_cmd", "serving_group"]


@click.group("serving")
def serving_group() -> None:
    """Serving evidence: sampled predictions, per-minute aggregates, replicas."""


def _client() -> Any:
    return Client()


_TIMES = ("time", "started", "heartbeat", "ended", "labeled_at", "first", "last")


def _cell(key: str, value: Any) -> str:
    """One table cell: times to the second, latencies to 0.01 ms, other numbers rounded for reading
    (0.00209, 4.57, 1234; the JSON keeps every digit), outputs as compact JSON."""
    if value is None:
        return ""
    if key in _TIMES and isinstance(value, (int, float)):
        return short_time(value)
    if isinstance(value, float):
        if key.endswith("_rate"):
            return f"{value:.2%}"
        if key.endswith("_ms"):
            return f"{value:.2f}" if abs(value) < 1000 else f"{value:.0f}"
        if abs(value) < 1:
            return f"{value:.3g}"
        return f"{value:.2f}" if abs(value) < 1000 else f"{value:.0f}"
    if isinstance(value, (dict, list)):
        return clip(json.dumps(value, separators=(",", ":"), default=str), 60)
    return str(value)


def _emit(
    rows: list[dict[str, Any]],
    fmt: str,
    columns: list[str],
    empty: str,
    headers: dict[str, str] | None = None,
) -> None:
    if fmt == "json":
        for row in rows:
            for key in _TIMES:
                if isinstance(row.get(key), (int, float)):
                    row[key] = iso(row[key])
        click.echo(json.dumps(rows, default=str))
        return
    if not rows:
        console().print(empty)
        return
    from rich.table import Table

    table = Table(*((headers or {}).get(c, c) for c in columns), box=None)
    for row in rows:
        table.add_row(*(esc(_cell(c, row.get(c))) for c in columns))
    console().print(table)


def _where(env: str | None, since: str | None) -> str:
    return (f" in {env!r}" if env else "") + (f" since {since}" if since else "")


_HINT = " (replicas are runs tagged serving.endpoint: serving.attach(endpoint=...))"

_fmt = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
_project = click.option("--project", default=None, help="Only this project's replicas.")
_env = click.option("--env", default=None, help="Only the replicas of this environment (prod, staging).")


@serving_group.command("predictions")
@click.argument("endpoint")
@click.option("--since", default=None, help="Only records newer than this (10m, 2h, an ISO time).")
@click.option(
    "--limit", type=click.IntRange(min=0), default=None, help="Only the newest N records (0, the default: all)."
)
@_project
@_env
@_fmt
def predictions_cmd(
    endpoint: str, since: str | None, limit: int | None, project: str | None, env: str | None, fmt: str
) -> None:
    """Sampled prediction records of ENDPOINT, labels joined by request id."""
    with _client() as client:
        rows = predictions(client, endpoint, since, project=project, limit=limit or None, env=env)
    _emit(
        rows,
        fmt,
        ["time", "request_id", "version", "status", "latency_ms", "output", "label"],
        f"no prediction records for {endpoint!r}" + _where(env, since) + _HINT,
    )


@serving_group.command("stats")
@click.argument("endpoint")
@click.option("--since", default=None, help="Only minutes newer than this (10m, 2h, an ISO time).")
@click.option(
    "--by",
    type=click.Choice(["minute", "version"]),
    default="minute",
    show_default=True,
    help="One row per version and minute, or one per version: its totals over the window.",
)
@_project
@_env
@_fmt
def stats_cmd(endpoint: str, since: str | None, by: str, project: str | None, env: str | None, fmt: str) -> None:
    """Latency and error rates of ENDPOINT over every replica: per version and minute, or per
    version over the window (--by version: requests, 5xx and 4xx rates, p50/p95/p99, throughput,
    the exception types of its 5xx)."""
    with _client() as client:
        rows = aggregates(client, endpoint, since, project=project, env=env)
    empty = (
        f"no aggregates for {endpoint!r}"
        + _where(env, since)
        + " (a minute is written once it is over, or when its replica stops)"
        + _HINT
    )
    if by == "version":
        totals = [v.to_dict() for v in version_stats(rows)]
        if fmt != "json":
            for row in totals:
                row["error_types"] = _types(row["error_types"])
        _emit(
            totals,
            fmt,
            [
                "version",
                "requests",
                "error_rate",
                "client_error_rate",
                "p50_ms",
                "p95_ms",
                "p99_ms",
                "throughput_per_min",
                "first",
                "last",
                "error_types",
            ],
            empty,
            headers={
                "error_rate": "5xx",
                "client_error_rate": "4xx",
                "throughput_per_min": "req/min",
                "error_types": "5xx types",
            },
        )
        return
    for row in rows:
        row["minute_start"] = iso(row["minute"] * 60.0) if fmt == "json" else short_time(row["minute"] * 60.0)
        if fmt != "json":
            row["error_types"] = _types(row["error_types"])
    _emit(
        rows,
        fmt,
        [
            "version",
            "minute_start",
            "requests",
            "errors",
            "client_errors",
            "error_rate",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "replicas",
        ],
        empty,
        headers={"errors": "5xx", "client_errors": "4xx", "error_rate": "5xx rate"},
    )


def _types(counts: dict[str, int]) -> str:
    """``ValueError 3, HTTP 503 1`` (the JSON keeps the mapping)."""
    return ", ".join(f"{k} {n}" for k, n in counts.items())


@serving_group.command("replicas")
@click.argument("endpoint")
@_project
@_env
@_fmt
def replicas_cmd(endpoint: str, project: str | None, env: str | None, fmt: str) -> None:
    """The replicas of ENDPOINT as they report themselves: serving or gone."""
    with _client() as client:
        rows = replicas(client, endpoint, project=project, env=env)
    _emit(
        rows,
        fmt,
        ["replica", "version", "env", "state", "status", "started", "heartbeat"],
        f"no replicas of {endpoint!r}{_where(env, None)}{_HINT}",
    )


@serving_group.command("drift")
@click.argument("endpoint")
@click.option("--since", default="1h", show_default=True, help="The live window: 10m, 2h, an ISO time.")
@click.option("--version", "version", default=None, help="Only this version (default: every version that served).")
@_project
@_env
@_fmt
def drift_cmd(endpoint: str, since: str, version: str | None, project: str | None, env: str | None, fmt: str) -> None:
    """Each input feature of ENDPOINT live against its version's training data: the test, the
    verdict, and the two distributions side by side (successful requests only; a field of mixed
    types is judged on its majority type, the rest is type drift)."""
    # cost: the data stack (pyarrow, scipy), only for this command
    from flightlog.serving.drift import endpoint_drift

    with _client() as client:
        doc = endpoint_drift(client, endpoint, env=env, since=since, version=version, project=project)
    if fmt == "json":
        click.echo(json.dumps(doc, default=str))
        return
    render_drift(doc)


def _dist(summary: dict[str, Any] | None) -> str:
    """A distribution in one cell: ``mean 100 p5 67 p50 100 p95 133`` or ``BR 30% US 50% DE 20%``."""
    if not summary:
        return ""
    if summary.get("kind") == "numeric":
        return " ".join(
            f"{k} {_cell(k, summary.get(k))}" for k in ("mean", "p5", "p50", "p95") if summary.get(k) is not None
        )
    return " ".join(f"{t['value']} {t['share']:.0%}" for t in summary.get("top") or [])


def render_drift(doc: dict[str, Any]) -> None:
    from rich.table import Table

    out = console()
    if not doc["versions"]:
        out.print(f"no prediction records for {doc['endpoint']!r} since {doc['since']}{_HINT}")
        return
    for v in doc["versions"]:
        run = f" (training run {str(v['training_run'])[:12]})" if v.get("training_run") else ""
        out.print(
            f"[bold]version {esc(v['version'])}[/]{esc(run)}: {v['rows']} sampled records of successful requests"
            + (f", {v['failed']} of failed requests left out" if v["failed"] else "")
        )
        if v["features"]:
            table = Table("feature", "test", "statistic", "threshold", "drifted", "training", "live", box=None)
            for f in v["features"]:
                stat = f["statistic"]
                live = _dist(f.get("live"))
                if f["test"] == "type":
                    live = ", ".join(f"{n} {t}" for t, n in (f.get("types") or {}).items())
                table.add_row(
                    esc(f["feature"]),
                    f["test"],
                    "" if stat is None else f"{stat:.3g}",
                    f"{f['threshold']:.3g}",
                    "[bold red]yes[/]" if f["drifted"] else "no",
                    esc(_dist(f.get("training"))) if f["test"] != "type" else "",
                    esc(live),
                )
            out.print(table)
        for note in v["notes"]:
            out.print(f"  [dim]{esc(note)}[/]")


_DIAGNOSE_HELP = (
    "Walk back from a production change to the training behind it: what changed in production "
    "and when, the versions before and after, what differs in their training (docs/models.md)."
)


def _diagnose_deployment(endpoint: str, env: str | None, since: str, project: str | None, fmt: str) -> None:
    # cost: a diagnosis only (it reads the data stack)
    from flightlog.serving.diagnosis import diagnose_deployment
    from flightlog.serving.render import render_deployment_diagnosis  # (as above)

    report = diagnose_deployment(open_client(), endpoint, env=env, since=since, project=project)
    if fmt == "json":
        emit_json(report)
        return
    render_deployment_diagnosis(report, console())


@serving_group.command("diagnose", help=_DIAGNOSE_HELP)
@click.argument("endpoint")
@click.option("--env", metavar="ENV", help="Its environment (needed when it has several).")
@click.option("--since", default="24h", show_default=True, help="Look back this far (2h, an ISO time).")
@click.option("--project", "-p", help="Only this project's deployment and replicas.")
@format_option
def diagnose_cmd(endpoint: str, env: str | None, since: str, project: str | None, fmt: str) -> None:
    _diagnose_deployment(endpoint, env, since, project, fmt)


@click.command("diagnose-deployment")
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
def deployment_mode(deployment: str, env: str | None, since: str, project: str | None, fmt: str) -> None:
    """``flightlog diagnose --deployment ENDPOINT``: `diagnose_cmd` as a mode of diagnose's command."""
    _diagnose_deployment(deployment, env, since, project, fmt)
