"""``flightlog sync``: ship what was never shipped, from every journal under FLIGHTLOG_HOME.

Safe to run at any time and any number of times: ingest is idempotent on (run, writer, seq),
so records shipped twice are counted once. A damaged tail is reported and skipped; every
record before it is shipped. Each record passes the same check as the server's ingest
(`flightlog.schema.check_record`): a bad one is skipped and reported, never the batch around it.

A journal is removed once it has nothing left to give: its writer ended cleanly, or its
process is gone, and every record was shipped; or it holds no record at all. The owner's
journal of a run whose process died without an end record marks the run ``crashed``
(``end_reason: lost``) first; any other writer's (a rank of a distributed job, an attached
process) is marked lost on the run with a ``writer_lost`` record, which ends a run of peer
ranks once its last rank is settled (``store/sql/ranks.py``). :func:`settle_dead_writers` does
the same for one run's writers on this host, from a surviving rank as it exits. A store that cannot take the records (a full disk) stops the
sync with that error; what was shipped before it is marked, and the rest stays in the journal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flightlog.errors import StoreUnavailable
from flightlog.journal.files import JournalFile, list_journals
from flightlog.journal.format import MAGIC, read_records
from flightlog.journal.liveness import process_alive
from flightlog.schema import Bad, check_record
from flightlog.schema import record as schema_record

if TYPE_CHECKING:
    from flightlog.store.base import Store  # what it replays into: a type only (the store sits above the journal)

__all__ = ["SyncReport", "sync", "settle_dead_writers", "journal_header", "header_alive"]

HEADER_BYTES = 64 << 10  # enough for a writer's header and its first records

BATCH_RECORDS = 2000
# a journal with no record yet is left alone this long: its writer may be between creating
# the file and its first append
EMPTY_GRACE_S = 10.0


@dataclass
class SyncReport:
    journals: int = 0
    records_shipped: int = 0
    duplicates: int = 0
    removed: int = 0
    crashed_runs: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    active: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "journals": self.journals,
            "records_shipped": self.records_shipped,
            "duplicates": self.duplicates,
            "removed": self.removed,
            "crashed_runs": self.crashed_runs,
            "damaged": self.damaged,
            "skipped": self.skipped,
            "active_writers": self.active,
        }


def sync(
    home: Path,
    store: Store,
    *,
    run_id: str | None = None,
    keep: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SyncReport:
    report = SyncReport()
    journals = list_journals(home, run_id)
    for index, journal in enumerate(journals):
        report.journals += 1
        _sync_one(journal, store, report, keep=keep)
        if progress:
            progress(index + 1, len(journals))
    return report


def _sync_one(journal: JournalFile, store: Store, report: SyncReport, *, keep: bool) -> None:
    try:
        data = journal.path.read_bytes()
    except OSError as exc:
        report.damaged.append(f"{journal.path}: cannot read ({exc})")
        return
    result = read_records(data)
    if result.damage is not None:
        report.damaged.append(result.damage.describe(str(journal.path)))
    if not result.records:
        if result.damage is None and not keep and _idle(journal, EMPTY_GRACE_S):
            journal.remove()  # nothing to ship, and no writer is coming back to it
            report.removed += 1
        return
    offset = journal.shipped_offset()
    todo = [(end, rec) for end, rec in result.records if end > offset]
    for start in range(0, len(todo), BATCH_RECORDS):
        batch = todo[start : start + BATCH_RECORDS]
        _ship(journal, store, [rec for _, rec in batch], report)
        _mark_shipped(journal, batch[-1][0])
    records = [rec for _, rec in result.records]
    ended = any(r.get("k") == "writer_end" for r in records)
    header = next((r for r in records if r.get("k") == "writer"), None)
    alive = not ended and header is not None and header_alive(header)
    if alive:
        report.active += 1
        return
    if not ended and header is not None and header.get("owner"):
        _mark_lost(store, journal.run_id, records, report)
    elif not ended and header is not None and not header.get("forked"):
        _mark_writer_lost(store, journal, records, report)
    if result.damage is None and not keep:
        journal.remove()
        report.removed += 1


def _ship(journal: JournalFile, store: Store, records: list[dict[str, Any]], report: SyncReport) -> None:
    good = []
    for rec in records:
        try:
            check_record(rec)
        except Bad as exc:
            seq = rec.get("s") if isinstance(rec, dict) else None
            report.skipped.append(f"{journal.path.name}: record {seq!r}: {exc}")
            continue
        good.append(rec)
    outcome = store.ingest(good)
    report.records_shipped += outcome.applied
    report.duplicates += outcome.duplicates
    report.skipped.extend(outcome.skipped)


def _mark_shipped(journal: JournalFile, offset: int) -> None:
    try:
        journal.mark_shipped(offset)
    except OSError as exc:  # the records are in the store; a later sync re-sends them, counted once
        raise StoreUnavailable(
            f"cannot record what was shipped from {journal.path} ({exc.strerror or exc}); "
            "free space on that disk and run `flightlog sync` again (records already shipped are not duplicated)"
        ) from exc


def _idle(journal: JournalFile, seconds: float) -> bool:
    try:
        return journal.path.stat().st_mtime < time.time() - seconds
    except FileNotFoundError:
        return False


def _mark_lost(store: Store, run_id: str, records: list[dict[str, Any]], report: SyncReport) -> None:
    try:
        run = store.get_run(run_id)
    except Exception:
        return
    if run.is_finished:
        return
    last = max((float(r["t"]) for r in records if isinstance(r.get("t"), (int, float))), default=time.time())
    store.update_run(run_id, status="crashed", end_reason="lost", ended=last)
    report.crashed_runs.append(run_id)


def _mark_writer_lost(store: Store, journal: JournalFile, records: list[dict[str, Any]], report: SyncReport) -> None:
    """A writer that is not the run's owner vanished: say so on the run, once (the record's
    writer id and sequence are derived from the lost writer's, so a second sync is a duplicate)."""
    last = max((float(r["t"]) for r in records if isinstance(r.get("t"), (int, float))), default=time.time())
    lost = schema_record(
        "writer_lost",
        r=journal.run_id,
        w=f"lost-{journal.writer_id}"[:128],
        s=1,
        t=time.time(),
        writer=journal.writer_id,
        at=last,
        reason="its process is gone and its journal has no end",
    )
    outcome = store.ingest([lost])
    report.skipped.extend(outcome.skipped)


