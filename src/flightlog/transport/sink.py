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

Two failures switch the sink to **journal-only** at once instead (:attr:`journal_only`): a
server that never answered this process (the first connection refused: it is not restarting,
it is not there), and a token the server refuses (401/403: no retry can fix it). Records stay
in the journal for ``flightlog sync``, the writer's ``finish()`` does not wait for the server,
and the reason is said once per process (:meth:`take_notice`). A server first unreachable that
comes up during the run still gets the records: the backoff keeps trying it, and its first
answer ends journal-only; a refused token is never tried again by this process.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from flightlog.config import Settings
from flightlog.errors import FlightlogError, StoreUnavailable, Unauthorized
from flightlog.store.base import IngestResult
from flightlog.transport.access import check_write_access
from flightlog.transport.http_store import HttpStore

__all__ = ["RemoteSink", "open_remote_sink"]

BASE_DELAY = 0.25
MAX_DELAY = 5.0
PATIENCE = 30.0
_AWAY_STATUS = frozenset({408, 425, 429})
_REFUSED_STATUS = frozenset({401, 403})  # the token: never retried by this process (`flightlog sync` after the fix)


class RemoteSink:
    def __init__(self, settings: Settings, *, patience: float = PATIENCE) -> None:
        if not settings.url:
            raise StoreUnavailable("remote shipping needs FLIGHTLOG_URL")
        # kept open at interpreter exit until the SDK has shipped the last records (it closes it)
        self.store = HttpStore(settings.url, token=settings.token, home=settings.home, close_at_exit=False)
        self.patience = patience
        self.failures = 0
        self.away = False  # the last failure was the server being away (worth waiting for at the end)
        self.reached = False  # the server answered this process at least once
        self.journal_only = False  # never reached, or the token refused: keep to the journal, never wait
        self._refused: FlightlogError | None = None  # the token's refusal, answered again without the network
        self._notice: str | None = None  # why journal-only, until a writer says it (once per process)
        self._last_try_given = False  # journal-only: the one immediate try a finishing writer gets
        self._allowed: set[str] = set()  # projects the server said this token may write
        self._next_try = 0.0
        self._random = random.Random()

    def check_write(self, project: str) -> bool:
        """Before a run starts: raise :class:`Forbidden` when the server knows the token but it
        cannot write ``project`` (the caller's mistake, to see now). A server that does not answer,
        or does not know the token (401), switches the sink to journal-only: True (the notice
        says why)."""
        if project in self._allowed or self._refused is not None:
            return False  # asked already by this process (a sweep's thousand trials ask once)
        try:
            check_write_access(self.store.http, project)
        except Unauthorized as exc:
            self.reached = True
            self._token_refused(exc)
            return True
        except StoreUnavailable as exc:
            if not exc.details.get("unreachable"):
                return False  # the server answered (a 5xx): it is there, the shipper's backoff copes
            self._first_contact_failed(exc, time.monotonic())
            return True
        self.reached = True
        self._allowed.add(project)
        return False

    def take_notice(self) -> str | None:
        """Why the sink is journal-only, the first time it is asked in this process; else None."""
        notice, self._notice = self._notice, None
        return notice

    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult:
        if self._refused is not None:
            raise self._refused
        now = time.monotonic()
        if now < self._next_try:
            raise StoreUnavailable(
                f"the server at {self.store.url} failed {self.failures} time(s) in a row; "
                f"next try in {self._next_try - now:.1f}s"
            )
        try:
            result = self.store.ingest(records)
        except FlightlogError as exc:
            if exc.http_status in _REFUSED_STATUS:
                self._token_refused(exc)
                raise
            if isinstance(exc, StoreUnavailable) and exc.details.get("unreachable") and not self.reached:
                self._first_contact_failed(exc, now)
                raise
            if isinstance(exc, StoreUnavailable) or exc.http_status >= 500 or exc.http_status in _AWAY_STATUS:
                self.reached = self.reached or not exc.details.get("unreachable")
                self.away = True
                self._backoff(now)
            raise
        self.reached = True
        self.journal_only = False
        self.failures = 0
        self.away = False
        self._next_try = 0.0
        return result

    def _first_contact_failed(self, exc: StoreUnavailable, now: float) -> None:
        """No answer, ever: not a server restarting (worth waiting for), a server not there."""
        if not self.journal_only:
            self.journal_only = True
            self._notice = (
                f"{exc.message}. Recording journal-only: the records are kept in the journal "
                f"under {self.store.home} and `flightlog sync` ships them once the server is up"
            )
        self.away = False
        self._backoff(now)

    def _token_refused(self, exc: FlightlogError) -> None:
        self._refused = exc
        self.away = False
        if not self.journal_only:
            self.journal_only = True
            self._notice = (
                f"the server at {self.store.url} refuses this token ({exc.message}). Recording "
                f"journal-only, not retried: the records stay in the journal under {self.store.home}; "
                "fix FLIGHTLOG_TOKEN (`flightlog token create`), then run `flightlog sync`"
            )

    def _backoff(self, now: float) -> None:
        self.failures += 1
        delay = min(MAX_DELAY, BASE_DELAY * 2 ** (self.failures - 1))
        self._next_try = now + delay * (0.5 + 0.5 * self._random.random())  # "equal jitter"

    def wait(self, deadline: float) -> bool:
        """Sleep until the next try is due (at the latest ``deadline``, monotonic); False once it passed.

        Journal-only, there is no waiting: a server never reached gets one last try at once (it
        may have come up since the backoff's last one; a refused connection costs a millisecond),
        a refused token none."""
        if self.journal_only:
            if self._refused is not None or self._last_try_given:
                return False
            self._last_try_given = True
            self._next_try = 0.0
            return True
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
