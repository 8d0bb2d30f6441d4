"""One job, one run: how the ranks of a distributed job meet in one run without being told its id.

``flightlog.init()`` in each rank of ``torchrun --nproc_per_node N train.py`` (no
``FLIGHTLOG_RUN_ID``, no ``id=``) derives the run id from the project and the launcher's job key
(``flightlog.launchenv``): the same on every rank and every host, so the ranks meet without
talking to each other. The ranks are **peers**: each joins the run (none owns it), records its
own end, and the store ends the run once every rank has ended (``store/sql/ranks.py``).

A key is not always unique over time: a static rendezvous (``--master-port``) run twice on
several nodes gives two jobs one key. So before joining, a rank looks at the run its key names
(where the store can be asked): a run that already has this rank of this restart, ranks of
another world size, or that ended before this process started, belongs to another job, and the
rank tries the key's next generation (``<key> #2``, ``#3``, …) — which every rank of the second
job reaches the same way. Moving on is said on stderr and as a notice event on both runs. A
newer restart of the launcher (``TORCHELASTIC_RESTART_COUNT``) is the same job: it joins and
begins the run's next attempt.

Where the store cannot be asked (offline, unreachable), a rank joins the key's first run; the
store's own checks then flag a mixed job on the run (``store/sql/ranks.py``).
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from flightlog.config import RankIdentity, Settings
from flightlog.errors import FlightlogError, NotFound, StoreUnavailable
from flightlog.ids import new_run_id
from flightlog.journal import list_journals
from flightlog.journal.sync import journal_header, settle_dead_writers
from flightlog.logevents import LogBatch
from flightlog.models import RankInfo, RunInfo
from flightlog.schema import record
from flightlog.schema.values import log_chunk_payload
from flightlog.sdk.sink import open_sink
from flightlog.timefmt import iso

if TYPE_CHECKING:
    from flightlog.store.base import Store

__all__ = [
    "Join",
    "derived_run_id",
    "join_job",
    "judge",
    "launching_run",
    "named_run_taken",
    "notice_records",
    "settle_dead_peers",
    "MAX_GENERATIONS",
]

MAX_GENERATIONS = 20


def derived_run_id(project: str, job_key: str, generation: int = 1) -> str:
    """The run id of a job: 32 hex digits (as a random id), the same for every rank."""
    text = f"flightlog job\0{project}\0{job_key}" + (f"\0{generation}" if generation > 1 else "")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class Join:
    """Where a rank records: the run, its attempt, and the runs it passed over (with why)."""

    run_id: str
    attempt: int
    passed: list[tuple[str, str]] = field(default_factory=list)  # (run id, why it is another job's)
    unknown: str | None = None  # why the store could not be asked, if it could not


def judge(
    identity: RankIdentity, attempt: int, run: RunInfo | None, ranks: list[RankInfo], started: float
) -> str | None:
    """Why this rank (of ``attempt``, its process started at ``started``) is not one of ``run``'s
    job, or None when it may join: the reasons of the module doc."""
    if run is None:
        return None
    restart = identity.restart_count
    for r in ranks:
        if r.rank != identity.rank:
            continue
        if r.attempt == attempt and r.restart == restart:
            return (
                f"it already has rank {identity.rank} of restart {restart} "
                f"(host {r.host or '?'}, pid {r.pid or '?'}, {r.state})"
            )
        if (r.attempt, r.restart) > (attempt, restart):
            return f"it already has rank {identity.rank} of a later restart ({r.restart})"
    newer = max(((r.attempt, r.restart) for r in ranks), default=(0, 0)) < (attempt, restart)
    sizes = sorted({r.world_size for r in ranks if r.attempt == attempt and r.world_size is not None})
    if identity.world_size is not None and sizes and identity.world_size not in sizes:
        return f"its ranks have a world size of {', '.join(map(str, sizes))}, this rank {identity.world_size}"
    if run.is_finished and not newer and run.ended is not None and started > run.ended:
        return f"it ended ({run.status}, {iso(run.ended)}) before this process started"
    return None


def join_job(settings: Settings, identity: RankIdentity, project: str, *, started: float) -> Join:
    """The run this rank records into (the module doc): the first generation of its job key
    whose run is not another job's."""
    key = identity.job_key
    assert key is not None
    attempt = identity.restart_count + 1
    passed: list[tuple[str, str]] = []
    if settings.mode != "online":
        return Join(derived_run_id(project, key), attempt, unknown="offline")
    try:
        lookups = _Lookups(settings)
    except FlightlogError as exc:
        return Join(derived_run_id(project, key), attempt, unknown=str(exc))
    try:
        for generation in range(1, MAX_GENERATIONS + 1):
            run_id = derived_run_id(project, key, generation)
            try:
                run, ranks = lookups.read(run_id)
            except (StoreUnavailable, FlightlogError) as exc:
                return Join(run_id, attempt, passed, unknown=str(exc))
            why = judge(identity, attempt, run, ranks, started)
            if why is None:
                return Join(run_id, attempt, passed)
            passed.append((run_id, why))
    finally:
        lookups.close()
    return Join(new_run_id(), attempt, passed, unknown=f"{MAX_GENERATIONS} runs of this job key are taken")


