"""Where the shipper sends journal records: the embedded store, or (later) a server over HTTP."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from flightlog.config import Settings
from flightlog.store.base import IngestResult

__all__ = ["Sink", "open_sink"]


class Sink(Protocol):
    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult: ...
    def close(self) -> None: ...


def open_sink(settings: Settings) -> Sink:
    if settings.url:
        from flightlog.transport import open_remote_sink  # type: ignore[import-not-found,unused-ignore]

        sink: Sink = open_remote_sink(settings)
        return sink
    from flightlog.store.registry import open_store

    return open_store(settings.store_uri)
