"""``flightlog ranks RUN``: the ranks of a distributed run, one row each.

Rank, host, state, last step, last heartbeat, exit, first error: what tells which rank failed,
which vanished and which only waited. ``--format json`` prints the list of
``models.RankInfo.to_dict()`` (the same objects as ``GET /api/v1/runs/{run}/ranks``).
"""

from __future__ import annotations

import signal as signals
import time

import click

from flightlog.cli.common import open_client, short_time
from flightlog.cli.output import clip, console, emit_json, esc, format_option, styled
from flightlog.models import RankInfo
from flightlog.timefmt import format_duration

__all__ = ["ranks_cmd"]

STATE_STYLE = {
    "running": "bold cyan",
    "succeeded": "green",
    "failed": "bold red",
    "lost": "bold red",
    "hung": "bold magenta",
    "killed": "red",
    "stopped": "yellow",
}


@click.command("ranks")
@click.argument("run")
@click.option("--all", "all_attempts", is_flag=True, help="Every attempt and restart, not only the current ones.")
@format_option
def ranks_cmd(run: str, all_attempts: bool, fmt: str) -> None:
    """Show the ranks of a distributed run: host, state, last step, heartbeat, exit, first error.

    \b
    A rank is one process of the job (torchrun, srun, mpirun, DeepSpeed, Accelerate) that
    called flightlog.init(). `lost` is a rank that vanished without an end (SIGKILL, the OOM
    killer, os._exit): its process is gone, or nothing was heard from it for 30 s, or its run
    ended without it. Logs of one rank: flightlog logs RUN --rank N.
    """
    client = open_client()
    info = client.run(run)
    ranks = client.ranks(info, all_attempts=all_attempts)
    if fmt == "json":
        emit_json([r.to_dict() for r in ranks])
        return
    if not ranks:
        click.echo(
            f"run {info.id} has no ranks: it is not a distributed run, or its processes did not call "
            "flightlog.init() (under `flightlog run -- torchrun …` the ranks' output is in `flightlog logs RUN`)",
            err=True,
        )
        return
    from rich.table import Table

    now = time.time()
    several = len({(r.attempt, r.restart) for r in ranks}) > 1
    table = Table(box=None, header_style="bold", pad_edge=False)
    heads = ["RANK", "HOST", "PID", "STATE", "LAST STEP", "HEARTBEAT", "EXIT", "FIRST ERROR"]
    if several:
        heads.insert(1, "ATTEMPT")
    for head in heads:
        table.add_column(head, no_wrap=head != "FIRST ERROR", overflow="fold")
    for r in ranks:
        cells = [
            _rank_label(r),
            esc(r.host or "-"),
            str(r.pid) if r.pid is not None else "-",
            styled(r.state, STATE_STYLE.get(r.state)),
            _step(r, now),
            _ago(r.last_heartbeat, now),
            _exit(r),
            esc(clip(r.first_error["message"], 120)) if r.first_error and r.first_error.get("message") else "-",
        ]
        if several:
            cells.insert(1, f"{r.attempt}" + (f" (restart {r.restart})" if r.restart else ""))
        table.add_row(*cells)
    console().print(table)
    world = {r.world_size for r in ranks if r.world_size is not None}
    missing = _missing(ranks, world)
    if missing:
        click.echo(
            f"ranks never seen: {missing} (they did not call flightlog.init(), or their records have not arrived)",
            err=True,
        )


def _rank_label(r: RankInfo) -> str:
    return f"{r.rank}/{r.world_size}" if r.world_size is not None else str(r.rank)


def _step(r: RankInfo, now: float) -> str:
    if r.last_step is None:
        return "-"
    return f"{r.last_step} ({_ago(r.last_step_time, now)})" if r.last_step_time else str(r.last_step)


def _ago(t: float | None, now: float) -> str:
    if t is None:
        return "-"
    age = now - t
    if age < 0 or age > 86400:
        return short_time(t)
    return format_duration(age) + " ago"


def _exit(r: RankInfo) -> str:
    if r.signal is not None:
        try:
            return signals.Signals(r.signal).name
        except ValueError:
            return f"signal {r.signal}"
    if r.exit_code is not None:
        return str(r.exit_code)
    return "-" if r.state in ("running", "hung") else "none" if r.state == "lost" else "-"


def _missing(ranks: list[RankInfo], world: set[int]) -> str:
    """The ranks below the world size that no writer recorded (rank 0 only logging, or late)."""
    if len(world) != 1:
        return ""
    size = next(iter(world))
    seen = {r.rank for r in ranks}
    absent = [str(i) for i in range(size) if i not in seen]
    if not absent or len(absent) == size - 1 and seen == {0}:
        return ""  # a job that records from rank 0 only
    return ", ".join(absent[:20]) + (", …" if len(absent) > 20 else "")