def journal_header(journal: JournalFile) -> dict[str, Any] | None:
    """A journal's `writer` record, read from its first bytes only (None: none there yet)."""
    try:
        with open(journal.path, "rb") as f:
            data = f.read(HEADER_BYTES)
    except OSError:
        return None
    if len(data) <= len(MAGIC):
        return None
    found = read_records(data).records
    return next((rec for _, rec in found if rec.get("k") == "writer"), None)


def header_alive(header: dict[str, Any]) -> bool:
    """Whether the process a `writer` record describes still runs (another host's: assumed so)."""
    return process_alive(
        header.get("pid"),
        header.get("t"),
        header.get("host"),
        process_start=_number(header.get("pstart")),
        boot=_number(header.get("boot")),
    )


def settle_dead_writers(home: Path, store: Any, run_id: str, *, skip: str | None = None) -> list[str]:
    """Ship the journals of ``run_id``'s writers on this host whose processes are gone without
    an end (other than the owner's and forked children's), marking each lost on the run; the
    writer ids settled. ``store`` needs only ``ingest`` (a sink will do). Never raises: a
    surviving rank calls it as it exits, and ``flightlog sync`` settles whatever is left."""
    settled: list[str] = []
    for journal in list_journals(home, run_id):
        if journal.writer_id == skip:
            continue
        header = journal_header(journal)
        if header is None or header.get("owner") or header.get("forked") or header_alive(header):
            continue
        try:
            _sync_one(journal, store, SyncReport(), keep=False)
        except Exception:  # noqa: BLE001 - best effort: `flightlog sync` settles it later
            continue
        settled.append(journal.writer_id)
    return settled


def _number(value: Any) -> float | None:
    """A header's number, or None (journals from before it, or a damaged field)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
