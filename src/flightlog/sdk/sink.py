"""Where the shipper sends journal records: the embedded store, or a server over HTTP.

One sink per destination per process, shared by every run of the process: opening and
closing a SQLite connection per run costs milliseconds (closing the last connection
checkpoints the WAL), which a process creating thousands of runs would feel.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from flightlog.config import Settings
from flightlog.store.base import IngestResult

__all__ = ["Sink", "open_sink", "close_sinks"]


class Sink(Protocol):
    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult: ...
    def close(self) -> None: ...


_sinks: dict[tuple[str, str | None], Sink] = {}
_lock = threading.Lock()


def open_sink(settings: Settings) -> Sink:
    key = (settings.url or settings.store_uri, settings.token)
    with _lock:
        sink = _sinks.get(key)
        if sink is None:
            sink = _sinks[key] = _build(settings)
        return sink


def close_sinks() -> None:
    """Close every sink of this process (at exit, once the runs' last records are shipped)."""
    with _lock:
        sinks = list(_sinks.values())
        _sinks.clear()
    for sink in sinks:
        try:
            sink.close()
        except Exception:
            pass


def _build(settings: Settings) -> Sink:
    if settings.url:
        from flightlog.transport import open_remote_sink  # type: ignore[import-not-found,unused-ignore]

        remote: Sink = open_remote_sink(settings)
        return remote
    from flightlog.store.registry import open_store

    return open_store(settings.store_uri)


def _forget_after_fork() -> None:
    global _lock
    _lock = threading.Lock()
    _sinks.clear()  # a child must not share its parent's connections


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
