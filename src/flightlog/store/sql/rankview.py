"""Reading a run's ranks (``run_writers``) as ``models.RankInfo``, with each rank's state.

A rank's state is its own end when it recorded one (``succeeded``, ``failed``, ``stopped``,
``killed``), ``lost`` when it was marked so or when, without an end, it cannot be running any
more: its run has ended (or moved on to a newer attempt), its process is gone on this host
(``journal/liveness.py``), or the store has heard nothing from it for :data:`LOST_AFTER_S`
(a live writer sends something at least every few seconds, ``sdk/writer.py``). Otherwise
``running`` — or ``hung`` while the rank's hang watch says it stalled and it has not resumed
since (its latest ``stall`` evidence, the same process: docs/distributed.md).

By default a listing holds the run's current attempt, and for each rank its newest restart;
``all_attempts`` gives every row (older attempts and restarts, for a timeline).
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from flightlog.ids import is_observed_writer
from flightlog.journal.liveness import process_alive
from flightlog.models import RankInfo

__all__ = ["RANK_COLUMNS", "LOST_AFTER_S", "hung_ranks", "rank_infos", "rank_writers"]

#: Seconds without any record from a rank, after which a rank without an end reads ``lost``.
LOST_AFTER_S = 30.0

RANK_COLUMNS = (
    "writer, rank, local_rank, world_size, node_rank, local_world_size, host, pid, pstart, boot, attempt, "
    "restart, launcher, job_key, started, heartbeat, received, last_step, last_step_time, ended, status, "
    "end_reason, exit_code, signal, failure, first_error, first_error_time"
)
_STATE_OF_STATUS = {"crashed": "lost"}


def rank_infos(
    rows: list[Any],
    *,
    run_status: str | None,
    run_attempt: int,
    finished: bool,
    all_attempts: bool = False,
    now: float | None = None,
    hung: frozenset[tuple[int, int | None]] = frozenset(),
) -> list[RankInfo]:
    """``rows`` (of :data:`RANK_COLUMNS`, ranks only) as RankInfo, current attempt first chosen."""
    now = time.time() if now is None else now
    host = socket.gethostname()
    rows = _one_row_per_process(rows)
    if not all_attempts and rows:
        attempt = max(r[10] for r in rows)
        rows = [r for r in rows if r[10] == attempt]
        newest: dict[int, int] = {}
        for r in rows:
            newest[r[1]] = max(newest.get(r[1], r[11]), r[11])
        rows = [r for r in rows if r[11] == newest[r[1]]]
    out = [_info(r, run_attempt=run_attempt, finished=finished, host=host, now=now) for r in rows]
    for info in out:
        if info.state == "running" and (info.rank, info.pid) in hung:
            info.state = "hung"
    out.sort(key=lambda i: (i.attempt, i.rank, i.restart, i.started))
    return out


_END = slice(19, 25)  # ended, status, end_reason, exit_code, signal, failure
_FIRST_ERROR = slice(25, 27)  # first_error, first_error_time


def _one_row_per_process(rows: list[Any]) -> list[Any]:
    """A rank recorded both by its own SDK and by ``flightlog run`` on its behalf (an observed
    writer, runner/ranks.py) is one rank: its own row, with the end and first error the runner
    knew where its own has none (the launcher's exit code; a rank killed before its SDK could say)."""
    if not any(is_observed_writer(r[0]) for r in rows):
        return rows
    own: dict[tuple[Any, ...], list[Any]] = {}
    for r in rows:
        if not is_observed_writer(r[0]):
            own[(r[10], r[1], r[11], r[6], r[7])] = list(r)
    out: list[Any] = []
    for r in rows:
        if not is_observed_writer(r[0]):
            continue
        mine = own.get((r[10], r[1], r[11], r[6], r[7]))
        if mine is None:
            out.append(r)
            continue
        if r[20] is not None and (mine[20] is None or mine[20] == "lost"):
            mine[_END] = r[_END]
        if mine[25] is None and r[25] is not None:
            mine[_FIRST_ERROR] = r[_FIRST_ERROR]
    out.extend(tuple(r) for r in own.values())
    return out


def _info(r: Any, *, run_attempt: int, finished: bool, host: str, now: float) -> RankInfo:
    (writer, rank, local_rank, world, node, local_world, rhost, pid, pstart, boot, attempt, restart, launcher, job,
     started, heartbeat, received, last_step, last_step_time, ended, status, end_reason, exit_code, signal, failure,
     error, error_time) = r  # fmt: skip
    if status is not None:
        state = _STATE_OF_STATUS.get(status, status)
    elif ended is not None:
        state = "succeeded"  # it closed cleanly without saying more
    else:
        state = "lost" if _vanished(r, run_attempt=run_attempt, finished=finished, host=host, now=now) else "running"
    return RankInfo(
        rank=rank,
        local_rank=local_rank,
        world_size=world,
        host=rhost,
        pid=pid,
        restart=restart,
        state=state,
        started=started,
        last_heartbeat=heartbeat,
        last_step=last_step,
        last_step_time=last_step_time,
        exit_code=exit_code,
        signal=signal,
        first_error=None if error is None else {"message": error, "time": error_time},
        node_rank=node,
        local_world_size=local_world,
        attempt=attempt,
        launcher=launcher,
        job_key=job,
        writer=writer,
        ended=ended,
        end_reason=end_reason,
        failure=json.loads(failure) if failure else None,
        last_received=received,
    )


def _vanished(r: Any, *, run_attempt: int, finished: bool, host: str, now: float) -> bool:
    """A rank without an end that cannot be running any more (see the module doc)."""
    rhost, pid, pstart, boot, attempt, started, received = r[6], r[7], r[8], r[9], r[10], r[14], r[16]
    if finished or attempt < run_attempt:
        return True
    if rhost == host and pid and not process_alive(pid, started, rhost, process_start=pstart, boot=boot):
        return True
    return received is not None and now - received > LOST_AFTER_S


def hung_ranks(stalls: Any) -> frozenset[tuple[int, int | None]]:
    """(rank, pid) of the processes whose latest ``stall`` evidence (in time order) says stalled."""
    latest: dict[tuple[int, int | None], str] = {}
    for data in stalls:
        if isinstance(data, dict) and isinstance(data.get("rank"), int):
            latest[(data["rank"], data.get("pid"))] = str(data.get("state"))
    return frozenset(key for key, state in latest.items() if state == "stalled")


def rank_writers(conn: Any, run_id: str) -> dict[str, int]:
    """Writer id → rank, for the writers of ``run_id`` that belong to a rank (forked children
    of a rank included): empty for a run that is not distributed (one indexed lookup)."""
    return dict(
        conn.execute("SELECT writer, rank FROM run_writers WHERE run_id=? AND rank IS NOT NULL", (run_id,)).fetchall()
    )
