"""``flightlog logs RUN``: the run's log events, with the habits of ``docker logs``.

Text output is one event per line: the message, then its structured fields as ``key=value``
(what a logging handler or ``run.log_event(fields=...)`` recorded), then a recorded traceback on
the lines below. Everything stored is passed through :func:`~flightlog.cli.output.printable`
on its way to the terminal, so a workload's escape sequences are shown, not obeyed.
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import emit_json, printable
from flightlog.errors import InvalidInput
from flightlog.logevents import level_code, level_name
from flightlog.timefmt import iso

__all__ = ["logs_cmd"]

POLL_INTERVAL = 0.25
COUNT_CAP = 10_000
"""At most this many events are read to say how many a run has when a filter matched none."""
_LEVEL_STYLE = {"warning": "\x1b[33m", "error": "\x1b[31m", "critical": "\x1b[1;31m"}


@click.command("logs")
@click.argument("run")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events until the run ends.")
@click.option("--tail", "-n", type=click.IntRange(min=0), help="Only the last N events.")
@click.option("--since", metavar="TIME", help="Events after a time: 10m, 2h, or 2026-11-30T12:00:00Z.")
@click.option("--until", metavar="TIME", help="Events before a time (same forms as --since).")
@click.option("--timestamps", "-t", is_flag=True, help="Prefix each event with its time.")
@click.option(
    "--level",
    "-l",
    metavar="LEVEL",
    help="This level and above: debug, info, warning, error, critical, or a number (30 = warning).",
)
@click.option("--grep", "-g", metavar="REGEX", help="Only events whose message matches (case-insensitive).")
@click.option("--component", metavar="NAME", help="Only events of this component (logger name).")
@click.option("--stream", type=click.Choice(["stdout", "stderr", "sdk"]), multiple=True, help="Only these streams.")
@click.option("--attempt", type=int, help="Only events of this attempt.")
@click.option("--stage", metavar="NAME", help="Only events recorded inside this stage.")
@click.option(
    "--rank", type=click.IntRange(min=0), help="Only events of this rank of a distributed run (see `flightlog ranks`)."
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", help="json: JSON Lines, one event per line."
)
def logs_cmd(
    run: str,
    follow: bool,
    tail: int | None,
    since: str | None,
    until: str | None,
    timestamps: bool,
    level: str | None,
    grep: str | None,
    component: str | None,
    stream: tuple[str, ...],
    attempt: int | None,
    stage: str | None,
    rank: int | None,
    fmt: str,
) -> None:
    """Print a run's log events (tracebacks are one event each).

    In a distributed run each event of a rank is shown after its rank (`[rank 1]`); --rank N
    keeps one rank's events."""
    client = open_client()
    info = client.run(run)
    color = fmt == "text" and sys.stdout.isatty()
    filters: dict[str, Any] = dict(
        level=level, grep=grep, component=component, stream=stream or None, attempt=attempt, stage=stage, rank=rank
    )
    if rank is not None and not client.ranks(info, all_attempts=True) and not client.logs(info, rank=rank, limit=1):
        raise InvalidInput(
            f"run {info.id} has no rank {rank}: it is not a distributed run (see `flightlog ranks {info.id[:8]}`)"
        )
    events = client.logs(info, since=since, until=until, limit=tail, tail=tail is not None, **filters)
    seen = _Printer(fmt, timestamps, color, run_id=info.id, project=info.project, ranks=rank is None)
    seen.print_all(events)
    if not follow:
        if not events and tail != 0:  # --tail 0 asked for nothing
            click.echo(_nothing_matched(client, info, since=since, until=until, **filters), err=True)
        return
    remote = getattr(client.store, "follow_logs", None)
    try:
        if remote is not None:  # remote mode: the server pushes new events (SSE) until the run ends
            start = seen.last_time if seen.last_time is not None else (time.time() if tail == 0 else since)
            for batch in remote(info.id, since=start, **filters):
                seen.print_all(batch)
            return
        while True:
            finished = client.run(info.id).is_finished
            new = client.logs(info, since=seen.last_time, **filters)
            seen.print_all(new)
            if finished:
                # one last read: the end record may have landed just before the last events
                seen.print_all(client.logs(info, since=seen.last_time, **filters))
                return
            time.sleep(POLL_INTERVAL)
    except KeyboardInterrupt:
        return


