"""``flightlog sync``: ship what was never shipped, from every journal under FLIGHTLOG_HOME.

Safe to run at any time and any number of times: ingest is idempotent on (run, writer, seq),
so records shipped twice are counted once. A damaged tail is reported and skipped; every
record before it is shipped. A writer that ended cleanly and is fully shipped has its journal
removed; the owner's journal of a run whose process died without an end record marks the run
``crashed`` (``end_reason: lost``).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightlog.journal.files import JournalFile, list_journals
from flightlog.journal.format import read_records
from flightlog.store.base import Store

__all__ = ["SyncReport", "sync"]

BATCH_RECORDS = 2000


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
    offset = journal.shipped_offset()
    todo = [(end, rec) for end, rec in result.records if end > offset]
    for start in range(0, len(todo), BATCH_RECORDS):
        batch = todo[start : start + BATCH_RECORDS]
        outcome = store.ingest([rec for _, rec in batch])
        report.records_shipped += outcome.applied
        report.duplicates += outcome.duplicates
        report.skipped.extend(outcome.skipped)
        journal.mark_shipped(batch[-1][0])
    records = [rec for _, rec in result.records]
    ended = any(r.get("k") == "writer_end" for r in records)
    header = next((r for r in records if r.get("k") == "writer"), None)
    alive = header is not None and _writer_alive(header)
    if ended and result.damage is None and not keep:
        journal.remove()
        report.removed += 1
    elif alive:
        report.active += 1
    elif header is not None and header.get("owner") and not ended:
        _mark_lost(store, journal.run_id, records, report)


def _writer_alive(header: dict[str, Any]) -> bool:
    if header.get("host") != socket.gethostname():
        return True  # another machine's process: we cannot tell, so assume it lives
    import psutil

    pid, started = header.get("pid"), header.get("t")
    try:
        proc = psutil.Process(int(pid or 0))
        return not (started is not None and proc.create_time() > float(started) + 1)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def _mark_lost(store: Store, run_id: str, records: list[dict[str, Any]], report: SyncReport) -> None:
    try:
        run = store.get_run(run_id)
    except Exception:
        return
    if run.is_finished:
        return
    last = max((float(r.get("t", 0)) for r in records), default=time.time())
    store.update_run(run_id, status="crashed", end_reason="lost", ended=last)
    report.crashed_runs.append(run_id)
