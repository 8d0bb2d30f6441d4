"""A run's timeline (``runs.timeline``: named instants, JSON) merged inside an ingest transaction.

Several records of one batch merge instants into the same run's timeline: a short run's one
batch carries its ``run`` record (the process's start) and its metrics (the first and last
metric's times), each a read and a write of that column. While a batch is applied whole
(``ingest.apply_batches``: one savepoint, rolled back whole if any record breaks) the text
written or read here is remembered, so the next merge of the same run reads no row (issue
#32). Outside that block (a batch applied one record at a time, each record in a savepoint of
its own that may be rolled back alone) nothing is remembered and every merge reads its row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["merge_instants", "merged", "remembered", "known", "note", "dumps"]

_known: ContextVar[dict[str, str | None] | None] = ContextVar("flightlog_known_timelines", default=None)


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=repr, allow_nan=True)


def merge_instants(current: dict[str, float], instants: dict[str, float]) -> None:
    """A run's timeline merged with new instants: ``first_*`` keep the earliest, ``last_*`` the
    latest, the others the newest value."""
    for key, value in instants.items():
        old = current.get(key)
        if old is None:
            current[key] = value
        elif key.startswith("first_"):
            current[key] = min(old, value)
        elif key.startswith("last_"):
            current[key] = max(old, value)
        else:
            current[key] = value


@contextmanager
def remembered() -> Iterator[None]:
    """Within: timelines read or written are remembered (only around work that is rolled back
    whole or not at all: see the module doc)."""
    token = _known.set({})
    try:
        yield
    finally:
        _known.reset(token)


def known(run_ids: Iterable[str]) -> dict[str, str | None]:
    """The remembered timelines among ``run_ids`` (none outside :func:`remembered`)."""
    memo = _known.get()
    if not memo:
        return {}
    return {run_id: memo[run_id] for run_id in run_ids if run_id in memo}


def note(run_id: str, text: str | None) -> None:
    """``run_id``'s timeline as stored now (read or just written), remembered where that is on."""
    memo = _known.get()
    if memo is not None:
        memo[run_id] = text


def merged(conn: Any, run_id: str, instants: dict[str, float]) -> str:
    """``run_id``'s stored timeline merged with ``instants``, as the JSON text to write (and
    remembered as written: the caller writes it in the same transaction)."""
    memo = known((run_id,))
    if run_id in memo:
        text = memo[run_id]
    else:
        row = conn.execute("SELECT timeline FROM runs WHERE id=?", (run_id,)).fetchone()
        text = row[0] if row else None
    current: dict[str, float] = json.loads(text) if text else {}
    merge_instants(current, instants)
    out = dumps(current)
    note(run_id, out)
    return out