def _nothing_matched(
    client: Any, info: Any, *, level: str | None, since: str | None, until: str | None, **filters: Any
) -> str:
    """One line saying that no event matched, and what did: a silent empty output reads as
    "nothing was logged" (or as a broken command) when a filter only asked too much."""
    asked = [f"at level {level_name(level_code(level))} or above"] if level is not None else []
    asked += [f"{what} {filters[key]!r}" for key, what in (("grep", "matching"), ("component", "of component"),
              ("attempt", "of attempt"), ("stage", "in stage"), ("rank", "of rank")) if filters.get(key) is not None]  # fmt: skip
    if filters.get("stream"):
        asked.append("on " + "/".join(filters["stream"]))
    if since is not None or until is not None:
        asked.append("in that time range")
    if not asked:
        return f"no log events recorded for run {info.id}"
    every = client.logs(info, limit=COUNT_CAP + 1)
    if not every:
        return f"no log events recorded for run {info.id}"
    count = f"{COUNT_CAP}+" if len(every) > COUNT_CAP else str(len(every))
    hint = ""
    if level is not None and len(asked) == 1:
        below = [e.level for e in every if e.level < level_code(level)]
        hint = f"; try --level {level_name(max(below))}" if below else ""
    return f"no log events {', '.join(asked)} ({count} event{'s' * (count != '1')} in all{hint})"


class _Printer:
    """Prints events once, even when a poll returns events already printed (same timestamp)."""

    def __init__(
        self, fmt: str, timestamps: bool, color: bool, *, run_id: str, project: str, ranks: bool = True
    ) -> None:
        self.fmt, self.timestamps, self.color = fmt, timestamps, color
        self.run_id, self.project = run_id, project
        self.ranks = ranks  # show each event's rank (not when one rank was asked for)
        self.last_time: float | None = None
        self._at_last: set[tuple[Any, ...]] = set()

    def print_all(self, events: list[Any]) -> None:
        for event in events:
            key = (event.time, event.stream, event.message, event.attempt)
            if self.last_time is not None and (
                event.time < self.last_time or (event.time == self.last_time and key in self._at_last)
            ):
                continue
            if self.last_time is None or event.time > self.last_time:
                self.last_time = event.time
                self._at_last = set()
            self._at_last.add(key)
            self._print(event)
        sys.stdout.flush()

    def _print(self, event: Any) -> None:
        if self.fmt == "json":
            emit_json(event.to_dict(), lines=True)
            return
        text = event.message
        if event.stream == "sdk":  # recorded by the SDK, not printed by the workload: show its level
            prefix = f"{event.level_name.upper():8} "
            text = prefix + (f"{event.component}: {text}" if event.component else text)
        if self.ranks and event.rank is not None:  # a rank of a distributed run
            text = f"[rank {event.rank}] {text}"
        if self.timestamps:
            text = f"{iso(event.time)} {text}"
        text = printable(text + self._fields(event))
        if self.color and event.level_name in _LEVEL_STYLE:
            text = f"{_LEVEL_STYLE[event.level_name]}{text}\x1b[0m"
        sys.stdout.write(text + "\n")

    def _fields(self, event: Any) -> str:
        """The event's fields as `` key=value ...``, and a recorded traceback on its own lines.

        A field that only repeats what the event already says is left out: the envelope a JSON
        logging handler writes (its run, project, attempt, rank, stage; its time, shown by -t),
        and a ``key=value`` the message itself holds (a logfmt line kept whole)."""
        fields = dict(event.fields or {})
        traceback = fields.pop("exception", None)
        known = {
            "run_id": self.run_id,
            "project": self.project,
            "attempt": event.attempt,
            "rank": event.rank,
            "stage": event.stage,
            "level": event.level_name,
            "component": event.component,
            "message": event.message,
        }
        shown = []
        for key, value in fields.items():
            if key == "timestamp" or (key in known and known[key] == value):
                continue
            pair = f"{key}={_value(value)}"
            if pair not in event.message and f"{key}={value}" not in event.message:
                shown.append(pair)
        text = ("  " + " ".join(shown)) if shown else ""
        if isinstance(traceback, str) and traceback:
            text += "\n" + traceback
        elif traceback is not None:
            text += f" exception={_value(traceback)}"
        return text


_BARE = re.compile(r'[^\s="\\]+')


def _value(value: Any) -> str:
    """A field value as logfmt writes it: bare when it can be, else as JSON (quoted, escaped)."""
    if isinstance(value, str) and _BARE.fullmatch(value):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
