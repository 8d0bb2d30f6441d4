"""What the server needs of a store: the client's protocol, plus tokens, change feeds and
scope lookups. The embedded SQLite store provides all of it; a PostgreSQL store must too."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from flightlog.models import LogEvent, LogQuery
from flightlog.server.tokens import TokenStore
from flightlog.store.base import Store

__all__ = ["ServerStore"]


class ServerStore(Store, TokenStore, Protocol):
    query_timeout: float | None
    """Seconds a search may take before it raises QueryTimeout (None: no limit)."""

    def resolve(self, ref: str, project: str | None = None) -> str:
        """A run id or unique prefix, among ``project``'s runs when given (else every run)."""
        ...

    def log_events_after(self, run_id: str, after: int, query: LogQuery) -> tuple[list[LogEvent], int]: ...
    def metric_points_after(
        self, run_id: str, after: int, names: Sequence[str] | None = None
    ) -> tuple[dict[str, tuple[bytes, bytes, bytes]], int]: ...
    def feed_cursors(self, run_id: str) -> tuple[int, int]: ...
    def run_projects(self, run_ids: Sequence[str]) -> dict[str, str]: ...
    def has_digest(self, sha256: str, project: str | None = None) -> bool: ...
    def grant_blob(self, sha256: str, project: str) -> None: ...
    def create_session(self, digest: str, token_id: str, expires: float) -> None: ...
    def session_by_hash(self, digest: str) -> dict[str, Any] | None: ...
    def delete_session(self, digest: str) -> bool: ...
