"""Shared CLI plumbing: opening the client, addressing runs, status colours."""

from __future__ import annotations

from typing import Any

import click

from flightlog.cli.output import styled
from flightlog.timefmt import format_duration, is_epoch

__all__ = ["open_client", "STATUS_STYLE", "status_text", "duration_text", "short_time"]

STATUS_STYLE = {
    "running": "bold cyan",
    "succeeded": "green",
    "failed": "bold red",
    "crashed": "bold red",
    "killed": "red",
    "stopped": "yellow",
    "created": "dim",
    "queued": "dim",
}


def open_client(ctx: click.Context | None = None, *, reconcile: bool = True) -> Any:
    """The command's Client, opened once per invocation. It reconciles when it opens (a dead
    owner's run then reads ``crashed``: ``flightlog.journal.reconcile``), except for a command
    that settles journals itself (``flightlog sync``: ``reconcile=False``)."""
    from flightlog.client import Client

    ctx = ctx or click.get_current_context()
    root = ctx.find_root()
    if root.obj is None:
        root.obj = {}
    client = root.obj.get("client")
    if client is None:
        home = root.params.get("home")
        client = Client(home=home, reconcile=reconcile) if home else Client(reconcile=reconcile)
        root.obj["client"] = client
        root.call_on_close(client.close)
    return client


def status_text(status: str) -> str:
    """The status as rich markup, in its colour (a status this version does not know: plain)."""
    return styled(status, STATUS_STYLE.get(status))


def duration_text(seconds: float | None) -> str:
    return format_duration(seconds)


def short_time(ts: float | None) -> str:
    """Local time to the second, for tables; ``-`` for no time or one no calendar can show."""
    if ts is None or not is_epoch(ts):
        return "-"
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
