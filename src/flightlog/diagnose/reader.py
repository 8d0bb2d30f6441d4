"""What diagnosis reads through: :class:`flightlog.Client` satisfies :class:`Reader`; inside
the server, :class:`StoreReader` gives the same methods over the server's store, so the
engine is one code path for the CLI, the Python API and ``GET /api/v1/runs/{run}/diagnosis``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from flightlog.logevents import level_code
from flightlog.models import Artifact, LogEvent, LogQuery, MetricHistory, RunInfo, StageSummary

__all__ = ["Reader", "StoreReader", "reader_home"]


class Reader(Protocol):
    def run(self, ref: Any) -> RunInfo: ...

    def runs(
        self,
        project: str | None = None,
        filter: str | None = None,
        order_by: str | None = None,
        limit: int | None = None,
    ) -> list[RunInfo]: ...

    def logs(
        self,
        run: Any,
        level: str | int | None = None,
        grep: str | None = None,
        since: str | float | None = None,
        limit: int | None = None,
        *,
        tail: bool = False,
    ) -> list[LogEvent]: ...

    def stages(self, run: Any) -> list[StageSummary]: ...

    def resources(self, run: Any) -> list[dict[str, Any]]: ...

    def evidence(self, run: Any, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]: ...

    def context(self, run: Any) -> dict[str, Any]: ...

    def artifacts(self, run: Any) -> list[Artifact]: ...

    def metric_history(self, run: Any, name: str) -> MetricHistory: ...


def reader_home(reader: Any) -> Path | None:
    """Where a team runbook may live for this reader (FLIGHTLOG_HOME), if anywhere."""
    home = getattr(reader, "home", None) or getattr(getattr(reader, "settings", None), "home", None)
    return Path(home) if home else None


class StoreReader:
    """The :class:`Reader` methods over a store (``flightlog.store.base.Store``)."""

    def __init__(self, store: Any, home: str | os.PathLike[str] | None = None) -> None:
        self.store = store
        self.home = Path(home) if home else None

    def _id(self, ref: Any) -> str:
        return ref if isinstance(ref, str) else str(ref.id)

    def run(self, ref: Any) -> RunInfo:
        info: RunInfo = self.store.get_run(self._id(ref))
        return info

    def runs(
        self,
        project: str | None = None,
        filter: str | None = None,
        order_by: str | None = None,
        limit: int | None = None,
    ) -> list[RunInfo]:
        found: list[RunInfo] = self.store.search_runs(
            project=project, filter=filter, order_by=order_by, limit=limit, offset=0
        )
        return found

    def logs(
        self,
        run: Any,
        level: str | int | None = None,
        grep: str | None = None,
        since: str | float | None = None,
        limit: int | None = None,
        *,
        tail: bool = False,
    ) -> list[LogEvent]:
        query = LogQuery(
            min_level=None if level is None else level_code(level),
            grep=grep,
            since=float(since) if isinstance(since, (int, float)) else None,
            limit=limit,
            tail=tail,
        )
        events: list[LogEvent] = self.store.logs(self._id(run), query)
        return events

    def stages(self, run: Any) -> list[StageSummary]:
        stages: list[StageSummary] = self.store.stages(self._id(run))
        return stages

    def resources(self, run: Any) -> list[dict[str, Any]]:
        samples: list[dict[str, Any]] = self.store.resource_samples(self._id(run), None)
        return samples

    def evidence(self, run: Any, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.store.evidence(self._id(run), kind, name)
        return items

    def context(self, run: Any) -> dict[str, Any]:
        ctx: dict[str, Any] = self.store.context(self._id(run))
        return ctx

    def artifacts(self, run: Any) -> list[Artifact]:
        arts: list[Artifact] = self.store.artifacts(self._id(run))
        return arts

    def metric_history(self, run: Any, name: str) -> MetricHistory:
        history: MetricHistory = self.store.metric_history(self._id(run), name)
        return history
