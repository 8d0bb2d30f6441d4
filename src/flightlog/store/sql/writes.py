"""The SQL store's writes: ingest, and the few direct changes to a run (status, attempt, note, delete).

Apart from the reads because they change runs: ingest (what writers ship; the work itself is
``ingest.py``, this is its entry and its transaction) and the edits that go around the journal
(a run's end, a resumed attempt, a note, deleting runs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.models import TERMINAL_STATUSES, Note
from flightlog.store.base import IngestResult
from flightlog.store.sql.core import SqlCore, parts
from flightlog.store.sql.ingest import apply_batches

__all__ = ["SqlWrites"]

#: what deleting a run deletes besides its row
_RUN_TABLES = (
    "params",
    "tags",
    "notes",
    "context",
    "metric_series",
    "metric_chunks",
    "log_chunks",
    "spans",
    "stage_stats",
    "resource_samples",
    "artifacts",
    "counters",
    "evidence",
    "ingested",
    "run_writers",
)


class SqlWrites(SqlCore):
    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult:
        if not records:
            return IngestResult()
        return self.ingest_batches([records])[0]

    def ingest_batches(self, batches: Sequence[Sequence[dict[str, Any]]]) -> list[IngestResult]:
        """Several batches (a server's concurrent requests) in one transaction, one result each:
        the commit, the run locks and the statements of the append kinds are shared by all."""
        if not any(batches):
            return [IngestResult() for _ in batches]
        runs = sorted({str(rec.get("r")) for batch in batches for rec in batch if isinstance(rec, dict)})
        return self.db.ingest_transaction(runs, lambda conn: apply_batches(conn, batches, self.dialect))

    def update_run(self, run_id: str, **fields: Any) -> None:
        allowed = {"status", "end_reason", "ended", "exit_code", "signal", "failure"}
        bad = set(fields) - allowed
        if bad:
            raise InvalidInput(f"cannot update run fields {sorted(bad)}; allowed: {sorted(allowed)}")
        if "failure" in fields and fields["failure"] is not None:
            fields["failure"] = json.dumps(fields["failure"])
        sets = ", ".join(f"{k}=?" for k in fields)
        with self.db.write() as conn:
            conn.execute(f"UPDATE runs SET {sets}, updated=? WHERE id=?", (*fields.values(), time.time(), run_id))

    def claim_attempt(self, run_id: str, seen: int, *, host: str, pid: int, started: float) -> int | None:
        """A compare-and-set on (attempt, ended status): of several processes resuming one run at
        once, one gets the next attempt and the others None. The row is marked running by the
        claimer at once, so a resumer that reads it after the claim sees a live owner."""
        ended = sorted(TERMINAL_STATUSES)
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE runs SET attempt=?, status='running', started=?, ended=NULL, end_reason=NULL, exit_code=NULL, "
                f"signal=NULL, host=?, pid=?, updated=? WHERE id=? AND attempt=? AND status IN ({', '.join('?' for _ in ended)})",
                (seen + 1, started, host, pid, time.time(), run_id, seen, *ended),
            )
            return seen + 1 if int(cur.rowcount) == 1 else None

    def add_note(self, run_id: str, text: str, author: str | None = None) -> Note:
        now = time.time()
        with self.db.write() as conn:
            note_id = self.dialect.insert_id(
                conn, "INSERT INTO notes(run_id, time, author, text) VALUES(?, ?, ?, ?)", (run_id, now, author, text)
            )
        return Note(note_id, run_id, now, author, text)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        ids = list(run_ids)
        if not ids:
            return 0
        deleted = 0
        with self.db.write(append=True) as conn:
            for part in parts(ids):
                where, args = self.dialect.any_of("run_id", part)
                for table in _RUN_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE {where}", args)
                where, args = self.dialect.any_of("id", part)
                deleted += conn.execute(f"DELETE FROM runs WHERE {where}", args).rowcount
        return deleted
