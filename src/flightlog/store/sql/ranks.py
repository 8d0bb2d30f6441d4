"""A run's writers and ranks at ingest (``run_writers``, migration 5), shared by both SQL stores.

Every `writer` record becomes one row: the process (host, pid, start), its rank in a
distributed job, its launcher's job key. The rows then follow the writer: any record of it is
a heartbeat (the batch's newest time), a `metrics` record moves its last step, an error event of
its rank sets its first error, its `writer_end` its own end (status, exit code, signal, failure),
a `writer_lost` from a peer or a sync marks it lost.

**Who ends a run whose ranks are peers.** Ranks that met in one run without a runner
(``flightlog.init()`` in each rank of ``torchrun``) all join it (a `run` record with
``peer``: the earliest start, the newest attempt) and none of them owns it. Its end is derived
here, each time a rank ends or is found lost: once every rank known for the run's current attempt
has ended, the run ends — ``failed`` if a rank failed (its exit code and failure, with its
rank), else ``crashed`` (``end_reason: lost``) if a rank vanished, else ``killed`` or ``stopped``
if a rank was signalled, else ``succeeded``. Counting the ranks that joined rather than the
world size lets a job that records from rank 0 only end with rank 0. A rank that joins after
that (a straggler, or a journal shipped late) opens the run again, with a notice saying so;
a rank of a newer restart (``TORCHELASTIC_RESTART_COUNT``) opens it as the next attempt.

**Bad input is kept, and said.** Two writers claiming one rank of one attempt and restart (two
jobs sharing a run id), ranks reporting different world sizes, a rank reaching a finished run:
each is kept (nothing recorded is dropped) and leaves a warning event on the run (component
``flightlog.ranks``), which ``flightlog logs`` and diagnosis read. The SDK avoids the first
where it can see the store (``sdk/ranks.py``); these notices catch what it could not see.

Everything is idempotent: the records are applied once per (run, writer, seq) by ingest, and
each statement here is a no-op when its effect is already there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from flightlog.logevents import LogBatch
from flightlog.schema.values import decode_log_chunk, log_chunk_payload
from flightlog.statuses import ACTIVE_STATUSES
from flightlog.store.sql.dialect import Dialect

__all__ = [
    "apply_writer",
    "apply_writer_end",
    "apply_writer_lost",
    "apply_peer_run",
    "note_heartbeats",
    "note_last_step",
    "note_first_errors",
    "error_line",
    "NOTICE_COMPONENT",
]

NOTICE_COMPONENT = "flightlog.ranks"
ERROR_LEVEL = 40
MAX_ERROR_LINE = 500
#: the order in which ranks' ends decide the run's: the first that any rank has wins
_RUN_END = (
    ("failed", "failed", None),
    ("crashed", "crashed", "lost"),
    ("lost", "crashed", "lost"),
    ("killed", "killed", "signal"),
    ("stopped", "stopped", "signal"),
)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=repr, allow_nan=True)


def _bool(value: Any) -> int:
    return 1 if value else 0


# ── the writer's row ────────────────────────────────────────────────────────────────────────
def apply_writer(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    run_id, writer, t = rec["r"], rec["w"], rec["t"]
    restart = rec.get("restart") or 0
    conn.execute(
        d.or_ignore(
            "INSERT INTO run_writers(run_id, writer, host, pid, pstart, boot, owner, forked, peer, attempt, rank, "
            "local_rank, world_size, node_rank, local_world_size, restart, launcher, job_key, started, heartbeat, "
            "received) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ),
        (
            run_id,
            writer,
            rec.get("host"),
            rec.get("pid"),
            rec.get("pstart"),
            rec.get("boot"),
            _bool(rec.get("owner")),
            _bool(rec.get("forked")),
            _bool(rec.get("peer")),
            rec.get("attempt") or 1,
            rec.get("rank"),
            rec.get("local_rank"),
            rec.get("world_size"),
            rec.get("node_rank"),
            rec.get("local_world_size"),
            restart,
            rec.get("launcher"),
            rec.get("job"),
            t,
            t,
            time.time(),
        ),
    )
    if rec.get("rank") is not None:  # a writer that became a rank after it began (Lightning's rank 0)
        conn.execute(
            "UPDATE run_writers SET rank=?, local_rank=?, world_size=?, node_rank=?, local_world_size=?, restart=?, "
            "launcher=?, job_key=? WHERE run_id=? AND writer=? AND rank IS NULL",
            (
                rec["rank"],
                rec.get("local_rank"),
                rec.get("world_size"),
                rec.get("node_rank"),
                rec.get("local_world_size"),
                restart,
                rec.get("launcher"),
                rec.get("job"),
                run_id,
                writer,
            ),
        )
    if rec.get("rank") is not None and not rec.get("forked"):
        _check_claims(conn, rec, d)


def _check_claims(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    """Another writer of the same rank, attempt and restart, or another world size: a notice."""
    run_id, rank, world = rec["r"], rec["rank"], rec.get("world_size")
    others = conn.execute(
        "SELECT writer, rank, host, pid, world_size, job_key FROM run_writers WHERE run_id=? AND writer<>? "
        "AND rank IS NOT NULL AND forked=0 AND attempt=? AND restart=?",
        (run_id, rec["w"], rec.get("attempt") or 1, rec.get("restart") or 0),
    ).fetchall()
    me = f"writer {rec['w']} (host {rec.get('host') or '?'}, pid {rec.get('pid') or '?'})"
    for writer, other_rank, host, pid, _, job in others:
        if other_rank == rank and (host, pid) != (rec.get("host"), rec.get("pid")):
            jobs = (
                f" with job keys {job!r} and {rec.get('job')!r}"
                if job != rec.get("job")
                else f" (job key {job!r})"
                if job
                else ""
            )
            _notice(
                conn,
                rec,
                f"rank {rank} of attempt {rec.get('attempt') or 1} (restart {rec.get('restart') or 0}) was claimed "
                f"twice: by writer {writer} (host {host or '?'}, pid {pid or '?'}) and by {me}{jobs}. Two jobs may "
                "share this run id: give each job its own (torchrun --rdzv-id, FLIGHTLOG_RUN_ID, or init(id=...)); "
                "both writers' records are kept, under their own writer ids.",
            )
            break
    sizes = sorted({int(o[4]) for o in others if o[4] is not None and o[4] != world})
    if world is not None and sizes:
        _notice(
            conn,
            rec,
            f"rank {rank} ({me}) reports a world size of {world}, but other ranks of this attempt report "
            f"{', '.join(map(str, sizes))}: these processes do not belong to one job of one size "
            f"(job key {rec.get('job')!r}). Their records are kept; check the launcher's arguments, or give each job "
            "its own run id.",
        )


def note_heartbeats(conn: Any, newest: dict[tuple[str, str], float], now: float) -> None:
    """Every record of a writer is a sign of life: its newest time, and when the store got it."""
    if newest:
        conn.cursor().executemany(
            "UPDATE run_writers SET heartbeat=CASE WHEN heartbeat IS NULL OR heartbeat < ? THEN ? ELSE heartbeat END, "
            "received=? WHERE run_id=? AND writer=?",
            [(t, t, now, r, w) for (r, w), t in newest.items()],
        )


def note_last_step(conn: Any, run_id: str, writer: str, step: int, at: float) -> None:
    conn.execute(
        "UPDATE run_writers SET last_step=?, last_step_time=? WHERE run_id=? AND writer=? "
        "AND (last_step IS NULL OR last_step <= ?)",
        (step, at, run_id, writer, step),
    )


# ── ends ────────────────────────────────────────────────────────────────────────────────────
def apply_writer_end(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    """The writer's own end: it wins over a `lost` mark a peer made while it was cut off."""
    status = rec.get("status")
    if status is None:  # a writer that only says it closed (the runner's, an older SDK's)
        conn.execute(
            "UPDATE run_writers SET ended=? WHERE run_id=? AND writer=? AND ended IS NULL",
            (rec["t"], rec["r"], rec["w"]),
        )
        return
    failure = rec.get("failure")
    conn.execute(
        "UPDATE run_writers SET ended=?, status=?, end_reason=?, exit_code=?, signal=?, failure=? "
        "WHERE run_id=? AND writer=?",
        (
            rec["t"],
            status,
            rec.get("end_reason"),
            rec.get("exit_code"),
            rec.get("signal"),
            _dumps(failure) if failure is not None else None,
            rec["r"],
            rec["w"],
        ),
    )
    first = failure.get("first_error") if isinstance(failure, dict) else None
    if isinstance(first, dict) and isinstance(first.get("message"), str) and first["message"].strip():
        # a writer that spoke for a rank after the fact (flightlog run's, runner/ranks.py) names the
        # rank's first error on its end: kept where the log events did not already give one
        at = first.get("time") if isinstance(first.get("time"), (int, float)) else rec["t"]
        conn.execute(
            "UPDATE run_writers SET first_error=?, first_error_time=? WHERE run_id=? AND writer=? "
            "AND first_error IS NULL",
            (error_line(first["message"]), at, rec["r"], rec["w"]),
        )
    _settle_if_peer(conn, rec["r"], rec["w"])


