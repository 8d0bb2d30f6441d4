"""The store contracts: a reading side and a writing side, behind small protocols.

:class:`StoreReader` is every read (metadata and events), :class:`StoreWriter` every write;
:class:`Store` is both, what a backend implements (SQLite, PostgreSQL, a server over HTTP);
the registry picks one by URI. Reads never write.
Writers never call these directly: they append to the journal and the shipper calls
:meth:`MetadataStore.ingest` with batches of journal records, idempotently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from flightlog.config import home_from_env
from flightlog.errors import InvalidInput
from flightlog.ids import new_writer_id
from flightlog.models import (
    Artifact,
    LogEvent,
    LogQuery,
    MetricHistory,
    MetricSummary,
    Note,
    RankInfo,
    RunInfo,
    StageSummary,
)
from flightlog.redaction import redact_user_strings
from flightlog.schema import record as schema_record
from flightlog.schema.values import escape_surrogates

__all__ = [
    "IngestResult",
    "MetadataReader",
    "MetadataStore",
    "EventStore",
    "Store",
    "StoreReader",
    "StoreWriter",
    "feature_store",
    "ingest_one",
]

T = TypeVar("T")


@dataclass
class IngestResult:
    applied: int = 0
    duplicates: int = 0
    skipped: list[str] = field(default_factory=list)  # why records were not understood


@runtime_checkable
class MetadataReader(Protocol):
    """Reading runs and what is recorded about them. Never writes (a store opened read-only,
    ``sqlite:///…?mode=ro``, answers every one of these)."""

    def resolve(self, ref: str) -> str:
        """The id of the run named by an id or a unique prefix, without reading the run itself
        (a store that resolves references on every call may return ``ref`` unchanged)."""
        ...

    def get_run(self, ref: str) -> RunInfo: ...
    def search_runs(
        self,
        *,
        project: str | None = None,
        filter: str | None = None,
        order_by: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RunInfo]: ...
    def projects(self) -> list[dict[str, Any]]: ...
    def notes(self, run_id: str) -> list[Note]: ...
    def context(self, run_id: str) -> dict[str, Any]: ...
    def artifacts(self, run_id: str) -> list[Artifact]: ...
    def artifacts_by_digest(self, sha256s: Sequence[str]) -> list[Artifact]: ...
    def children(self, run_id: str) -> list[str]: ...
    def evidence(self, run_id: str, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...


@runtime_checkable
class EventStore(Protocol):
    """Reading a run's events: metrics, logs, stages, resource samples. Never writes."""

    def metric_summaries(self, run_id: str) -> dict[str, MetricSummary]: ...
    def metric_history(self, run_id: str, name: str, rank: int | None = None) -> MetricHistory:
        """One metric's points; in a distributed run one rank's (``rank``, else the lowest that logged it)."""
        ...

    def logs(self, run_id: str, query: LogQuery) -> list[LogEvent]: ...
    def stages(self, run_id: str, rank: int | None = None) -> list[StageSummary]:
        """The run's stages; with ``rank``, only what that rank's processes timed."""
        ...

    def resource_samples(
        self, run_id: str, since: float | None = None, rank: int | None = None
    ) -> list[dict[str, Any]]: ...
    def ranks(self, run_id: str, *, all_attempts: bool = False) -> list[RankInfo]:
        """The ranks of a distributed run, each with its state (empty for a run of one process);
        the current attempt's newest restart of each rank unless ``all_attempts``."""
        ...


@runtime_checkable
class StoreReader(MetadataReader, EventStore, Protocol):
    """Every read a backend offers (SQLite, PostgreSQL, a server over HTTP): what
    :class:`flightlog.Client` reads through. None of them writes; reconciling the store with
    this host's journals is a separate, explicit step (``flightlog.journal.reconcile``)."""


@runtime_checkable
class StoreWriter(Protocol):
    """The writing side: ingest of journal records (idempotent), and the few direct changes."""

    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult: ...
    def update_run(self, run_id: str, **fields: Any) -> None: ...
    def claim_attempt(self, run_id: str, seen: int, *, host: str, pid: int, started: float) -> int | None:
        """Resume an ended run as attempt ``seen + 1``, atomically: the new attempt when this
        call made it (the run is then running, on ``host`` as ``pid``), None when the run is
        no longer at attempt ``seen`` or no longer ended (another process resumed it first)."""
        ...

    def delete_runs(self, run_ids: Sequence[str]) -> int: ...
    def add_note(self, run_id: str, text: str, author: str | None = None) -> Note: ...


@runtime_checkable
class MetadataStore(MetadataReader, StoreWriter, Protocol):
    """Metadata reads and every write (the name from before :class:`StoreReader`)."""


class Store(StoreReader, StoreWriter, Protocol):
    """Both sides: what a backend gives the client.

    ``backend`` says what database the store is on — ``sqlite``, ``postgresql``, or ``http`` (a
    flightlog server, whose database is its own business) — so that a feature picks its own
    storage beside it from one table keyed by it (`feature_store`), never by probing types."""

    backend: str


def feature_store(store: Any, builders: Mapping[str, Callable[..., T]], *args: Any) -> T | None:
    """A feature's storage beside ``store``: ``builders[store.backend](store, *args)``, or None
    where the feature keeps nothing on that database (``builders`` has no entry for it). The one
    way the alerts, the registry and the MLflow experiments find their tables; a builder imports
    its backend's code (a driver) only when that backend is the store's."""
    build = builders.get(getattr(store, "backend", ""))
    return None if build is None else build(store, *args)


def ingest_one(store: MetadataStore, run_id: str, kind: str, /, *, origin: str, **payload: Any) -> None:
    """Write one record (a note, evidence, an artifact added later) through the same idempotent
    ingest as every writer: a fresh writer id of its ``origin`` (client, api), sequence 1."""
    import time

    record = schema_record(kind, r=run_id, w=f"{origin}-{new_writer_id()}", s=1, t=time.time(), **payload)
    record = escape_surrogates(record)  # a file name that is not UTF-8, from sys.argv: kept escaped
    redact_user_strings(record, home_from_env())  # a note or tag typed at the CLI: secrets out, as from the SDK
    result = store.ingest([record])
    if result.skipped:
        raise InvalidInput(f"the store refused the {kind}: {result.skipped[0]}")