def named_run_taken(settings: Settings, identity: RankIdentity, run_id: str, *, started: float) -> str | None:
    """Why the run a user named for the job (``FLIGHTLOG_RUN_ID``, ``init(id=...)``) looks like
    another job's (the rank joins it all the same: it was asked to), or None."""
    if settings.mode != "online":
        return None
    try:
        lookups = _Lookups(settings)
    except FlightlogError:
        return None
    try:
        run, ranks = lookups.read(run_id)
    except FlightlogError:
        return None
    finally:
        lookups.close()
    return judge(identity, identity.restart_count + 1, run, ranks, started)


def launching_run(settings: Settings) -> str | None:
    """The run this process's parent has open on this host (its journal's header names the
    parent as the run's owner), or None: Lightning's rank 0 starts the other ranks itself, after
    its own run began, so they join that run (``flightlog.launchenv``)."""
    ppid, host = os.getppid(), socket.gethostname()
    for journal in list_journals(settings.home):
        header = journal_header(journal)
        if header and header.get("pid") == ppid and header.get("host") == host and header.get("owner"):
            return journal.run_id
    return None


class _Lookups:
    """Reads through the connection the run's records ship through next (as ``init(id=...)``
    does), or a Client of the server's."""

    def __init__(self, settings: Settings) -> None:
        # opened only by a rank that looks its job's run up, as `init(id=...)` does (sdk/api.py):
        # `import flightlog` stays without the Client and the store's code
        from flightlog.client import Client

        shipping = None if settings.url else cast("Store", open_sink(settings))
        self.client = Client.for_lookups(settings, shipping)

    def read(self, run_id: str) -> tuple[RunInfo | None, list[RankInfo]]:
        try:
            run = self.client.run(run_id, exact=True)
        except NotFound:
            return None, []
        return run, self.client.ranks(run_id, all_attempts=True)

    def close(self) -> None:
        self.client.close()


def notice_records(
    moved_to: str, passed: list[tuple[str, str]], identity: RankIdentity, *, t: float
) -> list[dict[str, Any]]:
    """One warning event on each run passed over, and one on the run joined, saying why (the
    writer ids and sequence numbers are derived from the runs, so that N ranks saying the
    same thing leave one event)."""

    def event(run_id: str, writer: str, message: str) -> dict[str, Any]:
        batch = LogBatch()
        batch.append(t, "sdk", 30, message, component="flightlog.ranks", rank=identity.rank,
                     attempt=identity.restart_count + 1)  # fmt: skip
        return record("logs", r=run_id, w=writer, s=1, t=t, **log_chunk_payload(batch))

    out = []
    for run_id, why in passed:
        out.append(
            event(
                run_id,
                f"jobs-{moved_to[:16]}",
                f"another job with the same job key ({identity.job_key}) records into run {moved_to}, not into this "
                f"one: {why}",
            )
        )
    reasons = "; ".join(f"run {run_id}: {why}" for run_id, why in passed)
    out.append(
        event(
            moved_to,
            f"jobs-{passed[0][0][:16]}",
            f"this job records here and not into the run(s) its job key ({identity.job_key}) named first, which "
            f"belong to another job: {reasons}. Give each job its own rendezvous id (torchrun --rdzv-id) or "
            "FLIGHTLOG_RUN_ID.",
        )
    )
    return out


def settle_dead_peers(settings: Settings, run_id: str, own_writer: str | None) -> None:
    """As a rank ends: ship the journals of this host's ranks of the run whose processes are
    gone without an end (SIGKILL, os._exit), marking them lost, so that the run's end can be
    derived without waiting for a `flightlog` command on this host. Never raises."""
    try:
        settle_dead_writers(settings.home, open_sink(settings), run_id, skip=own_writer)
    except Exception:  # noqa: BLE001 - `flightlog sync` and the next Client settle them later
        pass