def apply_writer_lost(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    """Another writer vanished without its end (its process is gone): lost, unless it had ended."""
    run_id, lost = rec["r"], rec["writer"]
    row = conn.execute(
        "SELECT rank, host, pid, heartbeat, started, ended FROM run_writers WHERE run_id=? AND writer=?", (run_id, lost)
    ).fetchone()
    if row is None or row[5] is not None:
        return
    rank, host, pid, heartbeat, started, _ = row
    at = rec.get("at") or heartbeat or started
    conn.execute(
        "UPDATE run_writers SET ended=?, status='lost', end_reason='lost' WHERE run_id=? AND writer=? AND ended IS NULL",
        (at, run_id, lost),
    )
    if rank is not None:
        why = rec.get("reason") or "its process is gone"
        _notice(
            conn,
            {**rec, "rank": rank},
            f"rank {rank} (host {host or '?'}, pid {pid or '?'}) vanished without recording its end ({why}); "
            "it is lost (killed with SIGKILL, by the OOM killer, or os._exit)",
        )
    _settle_if_peer(conn, run_id, lost)


def _settle_if_peer(conn: Any, run_id: str, writer: str) -> None:
    row = conn.execute(
        "SELECT peer, forked, rank FROM run_writers WHERE run_id=? AND writer=?", (run_id, writer)
    ).fetchone()
    if row is not None and row[0] and not row[1] and row[2] is not None:
        _derive_run_end(conn, run_id)


def _derive_run_end(conn: Any, run_id: str) -> None:
    """End the run once every rank of its current attempt has ended (see the module doc)."""
    rows = conn.execute(
        "SELECT rank, attempt, restart, started, ended, status, end_reason, exit_code, signal, failure "
        "FROM run_writers WHERE run_id=? AND peer=1 AND forked=0 AND rank IS NOT NULL",
        (run_id,),
    ).fetchall()
    if not rows:
        return
    attempt = max(r[1] for r in rows)
    latest: dict[int, Any] = {}
    for r in rows:
        if r[1] == attempt and (r[0] not in latest or (r[2], r[3]) > (latest[r[0]][2], latest[r[0]][3])):
            latest[r[0]] = r
    ranks = list(latest.values())
    if any(r[4] is None for r in ranks):
        return
    run = conn.execute("SELECT owner, attempt FROM runs WHERE id=?", (run_id,)).fetchone()
    if run is None or run[0] is not None or (run[1] or 1) > attempt:
        return  # a process owns it (it sets the status), or a newer attempt began
    ranks.sort(key=lambda r: (r[4], r[0]))  # by end time: the first to fail is the one named
    status, reason = "succeeded", "exit"
    exit_code: int | None = 0
    signal: int | None = None
    failure: dict[str, Any] | None = None
    for rank_status, run_status, run_reason in _RUN_END:
        hit = next((r for r in ranks if (r[5] or "succeeded") == rank_status), None)
        if hit is not None:
            status, reason = run_status, run_reason or hit[6] or "exit"
            exit_code, signal = (hit[7], hit[8]) if rank_status != "lost" else (None, None)
            if hit[9]:
                failure = {**json.loads(hit[9]), "rank": hit[0]}
            break
    conn.execute(
        "UPDATE runs SET status=?, ended=?, end_reason=?, exit_code=?, signal=?, failure=? WHERE id=?",
        (
            status,
            max(r[4] for r in ranks),
            reason,
            exit_code,
            signal,
            _dumps(failure) if failure is not None else None,
            run_id,
        ),
    )


# ── the run, joined by a peer rank ──────────────────────────────────────────────────────────
def apply_peer_run(conn: Any, rec: dict[str, Any], d: Dialect, merge_timeline: Any) -> None:
    """A rank joins its job's run (module doc): never overwrites what an earlier rank set."""
    run_id, t = rec["r"], rec["t"]
    if rec.get("project"):
        conn.execute(d.or_ignore("INSERT INTO projects(name, created) VALUES(?, ?)"), (rec["project"], t))
    row = conn.execute("SELECT status, attempt, ended, owner FROM runs WHERE id=?", (run_id,)).fetchone()
    status, current, ended, owner = row[0], row[1] or 1, row[2], row[3]
    attempt = rec.get("attempt") or 1
    started = rec.get("started") if rec.get("started") is not None else t
    me = conn.execute(
        "SELECT rank, host, pid, job_key FROM run_writers WHERE run_id=? AND writer=?", (run_id, rec["w"])
    ).fetchone()
    who = f"rank {me[0]} (host {me[1] or '?'}, pid {me[2] or '?'})" if me and me[0] is not None else "a rank"
    if owner is not None:  # a process owns the run (a runner, a plain init): it alone sets its status
        if status not in ACTIVE_STATUSES:
            _notice(
                conn,
                {**rec, "rank": me[0] if me else None},
                f"{who} reached this run after it had ended ({status}); its records are kept, the run's status "
                "is its owner's",
            )
    elif status in ACTIVE_STATUSES or attempt > current:
        if status not in ACTIVE_STATUSES:  # a restart of the job (the launcher's restart count went up)
            _notice(
                conn,
                {**rec, "rank": me[0] if me else None},
                f"attempt {attempt} of the job began ({who} of the launcher's restart {attempt - 1}); "
                f"attempt {current} had ended {status}",
                level="info",
            )
        conn.execute(
            # the project of the rank that made the run (a run that existed keeps its own)
            "UPDATE runs SET project=CASE WHEN status='created' THEN COALESCE(?, project) ELSE project END, "
            "name=COALESCE(name, ?), parent_id=COALESCE(parent_id, ?), "
            "status='running', attempt=?, "
            "created=CASE WHEN created IS NULL OR created > ? THEN ? ELSE created END, "
            "queued=CASE WHEN queued IS NULL OR queued > ? THEN ? ELSE queued END, "
            "started=CASE WHEN ? OR started IS NULL OR started > ? THEN ? ELSE started END, "
            "ended=NULL, end_reason=NULL, exit_code=NULL, signal=NULL, "
            "failure=CASE WHEN ? THEN NULL ELSE failure END WHERE id=?",
            (
                rec.get("project"),
                rec.get("name"),
                rec.get("parent_id"),
                max(attempt, current),
                rec.get("created", t),
                rec.get("created", t),
                rec.get("queued"),
                rec.get("queued"),
                attempt > current,
                started,
                started,
                attempt > current,
                run_id,
            ),
        )
    elif attempt == current:
        began = (rec.get("timeline") or {}).get("process_start", started)
        if ended is None or began > ended:  # it began after the run had ended: not a slow peer
            _notice(
                conn,
                {**rec, "rank": me[0] if me else None},
                f"{who} reached this run after it had ended ({status}"
                + (f" at {_clock(ended)}" if ended else "")
                + "), and its process began after that: it belongs to another job that shares this run id"
                + (f" (job key {me[3]!r})" if me and me[3] else "")
                + ", or to this job's next attempt without a restart count. The run is running again until its "
                "ranks end; give each job its own run id (torchrun --rdzv-id, FLIGHTLOG_RUN_ID).",
            )
        # else a peer whose first records arrived after the others' ends (a slow start, a journal
        # shipped late): the run's end is derived again at its own
        conn.execute(
            "UPDATE runs SET status='running', ended=NULL, end_reason=NULL, exit_code=NULL, signal=NULL WHERE id=?",
            (run_id,),
        )
    else:
        _notice(
            conn,
            {**rec, "rank": me[0] if me else None},
            f"{who} of attempt {attempt} reached this run after attempt {current} had begun; "
            "its records are kept under attempt " + str(attempt),
        )
    timeline = dict(rec.get("timeline") or {})
    start = timeline.pop("process_start", None)
    if start is not None:  # the earliest rank's start is the job's
        timeline["first_process_start"] = start
    if timeline:
        merge_timeline(conn, run_id, timeline)


# ── first errors ────────────────────────────────────────────────────────────────────────────
def note_first_errors(conn: Any, rec: dict[str, Any]) -> None:
    """The first error event of each rank in a log chunk that holds one (``maxlvl``), kept on
    the rank's row when it is earlier than what the row has. Events say their rank (launcher
    prefixes, C1); an event without one is its writer's rank's."""
    if int(rec.get("maxlvl") or 0) < ERROR_LEVEL:
        return
    rows = conn.execute(
        "SELECT writer, rank, attempt, restart, started, first_error_time, forked FROM run_writers "
        "WHERE run_id=? AND rank IS NOT NULL",
        (rec["r"],),
    ).fetchall()
    if not rows:
        return
    own = next((r[1] for r in rows if r[0] == rec["w"]), None)
    ranks = [r for r in rows if not r[6]]
    batch = decode_log_chunk(bytes(rec["data"]))
    first: dict[int, tuple[float, str, int]] = {}
    for i, level in enumerate(batch.level):
        if level < ERROR_LEVEL:
            continue
        rank = batch.rank[i] if batch.rank[i] is not None else own
        t = batch.time[i]
        if rank is not None and (rank not in first or t < first[rank][0]):
            first[rank] = (t, batch.message[i], batch.attempt[i])
    for rank, (t, message, attempt) in first.items():
        row = _row_at(ranks, rank, attempt, t)
        if row is None or (row[5] is not None and row[5] <= t):
            continue
        conn.execute(
            "UPDATE run_writers SET first_error=?, first_error_time=? WHERE run_id=? AND writer=? "
            "AND (first_error_time IS NULL OR first_error_time > ?)",
            (error_line(message), t, rec["r"], row[0], t),
        )


def _row_at(rows: Sequence[Any], rank: int, attempt: int, t: float) -> Any:
    """The row of ``rank`` an event at ``t`` of ``attempt`` belongs to: its newest restart
    that had started by then (the first one, for an event from before any)."""
    mine = [r for r in rows if r[1] == rank and r[2] == attempt] or [r for r in rows if r[1] == rank]
    if not mine:
        return None
    begun = [r for r in mine if r[4] <= t + 1.0]
    return max(begun, key=lambda r: (r[3], r[4])) if begun else min(mine, key=lambda r: r[4])


def error_line(message: str) -> str:
    """The line of an error event that says what went wrong: a traceback's last line (the
    exception), else its first line; at most MAX_ERROR_LINE characters."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if any(line.startswith("Traceback (most recent call last)") for line in lines) else lines[0]
    return line if len(line) <= MAX_ERROR_LINE else line[: MAX_ERROR_LINE - 1] + "…"


# ── notices ─────────────────────────────────────────────────────────────────────────────────
def _notice(conn: Any, rec: dict[str, Any], message: str, *, level: str = "warning") -> None:
    """A warning event on the run, from the store (writer ``flightlog-ranks``)."""
    batch = LogBatch()
    batch.append(
        float(rec["t"]),
        "sdk",
        30 if level == "warning" else 20,
        message,
        component=NOTICE_COMPONENT,
        rank=rec.get("rank"),
        attempt=int(rec.get("attempt") or 1),
    )
    p = log_chunk_payload(batch)
    conn.execute(
        "INSERT INTO log_chunks(run_id, writer, n, first_time, last_time, max_level, attempts, data) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
        (rec["r"], "flightlog-ranks", p["n"], p["t0"], p["t1"], p["maxlvl"], p["attempts"], p["data"]),
    )


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t)) + " UTC"
