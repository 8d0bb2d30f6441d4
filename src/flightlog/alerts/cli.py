"""``flightlog alerts ls | history | rules check | rules ls | test | silence | silences |
unsilence | watch``."""

from __future__ import annotations

import getpass
import sys
import time
from typing import Any

import click

from flightlog.cli.common import open_client, short_time
from flightlog.cli.output import console, emit_json, esc, format_option
from flightlog.errors import InvalidInput
from flightlog.timefmt import parse_duration

__all__ = ["alerts_group"]


def _alert_store() -> Any:
    from flightlog.alerts.stores import open_alert_store

    return open_alert_store(open_client().store)


@click.group("alerts")
def alerts_group() -> None:
    """Alerts worth waking up for: rules, states, silences (docs/alerting.md).

    \b
    Check:    flightlog alerts rules check flightlog.alerts.yaml
    Try:      flightlog alerts test flightlog.alerts.yaml --run RUN
    Live:     flightlog run --alerts flightlog.alerts.yaml -- python train.py
    """


@alerts_group.command("ls")
@click.option("--state", type=click.Choice(["pending", "firing", "resolved"]), help="Only alerts in this state.")
@click.option("--run", "run_ref", metavar="RUN", help="Only alerts about this run (its alert history).")
@click.option("--project", "-p", help="Only alerts of this project.")
@click.option("--rule", help="Only alerts of this rule.")
@click.option("--limit", "-n", type=click.IntRange(min=0), default=100, show_default=True)
@format_option
def alerts_ls(
    state: str | None, run_ref: str | None, project: str | None, rule: str | None, limit: int, fmt: str
) -> None:
    """List alerts, newest first: what is firing, pending, and what was resolved."""
    run_id = open_client().run(run_ref).id if run_ref else None
    alerts = _alert_store().alerts(state=state, run_id=run_id, project=project, rule=rule, limit=limit)
    if fmt == "json":
        emit_json([a.to_dict() for a in alerts])
        return
    from flightlog.alerts.render import alerts_table

    alerts_table(alerts, empty="no alerts match" if (state or run_ref or project or rule) else "no alerts yet")


@alerts_group.command("history")
@click.option("--run", "run_ref", metavar="RUN", help="Only the history of alerts about this run.")
@click.option("--limit", "-n", type=click.IntRange(min=0), default=200, show_default=True, help="The latest events.")
@format_option
def alerts_history(run_ref: str | None, limit: int, fmt: str) -> None:
    """What happened to alerts: pending, firing, resolved, silenced, notified, notify_failed."""
    run_id = open_client().run(run_ref).id if run_ref else None
    events = _alert_store().events(run_id=run_id, limit=limit)
    if fmt == "json":
        emit_json(events)
        return
    from flightlog.alerts.render import events_table

    events_table(events)


@alerts_group.group("rules")
def rules_group() -> None:
    """Check and list rules files."""


@rules_group.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@format_option
def rules_check(file: str, fmt: str) -> None:
    """Check a rules file: every problem with its line and field; exit 1 when there is one."""
    from flightlog.alerts.config import load_config
    from flightlog.alerts.yamlsource import RulesFileError

    try:
        config = load_config(file)
    except RulesFileError as exc:
        if fmt == "json":
            emit_json({"file": file, "ok": False, "problems": exc.details["problems"], "rules": [], "notifiers": []})
        else:
            for p in exc.problems:
                click.echo(p.render(file), err=True)
            click.echo(f"{file}: {len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''}", err=True)
        sys.exit(1)
    missing = config.missing_env()
    doc = {
        "file": file,
        "ok": True,
        "problems": [],
        "warnings": [w.to_dict(file) for w in config.warnings],
        "rules": [r.to_dict() for r in config.rules],
        "notifiers": [{"name": n.name, "kind": n.kind, "target": n.describe()} for n in config.notifiers],
        "missing_env": missing,
    }
    if fmt == "json":
        emit_json(doc)
        return
    out = console()
    out.print(
        f"[green]ok[/] {esc(file)}: {len(config.rules)} rule{'s' if len(config.rules) != 1 else ''}, "
        f"{len(config.notifiers)} notifier{'s' if len(config.notifiers) != 1 else ''}"
    )
    for r in config.rules:
        scope = f" (project {', '.join(r.projects)})" if r.projects else ""
        out.print(esc(f"  {r.name}: {r.kind}, {r.severity}{scope}"))
    for n in config.notifiers:
        out.print(esc(f"  notifier {n.name}: {n.describe()}"))
    for w in config.warnings:
        out.print(f"[yellow]warning:[/] {esc(w.render(file))}")
    if missing:
        out.print(f"[yellow]note:[/] not set here (needed where alerts are sent): {esc(', '.join(missing))}")


@rules_group.command("ls")
@click.option("--alerts", "file", metavar="FILE", help="This file instead of the discovered one.")
@format_option
def rules_ls(file: str | None, fmt: str) -> None:
    """The rules in effect here: --alerts FILE, else ./flightlog.alerts.yaml, else FLIGHTLOG_HOME/alerts.yaml."""
    from flightlog.alerts.config import discover, load_config

    path = discover(file, home=open_client().settings.home)
    config = load_config(path) if path else None
    if fmt == "json":
        emit_json({"file": str(path) if path else None, "rules": [r.to_dict() for r in config.rules] if config else []})
        return
    out = console()
    if config is None:
        out.print(
            "[dim]no rules file: write flightlog.alerts.yaml here or FLIGHTLOG_HOME/alerts.yaml (docs/alerting.md)[/]"
        )
        return
    out.print(esc(f"rules from {path}:"))
    for r in config.rules:
        out.print(esc(f"  {r.name}: {r.kind}, {r.severity} — {r.summary.text}"))


