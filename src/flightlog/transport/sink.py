"""The remote shipper's sink: journal records to the server, with backoff when it is away.

The writer calls :meth:`RemoteSink.ingest` with every unshipped record, in sequence order, at
each flush. Success clears them; a failure leaves them with the writer (and in the journal)
for the next flush. After a failure the sink waits before it tries again — exponential
backoff with jitter, ``BASE_DELAY`` doubling up to ``MAX_DELAY`` — and a call made before then
fails at once, without touching the network, so a training loop never waits on a server
that is down. Ingest is idempotent on (run, writer, sequence), so a batch sent twice (the
answer was lost) changes nothing, and retrying in order can never leave a gap.

When a writer finishes, it gives the server up to ``patience`` seconds (:meth:`wait`) to take
what is left, so a server that restarts while a run ends still gets the run's last records.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from flightlog.config import Settings
from flightlog.errors import FlightlogError, StoreUnavailable
from flightlog.store.base import IngestResult
from flightlog.transport.http_store import HttpStore

__all__ = ["RemoteSink", "open_remote_sink"]

BASE_DELAY = 0.25
MAX_DELAY = 5.0
PATIENCE = 30.0
_AWAY_STATUS = frozenset({408, 425, 429})
_REFUSED_STATUS = frozenset({401, 403})  # retried (a token can be fixed), but not waited for at the end


class RemoteSink:
    def __init__(self, settings: Settings, *, patience: float = PATIENCE) -> None:
        if not settings.url:
            raise StoreUnavailable("remote shipping needs FLIGHTLOG_URL")
        # kept open at interpreter exit until the SDK has shipped the last records (it closes it)
        self.store = HttpStore(settings.url, token=settings.token, home=settings.home, close_at_exit=False)
        self.patience = patience
        self.failures = 0
        self.away = False  # the last failure was the server being away (worth waiting for at the end)
        self._next_try = 0.0
        self._random = random.Random()

    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult:
        now = time.monotonic()
        if now < self._next_try:
            raise StoreUnavailable(
                f"the server at {self.store.url} failed {self.failures} time(s) in a row; "
                f"next try in {self._next_try - now:.1f}s"
            )
        try:
            result = self.store.ingest(records)
        except FlightlogError as exc:
            away = isinstance(exc, StoreUnavailable) or exc.http_status >= 500 or exc.http_status in _AWAY_STATUS
            if away or exc.http_status in _REFUSED_STATUS:
                self.away = away
                self._backoff(now)
            raise
        self.failures = 0
        self.away = False
        self._next_try = 0.0
        return result

    def _backoff(self, now: float) -> None:
        self.failures += 1
        delay = min(MAX_DELAY, BASE_DELAY * 2 ** (self.failures - 1))
        self._next_try = now + delay * (0.5 + 0.5 * self._random.random())  # "equal jitter"

    def wait(self, deadline: float) -> bool:
        """Sleep until the next try is due (at the latest ``deadline``, monotonic); False once it passed."""
        now = time.monotonic()
        if now >= deadline or not self.away:
            return False
        until = min(self._next_try, deadline)
        if until > now:
            time.sleep(until - now)
        self._next_try = min(self._next_try, time.monotonic())  # the last chance may come early
        return True

    def close(self) -> None:
        self.store.close()


def open_remote_sink(settings: Settings) -> RemoteSink:
    return RemoteSink(settings)
