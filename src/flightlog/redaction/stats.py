"""How many redaction passes this process made, by record kind: a diagnostic counter.

The promise of the package is that each record is redacted once where it is formed (and once
more at server ingest, see the package docstring). That is easy to break silently — a new
call site that redacts again costs time and changes nothing visible — so every pass is
counted here, and the tests in ``tests/redaction`` assert the counts for each write path.
A pass over a user-string record counts 1 under its kind (``params``, ``note``, …); a pass
over log events counts each event under ``logs``.

Counting is a dict update under a lock: a few hundred nanoseconds for a record, and a log
batch counts once for all its events.
"""

from __future__ import annotations

import threading

__all__ = ["count_pass", "stats", "reset_stats"]

_lock = threading.Lock()
_passes: dict[str, int] = {}


def count_pass(kind: str, n: int = 1) -> None:
    """Record ``n`` redaction passes over records (or log events) of ``kind``."""
    with _lock:
        _passes[kind] = _passes.get(kind, 0) + n


def stats() -> dict[str, int]:
    """The passes made so far in this process, by kind (a copy)."""
    with _lock:
        return dict(_passes)


def reset_stats() -> None:
    with _lock:
        _passes.clear()