@alerts_group.command("test")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--run", "run_ref", metavar="RUN", required=True, help="The run to replay the rules against.")
@click.option(
    "--interval", metavar="DURATION", help="Evaluate this often in the run's time (default: settings.interval)."
)
@format_option
def alerts_test(file: str, run_ref: str, interval: str | None, fmt: str) -> None:
    """Evaluate FILE's rules against a recorded run: what would have fired, when, with what value.

    Nothing is stored and nothing is sent."""
    from flightlog.alerts.config import load_config
    from flightlog.alerts.replay import replay_run

    config = load_config(file)
    every = parse_duration(interval, what="--interval") if interval else None
    result = replay_run(open_client(), config, run_ref, interval=every)
    if fmt == "json":
        emit_json(result.to_dict())
        return
    from flightlog.alerts.render import replay_table

    replay_table(result)


@alerts_group.command("silence")
@click.argument("rule")
@click.option("--for", "duration", metavar="DURATION", required=True, help="How long: 30m, 2h, 1d.")
@click.option(
    "--labels",
    "labels",
    multiple=True,
    metavar="NAME=VALUE",
    help="Only alerts with these labels (globs allowed): run=3f2a9c, gpu=0; repeatable or comma-separated.",
)
@click.option("--comment", "-m", help="Why (shown by `alerts silences`).")
@click.option("--author", help="Who (default: your user name).")
@format_option
def alerts_silence(
    rule: str, duration: str, labels: tuple[str, ...], comment: str | None, author: str | None, fmt: str
) -> None:
    """Hold back the notifications of RULE (a name or a glob such as 'gpu-*') for a while.

    Silenced alerts still change state and are kept in the history."""
    from flightlog.alerts.silences import new_silence, parse_matchers

    seconds = parse_duration(duration, what="--for")
    silence = new_silence(rule, seconds, parse_matchers(labels), author=author or _user(), comment=comment)
    _alert_store().add_silence(silence)
    if fmt == "json":
        emit_json(silence.to_dict())
        return
    shown = f" with {', '.join(f'{k}={v}' for k, v in silence.matchers.items())}" if silence.matchers else ""
    console().print(
        esc(
            f"silence {silence.id}: {silence.rule}{shown} until {short_time(silence.ends)}"
            f" (end it early: flightlog alerts unsilence {silence.id})"
        )
    )


@alerts_group.command("silences")
@click.option("--all", "show_all", is_flag=True, help="Also the silences that have ended.")
@format_option
def alerts_silences(show_all: bool, fmt: str) -> None:
    """Silences in effect (and, with --all, those that ended)."""
    now = time.time()
    silences = _alert_store().silences(include_expired=show_all, now=now)
    if fmt == "json":
        emit_json([s.to_dict(now) for s in silences])
        return
    from flightlog.alerts.render import silences_table

    silences_table(silences, now)


@alerts_group.command("unsilence")
@click.argument("silence_id")
def alerts_unsilence(silence_id: str) -> None:
    """End a silence now."""
    from flightlog.errors import NotFound

    if not _alert_store().expire_silence(silence_id):
        raise NotFound(f"no silence {silence_id!r}: list them with `flightlog alerts silences --all`")
    console().print(esc(f"silence {silence_id} ended"))


@alerts_group.command("watch")
@click.option(
    "--alerts",
    "file",
    metavar="FILE",
    help="Rules file (default: ./flightlog.alerts.yaml, else FLIGHTLOG_HOME/alerts.yaml).",
)
@click.option(
    "--once",
    is_flag=True,
    help="One evaluation (runs running now and those that ended within the lookback), then exit.",
)
@click.option("--interval", metavar="DURATION", help="Override settings.interval.")
def alerts_watch(file: str | None, once: bool, interval: str | None) -> None:
    """Evaluate the rules over every run of the embedded store, live (for SDK runs without
    `flightlog run` and without a server). Ctrl-C stops it."""
    from flightlog.alerts.config import discover, load_config
    from flightlog.alerts.service import build_engine

    client = open_client()
    path = discover(file, home=client.settings.home)
    if path is None:
        raise InvalidInput(
            "no rules file: pass --alerts FILE, or write ./flightlog.alerts.yaml or FLIGHTLOG_HOME/alerts.yaml"
        )
    config = load_config(path)
    seconds = parse_duration(interval, what="--interval") if interval else config.settings.interval

    def say(message: str) -> None:
        click.echo(f"flightlog: {message}", err=True)

    engine, dispatcher = build_engine(client, config, say=say)
    say(f"watching every run with {len(config.rules)} rules from {path} (every {seconds:g}s)")
    try:
        while True:
            stats = engine.cycle()
            for change in stats.changes:
                if change.new in ("firing", "resolved"):
                    a = change.alert
                    say(f"{change.new}: {a.rule} {a.summary}")
            if once:
                break
            time.sleep(seconds)
    except KeyboardInterrupt:
        pass
    finally:
        dispatcher.close(20.0)


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None
