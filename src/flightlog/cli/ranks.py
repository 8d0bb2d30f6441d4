"""``flightlog ranks RUN``: the ranks of a distributed run, one row each.

Rank, host, state, last step, last heartbeat, exit, first error: what tells which rank failed,
which vanished and which only waited. ``--format json`` prints the list of
``models.RankInfo.to_dict()`` (the same objects as ``GET /api/v1/runs/{run}/ranks``).
``--stacks`` adds where each rank was when it last stalled (its hang evidence: the stall, the
main thread's innermost frames, its last collectives), what ``diagnose`` read the culprit from.
"""

from __future__ import annotations

import signal as signals
import time
from typing import Any

import click

from flightlog.cli.common import open_client, short_time
from flightlog.cli.output import clip, console, emit_json, esc, format_option, styled
from flightlog.launchenv import ranks_text
from flightlog.models import RankInfo
from flightlog.resources.agent.stacks import current_stacks
from flightlog.timefmt import format_duration

__all__ = ["ranks_cmd", "ranks_line"]

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
@click.option(
    "--stacks", is_flag=True, help="Also where each rank was when it stalled: its main thread and last collectives."
)
@format_option
def ranks_cmd(run: str, all_attempts: bool, stacks: bool, fmt: str) -> None:
    """Show the ranks of a distributed run: host, state, last step, heartbeat, exit, first error.

    \b
    A rank is one process of the job (torchrun, srun, mpirun, DeepSpeed, Accelerate): one that
    called flightlog.init(), or one that `flightlog run -- torchrun …` saw its launcher start
    (the last step then needs the SDK). `hung`: its hang watch says it stalled. `lost`: it
    vanished without an end (SIGKILL, the OOM killer, os._exit): its process is gone, or nothing
    was heard from it for 30 s, or its run ended without it. Logs of one rank: flightlog logs
    RUN --rank N.
    """
    client = open_client()
    info = client.run(run)
    ranks = client.ranks(info, all_attempts=all_attempts)
    evidence = _hang_evidence(client, info.id) if stacks else {}
    if fmt == "json":
        docs = [r.to_dict() for r in ranks]
        if stacks:
            for doc in docs:
                doc["hang_evidence"] = evidence.get(doc["rank"])
        emit_json(docs)
        return
    if not ranks:
        click.echo(
            f"run {info.id} has no ranks: it is not a distributed run, or its processes neither called "
            "flightlog.init() nor ran under `flightlog run -- <launcher> …` (the run's output: flightlog logs RUN)",
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
    if stacks:
        _print_stacks(ranks, evidence)


def ranks_line(ranks: list[RankInfo], culprit: int | None = None, alike: list[int] | None = None) -> str:
    """The ranks in one line (``flightlog runs show``): how many, their launcher, the culprit
    first where the runner named one — else the ranks that failed alike (``failure.culprit.alike``)
    — then each state with the ranks in it (counted past a few).

    The culprit leads because the ranks that waited for it often end the same way (a collective
    times out, exit 1): grouped by state alone, ``ranks 0 and 1 failed`` hides which one to read.
    So do the ranks that failed alike, where no rank caused it: ``ranks 0, 1 and 2 failed`` hid
    which of them had the shared error and which only waited (issue 28).
    """
    if not ranks:
        return "-"
    world = next((r.world_size for r in ranks if r.world_size is not None), None)
    launcher = next((r.launcher for r in ranks if r.launcher), None)
    head = f"{len(ranks)}" + (f" of {world}" if world is not None and world != len(ranks) else "")
    head += f" ({launcher})" if launcher else ""
    parts = []
    leading: list[RankInfo] = []
    first = next((r for r in ranks if r.rank == culprit), None) if culprit is not None else None
    if first is not None:
        how = _exit_words(first)
        parts.append(f"rank {first.rank} {first.state}" + (f" ({how})" if how else "") + ", the culprit")
        leading.append(first)
    elif alike:
        leading = [r for r in ranks if r.rank in set(alike)]
        if leading:
            parts.append(_alike_part(leading))
    by_state: dict[str, list[RankInfo]] = {}
    for r in ranks:
        if not any(r is lead for lead in leading):
            by_state.setdefault(r.state, []).append(r)
    for state in ("failed", "lost", "hung", "killed", "stopped", "running", "succeeded"):
        members = by_state.pop(state, [])
        if members:
            parts.append(_state_part(state, members, everyone=not leading and len(members) == len(ranks)))
    parts.extend(_state_part(state, members, everyone=False) for state, members in by_state.items())
    return f"{head}: " + "; ".join(parts)


def _alike_part(members: list[RankInfo]) -> str:
    """``ranks 0 and 2 failed alike (exit 1)``: the ranks that failed with one error, none the
    culprit; each one's end where they did not end the same way (one the launcher stopped)."""
    names = ranks_text([r.rank for r in members])
    ends = {(r.state, _exit_words(r)) for r in members}
    if len(ends) == 1:
        state, how = next(iter(ends))
        said = "" if state == "failed" else f" {state}"
        return f"{names} failed alike" + (
            f" ({said.strip()}{', ' if said and how else ''}{how})" if said or how else ""
        )
    each = ", ".join(f"rank {r.rank} {r.state}" + (f" {_exit_words(r)}" if _exit_words(r) else "") for r in members)
    return f"{names} failed alike ({each})"


def _state_part(state: str, members: list[RankInfo], *, everyone: bool) -> str:
    """``ranks 0 and 2 killed (SIGTERM)``: the ranks of one state, grouped by how they exited."""
    if everyone:
        return f"all {state}"
    if len(members) > 4:
        return f"{len(members)} {state}"
    by_exit: dict[str, list[int]] = {}
    for r in members:
        by_exit.setdefault(_exit_words(r), []).append(r.rank)
    return "; ".join(f"{ranks_text(ranks)} {state}" + (f" ({how})" if how else "") for how, ranks in by_exit.items())


def _exit_words(r: RankInfo) -> str:
    how = _exit(r)
    if how in ("-", "none", "0"):
        return ""
    return f"exit {how}" if how.lstrip("-").isdigit() else how


# ── --stacks: where each rank was when it stalled ─────────────────────────────────────────────

_FRAMES = 6  # innermost frames of the main thread shown per rank
_ENTRIES = 3  # last Flight Recorder entries shown per rank


def _hang_evidence(client: Any, run_id: str) -> dict[int, dict[str, Any]]:
    """Per rank, its latest ``stall``, ``stacks`` and ``flight_recorder`` evidence (docs/distributed.md)."""
    out: dict[int, dict[str, Any]] = {}
    for kind in ("stall", "stacks", "flight_recorder"):
        for item in client.evidence(run_id, kind=kind):
            data = item.get("data")
            rank = data.get("rank") if isinstance(data, dict) else None
            if isinstance(rank, int) and not isinstance(rank, bool):
                latest = out.setdefault(rank, {}).get(kind)
                if latest is None or (data.get("time") or 0) >= (latest.get("time") or 0):
                    out[rank][kind] = data
    return out


def _print_stacks(ranks: list[RankInfo], evidence: dict[int, dict[str, Any]]) -> None:
    out = console()
    shown = False
    for r in ranks:
        ev = evidence.get(r.rank) or {}
        if not ev:
            continue
        shown = True
        out.print(f"\n[bold]rank {r.rank}[/] {esc(r.host or '')} pid {r.pid if r.pid is not None else '-'}")
        stall = ev.get("stall")
        if isinstance(stall, dict):
            since, at = stall.get("since"), stall.get("time")
            took = (
                format_duration(float(at) - float(since))
                if isinstance(since, (int, float)) and isinstance(at, (int, float))
                else "?"
            )
            verb = "stalled" if stall.get("state") == "stalled" else "resumed after a stall"
            out.print(f"  {verb} at {short_time(at)}: no progress for {took}")
        recorder = ev.get("flight_recorder")
        if isinstance(recorder, dict):
            entries = [e for e in recorder.get("entries") or [] if isinstance(e, dict) and not e.get("p2p")]
            for e in entries[-_ENTRIES:]:
                retired = e.get("retired")
                state = "not completed" if retired is False else "completed" if retired else str(e.get("state") or "")
                out.print(f"  [dim]collective[/] {esc(str(e.get('op')))} #{e.get('seq')} ({esc(state)})")
        stacks = ev.get("stacks")
        threads = stacks.get("threads") if isinstance(stacks, dict) else None
        main = _main(threads if isinstance(threads, list) else [])
        if main is not None:
            frames = [f for f in main.get("frames") or [] if isinstance(f, dict)]
            then = "" if _still_current(r, ev) else " (it made progress after these: not where it is or ended)"
            out.print(f"  [dim]{esc(str(main.get('name') or 'main thread'))}, innermost frame last{then}:[/]")
            for f in frames[-_FRAMES:]:
                code = f"  {f.get('code')}" if f.get("code") else ""
                where = "{}:{} in {}".format(f.get("file"), f.get("line"), f.get("function"))
                out.print(f"    {esc(clip(where + code, 150))}")
    if not shown:
        click.echo("no rank has hang evidence (no rank stalled, or the hang watch was off)", err=True)


def _still_current(r: RankInfo, ev: dict[str, Any]) -> bool:
    """Whether the rank's latest stacks still say where it is: no progress came after them (its
    watch's ``resumed``, a step, a collective entered) — the rule ``diagnose`` quotes a rank's
    "where" by (``current_stacks``; issue 28)."""
    stacks, stall, recorder = ev.get("stacks"), ev.get("stall"), ev.get("flight_recorder")
    entries = recorder.get("entries") if isinstance(recorder, dict) else None
    entered = [e.get("time_created") for e in entries or [] if isinstance(e, dict)]
    return (
        current_stacks(
            [stacks] if isinstance(stacks, dict) else [],
            stalls=[stall] if isinstance(stall, dict) else [],
            progress_at=[r.last_step_time, *entered],
        )
        is not None
    )


def _main(threads: list[Any]) -> dict[str, Any] | None:
    dicts = [t for t in threads if isinstance(t, dict)]
    return next((t for t in dicts if t.get("name") == "MainThread"), dicts[0] if dicts else None)


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
