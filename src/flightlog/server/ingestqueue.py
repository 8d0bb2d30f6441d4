"""The server's ingest: one thread that applies the batches of concurrent requests together.

Why: a team's writers send a few hundred small batches a second (a metrics record and a logs
record of a few hundred points and lines each). Applied one request at a time, every batch pays
its own transaction, commit and statements — on PostgreSQL a dozen round trips — and the store,
not the data, sets the ceiling. Here a request's checked records join a queue and wait (without
holding a worker thread: the request awaits a future); one thread per server process takes
everything queued, up to ``max_records``, and applies it in one transaction with the store's
``ingest_batches`` (the append kinds of all the batches written with one statement per table,
``store/sql/appends.py``), then answers each request with its own result. Under light load a
batch is applied alone at once; as load grows, batches share transactions and the cost per
batch falls — the queue is also where load waits, instead of in a pool of blocked threads that
readers would then wait behind.

Nothing changes for a writer: each request is answered only once its records are committed,
with the counts of its own records (applied, duplicates, skipped); the order of a server's
requests is kept (the queue is first in, first out, and one thread applies it). Should a shared
transaction fail for a reason that is not one record's (records are skipped one by one inside
it), each batch is applied again alone, so one request's problem is never another's.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from flightlog.errors import StoreUnavailable
from flightlog.store.base import IngestResult

__all__ = ["IngestQueue"]

_Item = tuple[Sequence[dict[str, Any]], "Future[IngestResult]"]


class IngestQueue:
    """Requests' batches in, one transaction per group of them (see the module doc)."""

    def __init__(self, store: Any, *, max_records: int = 5_000) -> None:
        self.store = store
        self.max_records = max_records
        self._pending: deque[_Item] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._closed = False
        self.transactions = 0  # shared transactions applied (for the bench and the tests)
        self.batches = 0

    @property
    def waiting(self) -> int:
        """Requests queued and not yet taken into a transaction."""
        return len(self._pending)

    async def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult:
        """``records`` applied (with whatever else is queued), once committed."""
        if not records:
            return IngestResult()
        future: Future[IngestResult] = Future()
        with self._cond:
            if self._closed:
                raise StoreUnavailable("the server is shutting down: send the batch again to another server or later")
            self._pending.append((records, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="flightlog-ingest", daemon=True)
                self._thread.start()
            self._cond.notify()
        return await asyncio.wrap_future(future)

    def close(self, timeout: float = 30.0) -> None:
        """Apply what is queued, then end the thread (at the server's shutdown): a server made
        and stopped again in one process — tests, a notebook's `serve_in_thread` — leaves no
        thread behind holding its store."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _take(self) -> list[_Item]:
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if not self._pending:
                return []
            taken = [self._pending.popleft()]
            size = len(taken[0][0])
            while self._pending and size + len(self._pending[0][0]) <= self.max_records:
                item = self._pending.popleft()
                taken.append(item)
                size += len(item[0])
            return taken

    def _loop(self) -> None:
        while True:
            items = self._take()
            if not items:
                return  # closed, and nothing left to apply
            live = [(records, f) for records, f in items if f.set_running_or_notify_cancel()]
            if live:
                self._apply(live)

    def _apply(self, items: list[_Item]) -> None:
        together = getattr(self.store, "ingest_batches", None)
        if together is not None and len(items) > 1:
            try:
                results = together([records for records, _ in items])
            except StoreUnavailable as exc:  # the store is away: every request hears so now
                for _, future in items:
                    future.set_exception(exc)
                return
            except Exception:  # noqa: BLE001 - not one record's fault (those are skipped inside): alone, each
                pass
            else:
                self.transactions += 1
                self.batches += len(items)
                for (_, future), result in zip(items, results, strict=True):
                    future.set_result(result)
                return
        for records, future in items:
            try:
                result = self.store.ingest(records)
            except BaseException as exc:  # noqa: BLE001 - the request's own answer (a 503 for a store away)
                future.set_exception(exc)
            else:
                self.transactions += 1
                self.batches += 1
                future.set_result(result)
